
# crane's channel into the kernel, shared by the modules crane keeps there (the probe and the
# dry-run module): a handler for a shell message type of crane's own, so that crane calls a
# function of one of its modules without an execute request. An execute request, even a silent
# one, runs IPython's machinery around its code: input transformers, `pre_execute` and
# `post_execute` callbacks, the display formatters of each user expression's value (any of them
# may be the user's), and it costs the kernel milliseconds. A `crane_call_request` runs nothing
# but the function asked for, under the same guard against user code.

# The answer and the request of every call, the same in both modules.


class _Reply:
    """The answer: its repr is the JSON document, so that the kernel returns it as text."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _parse_request(request):
    try:
        parsed = _json_loads(request) if type(request) is str else request
    except ValueError:
        parsed = None
    return parsed if type(parsed) is dict else {}


_CALL_REQUEST = "crane_call_request"
_CALL_REPLY = "crane_call_reply"
_module_dict_of = type(_guard_sys).__dict__["__dict__"].__get__
_getprofile, _setprofile = _guard_sys.getprofile, _guard_sys.setprofile
_gettrace, _settrace = _guard_sys.gettrace, _guard_sys.settrace
_getframe = _guard_sys._getframe
_qualname_of_type = type.__dict__["__qualname__"].__get__


def serve_calls():
    """Install the handler of ``crane_call_request`` in this kernel (replacing one an earlier
    version installed); True when the kernel serves it: an ipykernel whose shell handlers are
    a plain dict."""
    try:
        with _guard:
            kernel = _channel_kernel()
            handlers = _channel_attribute(kernel, "shell_handlers")
            session = _channel_attribute(kernel, "session")
            if type(handlers) is not dict or session is None:
                return False

            def handle(stream, ident, parent):
                # The user's profile and trace functions go first, by C calls only: they see
                # this frame called and return, and nothing of crane's work.
                profile, trace = _getprofile(), _gettrace(); _setprofile(None); _settrace(None); _getframe().f_trace = None
                _guard.suspend()
                settling = False
                try:
                    try:
                        with _guard:
                            content = _reply_content(parent)
                            settling = _settles(parent)
                    except KeyboardInterrupt:
                        content = {"status": "interrupted"}
                    except BaseException:
                        # Only a ``_UserCode`` raised again while the guard unwound: a reply
                        # still goes, or crane would wait for one until its timeout.
                        content = _USER_CODE_REPLY
                    # The reply goes out through the kernel's own session, as every reply of
                    # the kernel's does, outside the guard: the guard would stop it halfway
                    # where the kernel's messaging meets a builtin the user replaced.
                    try:
                        session.send(stream, _CALL_REPLY, content, parent, ident)
                    except Exception:
                        pass
                finally:
                    deferred = _guard.resume()
                    if settling:
                        _collect()
                    _settrace(trace)
                    _setprofile(profile)
                # A signal that came meanwhile reaches the user's handler now, in the
                # kernel's message loop, as any signal during a request would.
                for signum in deferred:
                    _guard_sys.modules["_signal"].raise_signal(signum)

            handlers[_CALL_REQUEST] = handle
            return True
    except _UserCode:
        _guard.rearm()
        return False
    except Exception:
        return False


def _settles(parent):
    """Whether the call is of a module's ``settle``, which one full collection follows."""
    content = parent.get("content") if type(parent) is dict else None
    return type(content) is dict and content.get("function") == "settle"


def _collect():
    """One full collection, with the reply out and the guard off (the user's trace and profile
    functions not yet back, so they see nothing of crane's), before the kernel reads its next
    message: as an automatic collection at this point would run. Only where ``gc`` is loaded
    already (crane's fork module loads it): importing it would show in ``sys.modules``."""
    gc = _guard_sys.modules.get("gc")
    if gc is not None:
        try:
            gc.collect()
        except Exception:
            pass


def _channel_kernel():
    shell = _kernel_shell()
    if shell is None:
        return None
    return _channel_attribute(shell, "kernel")


def _channel_attribute(obj, name):
    """An attribute from the instance's own dict or, for a traitlets trait, its trait values;
    None otherwise. No descriptor, property or ``__getattr__`` runs."""
    try:
        namespace = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None
    if type(namespace) is not dict:
        return None
    if name in namespace:
        return namespace[name]
    trait_values = namespace.get("_trait_values")
    return trait_values.get(name) if type(trait_values) is dict else None


_USER_CODE_REPLY = {"status": "error", "ename": "_UserCode", "evalue": "the call would have run code of the user's"}


def _reply_content(parent):
    try:
        return _call_content(parent)
    except KeyboardInterrupt:
        return {"status": "interrupted"}
    except _UserCode:
        _guard.rearm()
        return _USER_CODE_REPLY
    except BaseException as exc:
        # Nothing escapes to the kernel's dispatcher: a SystemExit raised in a library would
        # end the user's kernel, where a user expression's would only be reported.
        return {"status": "error", "ename": _qualname_of_type(type(exc)), "evalue": ""}


def _call_content(parent):
    request = parent.get("content") if type(parent) is dict else None
    request = request if type(request) is dict else {}
    name, function = request.get("module"), request.get("function")
    if type(name) is not str or not name.startswith("_crane_"):
        return {"status": "error", "ename": "ValueError", "evalue": "not one of crane's modules"}
    if type(function) is not str or not function.isidentifier() or function.startswith("_"):
        return {"status": "error", "ename": "ValueError", "evalue": "not a function crane calls"}
    module = _guard_sys.modules.get(name)
    namespace = _module_dict_of(module) if type(module) is type(_guard_sys) else {}
    if request.get("digest") is None or namespace.get("DIGEST") != request.get("digest"):
        bootstrap = _guard_sys.modules.get("_frozen_importlib_external")
        magic = _module_dict_of(bootstrap).get("MAGIC_NUMBER", b"") if bootstrap is not None else b""
        return {"status": "missing", "magic": magic.hex() if type(magic) is bytes else ""}
    target = namespace.get(function)
    if type(target) is not type(serve_calls):
        return {"status": "error", "ename": "AttributeError", "evalue": f"no function {function}"}
    return {"status": "ok", "text": repr(target(request.get("request")))}
