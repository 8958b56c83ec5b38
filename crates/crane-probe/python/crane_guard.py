# crane's guard against user code, shared by the modules crane keeps in the kernel (the probe
# and the dry-run module): the Rust side puts this source in front of each module's own.
#
# While the guard is active on a thread, every call of a Python function whose code lies
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


# The filenames of crane's own modules as they are compiled into the kernel.
_OWN_FILENAMES = frozenset(("<crane-probe>", "<crane-dryrun-module>", "<crane-snapshot-module>"))
_filename_is_library_cache = {}


def _filename_is_library(filename):
    known = _filename_is_library_cache.get(filename)
    if known is None:
        known = _decide_filename_is_library(filename)
        _filename_is_library_cache[filename] = known
    return known


def _decide_filename_is_library(filename):
    if type(filename) is not str or not filename:
        return False
    if filename in _OWN_FILENAMES or filename.startswith("<frozen "):
        return True
    if filename.startswith("<"):
        # Code made by exec() or eval(): whose it is depends on the globals it runs in.
        return None
    for form in (_guard_os.path.abspath(filename), _guard_os.path.realpath(filename)):
        if form.startswith(_roots()):
            return True
    return False


_module_is_library_cache = {}
_module_namespace = type(_guard_sys).__dict__["__dict__"].__get__


def _generated_code_is_library(frame):
    """Code compiled from a string (``inspect`` evaluating a builtin's text signature, a
    namedtuple's ``__new__``, a dataclass's ``__eq__``) is the library's when it runs in a
    library module's globals; the namespace of a namedtuple's ``__new__`` holds only ``tuple.__new__``."""
    name = frame.f_globals.get("__name__")
    if type(name) is not str:
        return False
    if name.startswith("namedtuple_"):
        return True
    known = _module_is_library_cache.get(name)
    if known is None:
        known = False
        module = _guard_sys.modules.get(name)
        if type(module) is type(_guard_sys):
            location = _module_namespace(module).get("__file__")
            known = name in _guard_sys.builtin_module_names or (
                type(location) is str and _filename_is_library(location) is True
            )
        _module_is_library_cache[name] = known
    return known


class _Guard:
    """While active on this thread: every call of a Python function whose code lies outside
    the libraries raises ``_UserCode`` before its first instruction; ``fired`` counts them
    (some C code swallows the exception, so callers compare counts, not just catch).

    CPython removes a trace function that raised, so whoever catches ``_UserCode`` (or sees
    ``fired`` change) calls ``rearm``; the code between the raise and the catch is only the
    unwinding of library frames."""

    __slots__ = ("fired", "previous", "depth")

    def __init__(self):
        self.fired = 0
        self.previous = None
        self.depth = 0

    def trace(self, frame, event, arg):
        if event != "call":
            return None
        library = _filename_is_library(frame.f_code.co_filename)
        if library is None:
            library = _generated_code_is_library(frame)
        if not library:
            self.fired += 1
            raise _UserCode(frame.f_code.co_name)
        return None

    def paused(self):
        """A context in which the guard is off: for work on data the probe has checked holds
        nothing of the user's (a trace function slows every Python instruction)."""
        return _Paused(self)

    def rearm(self):
        if self.depth > 0 and _guard_sys.gettrace() is not self.trace:
            _guard_sys.settrace(self.trace)

    def __enter__(self):
        if self.depth == 0:
            self.previous = _guard_sys.gettrace()
            _guard_sys.settrace(self.trace)
        self.depth += 1
        return self

    def __exit__(self, *exc):
        self.depth -= 1
        if self.depth == 0:
            _guard_sys.settrace(self.previous)
            self.previous = None
        return False


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
