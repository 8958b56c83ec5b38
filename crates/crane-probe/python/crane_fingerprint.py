"""crane's fingerprints of the kernel's objects: what a failed cell's part that ran may have
changed, told from evidence rather than syntax. The kernel and its snapshot from before the
cell (a fork: the same objects at the same addresses, the same hash seed) each fingerprint the
objects the cell read by name; equal fingerprints mean the part of the cell that ran left those
objects as they were, so running the cell again reads what it read the first time.

A fingerprint is a digest of an object's value, walked through the kinds whose whole value
crane can read without running code of theirs (allow by default nothing): ``None``, numbers,
strings, bytes; the standard library's immutable values (paths, dates, decimals, fractions,
UUIDs, ranges); tuples, lists, dicts, sets of those; numpy arrays (their dtype, shape and bytes)
and scalars; pandas ``Series``, ``DataFrame`` and ``Index`` (their index, columns, dtypes and
values); objects whose whole state is their ``__dict__`` (every class of theirs the notebook's,
scikit-learn's or ``object``'s, no ``__slots__``: an estimator, a pipeline and its steps, the
notebook's own transformer); by identity (the same in the kernel and its fork), modules,
classes and functions a library defines.

The notebook's own functions and classes are walked too (their code, defaults, closures,
attributes; a class's bases and body): a call of them during the cell may change globals the
cell never names, so the globals their code can read (every name its code objects name) are
fingerprinted as well, and so on through the code those hold. Code that names a way to reach
the namespace or frames (``globals``, ``eval``, ``sys``, ``__dict__``...) gives no
fingerprint. Anything else reachable from the object (a tensor, a Keras model, a class of
another library) leaves the name without a fingerprint: crane then cannot tell, and the failed
cell is rolled back. The walk runs under the guard against user code (a library call that would
run the notebook's code gives no fingerprint) and within a budget of bytes, objects and names.

crane calls ``fingerprint(request)`` (``{"names": [...]}``) in the kernel through its call
channel, and ``fingerprint REQUEST`` on a snapshot's socket; both answer ``{"protocol",
"fingerprints": {name: hex digest, or null where there is none, or "absent"}}``, the globals
the notebook's code can read included.
"""

import hashlib

# What one request may read: bytes of array data, objects walked, names fingerprinted.
_FINGERPRINT_BYTES = 4 << 30
_FINGERPRINT_OBJECTS = 2_000_000
_FINGERPRINT_NAMES = 10_000
_FINGERPRINT_DEPTH = 64
# The most bytes copied at once to read a strided array.
_FINGERPRINT_BLOCK = 64 << 20

# Names through which code reaches the namespace, frames or objects it is not given (if the
# notebook's code names one, crane cannot list what it reads). ``getattr``, ``setattr`` and
# ``delattr`` are not among them: what they reach is an attribute of an object the code holds,
# as ``obj.name`` reaches it; only the namespace's own objects (``__main__``, frames) would
# widen that, and the names that reach those are here.
_REACHING_NAMES = frozenset({
    "globals", "locals", "vars", "eval", "exec", "compile",
    "__import__", "__main__", "__builtins__", "builtins", "sys", "inspect", "gc", "_getframe",
    "f_globals", "f_locals", "f_back", "__globals__", "__dict__", "get_ipython", "user_ns",
    "modules", "importlib", "ctypes",
})


class _NoFingerprint(Exception):
    """The object holds something whose value crane cannot read without running its code."""


def fingerprint(request):
    request = _parse_request(request)
    return _answer({"protocol": PROTOCOL, "fingerprints": _fingerprints(request.get("names") or [])})


def _fingerprints(names):
    """Each name's fingerprint, and those of the globals the notebook's code they hold can read
    (the names its functions' and methods' code objects name, followed on to the code those
    hold): what a call of that code during the cell could have changed without the cell naming
    it."""
    shell = _shell()
    namespace = shell.user_ns if shell is not None else {}
    found = {}
    pending = [name for name in names if type(name) is str]
    budget = _Budget()
    while pending and len(found) < _FINGERPRINT_NAMES:
        name = pending.pop(0)
        if name in found:
            continue
        value = dict.get(namespace, name, _absent)
        if value is _absent:
            found[name] = "absent"
            continue
        walk = _Fingerprint(namespace, budget)
        try:
            with _guard:
                found[name] = walk.of(value)
        except _UserCode:
            _guard.rearm()
            found[name] = None
        except (_NoFingerprint, RecursionError, MemoryError):
            found[name] = None
        except Exception:
            found[name] = None
        if found[name] is not None:
            pending.extend(sorted(read for read in walk.globals_read if read in namespace and read not in found))
    for name in pending:
        # Past the budget of names: what was not read cannot be vouched for.
        found.setdefault(name, None)
    return found


class _Budget:
    """What one request may read in all: bytes of array data, and objects walked."""

    def __init__(self):
        self.bytes_left = _FINGERPRINT_BYTES
        self.objects_left = _FINGERPRINT_OBJECTS


class _Fingerprint:
    def __init__(self, namespace, budget):
        self.digest = hashlib.blake2b(digest_size=20)
        self.main = namespace
        self.budget = budget
        # Containers being walked, by id: a cycle is written as a reference to its start.
        self.walking = {}
        # The global names the notebook's code met in the walk can read.
        self.globals_read = set()

    def of(self, value):
        self.walk(value, 0)
        return self.digest.hexdigest()

    def enter(self, value, depth):
        """Whether to walk ``value`` now: not when it is being walked already (a cycle, written
        as a reference to where its walk began)."""
        key = id(value)
        if key in self.walking:
            self.put("@", str(self.walking[key]).encode())
            return False
        self.walking[key] = depth
        return True

    def put(self, tag, data=b""):
        self.digest.update(tag.encode("ascii") + len(data).to_bytes(8, "little") + data)

    def walk(self, value, depth):
        self.budget.objects_left -= 1
        if self.budget.objects_left < 0 or depth > _FINGERPRINT_DEPTH:
            raise _NoFingerprint()
        kind = type(value)
        if value is None or kind is bool or value is Ellipsis:
            self.put("c", repr(value).encode())
        elif kind is int or kind is float or kind is complex:
            self.put(kind.__name__[0], repr(value).encode())
        elif kind is str:
            self.put("s", value.encode("utf-8", "surrogatepass"))
        elif kind is bytes:
            self.put("b", value)
        elif kind is tuple or kind is list or kind is dict or kind is set or kind is frozenset:
            self.container(value, kind, depth)
        else:
            self.other(value, kind, depth)

    def container(self, value, kind, depth):
        if not self.enter(value, depth):
            return
        try:
            self.put(kind.__name__, str(len(value)).encode())
            if kind is dict:
                for key_, item in dict.items(value):
                    self.walk(key_, depth + 1)
                    self.walk(item, depth + 1)
            else:
                for item in (tuple.__iter__ if kind is tuple else kind.__iter__)(value):
                    self.walk(item, depth + 1)
        finally:
            del self.walking[id(value)]

    def other(self, value, kind, depth):
        numpy = sys.modules.get("numpy")
        pandas = sys.modules.get("pandas")
        if numpy is not None and kind is numpy.ndarray:
            self.array(value, depth)
        elif numpy is not None and isinstance(value, numpy.generic) and _module_of(kind) == "numpy":
            self.put("g", value.dtype.str.encode() + value.tobytes())
        elif numpy is not None and isinstance(value, numpy.dtype):
            self.put("d", str(value).encode())
        elif pandas is not None and _pandas_frame(value, kind, pandas):
            self.pandas(value, kind, pandas, depth)
        elif pandas is not None and (value is pandas.NA or kind in (type(pandas.NaT), pandas.Timestamp, pandas.Timedelta)):
            self.put("P", repr(value).encode())
        elif _immutable_value(kind):
            self.put("v", (_qualname_of(kind) + ":" + repr(value)).encode("utf-8", "surrogatepass"))
        elif isinstance(value, types.ModuleType):
            self.put("m", str(id(value)).encode())
        elif kind is type or isinstance(value, type):
            if _module_of(value) == "__main__":
                self.notebook_class(value, depth)
            else:
                self.put("t", str(id(value)).encode())
        elif kind is types.FunctionType:
            if value.__globals__ is self.main:
                self.notebook_function(value, depth)
            else:
                self.library_function(value, depth)
        elif kind is types.BuiltinFunctionType or (numpy is not None and kind is numpy.ufunc):
            self.put("f", str(id(value)).encode())
        elif kind is staticmethod or kind is classmethod:
            self.put("S")
            self.walk(value.__func__, depth + 1)
        elif kind is property:
            self.put("R")
            for accessor in (value.fget, value.fset, value.fdel):
                self.walk(accessor, depth + 1)
        elif _state_in_dict(kind):
            self.instance(value, kind, depth)
        else:
            raise _NoFingerprint()

    def notebook_function(self, value, depth):
        """A function the notebook defined: its code (and the globals that code can read, walked
        after it), defaults, closure and attributes."""
        if not self.enter(value, depth):
            return
        try:
            self.put("F", value.__qualname__.encode("utf-8", "surrogatepass"))
            self.code(value.__code__)
            self.walk(value.__defaults__, depth + 1)
            self.walk(value.__kwdefaults__, depth + 1)
            self.closure(value, depth)
            self.container(object.__getattribute__(value, "__dict__"), dict, depth + 1)
        finally:
            del self.walking[id(value)]

    def library_function(self, value, depth):
        """A function a library defined: by identity, and the notebook's code its closure holds
        (a library's wrapper around the notebook's method, as scikit-learn wraps ``transform``,
        holds that method, whose globals a call may change). The rest of such a closure is the
        library's own state (a decorator's settings, the function it wraps), by identity."""
        self.put("f", str(id(value)).encode())
        if not value.__closure__ or not self.enter(value, depth):
            return
        try:
            for contents in self.closure_contents(value):
                if self.notebooks(contents):
                    self.walk(contents, depth + 1)
                elif type(contents) is types.FunctionType:
                    self.library_function(contents, depth + 1)
                else:
                    self.put("o", str(id(contents)).encode())
        finally:
            del self.walking[id(value)]

    def notebooks(self, value):
        """Whether ``value`` is the notebook's: a function it defined, a class it defined, or an
        object of such a class."""
        if type(value) is types.FunctionType:
            return value.__globals__ is self.main
        kind = value if isinstance(value, type) else type(value)
        return _module_of(kind) == "__main__"

    def closure(self, function, depth):
        for contents in self.closure_contents(function):
            self.walk(contents, depth + 1)

    def closure_contents(self, function):
        for cell in function.__closure__ or ():
            try:
                yield cell.cell_contents
            except ValueError:
                self.put("empty")

    def code(self, code):
        if type(code) is not types.CodeType:
            raise _NoFingerprint()
        self.put("C", code.co_code)
        for name in code.co_names:
            if name in _REACHING_NAMES:
                raise _NoFingerprint()
            self.globals_read.add(name)
        self.put("N", " ".join(code.co_names).encode("utf-8", "surrogatepass"))
        for constant in code.co_consts:
            if type(constant) is types.CodeType:
                self.code(constant)
            else:
                self.walk(constant, 0)

    def notebook_class(self, value, depth):
        """A class the notebook defined: its bases and what its body defined."""
        if not self.enter(value, depth):
            return
        try:
            self.put("K", _qualname_of(value).encode("utf-8", "surrogatepass"))
            for base in type.__dict__["__bases__"].__get__(value):
                self.walk(base, depth + 1)
            for name, member in dict(_class_dict(value)).items():
                # Python's own entries, and abc's cache of subclass checks.
                if name in ("__dict__", "__weakref__", "__module__", "__doc__", "__qualname__", "_abc_impl"):
                    continue
                self.walk(name, depth + 1)
                self.walk(member, depth + 1)
        finally:
            del self.walking[id(value)]

    def array(self, value, depth):
        self.put("a", (value.dtype.str + str(value.shape)).encode())
        if value.dtype.hasobject:
            items = value.ravel().tolist()
            if all(type(item) is str for item in items):
                self.strings(items)
                return
            for item in items:
                self.walk(item, depth + 1)
            return
        self.budget.bytes_left -= value.nbytes
        if self.budget.bytes_left < 0:
            raise _NoFingerprint()
        if value.flags.c_contiguous:
            self.digest.update(value.reshape(-1).view("u1").data)
            return
        # Strided (a slice, a transpose): copied a block of rows at a time, never whole.
        if value.ndim == 0:
            raise _NoFingerprint()
        row = max(1, value[:1].nbytes)
        step = max(1, _FINGERPRINT_BLOCK // row)
        for start in range(0, value.shape[0], step):
            block = value[start:start + step].copy(order="C")
            self.digest.update(block.reshape(-1).view("u1").data)

    def strings(self, items):
        """An array of Python strings only (a pandas column of text): their lengths and their
        text, read as bytes of array data rather than object by object."""
        # At most 4 bytes a character: past the budget, nothing is joined.
        if 4 * sum(len(item) for item in items) > self.budget.bytes_left:
            raise _NoFingerprint()
        text = "".join(items).encode("utf-8", "surrogatepass")
        lengths = ",".join(str(len(item)) for item in items).encode("ascii")
        self.budget.bytes_left -= len(text) + len(lengths)
        if self.budget.bytes_left < 0:
            raise _NoFingerprint()
        self.put("T", lengths)
        self.digest.update(text)

    def pandas(self, value, kind, pandas, depth):
        self.put("p", kind.__name__.encode())
        if isinstance(value, pandas.Index):
            self.put("d", str(value.dtype).encode())
            self.walk(value.to_numpy(), depth + 1)
            self.walk(list(value.names), depth + 1)
            return
        self.walk(value.index, depth + 1)
        if kind is pandas.Series:
            self.put("d", str(value.dtype).encode())
            self.walk(value.name, depth + 1)
            self.walk(value.to_numpy(), depth + 1)
            return
        self.walk(value.columns, depth + 1)
        for position in range(value.shape[1]):
            column = value.iloc[:, position]
            self.put("d", str(column.dtype).encode())
            self.walk(column.to_numpy(), depth + 1)

    def instance(self, value, kind, depth):
        """An object whose whole state is its ``__dict__``: its class, and that dict."""
        self.put("e")
        self.walk(kind, depth + 1)
        state = object.__getattribute__(value, "__dict__")
        if type(state) is not dict:
            raise _NoFingerprint()
        self.container(state, dict, depth + 1)


# The standard library's immutable value classes whose repr is their whole value, by module
# (its package: pathlib's classes live in ``pathlib._local`` on newer Pythons) and name.
_VALUE_CLASSES = {
    "pathlib": frozenset({"PurePath", "PurePosixPath", "PureWindowsPath", "Path", "PosixPath", "WindowsPath"}),
    "datetime": frozenset({"date", "time", "datetime", "timedelta", "timezone"}),
    "decimal": frozenset({"Decimal"}),
    "fractions": frozenset({"Fraction"}),
    "uuid": frozenset({"UUID"}),
}


def _immutable_value(kind):
    """Whether ``kind`` is one of the standard library's immutable value classes (a path, a
    date, a decimal, a fraction, a UUID, a range), itself and not a subclass the notebook
    defined: its repr, the library's code, says its whole value."""
    if kind is range:
        return True
    module = _module_of(kind)
    if type(module) is not str:
        return False
    names = _VALUE_CLASSES.get(module.split(".")[0])
    return names is not None and _qualname_of(kind) in names


def _in_package(module, package):
    return type(module) is str and (module == package or module.startswith(package + "."))


def _pandas_frame(value, kind, pandas):
    """A pandas ``Series``, ``DataFrame`` or index (pandas' own classes, not a subclass of the
    notebook's)."""
    if kind is pandas.Series or kind is pandas.DataFrame:
        return True
    return isinstance(value, pandas.Index) and _in_package(_module_of(kind), "pandas")


def _state_in_dict(kind):
    """Whether an object of ``kind`` keeps its whole state in its ``__dict__``: every class of
    its is the notebook's, scikit-learn's or ``object``/``abc``'s, and none declares
    ``__slots__`` (a scikit-learn estimator, the notebook's own transformer built on one)."""
    for base in _mro_of(kind):
        module = _module_of(base)
        if base is object:
            continue
        if not (module == "__main__" or _in_package(module, "sklearn") or module == "abc"):
            return False
        if "__slots__" in _class_dict(base):
            return False
    return True


def data_names(request):
    """``{"names": [...]}`` to ``{"protocol", "data": [...], "alone": {name: [names]}}``: the
    names that hold a numpy array or a pandas series, frame or index whose values are numbers,
    strings or other immutable scalars (no object a read could hand out and the cell then
    change): reading such data by subscript, attribute or operator leaves it as it was
    (``crane_analysis::Prior::Data``); and of those, the arrays only the namespace reaches, with
    the names bound to their memory (``crane_alone.py``)."""
    request = _parse_request(request)
    shell = _shell()
    namespace = shell.user_ns if shell is not None else {}
    found = []
    for name in request.get("names") or []:
        if type(name) is not str:
            continue
        value = dict.get(namespace, name, _absent)
        try:
            with _guard:
                if value is not _absent and _holds_only_scalars(value):
                    found.append(name)
        except _UserCode:
            _guard.rearm()
        except Exception:
            pass
    # Counted by reference: this function holds none of the arrays while they are counted.
    value = None
    try:
        alone = alone_arrays(shell, namespace, found)
    except Exception:
        alone = {}
    return _answer({"protocol": PROTOCOL, "data": found, "alone": alone})


# What pandas' ``infer_dtype`` says of values that are all immutable scalars.
_SCALAR_KINDS = frozenset({
    "string", "bytes", "floating", "integer", "mixed-integer-float", "decimal", "complex",
    "boolean", "datetime64", "datetime", "date", "timedelta64", "timedelta", "time", "empty",
})


def _holds_only_scalars(value):
    numpy = sys.modules.get("numpy")
    pandas = sys.modules.get("pandas")
    kind = type(value)
    if numpy is not None and kind is numpy.ndarray:
        return not value.dtype.hasobject
    if pandas is None or not _pandas_frame(value, kind, pandas):
        return False
    if kind is pandas.DataFrame:
        columns = [value.iloc[:, position] for position in range(value.shape[1])]
        return all(_scalar_values(column.array, pandas) for column in columns) and _scalar_values(
            value.index, pandas) and _scalar_values(value.columns, pandas)
    if kind is pandas.Series:
        return _scalar_values(value.array, pandas) and _scalar_values(value.index, pandas)
    return _scalar_values(value, pandas)


def _scalar_values(values, pandas):
    dtype = getattr(values, "dtype", None)
    if dtype is None:
        return False
    if not pandas.api.types.is_object_dtype(dtype):
        return True
    return pandas.api.types.infer_dtype(values, skipna=True) in _SCALAR_KINDS
