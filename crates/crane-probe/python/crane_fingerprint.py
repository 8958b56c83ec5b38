"""crane's fingerprints of the kernel's objects: what a failed cell's part that ran may have
changed, told from evidence rather than syntax. The kernel and its snapshot from before the
cell (a fork: the same objects at the same addresses, the same hash seed) each fingerprint the
objects the cell read by name; equal fingerprints mean the part of the cell that ran left those
objects as they were, so running the cell again reads what it read the first time.

A fingerprint is a digest of an object's value, walked through the kinds whose whole value
crane can read without running code of theirs (allow by default nothing): ``None``, numbers,
strings, bytes; tuples, lists, dicts, sets of those; numpy arrays (their dtype, shape and bytes)
and scalars; pandas ``Series``, ``DataFrame`` and ``Index`` (their index, columns, dtypes and
values); scikit-learn estimators (their class and their ``__dict__``); and, by identity (the
same in the kernel and its fork), modules, classes and functions a library defines. Anything
else reachable from the object, a class or a function of the notebook's among them (calling it
may read and change what the cell never names), an object of a class the notebook defined, a
torch tensor, a Keras model, leaves the name without a fingerprint: crane then cannot tell, and
the failed cell is rolled back. The walk runs under the guard against user code (a library call
that would run the notebook's code gives no fingerprint) and within a budget of bytes and
objects.

crane calls ``fingerprint(request)`` (``{"names": [...]}``) in the kernel through its call
channel, and ``fingerprint REQUEST`` on a snapshot's socket; both answer ``{"protocol",
"fingerprints": {name: hex digest, or null where there is none, or "absent"}}``.
"""

import hashlib

# What one fingerprint may read: bytes of array data, and objects walked.
_FINGERPRINT_BYTES = 2 << 30
_FINGERPRINT_OBJECTS = 1_000_000
_FINGERPRINT_DEPTH = 64


class _NoFingerprint(Exception):
    """The object holds something whose value crane cannot read without running its code."""


def fingerprint(request):
    request = _parse_request(request)
    return _answer({"protocol": PROTOCOL, "fingerprints": _fingerprints(request.get("names") or [])})


def _fingerprints(names):
    shell = _shell()
    namespace = shell.user_ns if shell is not None else {}
    found = {}
    for name in names:
        if type(name) is not str:
            continue
        value = dict.get(namespace, name, _absent)
        if value is _absent:
            found[name] = "absent"
            continue
        try:
            with _guard:
                found[name] = _Fingerprint(namespace).of(value)
        except _UserCode:
            _guard.rearm()
            found[name] = None
        except (_NoFingerprint, RecursionError, MemoryError):
            found[name] = None
        except Exception:
            found[name] = None
    return found


class _Fingerprint:
    def __init__(self, namespace):
        self.digest = hashlib.blake2b(digest_size=20)
        self.main = namespace
        self.bytes_left = _FINGERPRINT_BYTES
        self.objects_left = _FINGERPRINT_OBJECTS
        # Containers being walked, by id: a cycle is written as a reference to its start.
        self.walking = {}

    def of(self, value):
        self.walk(value, 0)
        return self.digest.hexdigest()

    def put(self, tag, data=b""):
        self.digest.update(tag.encode("ascii") + len(data).to_bytes(8, "little") + data)

    def walk(self, value, depth):
        self.objects_left -= 1
        if self.objects_left < 0 or depth > _FINGERPRINT_DEPTH:
            raise _NoFingerprint()
        kind = type(value)
        if value is None or kind is bool:
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
        key = id(value)
        if key in self.walking:
            self.put("@", str(self.walking[key]).encode())
            return
        self.walking[key] = depth
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
            del self.walking[key]

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
        elif isinstance(value, types.ModuleType):
            self.put("m", str(id(value)).encode())
        elif kind is type or isinstance(value, type):
            if _module_of(value) == "__main__":
                raise _NoFingerprint()
            self.put("t", str(id(value)).encode())
        elif kind is types.FunctionType:
            if value.__globals__ is self.main:
                raise _NoFingerprint()
            self.put("f", str(id(value)).encode())
        elif kind is types.BuiltinFunctionType or (numpy is not None and kind is numpy.ufunc):
            self.put("f", str(id(value)).encode())
        elif _in_package(_module_of(kind), "sklearn") and _sklearn_estimator(kind):
            self.estimator(value, kind, depth)
        else:
            raise _NoFingerprint()

    def array(self, value, depth):
        self.put("a", (value.dtype.str + str(value.shape)).encode())
        if value.dtype.hasobject:
            for item in value.flat:
                self.walk(item, depth + 1)
            return
        self.bytes_left -= value.nbytes
        if self.bytes_left < 0:
            raise _NoFingerprint()
        if not value.flags.c_contiguous:
            value = value.copy(order="C")
        self.digest.update(value.reshape(-1).view("u1").data)

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

    def estimator(self, value, kind, depth):
        self.put("e", str(id(kind)).encode())
        state = object.__getattribute__(value, "__dict__")
        if type(state) is not dict:
            raise _NoFingerprint()
        self.container(state, dict, depth + 1)


def _in_package(module, package):
    return type(module) is str and (module == package or module.startswith(package + "."))


def _pandas_frame(value, kind, pandas):
    """A pandas ``Series``, ``DataFrame`` or index (pandas' own classes, not a subclass of the
    notebook's)."""
    if kind is pandas.Series or kind is pandas.DataFrame:
        return True
    return isinstance(value, pandas.Index) and _in_package(_module_of(kind), "pandas")


def _sklearn_estimator(kind):
    """Whether every class of ``kind``'s is scikit-learn's or Python's own: an estimator whose
    whole state is its ``__dict__``, no class of the notebook's mixed in."""
    for base in type.__dict__["__mro__"].__get__(kind):
        module = _module_of(base)
        if not (_in_package(module, "sklearn") or module == "builtins" or module == "abc"):
            return False
        if "__slots__" in type.__dict__["__dict__"].__get__(base) and module != "builtins":
            return False
    return True
