# crane's guard against user code, shared by the modules crane keeps in the kernel (the probe
# and the dry-run module): the Rust side puts this source in front of each module's own.
#
# While the guard is active on a thread, every call of a Python function that runs in globals
# outside the libraries (the standard library, site-packages, crane's own modules) raises
# _UserCode before its first instruction. Library code calls back into user code in ways no
# static check sees (hashing the objects of an object-dtype index, an isinstance() that reads a
# user __class__ property, a metaclass __getattribute__); under the guard none of it runs.

import os as _guard_os
import sys as _guard_sys
import sysconfig as _guard_sysconfig

_module_namespace = type(_guard_sys).__dict__["__dict__"].__get__
_dict_get = dict.get
_FunctionType = type(lambda: 0)
_own_builtins = globals().get("__builtins__")
if type(_own_builtins) is not dict:
    _own_builtins = _module_namespace(_own_builtins)
# The kernel's builtins, as library and user code find them (``len`` is the snapshot's, so its
# ``__self__`` is the real builtins module).
_live_builtins = _module_namespace(len.__self__)
_absent_builtin = object()


def _builtins_intact():
    """Whether every builtin of crane's snapshot is still the one the kernel's code finds."""
    live = _live_builtins
    for name, value in _own_builtins.items():
        if _dict_get(live, name, _absent_builtin) is not value:
            return False
    return True


def _private_functions(module):
    """A copy of ``module``'s namespace in which its functions are rebuilt to resolve builtins
    in crane's snapshot (and each other in the copy). Only for modules that never rebind their
    own globals (``posixpath``, ``ast``, ``inspect``); their classes stay the originals."""
    original = _module_namespace(module)
    namespace = dict(original)
    namespace["__builtins__"] = _own_builtins
    for name, value in original.items():
        if type(value) is _FunctionType and value.__globals__ is original:
            copy = _FunctionType(value.__code__, namespace, value.__name__, value.__defaults__, value.__closure__)
            copy.__kwdefaults__ = value.__kwdefaults__
            copy.__qualname__ = value.__qualname__
            namespace[name] = copy
    return namespace


_path = _private_functions(_guard_os.path)
_library_roots = None


def _roots():
    global _library_roots
    if _library_roots is None:
        roots = set()
        paths = _guard_sysconfig.get_paths()
        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            if paths.get(key):
                roots.add(paths[key])
        for entry in _guard_sys.path:
            if isinstance(entry, str) and (
                "site-packages" in entry or "dist-packages" in entry
            ):
                roots.add(entry)
        normalized = set()
        for root in roots:
            for form in (_guard_os.path.abspath(root), _guard_os.path.realpath(root)):
                normalized.add(form.rstrip(_guard_os.sep) + _guard_os.sep)
        _library_roots = tuple(sorted(normalized))
    return _library_roots


class _UserCode(BaseException):
    """A Python function defined outside the libraries was about to run. A BaseException, so
    that library code that falls back on ``except Exception`` does not try another way."""


_filename_is_library_cache = {}


def _filename_is_library(filename):
    known = _filename_is_library_cache.get(filename)
    if known is None:
        known = False
        try:
            forms = (_path["abspath"](filename), _path["realpath"](filename))
        except Exception:
            forms = ()
        for form in forms:
            if form.startswith(_roots()):
                known = True
        _filename_is_library_cache[filename] = known
    return known


_own_globals = globals()
_MethodType = type(_roots.__get__(0))
_BuiltinType = type(_guard_os.getpid)
_mro_of = type.__dict__["__mro__"].__get__
_module_is_library_cache = {}


def _globals_are_library(namespace):
    """Whether a function running in the globals ``namespace`` is library code: crane's own
    modules, a module of the standard library or site-packages, or code a library compiled
    from a string into its own globals (``inspect`` evaluating a builtin's text signature, a
    namedtuple's ``__new__``, whose namespace holds only ``tuple.__new__``). A user's cell,
    module or ``exec`` runs in globals of the user's."""
    if namespace is _own_globals or _is_crane_module(namespace):
        return True
    name = _dict_get(namespace, "__name__")
    if type(name) is str and name.startswith("_crane_"):
        # Another of crane's modules (the handler of crane's message is the one injected
        # last, and calls the others).
        module = _guard_sys.modules.get(name)
        if type(module) is type(_guard_sys) and _module_namespace(module) is namespace:
            return True
    location = _dict_get(namespace, "__file__")
    if type(location) is str:
        return _filename_is_library(location)
    name = _dict_get(namespace, "__name__")
    if type(name) is not str:
        return False
    if name.startswith("namedtuple_"):
        return True
    known = _module_is_library_cache.get(name)
    if known is None:
        imp = _guard_sys.modules.get("_imp")
        known = name in _guard_sys.builtin_module_names or (imp is not None and imp.is_frozen(name))
        if not known:
            module = _guard_sys.modules.get(name)
            if type(module) is type(_guard_sys):
                location = _module_namespace(module).get("__file__")
                known = type(location) is str and _filename_is_library(location)
        _module_is_library_cache[name] = known
    return known


def _is_crane_module(namespace):
    """Whether ``namespace`` is another of crane's modules in this kernel (each carries its own
    copy of this guard): the one serving crane's messages calls the others' functions."""
    name = _dict_get(namespace, "__name__")
    return (
        type(name) is str
        and name.startswith("_crane_")
        and _dict_get(namespace, "_own_globals") is namespace
        and type(_guard_sys.modules.get(name)) is type(_guard_sys)
        and _module_namespace(_guard_sys.modules[name]) is namespace
    )


class _Guard:
    """While active on this thread: every call of a Python function whose code lies outside
    the libraries raises ``_UserCode`` before its first instruction; ``fired`` counts them
    (some C code swallows the exception, so callers compare counts, not just catch).

    CPython removes a trace function that raised, so whoever catches ``_UserCode`` (or sees
    ``fired`` change) calls ``rearm``; the code between the raise and the catch is only the
    unwinding of library frames.

    The user's hooks that would otherwise run inside crane's frames are suspended for the
    outermost entry and put back exactly after it: the profile and trace functions of the
    thread, automatic garbage collection and ``gc.callbacks`` (the same list, same order).
    A signal whose Python handler is the user's is caught by crane meanwhile and raised again
    once the guard is off (``deliver``), so the user's handler runs once for it, outside the
    guard. A caller that wants all of it to cover more than the guard (crane's message
    handler, until its reply is sent) calls ``suspend`` and ``resume`` itself."""

    __slots__ = (
        "fired", "depth", "tracer", "catcher", "previous_trace", "previous_profile",
        "suspended", "owns_suspension", "gc_enabled", "gc_callbacks", "handlers", "deferred",
    )

    def __init__(self):
        self.fired = 0
        self.depth = 0
        self.suspended = False
        self.owns_suspension = False
        # The bound methods are kept: CPython holds its trace function only through the
        # thread state, and drops that reference when the function raises; a collection that
        # runs while CPython is about to call it would otherwise free it under the call.
        self.tracer = self.trace
        self.catcher = self.catch
        self.previous_trace = None
        self.previous_profile = None
        self.gc_enabled = False
        self.gc_callbacks = []
        self.handlers = {}
        self.deferred = []

    def trace(self, frame, event, arg):
        if event != "call":
            return None
        # Whose code runs is read from the globals it runs in, not from ``frame.f_code``,
        # which raises an audit event on every read.
        if not _globals_are_library(frame.f_globals):
            self.fired += 1
            raise _UserCode()
        return None

    def catch(self, signum, frame):
        self.deferred.append(signum)

    def paused(self):
        """A context in which the guard is off: for work on data the probe has checked holds
        nothing of the user's (a trace function slows every Python instruction)."""
        return _Paused(self)

    def rearm(self):
        if self.depth > 0 and _guard_sys.gettrace() is not self.tracer:
            _guard_sys.settrace(self.tracer)

    def __enter__(self):
        if self.depth == 0:
            self.previous_profile = _guard_sys.getprofile()
            if self.previous_profile is not None:
                _guard_sys.setprofile(None)
            self.previous_trace = _guard_sys.gettrace()
            _guard_sys.settrace(self.tracer)
            self.owns_suspension = not self.suspended
            self.suspend()
        self.depth += 1
        return self

    def __exit__(self, *exc):
        self.depth -= 1
        if self.depth == 0:
            _guard_sys.settrace(self.previous_trace)
            self.previous_trace = None
            profile, self.previous_profile = self.previous_profile, None
            if profile is not None:
                _guard_sys.setprofile(profile)
            if self.owns_suspension:
                self.deliver(self.resume())
        return False

    def leave(self):
        """Off for good on this thread, however deep: the user's trace and profile functions,
        collection, ``gc.callbacks`` and signal handlers back as they were, the signals that
        arrived meanwhile forgotten. For a forked child about to run the user's code as the
        kernel would; the kernel, which keeps the deferred signals, delivers them itself."""
        if self.depth > 0:
            self.depth = 0
            _guard_sys.settrace(self.previous_trace)
            self.previous_trace = None
            profile, self.previous_profile = self.previous_profile, None
            if profile is not None:
                _guard_sys.setprofile(profile)
        self.resume()

    def suspend(self):
        """Automatic collection, ``gc.callbacks`` and the user's signal handlers off, until
        ``resume``. The guard does it for its outermost entry unless its caller did first."""
        if self.suspended:
            return
        self.suspended = True
        gc = _guard_sys.modules.get("gc")
        if gc is not None:
            self.gc_enabled = gc.isenabled()
            gc.disable()
            self.gc_callbacks = gc.callbacks[:]
            del gc.callbacks[:]
        self._catch_signals()

    def resume(self):
        """Undo ``suspend``; the signals that arrived meanwhile, for ``deliver``. Collection
        comes back last: one that came due meanwhile may run at once, and must find the
        user's callbacks and no guard."""
        if not self.suspended:
            return []
        self.suspended = False
        self._restore_signals()
        deferred, self.deferred = self.deferred, []
        gc = _guard_sys.modules.get("gc")
        if gc is not None:
            gc.callbacks[:0] = self.gc_callbacks
            if self.gc_enabled:
                gc.enable()
        return deferred

    def _catch_signals(self):
        # ``_signal``, not ``signal``: the latter's wrappers convert through ``enum``, Python
        # code that finds the kernel's builtins.
        signal = _guard_sys.modules.get("_signal")
        if signal is None:
            return
        try:
            for signum in signal.valid_signals():
                handler = signal.getsignal(signum)
                if _is_user_handler(handler):
                    signal.signal(signum, self.catcher)
                    self.handlers[signum] = handler
        except (ValueError, OSError):
            # Not the main thread (only it sets handlers), or a signal Python cannot catch.
            pass

    def _restore_signals(self):
        signal = _guard_sys.modules.get("_signal")
        handlers, self.handlers = self.handlers, {}
        for signum, handler in handlers.items():
            signal.signal(signum, handler)

    @staticmethod
    def deliver(signals):
        """Raise again each signal that arrived while the user's handlers were off."""
        for signum in signals:
            _guard_sys.modules["_signal"].raise_signal(signum)


def _is_user_handler(handler):
    """Whether ``handler`` (as ``_signal.getsignal`` gives it) is Python code of the user's.
    SIG_DFL, SIG_IGN, None and builtins such as ``default_int_handler`` are not."""
    if type(handler) is _MethodType:
        handler = handler.__func__
    if type(handler) is _FunctionType:
        return not _globals_are_library(handler.__globals__)
    return handler is not None and type(handler) is not _BuiltinType and int not in _mro_of(type(handler))


class _Paused:
    __slots__ = ("guard", "outer", "off")

    def __init__(self, guard):
        self.guard = guard
        self.outer = None
        self.off = False

    def __enter__(self):
        # Off entirely, not back to the user's own trace function (a debugger): crane's work
        # stays invisible to it. Left on when the user replaced a builtin since the injection:
        # the library code that works on the data would find the replacement.
        self.outer = _guard_sys.gettrace()
        self.off = self.guard.depth > 0 and _builtins_intact()
        if self.off:
            _guard_sys.settrace(None)

    def __exit__(self, *exc):
        if self.off:
            _guard_sys.settrace(self.outer)
        return False


_guard = _Guard()
# The library roots are read now, while the builtins are the interpreter's own
# (``sysconfig`` is Python code that finds the kernel's builtins).
_roots()


class _IgnoredWarnings:
    """Warnings ignored, and not recorded, inside; the kernel's filters exactly as they were
    after. What ``warnings.catch_warnings`` with ``simplefilter("ignore")`` does, without its
    Python code (which finds the kernel's builtins)."""

    __slots__ = ("saved",)

    def __enter__(self):
        warnings = _guard_sys.modules.get("warnings")
        self.saved = _module_namespace(warnings).get("filters") if warnings is not None else None
        if self.saved is not None:
            warnings.filters = [("ignore", None, Warning, None, 0)]
            warnings._filters_mutated()
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            warnings = _guard_sys.modules["warnings"]
            warnings.filters = self.saved
            warnings._filters_mutated()
            self.saved = None
        return False


# JSON through the C encoder and scanner that ``json`` itself uses: its Python entry points
# find the kernel's builtins.
import _json as _guard_c_json


def _json_dumps(document, ensure_ascii=True, allow_nan=True, default=None):
    encode = _guard_c_json.encode_basestring_ascii if ensure_ascii else _guard_c_json.encode_basestring
    encoder = _guard_c_json.make_encoder({}, default if default is not None else _json_default, encode, None, ":", ",", False, False, allow_nan)
    return "".join(encoder(document, 0))


def _json_default(value):
    raise TypeError("an object JSON cannot encode")


class _JsonContext:
    __slots__ = ("strict", "object_hook", "object_pairs_hook", "parse_float", "parse_int", "parse_constant", "memo")

    def __init__(self):
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = None
        self.parse_float = float
        self.parse_int = int
        self.parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__
        self.memo = {}


_json_scan = _guard_c_json.make_scanner(_JsonContext())


def _json_loads(text):
    """The JSON document ``text`` (str or UTF-8 bytes); ValueError when it is not one."""
    if type(text) is not str:
        text = bytes(text).decode("utf-8")
    text = text.strip(" \t\n\r")
    try:
        value, end = _json_scan(text, 0)
    except StopIteration:
        raise ValueError("not a JSON document") from None
    if end != len(text):
        raise ValueError("extra data after the JSON document")
    return value


def _kernel_shell():
    """The kernel's IPython shell, or None, read from ``InteractiveShell``'s own class dict
    (``get_ipython`` imports, and finds the kernel's builtins)."""
    module = _guard_sys.modules.get("IPython.core.interactiveshell")
    if type(module) is not type(_guard_sys):
        return None
    cls = _module_namespace(module).get("InteractiveShell")
    if not issubclass(type(cls), type):
        return None
    return type.__dict__["__dict__"].__get__(cls).get("_instance")
