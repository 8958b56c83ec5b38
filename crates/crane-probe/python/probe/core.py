# The probe's core: what the probe promises (the docstring below), its imports, budgets and
# limits, what is library code and what is the user's, static attribute reads, JSON values,
# classes by name, and the run of one request (its work and time budget, deferred facts).

"""crane's in-kernel probe: compact summaries of the live objects a notebook cell reads.

crane injects this module through the ``user_expressions`` of a silent execute request, keeps it
in ``sys.modules`` under a private name and calls it through its own shell message (the handler
in front of this source, ``crane_channel.py``). It must be invisible to the user's program:

- it binds no name in the user namespace and prints nothing itself; warnings raised while it
  runs are ignored (without being recorded, so the user still sees them later), and
  ``sys.stdout``/``sys.stderr`` are never replaced, so the user's background threads keep
  printing;
- it never imports anything: a library is looked at only when the user already imported it;
- it never runs user-defined code: attributes of user classes are read statically, subscripts
  are evaluated only on library containers, and no ``__repr__``/``__len__``/property of a user
  class, no generator, iterator, data loader or dataset element is ever touched. Library code
  can still call back into user code (hashing the objects of an object-dtype index, an
  ``isinstance`` that reads ``__class__``), so the probe runs under a trace function that
  stops any call of a Python function defined outside the libraries before its first
  instruction (``_UserCode``); the object whose summary needed it is described by its type
  only;
- it never draws random numbers: large data is sampled at fixed positions (head, tail and a
  fixed stride) and every fact computed on a sample is flagged ``sampled``;
- its cost is bounded: a wall-clock budget checked between objects and columns, and a size
  budget on the JSON it returns;
- the failure of one summarizer degrades to a generic summary of that object.

The answer is an object whose ``repr`` is one JSON document (the runtime-facts vocabulary of
``docs/runtime-facts.md``), so that the kernel returns it as ``text/plain`` without printing.
Standard library only.
"""

import ast
import builtins
import contextlib
import inspect
import math
import os
import sys
import sysconfig
import time
import types

PROTOCOL = 1

DEFAULT_BUDGET_MS = 1_000.0
# Value facts cost work, counted in elements scanned (an element of object or string data
# counts OBJECT_ELEMENT_COST); the budget makes the facts the same on a fast and a slow machine.
DEFAULT_WORK = 20_000_000
OBJECT_ELEMENT_COST = 10
# Every deferred value computation costs at least this (objects without data to scan).
DEFER_COST = 1_000
DEFAULT_MAX_BYTES = 24_000
MAX_EXPRESSIONS = 200
MAX_COLUMNS = 60
MAX_ITEMS = 8
MAX_NAMES = 20
MAX_STR = 80
MAX_EXAMPLE_STR = 40
MAX_REPR = 200
SMALL_VALUE_ITEMS = 12
ELEMENT_SCAN = 1_000
MAX_MODULES_WALKED = 20_000
# A subscript whose result is a copy (numpy's or torch's advanced indexing, a list of labels of
# a pandas frame before copy-on-write) is not evaluated when the copy could be larger than
# this: the probe must not allocate memory the user's kernel may not have.
MAX_COPY_BYTES = 64 * 1024 * 1024

# Numeric data up to this many elements is scanned whole; above it, a sample of evenly spaced
# contiguous blocks, the first at the head and the last at the tail (blocks rather than single
# points keep page faults few on memory-mapped files).
NUMERIC_FULL_SCAN = 1_000_000
NUMERIC_BLOCKS = 32
NUMERIC_BLOCK_LEN = 4_096
# Object and string data is slower per element.
OBJECT_FULL_SCAN = 100_000
# The numeric columns of one dtype are read as one block when there are at least this many
# (selecting the block costs about as much as four single columns) and the block holds at most
# this many elements.
BATCH_COLUMNS = 6
BATCH_ELEMENTS = 1_000_000
OBJECT_BLOCKS = 16
OBJECT_BLOCK_LEN = 1_024
MAPPED_BLOCKS = 2
# Elements whose distinct count decides whether a numeric column is low-cardinality.
CARDINALITY_HEAD = 10_000
# A float or int column with at most this many distinct values in its sample is low-cardinality.
LOW_CARDINALITY = 20
PEEK_ELEMENTS = 64

_MISSING = object()
_NO_JSON = object()

_type_dict = type.__dict__
_module_of = _type_dict["__module__"].__get__
_qualname_of = _type_dict["__qualname__"].__get__
_class_dict = _type_dict["__dict__"].__get__
_module_dict = types.ModuleType.__dict__["__dict__"].__get__
_object_getattribute = object.__getattribute__
_perf = time.perf_counter

# The functions of ``ast`` and ``inspect`` the probe calls, resolving builtins in crane's
# snapshot (``crane_guard.py``).
_ast = _private_functions(ast)
_inspect = _private_functions(inspect)

_SAFE_DESCRIPTOR_TYPES = (
    type(type.__dict__["__mro__"]),  # getset_descriptor
    type(types.FunctionType.__dict__["__globals__"]),  # member_descriptor
    type(str.join),  # method_descriptor
    type(object.__init__),  # wrapper_descriptor
    type(dict.__dict__["fromkeys"]),  # classmethod_descriptor
)


# Errors that steer the evaluation of an expression.




class _Missing(Exception):
    """The root name is bound neither in the user namespace nor in builtins."""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


class _Refused(Exception):
    """Evaluating the expression would run user code, import, or cost too much."""

    def __init__(self, reason, owner=None):
        super().__init__(reason)
        self.reason = reason
        self.owner = owner


class _Absent(Exception):
    """The attribute or key does not exist on the object."""

    def __init__(self, entry):
        super().__init__("absent")
        self.entry = entry


class _Raised(Exception):
    """Library code raised something other than a missing attribute or key."""

    def __init__(self, exc, owner):
        super().__init__(type(exc).__name__)
        self.exc = exc
        self.owner = owner


# What is library code and what is the user's.

_library_module_cache = {}
_KNOWN_LIBRARIES = frozenset(
    (
        "numpy",
        "pandas",
        "sklearn",
        "scipy",
        "torch",
        "tensorflow",
        "keras",
        "tf_keras",
        "matplotlib",
        "seaborn",
        "statsmodels",
        "IPython",
        "ipykernel",
    )
)


def _module_is_library(name):
    cached = _library_module_cache.get(name)
    if cached is not None:
        return cached
    result = _decide_module_is_library(name)
    _library_module_cache[name] = result
    return result


def _decide_module_is_library(name):
    if type(name) is not str or not name or name == "__main__":
        return False
    root = name.partition(".")[0]
    if root == "builtins" or root in sys.builtin_module_names:
        return True
    module = sys.modules.get(name) or sys.modules.get(root)
    location = None
    if _is_a(module, types.ModuleType):
        namespace = _module_dict(module)
        location = namespace.get("__file__")
        if type(location) is not str:
            search = namespace.get("__path__")
            try:
                location = next(iter(search), None) if search is not None else None
            except Exception:
                location = None
    if type(location) is not str:
        return root in _KNOWN_LIBRARIES
    for form in (_path["abspath"](location), _path["realpath"](location)):
        if form.startswith(_roots()):
            return True
    return False


def _is_library_class(cls):
    try:
        return _module_is_library(_module_of(cls))
    except Exception:
        return False


def _mro(cls):
    try:
        return _mro_of(cls)
    except Exception:
        return (cls,)


def _qualified(cls):
    try:
        module = _module_of(cls)
        qualname = _qualname_of(cls)
    except Exception:
        return "<unknown>"
    if module == "builtins":
        return "builtins." + qualname
    return f"{module}.{qualname}"


def _short(cls):
    try:
        return _qualname_of(cls)
    except Exception:
        return "<unknown>"


def _inherits(cls, target):
    # A plain loop: this runs dozens of times per object, and any() over a generator is slow.
    for klass in _mro(cls):
        if klass is target:
            return True
    return False


def _is_a(obj, cls):
    """``isinstance`` without consulting ``obj.__class__`` (which user code can define)."""
    return _inherits(type(obj), cls)


def _one_of(value, candidates):
    """``value in candidates`` by identity: ``in`` compares with ``==``, which a user
    metaclass can define."""
    for candidate in candidates:
        if value is candidate:
            return True
    return False


def _type_in(obj, candidates):
    return _one_of(type(obj), candidates)


def _lookup(cls, name):
    """The class in the MRO that defines ``name``, and the raw value it defines."""
    for klass in _mro(cls):
        namespace = _class_dict(klass)
        if name in namespace:
            return klass, namespace[name]
    return None, _MISSING


# Builtin types whose own ``__getattribute__`` slot is the generic lookup that
# ``inspect.getattr_static`` follows.
_GENERIC_LOOKUP_TYPES = (object, str, int, float, complex, bool, bytes, bytearray, list, tuple, dict, set, frozenset, range, slice, memoryview, types.SimpleNamespace)


def _dynamic_lookup(cls):
    """Whether Python's lookup of an attribute on instances of ``cls`` may find one the MRO
    dicts do not show: a ``__getattr__``, a ``__getattribute__`` written in Python, or a C
    type's own lookup (a record array's fields, a weak proxy's referent)."""
    for klass in _mro(cls):
        namespace = _class_dict(klass)
        if "__getattr__" in namespace:
            return True
        if "__getattribute__" in namespace and not any(klass is generic for generic in _GENERIC_LOOKUP_TYPES):
            return True
    return False


def _instance_dict(obj):
    try:
        namespace = _object_getattribute(obj, "__dict__")
    except Exception:
        return {}
    return namespace if type(namespace) is dict else {}


def _static_get(obj, name, default=None):
    """An attribute read without running user code: instance dict, class dict, or a
    descriptor or ``__getattr__`` that library code defines."""
    cls = type(obj)
    owner, raw = _lookup(cls, name)
    namespace = _instance_dict(obj)
    descriptor_type = type(raw) if raw is not _MISSING else None
    is_data_descriptor = descriptor_type is not None and (
        _lookup(descriptor_type, "__set__")[0] is not None
        or _lookup(descriptor_type, "__delete__")[0] is not None
    )
    if not is_data_descriptor and name in namespace:
        return namespace[name]
    if raw is _MISSING:
        getattr_owner, hook = _lookup(cls, "__getattr__")
        if getattr_owner is not None and _is_library_class(getattr_owner):
            try:
                return hook(obj, name)
            except Exception:
                return default
        return default
    if _lookup(descriptor_type, "__get__")[0] is None:
        return raw
    if type(raw) is types.FunctionType:
        return types.MethodType(raw, obj)
    if type(raw) is staticmethod:
        return raw.__func__
    if type(raw) is classmethod:
        return types.MethodType(raw.__func__, cls)
    if _type_in(raw, _SAFE_DESCRIPTOR_TYPES) or (
        _is_library_class(owner) and _is_library_class(descriptor_type)
    ):
        try:
            return raw.__get__(obj, cls)
        except Exception:
            return default
    return default


def _get(obj, name, default=None):
    """An attribute read: plain ``getattr`` for library objects, a static read otherwise."""
    if _is_library_class(type(obj)):
        try:
            return getattr(obj, name)
        except Exception:
            return default
    return _static_get(obj, name, default)


def _opaque(value):
    """A value of a class defined outside the libraries: nothing is read from it."""
    return not _is_library_class(type(value))


def _plain_sequence(value):
    """``value`` when it is a plain list or tuple, else an empty tuple (an attribute the user
    set to something else is not looked into)."""
    return value if _type_in(value, (list, tuple)) else ()


def _tensor_items(tensors):
    """The items of a ``TensorDataset.tensors`` that are library tensors, or None when any is
    not (the user replaced them)."""
    items = _plain_sequence(tensors)
    if any(_opaque(t) for t in items[:MAX_ITEMS + 1]):
        return None
    return items


def _safe_len(obj):
    """``len(obj)`` when the type's ``__len__`` is library code."""
    owner, _ = _lookup(type(obj), "__len__")
    if owner is None or not _is_library_class(type(obj)) or not _is_library_class(owner):
        return None
    try:
        n = len(obj)
    except Exception:
        return None
    return n if type(n) is int else None


# JSON values.


def _number(x, digits=None):
    if type(x) is bool:
        return x
    if type(x) is int:
        if -(2**63) <= x < 2**64:
            return x
        return _number(float(x), digits) if x.bit_length() < 1000 else "inf" if x > 0 else "-inf"
    if type(x) is float:
        if x != x:
            return "NaN"
        if x == math.inf:
            return "inf"
        if x == -math.inf:
            return "-inf"
        if digits is not None and x != 0.0:
            return float(f"{x:.{digits}g}")
        return x
    return _NO_JSON


def _python_scalar(x):
    """A plain Python scalar for builtin and library scalars, else ``_NO_JSON``."""
    cls = type(x)
    if x is None or _one_of(cls, (bool, int, float, str)):
        return x
    if cls is bytes:
        return x
    names = _class_names(cls)
    if ("numpy", "generic") in names:
        try:
            value = x.item()
        except Exception:
            return _NO_JSON
        if _type_in(value, (bool, int, float, str, bytes)) or value is None:
            return value
        return _isoformat(value)
    if ("pandas", "Timestamp") in names or ("pandas", "Timedelta") in names:
        return _isoformat(x)
    if _module_of(cls) == "datetime":
        return _isoformat(x)
    if ("pandas", "NAType") in names or ("pandas", "NaTType") in names:
        return None
    return _NO_JSON


def _isoformat(x):
    try:
        method = _get(x, "isoformat")
        text = method() if method is not None else None
    except Exception:
        text = None
    return text if type(text) is str else _NO_JSON


def _truncate(text, limit):
    if len(text) <= limit:
        return text, False
    return text[: limit - 1] + "\u2026", True


def _scalar_json(x, digits=None, limit=MAX_STR):
    value = _python_scalar(x)
    if value is _NO_JSON:
        return _NO_JSON
    if type(value) is str:
        return _truncate(value, limit)[0]
    if type(value) is bytes:
        return _truncate(repr(value[: limit + 8]), limit)[0]
    if value is None:
        return None
    return _number(value, digits)


def _label(x, limit=MAX_EXAMPLE_STR):
    """A short JSON rendering of a key or example value, never running user code."""
    value = _scalar_json(x, limit=limit)
    if value is not _NO_JSON:
        return value
    if type(x) is tuple and len(x) <= 6:
        parts = []
        for item in x:
            part = _scalar_json(item, limit=limit)
            if part is _NO_JSON:
                part = "<" + _short(type(item)) + ">"
            parts.append(_json_dumps(part, ensure_ascii=False) if type(part) is str else str(part))
        return _truncate("(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")", limit)[0]
    return "<" + _qualified(type(x)) + ">"


def _small_value(x, depth=2, seen=None):
    """The JSON value of a small container of scalars, or ``_NO_JSON``."""
    value = _scalar_json(x)
    if value is not _NO_JSON:
        return value
    cls = type(x)
    if not _one_of(cls, (list, tuple, dict)) or depth == 0:
        return _NO_JSON
    seen = seen or set()
    if id(x) in seen:
        return _NO_JSON
    seen = seen | {id(x)}
    if len(x) > SMALL_VALUE_ITEMS:
        return _NO_JSON
    if cls is dict:
        result = {}
        for key, item in x.items():
            if type(key) is not str:
                return _NO_JSON
            inner = _small_value(item, depth - 1, seen)
            if inner is _NO_JSON:
                return _NO_JSON
            result[key] = inner
        return result
    result = []
    for item in x:
        inner = _small_value(item, depth - 1, seen)
        if inner is _NO_JSON:
            return _NO_JSON
        result.append(inner)
    return result


def _shape_list(shape):
    try:
        dims = list(shape)
    except Exception:
        return None
    result = []
    for dim in dims:
        if dim is None:
            result.append(None)
            continue
        try:
            result.append(int(dim))
        except Exception:
            result.append(None)
    return result


# Classes by name: (top-level package, qualname) pairs of a type's MRO, never importing.


def _class_names(cls):
    names = []
    for klass in _mro(cls):
        try:
            module = _module_of(klass)
            qualname = _qualname_of(klass)
        except Exception:
            continue
        if type(module) is str:
            names.append((module.partition(".")[0], qualname))
    return names


def _find_class(cls, root, qualname):
    for klass in _mro(cls):
        try:
            if _qualname_of(klass) == qualname and _module_of(klass).partition(".")[0] == root:
                return klass
        except Exception:
            continue
    return None


def _library(name):
    """An already imported library module, or None: the probe never imports."""
    module = sys.modules.get(name)
    return module if _is_a(module, types.ModuleType) else None


# The run of one request.


class _Run:
    """The limits of one request. Value facts are bounded by a work budget (elements scanned),
    which is deterministic; the wall-clock budget is only a safety net for objects slower than
    their size says."""

    def __init__(self, budget_ms, work=DEFAULT_WORK):
        self.start = _perf()
        self.deadline = self.start + max(budget_ms, 1.0) / 1000.0
        self.structure_deadline = self.start + 2 * max(budget_ms, 1.0) / 1000.0
        self.work_left = work
        self.deferred = []
        self.sampled = False
        self.class_is_library = {}

    def expired(self):
        return _perf() > self.deadline

    def structure_expired(self):
        """Structure facts are cheap and worth more than values: they get twice the budget."""
        return _perf() > self.structure_deadline

    def afford(self, cost):
        """Spend `cost` units of work if the budget still holds them."""
        if cost > self.work_left:
            return False
        self.work_left -= cost
        return True

    def out_of_budget(self, cost):
        """Why a computation of `cost` units cannot run, or None (and the work is spent)."""
        if self.expired():
            return "time budget"
        if not self.afford(cost):
            return "work budget"
        return None

    def defer(self, entry, compute, cost=DEFER_COST, plain=False):
        """Computes value facts later, within the budget. `plain`: the data holds only library
        objects and plain scalars (see `_plain_pandas`), so the computation runs without the
        guard against user code."""
        self.deferred.append((entry, compute, max(cost, DEFER_COST), plain))

    def mark_sampled(self, entry):
        entry["sampled"] = True
        self.sampled = True


def _entry(cls, kind):
    return {"type": _qualified(cls), "kind": kind, "S": {}, "R": {}, "V": {}}
