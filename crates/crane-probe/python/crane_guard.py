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
        for form in (_guard_os.path.abspath(filename), _guard_os.path.realpath(filename)):
            if form.startswith(_roots()):
                known = True
        _filename_is_library_cache[filename] = known
    return known


_own_globals = globals()
_dict_get = dict.get
_FunctionType = type(_filename_is_library)
_MethodType = type(_roots.__get__(0))
_BuiltinType = type(_guard_os.getpid)
_mro_of = type.__dict__["__mro__"].__get__
_module_is_library_cache = {}
_module_namespace = type(_guard_sys).__dict__["__dict__"].__get__


def _globals_are_library(namespace):
    """Whether a function running in the globals ``namespace`` is library code: crane's own
    modules, a module of the standard library or site-packages, or code a library compiled
    from a string into its own globals (``inspect`` evaluating a builtin's text signature, a
    namedtuple's ``__new__``, whose namespace holds only ``tuple.__new__``). A user's cell,
    module or ``exec`` runs in globals of the user's."""
    if namespace is _own_globals or _is_crane_module(namespace):
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
        signal = _guard_sys.modules.get("signal")
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
        signal = _guard_sys.modules.get("signal")
        handlers, self.handlers = self.handlers, {}
        for signum, handler in handlers.items():
            signal.signal(signum, handler)

    @staticmethod
    def deliver(signals):
        """Raise again each signal that arrived while the user's handlers were off."""
        for signum in signals:
            _guard_sys.modules["signal"].raise_signal(signum)


def _is_user_handler(handler):
    """Whether ``handler`` (as ``signal.getsignal`` gives it) is Python code of the user's.
    SIG_DFL, SIG_IGN, None and builtins such as ``default_int_handler`` are not."""
    if type(handler) is _MethodType:
        handler = handler.__func__
    if type(handler) is _FunctionType:
        return not _globals_are_library(handler.__globals__)
    return handler is not None and type(handler) is not _BuiltinType and int not in _mro_of(type(handler))


class _Paused:
    __slots__ = ("guard", "outer")

    def __init__(self, guard):
        self.guard = guard
        self.outer = None

    def __enter__(self):
        # Off entirely, not back to the user's own trace function (a debugger): crane's work
        # stays invisible to it.
        self.outer = _guard_sys.gettrace()
        if self.guard.depth > 0:
            _guard_sys.settrace(None)

    def __exit__(self, *exc):
        if self.guard.depth > 0:
            _guard_sys.settrace(self.outer)
        return False


_guard = _Guard()
