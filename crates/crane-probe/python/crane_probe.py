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
_mro_of = _type_dict["__mro__"].__get__
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


# Builtin values.


def _summarize_none(obj, entry, run):
    pass


def _summarize_scalar(obj, entry, run):
    value = _number(obj)
    if value is not _NO_JSON:
        entry["V"]["value"] = value


def _summarize_int(obj, entry, run):
    if obj.bit_length() <= 64:
        entry["V"]["value"] = obj
    else:
        entry["V"]["value"] = _number(float(obj)) if obj.bit_length() < 1000 else "inf"
        entry["R"]["bits"] = obj.bit_length()


def _summarize_complex(obj, entry, run):
    entry["V"]["value"] = repr(obj)


def _summarize_str(obj, entry, run):
    entry["S"]["len"] = len(obj)
    text, truncated = _truncate(obj, MAX_STR)
    entry["V"]["value"] = text
    if truncated:
        entry["V"]["value_truncated"] = True


def _summarize_bytes(obj, entry, run):
    entry["S"]["len"] = len(obj)
    text, truncated = _truncate(repr(bytes(obj[: MAX_STR + 8])), MAX_STR)
    entry["V"]["value"] = text
    if truncated:
        entry["V"]["value_truncated"] = True


def _element_types(items):
    """The most frequent element types among the first items (counted by type identity: a
    user metaclass may define ``__hash__``)."""
    counts = {}
    classes = {}
    scanned = 0
    for item in items:
        if scanned >= ELEMENT_SCAN:
            break
        scanned += 1
        cls = type(item)
        key = id(cls)
        classes[key] = cls
        counts[key] = counts.get(key, 0) + 1
    ordered = sorted(counts, key=lambda key: -counts[key])
    return [_qualified(classes[key]) for key in ordered[:MAX_ITEMS]], scanned


def _summarize_sequence(obj, entry, run):
    n = len(obj)
    entry["S"]["len"] = n
    if n == 0:
        return
    if _type_in(obj, (set, frozenset)):
        items = obj
    else:
        items = obj[:ELEMENT_SCAN] if _type_in(obj, (list, tuple)) else obj
    element_types, scanned = _element_types(items)
    entry["R"]["element_types"] = element_types
    if scanned < n:
        entry["R"]["element_types_scanned"] = scanned
    value = _small_value(obj) if _type_in(obj, (list, tuple)) else _NO_JSON
    if value is not _NO_JSON:
        entry["V"]["value"] = value
        return
    examples = []
    for index, item in enumerate(items):
        if index >= 3:
            break
        examples.append(_label(item))
    entry["V"]["examples"] = examples


def _summarize_dict(obj, entry, run):
    n = len(obj)
    entry["S"]["len"] = n
    keys = []
    key_types = set()
    for index, key in enumerate(obj):
        if index >= MAX_NAMES:
            break
        keys.append(_label(key))
        key_types.add(_qualified(type(key)))
    entry["R"]["keys"] = keys
    # A lookup compares keys by their class's __hash__ and __eq__: which classes they are.
    entry["R"]["key_types"] = sorted(key_types)
    if n > len(keys):
        entry["R"]["keys_truncated"] = n - len(keys)
    if n:
        entry["R"]["element_types"] = _element_types(obj.values())[0]
    value = _small_value(obj)
    if value is not _NO_JSON:
        entry["V"]["value"] = value


def _summarize_range(obj, entry, run):
    entry["S"]["len"] = len(obj)
    entry["R"].update({"start": obj.start, "stop": obj.stop, "step": obj.step})


def _signature_of_code(function, skip_first=False):
    """``(a, b=2, *args, c, **kw)`` from a function's code object, rendering only builtin
    scalar defaults (a default's repr could be user code)."""
    code = function.__code__
    names = code.co_varnames
    positional = code.co_argcount
    keyword_only = code.co_kwonlyargcount
    posonly = code.co_posonlyargcount
    defaults = function.__defaults__ or ()
    kwdefaults = function.__kwdefaults__ or {}
    parts = []

    def default_text(value):
        if not _type_in(value, (bool, int, float, str, type(None))):
            return "..."
        return _truncate(repr(value), 24)[0]

    first_default = positional - len(defaults)
    for index in range(positional):
        text = names[index]
        if index >= first_default:
            text += "=" + default_text(defaults[index - first_default])
        parts.append(text)
        if posonly and index == posonly - 1:
            parts.append("/")
    cursor = positional + keyword_only
    if code.co_flags & inspect.CO_VARARGS:
        parts.append("*" + names[cursor])
        cursor += 1
    elif keyword_only:
        parts.append("*")
    for index in range(positional, positional + keyword_only):
        text = names[index]
        if names[index] in kwdefaults:
            text += "=" + default_text(kwdefaults[names[index]])
        parts.append(text)
    if code.co_flags & inspect.CO_VARKEYWORDS:
        parts.append("**" + names[cursor])
    if skip_first and parts and parts[0] not in ("/", "*") and not parts[0].startswith("*"):
        parts = parts[1:]
        if parts and parts[0] == "/":
            parts = parts[1:]
    return _truncate("(" + ", ".join(parts) + ")", MAX_REPR)[0]


def _summarize_function(obj, entry, run):
    entry["R"]["name"] = _truncate(str(obj.__qualname__), MAX_STR)[0]
    module = obj.__module__
    if type(module) is str:
        entry["R"]["module"] = module
    if not _module_is_library(module):
        entry["R"]["signature"] = _signature_of_code(obj)


def _summarize_class(obj, entry, run):
    entry["R"]["name"] = _qualified(obj)
    library = _is_library_class(obj)
    entry["R"]["library"] = library
    bases = [_qualified(k) for k in _mro(obj)[1:-1] if _is_library_class(k)]
    if not library and bases:
        entry["R"]["library_bases"] = bases[:MAX_ITEMS]
    if not library:
        owner, init = _lookup(obj, "__init__")
        if type(init) is types.FunctionType and not _is_library_class(owner):
            entry["R"]["signature"] = _signature_of_code(init, skip_first=True)


def _summarize_method(obj, entry, run):
    function = obj.__func__
    owner = obj.__self__
    entry["R"]["name"] = _truncate(str(getattr(function, "__qualname__", "?")), MAX_STR)[0]
    owner_type = owner if _is_a(owner, type) else type(owner)
    entry["R"]["owner_type"] = _qualified(owner_type)
    if type(function) is types.FunctionType and not _module_is_library(function.__module__):
        entry["R"]["signature"] = _signature_of_code(function, skip_first=True)
    fitted = _owner_fitted(owner)
    if fitted is not None:
        entry["R"]["owner_fitted"] = fitted


def _summarize_builtin(obj, entry, run):
    name = _static_get(obj, "__qualname__") or _static_get(obj, "__name__")
    if type(name) is str:
        entry["R"]["name"] = _truncate(name, MAX_STR)[0]
    owner = _static_get(obj, "__self__")
    if owner is not None and not _is_a(owner, types.ModuleType):
        entry["R"]["owner_type"] = _qualified(owner if _is_a(owner, type) else type(owner))
        fitted = _owner_fitted(owner)
        if fitted is not None:
            entry["R"]["owner_fitted"] = fitted


def _summarize_module(obj, entry, run):
    namespace = _module_dict(obj)
    name = namespace.get("__name__")
    if type(name) is str:
        entry["R"]["module"] = name
    version = namespace.get("__version__")
    if type(version) is str:
        entry["R"]["version"] = _truncate(version, 40)[0]


def _summarize_generator(obj, entry, run):
    entry["R"]["iterator"] = True
    try:
        if type(obj) is types.GeneratorType:
            entry["R"]["state"] = _inspect["getgeneratorstate"](obj)
        elif type(obj) is types.CoroutineType:
            entry["R"]["state"] = _inspect["getcoroutinestate"](obj)
    except Exception:
        pass


# numpy.


def _numpy():
    return _library("numpy")


def _scan_cost(n, numeric, mapped=False):
    """The work of scanning the deterministic sample of `n` elements."""
    ranges = _sample_ranges(n, numeric, mapped)
    scanned = n if ranges is None else sum(stop - start for start, stop in ranges)
    return scanned if numeric else scanned * OBJECT_ELEMENT_COST


def _sample_ranges(n, numeric, mapped=False):
    """``None`` when ``n`` elements are scanned whole, else the ``(start, stop)`` blocks of the
    deterministic sample (fewer for a memory-mapped file, where each block is a disk read)."""
    full, blocks, length = (
        (NUMERIC_FULL_SCAN, NUMERIC_BLOCKS, NUMERIC_BLOCK_LEN)
        if numeric
        else (OBJECT_FULL_SCAN, OBJECT_BLOCKS, OBJECT_BLOCK_LEN)
    )
    if mapped:
        blocks = MAPPED_BLOCKS
    if n <= full:
        return None
    span = n - length
    return [(i * span // (blocks - 1), i * span // (blocks - 1) + length) for i in range(blocks)]


def _array_sample(np, array, size, numeric, run, entry):
    """The array itself when small, else its deterministic sample as a flat array."""
    mapped = _find_class(type(array), "numpy", "memmap") is not None
    ranges = _sample_ranges(size, numeric, mapped)
    if ranges is None:
        return array
    run.mark_sampled(entry)
    # A contiguous array is sliced as a flat view (memcpy); flatiter copies element-wise.
    flat = array.reshape(-1) if array.flags.c_contiguous else array.flat
    return np.concatenate([flat[start:stop] for start, stop in ranges])


def _numeric_stats(np, values, facts):
    """min/max/has_nan/has_inf of a numeric array (NaN-aware, no allocation but the reductions)."""
    kind = values.dtype.kind
    if values.size == 0:
        return
    if kind == "f":
        with np.errstate(all="ignore"):
            lowest = np.fmin.reduce(values, axis=None)
            highest = np.fmax.reduce(values, axis=None)
            has_nan = bool(np.isnan(values.min())) or bool(np.isnan(lowest))
        facts["has_nan"] = has_nan
        facts["has_inf"] = bool(np.isinf(lowest)) or bool(np.isinf(highest))
        facts["min"] = _number(float(lowest), 6)
        facts["max"] = _number(float(highest), 6)
    elif kind in "iu":
        facts["min"] = _number(int(values.min()))
        facts["max"] = _number(int(values.max()))
    elif kind == "b":
        facts["n_true"] = int(np.count_nonzero(values))
    elif kind == "c":
        facts["has_nan"] = bool(np.isnan(values).any())
    elif kind in "Mm":
        nat = np.isnat(values)
        facts["nulls"] = int(np.count_nonzero(nat))
        valid = values[~nat] if facts["nulls"] else values
        if valid.size:
            facts["min"] = str(valid.min())
            facts["max"] = str(valid.max())


def _summarize_ndarray(obj, entry, run):
    np = _numpy()
    cls = type(obj)
    names = _class_names(cls)
    entry["S"]["shape"] = _shape_list(obj.shape)
    entry["S"]["ndim"] = int(obj.ndim)
    entry["R"]["dtype"] = str(obj.dtype)
    if ("numpy", "memmap") in names:
        entry["R"]["memmap"] = True
    masked = ("numpy", "MaskedArray") in names
    if masked:
        entry["R"]["masked"] = True
    if np is None:
        return
    size = int(obj.size)
    if size <= SMALL_VALUE_ITEMS and obj.dtype.kind not in "OV":
        value = _small_value(obj.tolist())
        if value is not _NO_JSON:
            entry["V"]["value"] = value
    mapped = ("numpy", "memmap") in names
    cost = _scan_cost(size, obj.dtype.kind in "fiubcMm", mapped)
    plain = type(obj) is np.ndarray and obj.dtype.kind in "fiubMm"
    run.defer(entry, lambda: _array_values(np, obj, size, masked, entry, run), cost, plain=plain)


def _array_values(np, obj, size, masked, entry, run):
    facts = entry["V"]
    kind = obj.dtype.kind
    if masked:
        ma = np.ma
        n_masked = int(ma.count_masked(obj))
        facts["n_masked"] = n_masked
        data = ma.MaskedArray.compressed(obj) if size <= NUMERIC_FULL_SCAN else None
        if data is None:
            run.mark_sampled(entry)
            sample = _array_sample(np, np.asarray(obj.data), size, True, run, entry)
            mask = _array_sample(np, ma.getmaskarray(obj), size, True, run, entry)
            data = sample[~mask]
        if kind in "fiubcMm":
            _numeric_stats(np, data, facts)
        return
    if kind in "fiubcMm":
        _numeric_stats(np, _array_sample(np, obj, size, True, run, entry), facts)
    elif kind in "OUS":
        sample = _array_sample(np, obj, size, False, run, entry)
        head = sample.flat[0 : min(ELEMENT_SCAN, sample.size)]
        if kind == "O":
            entry["R"]["element_types"] = _element_types(head)[0]
        if "value" not in facts:
            facts["examples"] = [_label(x) for x in head[:3]]


def _summarize_numpy_scalar(obj, entry, run):
    entry["R"]["dtype"] = str(obj.dtype)
    value = _scalar_json(obj)
    if value is not _NO_JSON:
        entry["V"]["value"] = value


# pandas.


def _pandas():
    return _library("pandas")


_dtype_names = {}


def _dtype_str(dtype):
    """``str(dtype)``, remembered for numpy's own dtypes of plain scalars: their ``__str__`` is
    Python code in numpy, run for every column of every frame, and their hash and equality are
    C (an equal dtype prints the same)."""
    if _module_of(type(dtype)) != "numpy.dtypes" or getattr(dtype, "kind", "V") not in "biufcmMSU":
        return str(dtype)
    name = _dtype_names.get(dtype)
    if name is None:
        name = str(dtype)
        if len(_dtype_names) < 256:
            _dtype_names[dtype] = name
    return name


def _index_facts(index):
    facts = {"type": _short(type(index)), "dtype": _dtype_str(index.dtype), "nlevels": int(index.nlevels)}
    name = index.name if int(index.nlevels) == 1 else None
    facts["name"] = _label(name) if name is not None else None
    if int(index.nlevels) > 1:
        facts["names"] = [_label(n) if n is not None else None for n in list(index.names)[:MAX_ITEMS]]
    if _short(type(index)) == "RangeIndex":
        facts["range"] = [int(index.start), int(index.stop), int(index.step)]
    return facts


def _index_unique(index, run, entry):
    """Whether the index has no duplicates: exact for a RangeIndex or a small index; for a large
    one, only a duplicate seen in its head is reported."""
    if _short(type(index)) == "RangeIndex":
        return True
    n = len(index)
    if n <= NUMERIC_FULL_SCAN:
        return bool(index.is_unique)
    head = index[:NUMERIC_BLOCK_LEN * NUMERIC_BLOCKS]
    if not head.is_unique:
        return False
    run.mark_sampled(entry)
    return None


def _column_label(name):
    if type(name) is str:
        return _truncate(name, MAX_STR)[0]
    value = _scalar_json(name, limit=MAX_STR)
    if value is _NO_JSON or type(value) is bytes:
        return _label(name, limit=MAX_STR)
    return value


def _column_key(label):
    if type(label) is str:
        return label
    return _json_dumps(label, ensure_ascii=False)


def _series_sample(pd, np, series, numeric, run, entry):
    ranges = _sample_ranges(len(series), numeric)
    if ranges is None:
        return series
    run.mark_sampled(entry)
    positions = np.concatenate([np.arange(start, stop) for start, stop in ranges])
    return series.take(positions)


def _numeric_unique(pd, np, values, kind, stats, peeked=None):
    """The distinct count of a low-cardinality numeric sample, else None. `peeked`: the
    distinct non-NaN count of its first `PEEK_ELEMENTS` values, when the caller knows it."""
    if len(values) == 0:
        return 0
    if kind == "b":
        n_true = stats.get("n_true", 0)
        return int(n_true > 0) + int(n_true < len(values))
    if kind in "iu":
        low, high = stats.get("min"), stats.get("max")
        if type(low) is int and type(high) is int and high - low <= 4 * CARDINALITY_HEAD:
            counts = np.bincount((values - low).astype(np.intp, copy=False))
            n_unique = int(np.count_nonzero(counts))
            return n_unique if n_unique <= LOW_CARDINALITY else None
    if kind not in "iuf":
        return None
    # Most columns are not low-cardinality, and a few dozen elements usually show it cheaply.
    if peeked is None:
        first = values[:PEEK_ELEMENTS]
        if kind == "f":
            first = first[~np.isnan(first)]
        peeked = len(np.unique(first))
    if peeked > LOW_CARDINALITY:
        return None
    head = values[:CARDINALITY_HEAD]
    if len(pd.unique(head)) > LOW_CARDINALITY:
        return None
    n_unique = len(pd.unique(values))
    return n_unique if n_unique <= LOW_CARDINALITY else None


def _numeric_column_values(pd, np, column, run, entry, facts):
    """Value facts of one numeric column held as a numpy array (numpy dtypes only)."""
    kind = column.dtype.kind
    values = _array_sample(np, column, len(column), True, run, entry)
    stats = {}
    _numeric_stats(np, values, stats)
    if kind == "f":
        facts["nulls"] = int(np.count_nonzero(np.isnan(values))) if stats.get("has_nan") else 0
    elif kind in "iub":
        facts["nulls"] = 0
    for key in ("nulls", "min", "max", "has_nan", "has_inf"):
        if key in stats:
            facts[key] = stats[key]
    if kind in "Mm" and "nulls" in stats:
        facts["has_nan"] = stats["nulls"] > 0
    n_unique = _numeric_unique(pd, np, values, kind, stats)
    if n_unique is not None:
        facts["n_unique"] = n_unique


def _series_values(pd, np, series, run, entry, facts, examples=True):
    """Value facts of one column or series: nulls, range, NaN/inf, distinct count, examples."""
    dtype = series.dtype
    kind = getattr(dtype, "kind", "O")
    is_numpy = _module_of(type(dtype)).partition(".")[0] == "numpy"
    name = _dtype_str(dtype)
    if name == "category":
        codes = _array_sample(np, series.cat.codes.to_numpy(), len(series), True, run, entry)
        facts["nulls"] = int(np.count_nonzero(codes < 0))
        categories = series.cat.categories
        facts["n_unique"] = len(categories)
        facts["examples"] = [_label(x) for x in categories[:3]]
        return
    if is_numpy and kind in "fiubMm":
        _numeric_column_values(pd, np, series.to_numpy(), run, entry, facts)
        return
    numeric = kind in "fiub"
    sample = _series_sample(pd, np, series, numeric, run, entry)
    nulls = sample.isna()
    null_count = int(nulls.sum())
    facts["nulls"] = null_count
    valid = sample[~nulls] if null_count else sample
    if numeric:
        if len(valid):
            facts["min"] = _scalar_json(valid.min(), digits=6)
            facts["max"] = _scalar_json(valid.max(), digits=6)
        facts["has_nan"] = null_count > 0
        return
    if kind in "Mm":
        if len(valid):
            facts["min"] = _scalar_json(valid.min())
            facts["max"] = _scalar_json(valid.max())
        facts["has_nan"] = null_count > 0
        return
    try:
        facts["n_unique"] = int(valid.nunique())
    except Exception:
        pass
    if examples:
        seen = []
        for item in valid.iloc[:50]:
            label = _label(item)
            if label not in seen:
                seen.append(label)
            if len(seen) >= 3:
                break
        facts["examples"] = seen
        if name == "object":
            entry_types = _element_types(valid.iloc[:ELEMENT_SCAN])[0]
            if len(entry_types) > 1 or (entry_types and entry_types[0] != "builtins.str"):
                facts["element_types"] = entry_types


# Plain pandas data holds nothing that can run user code: exact pandas types, dtypes of
# numbers, dates, booleans or strings, and labels that are plain scalars.
_PLAIN_LABELS = (str, int, float, bool)
PLAIN_LABEL_SCAN = 10_000


def _plain_dtype(dtype):
    name = _dtype_str(dtype)
    if name in ("str", "string"):
        return True
    if name == "category":
        return _plain_dtype(dtype.categories.dtype)
    return _module_of(type(dtype)).partition(".")[0] in ("numpy", "pandas") and getattr(dtype, "kind", "O") in "fiubMm"


def _plain_index(index):
    if not _is_library_class(type(index)) or int(index.nlevels) != 1:
        return False
    if _plain_dtype(index.dtype):
        return True
    if str(index.dtype) != "object" or len(index) > PLAIN_LABEL_SCAN:
        return False
    return all(_type_in(label, _PLAIN_LABELS) for label in index.to_numpy())


def _plain_attrs(obj):
    """Whether the ``attrs`` of a frame or series hold only plain values: pandas deep-copies
    them in almost every operation (a column, a slice, a head), which would call a held
    object's ``__deepcopy__``. Read from the instance's raw dict, never through the property."""
    attrs = _instance_dict(obj).get("_attrs")
    return attrs is None or (type(attrs) is dict and _plain_value(attrs, 3))


def _plain_value(value, depth):
    if value is None or _type_in(value, _PLAIN_LABELS):
        return True
    if depth == 0 or not _type_in(value, (dict, list, tuple)) or len(value) > SMALL_VALUE_ITEMS:
        return False
    if type(value) is dict:
        return all(_plain_value(k, 0) and _plain_value(v, depth - 1) for k, v in value.items())
    return all(_plain_value(item, depth - 1) for item in value)


def _plain_pandas(obj):
    """Whether summarizing this DataFrame or Series can run no user code at all."""
    if not _is_library_class(type(obj)) or not _plain_attrs(obj) or not _plain_index(obj.index):
        return False
    if _find_class(type(obj), "pandas", "DataFrame") is not None:
        # A wide frame has many columns but few distinct dtypes (which hash in C).
        return _plain_index(obj.columns) and all(_plain_dtype(d) for d in set(obj.dtypes.tolist()))
    return _plain_dtype(obj.dtype)


def _summarize_dataframe(obj, entry, run):
    pd, np = _pandas(), _numpy()
    rows, width = (int(d) for d in obj.shape)
    entry["S"]["shape"] = [rows, width]
    columns = obj.columns
    listed = min(width, MAX_COLUMNS)
    dtypes = obj.dtypes
    # Plain lists: positional lookups on a pandas Index or Series cost microseconds each.
    labels = [_column_label(name) for name in list(columns[:listed])]
    listed_dtypes = list(dtypes.iloc[:listed])
    entry["R"]["columns"] = [
        {"name": label, "dtype": _dtype_str(dtype)} for label, dtype in zip(labels, listed_dtypes)
    ]
    if width > listed:
        entry["R"]["columns_truncated"] = width - listed
        counts = dtypes.value_counts()
        entry["R"]["dtype_counts"] = {
            str(dtype): int(count) for dtype, count in list(counts.items())[:MAX_NAMES]
        }
    if int(columns.nlevels) > 1:
        entry["R"]["columns_nlevels"] = int(columns.nlevels)
    if not columns.is_unique:
        duplicated = columns[columns.duplicated()].unique()
        entry["R"]["duplicated_columns"] = [_column_label(x) for x in duplicated[:MAX_NAMES]]
    entry["R"]["index"] = _index_facts(obj.index)
    run.defer(
        entry,
        lambda: _dataframe_values(pd, np, obj, labels, listed_dtypes, entry, run),
        plain=_plain_pandas(obj),
    )


def _unguarded_if(plain):
    """The guard paused for work on plain data (see `_plain_pandas`), else left on."""
    return _guard.paused() if plain else contextlib.nullcontext()


def _dataframe_values(pd, np, obj, labels, dtypes, entry, run):
    facts = entry["V"]
    # Its index and attrs (deep-copied by every selection) plain: reading it runs no user code.
    index_plain = _plain_attrs(obj) and _plain_index(obj.index)
    with _unguarded_if(index_plain):
        unique = _index_unique(obj.index, run, entry)
    if unique is not None:
        facts["index_unique"] = unique
    columns = {}
    facts["columns"] = columns
    has_nan = False
    has_inf = False
    iloc = obj.iloc
    listed = len(labels)
    with _unguarded_if(index_plain):
        batched = _numeric_batches(pd, np, obj, dtypes)
    rows = int(obj.shape[0])
    for position in range(listed):
        dtype = dtypes[position]
        numeric = getattr(dtype, "kind", "O") in "fiubMm"
        if run.out_of_budget(_scan_cost(rows, numeric)):
            facts["columns_skipped"] = listed - position
            break
        label = _column_key(labels[position])
        if label in columns:
            continue
        column_facts = {}
        try:
            if position in batched:
                column_facts = batched[position]
            else:
                with _unguarded_if(index_plain and _plain_dtype(dtype)):
                    _series_values(pd, np, iloc[:, position], run, entry, column_facts)
        except Exception as exc:
            column_facts["error"] = type(exc).__name__
        columns[label] = column_facts
        has_nan = has_nan or bool(column_facts.get("has_nan")) or column_facts.get("nulls", 0) > 0
        has_inf = has_inf or bool(column_facts.get("has_inf"))
    facts["has_nan"] = has_nan
    facts["has_inf"] = has_inf


def _numeric_batches(pd, np, obj, dtypes):
    """Value facts of the numpy-typed numeric columns of a small frame, computed one dtype at a
    time on a 2-D block (selecting and reducing column by column costs far more than the data of
    a small frame); empty for a large frame, where a block would copy much memory and the
    per-column overhead does not matter. The facts equal those of `_numeric_column_values`."""
    rows, width = (int(d) for d in obj.shape)
    groups = {}
    numeric = 0
    for position, dtype in enumerate(dtypes):
        if getattr(dtype, "kind", "O") in "fiub" and _module_of(type(dtype)).partition(".")[0] == "numpy":
            groups.setdefault(dtype, []).append(position)
            numeric += 1
    batched = {}
    if rows == 0:
        return batched
    # A frame of numeric columns only converts to one array far faster than columns are
    # selected; the columns of the array's (common) dtype are exact in it.
    whole = None
    if numeric == width and rows * width <= BATCH_ELEMENTS:
        whole = obj.to_numpy()
        if whole.shape != (rows, width):
            whole = None
    for dtype, positions in groups.items():
        if len(positions) < BATCH_COLUMNS or rows * len(positions) > BATCH_ELEMENTS:
            continue
        if whole is not None and whole.dtype == dtype:
            block = whole[:, positions]
        else:
            block = obj.iloc[:, positions].to_numpy()
        if block.dtype != dtype or block.shape != (rows, len(positions)):
            continue
        for position, facts in zip(positions, _block_values(pd, np, block)):
            batched[position] = facts
    return batched


def _block_values(pd, np, block):
    """Per-column value facts of a 2-D numeric block (one dtype, at least one row)."""
    kind = block.dtype.kind
    width = block.shape[1]
    first = np.sort(block[:PEEK_ELEMENTS], axis=0)
    if kind == "f":
        with np.errstate(all="ignore"):
            lowest = np.fmin.reduce(block, axis=0)
            highest = np.fmax.reduce(block, axis=0)
        nan_counts = np.count_nonzero(np.isnan(block), axis=0)
        infinite = np.isinf(lowest) | np.isinf(highest)
        # NaN sorts last: count the distinct values before it.
        valid = ~np.isnan(first)
        peeked = valid[0].astype(np.intp) + np.count_nonzero(valid[1:] & (first[1:] != first[:-1]), axis=0)
    else:
        lowest = block.min(axis=0)
        highest = block.max(axis=0)
        peeked = 1 + np.count_nonzero(first[1:] != first[:-1], axis=0)
    n_true = np.count_nonzero(block, axis=0) if kind == "b" else None
    out = []
    for j in range(width):
        stats = {}
        if kind == "f":
            stats["has_nan"] = bool(nan_counts[j])
            stats["has_inf"] = bool(infinite[j])
            stats["min"] = _number(float(lowest[j]), 6)
            stats["max"] = _number(float(highest[j]), 6)
            stats["nulls"] = int(nan_counts[j])
        elif kind in "iu":
            stats["min"] = _number(int(lowest[j]))
            stats["max"] = _number(int(highest[j]))
            stats["nulls"] = 0
        else:
            stats["n_true"] = int(n_true[j])
            stats["nulls"] = 0
        facts = {key: stats[key] for key in ("nulls", "min", "max", "has_nan", "has_inf") if key in stats}
        n_unique = _numeric_unique(pd, np, block[:, j], kind, stats, peeked=int(peeked[j]))
        if n_unique is not None:
            facts["n_unique"] = n_unique
        out.append(facts)
    return out


def _summarize_series(obj, entry, run):
    pd, np = _pandas(), _numpy()
    n = len(obj)
    entry["S"]["shape"] = [n]
    entry["S"]["len"] = n
    entry["R"]["dtype"] = str(obj.dtype)
    entry["R"]["name"] = _column_label(obj.name) if obj.name is not None else None
    entry["R"]["index"] = _index_facts(obj.index)

    def values():
        unique = _index_unique(obj.index, run, entry)
        if unique is not None:
            entry["V"]["index_unique"] = unique
        _series_values(pd, np, obj, run, entry, entry["V"])

    run.defer(
        entry,
        values,
        _scan_cost(n, getattr(obj.dtype, "kind", "O") in "fiubMm"),
        plain=_plain_pandas(obj),
    )


def _summarize_index(obj, entry, run):
    pd, np = _pandas(), _numpy()
    n = len(obj)
    entry["S"]["len"] = n
    entry["R"].update(_index_facts(obj))
    entry["R"]["dtype"] = str(obj.dtype)

    def values():
        unique = _index_unique(obj, run, entry)
        if unique is not None:
            entry["V"]["unique"] = unique
        if int(obj.nlevels) == 1 and _short(type(obj)) != "RangeIndex":
            _series_values(pd, np, obj.to_series(index=None), run, entry, entry["V"])
        elif _short(type(obj)) != "RangeIndex":
            entry["V"]["examples"] = [_label(x) for x in obj[:3]]

    run.defer(entry, values, _scan_cost(n, getattr(obj.dtype, "kind", "O") in "fiubMm"))


def _summarize_categorical(obj, entry, run):
    n = len(obj)
    entry["S"]["len"] = n
    entry["R"]["dtype"] = "category"
    categories = obj.categories
    entry["R"]["ordered"] = bool(obj.ordered)
    entry["R"]["categories_dtype"] = str(categories.dtype)
    entry["V"]["n_unique"] = len(categories)
    entry["V"]["examples"] = [_label(x) for x in categories[:MAX_ITEMS]]

    def values():
        codes = obj.codes
        entry["V"]["nulls"] = int((codes == -1).sum())

    run.defer(entry, values, n)


def _summarize_groupby(obj, entry, run):
    keys = _get(obj, "keys")
    if keys is not None:
        entry["R"]["keys"] = (
            [_label(k) for k in keys[:MAX_ITEMS]] if type(keys) is list else [_label(keys)]
        )
    grouped = _get(obj, "obj")
    if grouped is not None:
        entry["R"]["obj_type"] = _short(type(grouped))
        entry["S"]["obj_shape"] = _shape_list(_get(grouped, "shape"))
    selection = _instance_dict(obj).get("_selection")
    if selection is not None:
        entry["R"]["selection"] = (
            [_label(s) for s in selection[:MAX_ITEMS]] if type(selection) is list else _label(selection)
        )

    def groups():
        size = len(grouped) if grouped is not None else 0
        if size > NUMERIC_FULL_SCAN:
            entry["V"]["skipped"] = "n_groups: object too large"
            return
        entry["S"]["n_groups"] = int(obj.ngroups)

    shape = _get(grouped, "shape") if grouped is not None else None
    rows = shape[0] if type(shape) is tuple and shape and type(shape[0]) is int else 0
    run.defer(entry, groups, rows * OBJECT_ELEMENT_COST)


# scikit-learn.


def _sklearn_fitted(obj):
    """``check_is_fitted``'s answer: ``__sklearn_is_fitted__()`` where the class defines it,
    else whether an instance attribute ends in ``_``; ``None`` when only user code could say."""
    owner, hook = _lookup(type(obj), "__sklearn_is_fitted__")
    if owner is not None:
        if not (_is_library_class(type(obj)) and _is_library_class(owner)):
            return None
        try:
            fitted = hook(obj)
        except Exception:
            return None
        return fitted if type(fitted) is bool else None
    return any(
        type(key) is str and key.endswith("_") and not key.startswith("__")
        for key in _instance_dict(obj)
    )


def _owner_fitted(owner):
    if _is_a(owner, type):
        return None
    if _find_class(type(owner), "sklearn", "BaseEstimator") is None:
        return None
    try:
        return _sklearn_fitted(owner)
    except Exception:
        return None


_KEY_PARAMS = (
    "n_estimators",
    "max_depth",
    "n_neighbors",
    "n_components",
    "n_clusters",
    "C",
    "alpha",
    "kernel",
    "penalty",
    "solver",
    "max_iter",
    "learning_rate",
    "loss",
    "criterion",
    "strategy",
    "handle_unknown",
    "sparse_output",
    "drop",
    "with_mean",
    "with_std",
    "random_state",
    "class_weight",
    "fit_intercept",
    "multi_class",
    "n_splits",
    "shuffle",
    "test_size",
    "remainder",
)


def _estimator_params(obj):
    params = None
    if _is_library_class(type(obj)):
        get_params = _get(obj, "get_params")
        try:
            params = get_params(deep=False) if get_params is not None else None
        except Exception:
            params = None
    if type(params) is not dict:
        params = {
            key: value
            for key, value in _instance_dict(obj).items()
            if type(key) is str and not key.startswith("_") and not key.endswith("_")
        }
    chosen = {}
    ordered = [k for k in _KEY_PARAMS if k in params] + sorted(
        k for k in params if type(k) is str and k not in _KEY_PARAMS
    )
    for key in ordered:
        value = _scalar_json(params[key], limit=30)
        if value is _NO_JSON:
            continue
        chosen[key] = value
        if len(chosen) >= 10:
            break
    return chosen


_META_ATTRIBUTES = ("steps", "estimator", "estimators", "transformers", "transformer_list", "base_estimator")


def _estimator_tags(obj):
    """What the estimator's own tags say of its input (scikit-learn 1.6+: ``__sklearn_tags__()``;
    before: ``_get_tags()``): ``allow_nan``. Only for library classes that hold no other
    estimator (a meta-estimator's tags ask its parts, which may be the user's) and no user
    object among their parameters."""
    if not _is_library_class(type(obj)):
        return None
    namespace = _instance_dict(obj)
    if any(key in namespace for key in _META_ATTRIBUTES):
        return None
    # Tags read the parameters (`self.kernel == "precomputed"`): a parameter holding a user
    # object would be asked, the guard would stop it, and the whole summary would be lost.
    if any(_opaque(value) for key, value in namespace.items() if type(key) is str and not key.startswith("_")):
        return None
    allow_nan = None
    try:
        method = _get(obj, "__sklearn_tags__")
        if method is not None:
            input_tags = _get(method(), "input_tags")
            allow_nan = _get(input_tags, "allow_nan") if input_tags is not None else None
        else:
            method = _get(obj, "_get_tags")
            tags = method() if method is not None else None
            if type(tags) is dict:
                allow_nan = tags.get("allow_nan")
    except Exception:
        return None
    return {"allow_nan": allow_nan} if type(allow_nan) is bool else None


def _estimator_step(name, step):
    described = {"name": _label(name)}
    if step is None or (type(step) is str):
        described["type"] = step if type(step) is str else "passthrough"
        return described
    described["type"] = _short(type(step))
    if _find_class(type(step), "sklearn", "BaseEstimator") is None:
        return described
    namespace = _instance_dict(step)
    described["fitted"] = _sklearn_fitted(step)
    if type(namespace.get("n_features_in_")) is int:
        described["n_features_in"] = namespace["n_features_in_"]
    if described["fitted"] and _is_library_class(type(step)):
        out = _n_features_out(step)
        if out is not None:
            described["n_features_out"] = out
    return described


def _n_features_out(step):
    namespace = _instance_dict(step)
    for key in ("n_features_out_", "_n_features_out"):
        if type(namespace.get(key)) is int:
            return namespace[key]
    method = _get(step, "get_feature_names_out")
    if method is None:
        return None
    try:
        return len(method())
    except Exception:
        return None


def _column_selection(columns):
    if _type_in(columns, (list, tuple)):
        labels = [_label(c) for c in columns[:MAX_ITEMS]]
        if len(columns) > MAX_ITEMS:
            labels.append(f"... {len(columns) - MAX_ITEMS} more")
        return labels
    value = _scalar_json(columns)
    if value is not _NO_JSON:
        return value
    if type(columns) is slice:
        return repr(columns)
    np = _numpy()
    if np is not None and _find_class(type(columns), "numpy", "ndarray") is not None:
        return _column_selection(columns.tolist()[: MAX_ITEMS + 1]) if columns.size <= 1000 else f"<{columns.size} columns>"
    return "<" + _short(type(columns)) + ">"


def _summarize_estimator(obj, entry, run):
    namespace = _instance_dict(obj)
    cls = type(obj)
    entry["R"]["estimator"] = _short(cls)
    fitted = _sklearn_fitted(obj)
    if fitted is not None:
        entry["V"]["fitted"] = fitted
    entry["R"]["params"] = _estimator_params(obj)
    tags = _estimator_tags(obj)
    if tags:
        entry["R"]["tags"] = tags
    n_features = namespace.get("n_features_in_")
    names = _class_names(cls)
    if ("sklearn", "Pipeline") in names:
        steps = [step for step in _plain_sequence(namespace.get("steps")) if _type_in(step, (tuple, list)) and len(step) == 2]
        entry["R"]["steps"] = [_estimator_step(name, step) for name, step in steps[:MAX_NAMES]]
        if steps and n_features is None:
            first = steps[0][1]
            n_features = _instance_dict(first).get("n_features_in_") if first is not None else None
    elif ("sklearn", "ColumnTransformer") in names:
        transformers = namespace.get("transformers_") if fitted else namespace.get("transformers")
        described = []
        for item in _plain_sequence(transformers)[:MAX_NAMES]:
            if not _type_in(item, (tuple, list)) or len(item) < 3:
                continue
            name, step, columns = item[0], item[1], item[2]
            step_facts = _estimator_step(name, step)
            step_facts["columns"] = _column_selection(columns)
            described.append(step_facts)
        entry["R"]["steps"] = described
    elif ("sklearn", "FeatureUnion") in names:
        steps = [step for step in _plain_sequence(namespace.get("transformer_list")) if _type_in(step, (tuple, list)) and len(step) == 2]
        entry["R"]["steps"] = [_estimator_step(name, step) for name, step in steps[:MAX_NAMES]]
    if type(n_features) is int:
        entry["S"]["n_features_in"] = n_features
    feature_names = namespace.get("feature_names_in_")
    if feature_names is not None and not _opaque(feature_names):
        try:
            listed = [_label(x) for x in list(feature_names[:MAX_NAMES])]
            entry["R"]["feature_names_in"] = listed
            if len(feature_names) > len(listed):
                entry["R"]["feature_names_truncated"] = len(feature_names) - len(listed)
        except Exception:
            pass
    classes = namespace.get("classes_")
    if classes is not None and not _opaque(classes):
        _classes_facts(classes, entry)
    categories = namespace.get("categories_")
    if type(categories) is list:
        entry["V"]["categories_sizes"] = [len(c) for c in categories[:MAX_NAMES]]
        entry["V"]["categories"] = [[_label(x) for x in c[:3]] for c in categories[:3]]
    inner = namespace.get("estimator") if "estimator" in namespace else None
    if inner is not None and _find_class(type(inner), "sklearn", "BaseEstimator") is not None:
        entry["R"]["inner_estimator"] = _short(type(inner))
    best = namespace.get("best_estimator_")
    if best is not None:
        entry["R"]["best_estimator"] = _short(type(best))


def _classes_facts(classes, entry):
    try:
        if type(classes) is list:
            entry["V"]["n_classes"] = [len(c) for c in classes[:MAX_ITEMS]]
            return
        n = len(classes)
        entry["V"]["n_classes"] = n
        entry["V"]["classes"] = [_label(x) for x in list(classes[:MAX_NAMES])]
        dtype = _get(classes, "dtype")
        if dtype is not None:
            entry["R"]["classes_dtype"] = str(dtype)
    except Exception:
        pass


def _summarize_splitter(obj, entry, run):
    params = {}
    for key, value in _instance_dict(obj).items():
        rendered = _scalar_json(value, limit=30)
        if type(key) is str and not key.startswith("_") and rendered is not _NO_JSON:
            params[key] = rendered
    entry["R"]["params"] = params
    if type(params.get("n_splits")) is int:
        entry["S"]["n_splits"] = params["n_splits"]


# torch.


def _summarize_tensor(obj, entry, run):
    entry["S"]["shape"] = _shape_list(obj.shape)
    entry["S"]["ndim"] = int(obj.dim())
    entry["R"]["dtype"] = str(obj.dtype)
    entry["R"]["device"] = str(obj.device)
    entry["R"]["requires_grad"] = bool(obj.requires_grad)
    numel = int(obj.numel())
    if obj.device.type == "meta" or (obj.device.type != "cpu" and numel > SMALL_VALUE_ITEMS):
        return
    if str(obj.layout) != "torch.strided":
        entry["R"]["layout"] = str(obj.layout)
        return
    if numel <= SMALL_VALUE_ITEMS:
        value = _small_value(obj.detach().cpu().tolist(), depth=obj.dim() + 1)
        if value is not _NO_JSON:
            entry["V"]["value"] = value
    plain = _is_library_class(type(obj))
    run.defer(entry, lambda: _tensor_values(obj, numel, entry, run), _scan_cost(numel, True), plain=plain)


def _tensor_values(obj, numel, entry, run):
    torch = _library("torch")
    if torch is None or numel == 0:
        return
    tensor = obj.detach()
    ranges = _sample_ranges(numel, True)
    if ranges is None:
        flat = tensor.reshape(-1)
    else:
        run.mark_sampled(entry)
        if tensor.is_contiguous():
            flat = tensor.view(-1)
            flat = torch.cat([flat[start:stop] for start, stop in ranges])
        else:
            # Whole rows, so that no more than the sample is ever copied.
            rows = int(tensor.shape[0])
            per_row = max(1, numel // max(rows, 1))
            length = max(1, NUMERIC_BLOCK_LEN // per_row)
            span = max(rows - length, 0)
            starts = sorted({i * span // (NUMERIC_BLOCKS - 1) for i in range(NUMERIC_BLOCKS)})
            flat = torch.cat(
                [tensor[start : start + length].reshape(-1)[: NUMERIC_BLOCK_LEN] for start in starts]
            )
    facts = entry["V"]
    if obj.is_floating_point():
        nan = torch.isnan(flat)
        has_nan = bool(nan.any())
        facts["has_nan"] = has_nan
        finite = flat[~nan] if has_nan else flat
        facts["has_inf"] = bool(torch.isinf(finite).any()) if finite.numel() else False
        if finite.numel():
            facts["min"] = _number(float(finite.min()), 6)
            facts["max"] = _number(float(finite.max()), 6)
    elif obj.dtype == torch.bool:
        facts["n_true"] = int(flat.sum())
    elif not obj.is_complex():
        facts["min"] = _number(int(flat.min()))
        facts["max"] = _number(int(flat.max()))


_LAYER_FIELDS = (
    "in_features",
    "out_features",
    "in_channels",
    "out_channels",
    "kernel_size",
    "num_embeddings",
    "embedding_dim",
    "input_size",
    "hidden_size",
    "num_layers",
    "num_features",
    "normalized_shape",
    "units",
    "filters",
)


def _layer_facts(layer):
    namespace = _instance_dict(layer)
    facts = {"type": _short(type(layer))}
    for key in _LAYER_FIELDS:
        value = namespace.get(key)
        rendered = _small_value(value)
        if value is not None and rendered is not _NO_JSON:
            facts[key] = rendered
    return facts


MAX_LAYERS_LISTED = 12


def _named_leaves(module):
    """Leaf modules with their dotted names, in registration order, read from the
    ``_modules`` dicts (no user code)."""
    named = []
    stack = [("", module)]
    seen = set()
    while stack and len(seen) < MAX_MODULES_WALKED:
        prefix, current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        children = _instance_dict(current).get("_modules")
        children = [(k, c) for k, c in children.items() if c is not None] if type(children) is dict else []
        if not children and current is not module:
            named.append((prefix, current))
        stack.extend((f"{prefix}.{k}" if prefix else str(k), c) for k, c in reversed(children))
    return named


def _torch_leaves(module, run):
    """Leaf modules in registration order, read from the ``_modules`` dicts (no user code)."""
    leaves = []
    stack = [module]
    seen = set()
    visited = 0
    while stack and visited < MAX_MODULES_WALKED:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        visited += 1
        children = _instance_dict(current).get("_modules") or {}
        children = [c for c in children.values() if c is not None]
        if not children:
            leaves.append(current)
        stack.extend(reversed(children))
    return leaves, seen


def _summarize_torch_module(obj, entry, run):
    namespace = _instance_dict(obj)
    children = [c for c in (namespace.get("_modules") or {}).values() if c is not None]
    entry["S"]["n_layers"] = len(children)
    if type(namespace.get("training")) is bool:
        entry["R"]["training"] = namespace["training"]
    leaves, modules = _torch_leaves(obj, run)
    shaped = [leaf for leaf in leaves if any(k in _instance_dict(leaf) for k in _LAYER_FIELDS)]
    chosen = shaped or leaves
    if chosen and chosen[0] is not obj:
        entry["S"]["first_layer"] = _layer_facts(chosen[0])
        entry["S"]["last_layer"] = _layer_facts(chosen[-1])
    if any(k in namespace for k in _LAYER_FIELDS):
        # A layer on its own (nn.Linear(4, 2)): its constructor facts are the contract.
        entry["S"]["layer"] = _layer_facts(obj)
    named = _named_leaves(obj)
    if len(named) > 1:
        entry["S"]["layers"] = [
            dict(name=name, **_layer_facts(leaf)) for name, leaf in named[:MAX_LAYERS_LISTED]
        ]
        if len(named) > MAX_LAYERS_LISTED:
            entry["S"]["layers_truncated"] = len(named) - MAX_LAYERS_LISTED
    n_params = 0
    n_trainable = 0
    device = dtype = None
    stack = [obj]
    seen = set()
    while stack:
        current = stack.pop()
        if id(current) in seen or len(seen) > MAX_MODULES_WALKED:
            continue
        seen.add(id(current))
        inner = _instance_dict(current)
        for parameter in (inner.get("_parameters") or {}).values():
            if parameter is None:
                continue
            count = int(parameter.numel())
            n_params += count
            if parameter.requires_grad:
                n_trainable += count
            if device is None:
                device = str(parameter.device)
                dtype = str(parameter.dtype)
        stack.extend(c for c in (inner.get("_modules") or {}).values() if c is not None)
    entry["S"]["n_params"] = n_params
    if n_trainable != n_params:
        entry["S"]["n_trainable"] = n_trainable
    if device is not None:
        entry["R"]["device"] = device
        entry["R"]["param_dtype"] = dtype


def _summarize_optimizer(obj, entry, run):
    groups = _instance_dict(obj).get("param_groups") or []
    entry["S"]["n_param_groups"] = len(groups)
    entry["S"]["n_params"] = sum(len(g.get("params", ())) for g in groups if type(g) is dict)
    if not groups or type(groups[0]) is not dict:
        return
    params = {}
    for key, value in groups[0].items():
        if key == "params":
            continue
        rendered = _small_value(value)
        if rendered is _NO_JSON:
            try:
                rendered = _number(float(value), 6)
            except Exception:
                continue
        if rendered is None or rendered is False:
            continue
        params[key] = rendered
        if len(params) >= 10:
            break
    entry["R"]["params"] = params
    if "lr" in params:
        entry["V"]["lr"] = params["lr"]


def _dataset_len(dataset):
    """The length of a dataset when library code computes it; None for user ``__len__``."""
    names = _class_names(type(dataset))
    namespace = _instance_dict(dataset)
    if ("torch", "TensorDataset") in names:
        tensors = _tensor_items(namespace.get("tensors"))
        if tensors is None:
            return None
        return int(tensors[0].shape[0]) if tensors else 0
    if ("torch", "Subset") in names:
        indices = namespace.get("indices")
        return _safe_len(indices)
    if ("torch", "ConcatDataset") in names:
        sizes = _plain_sequence(namespace.get("cumulative_sizes"))
        return int(sizes[-1]) if sizes and type(sizes[-1]) is int else 0
    return _safe_len(dataset)


def _summarize_dataset(obj, entry, run):
    names = _class_names(type(obj))
    namespace = _instance_dict(obj)
    n = _dataset_len(obj)
    if n is not None:
        entry["S"]["len"] = n
    elif _is_library_class(type(obj)) is False:
        entry["R"]["len_unknown"] = "user-defined __len__ not called"
    if ("torch", "IterableDataset") in names:
        entry["R"]["iterable"] = True
    if ("torch", "TensorDataset") in names:
        tensors = _tensor_items(namespace.get("tensors"))
        if tensors is not None:
            entry["R"]["tensors"] = [
                {"shape": _shape_list(t.shape), "dtype": str(t.dtype)} for t in tensors[:MAX_ITEMS]
            ]
    elif ("torch", "Subset") in names:
        entry["R"]["dataset_type"] = _short(type(namespace.get("dataset")))
        inner = _dataset_len(namespace.get("dataset"))
        if inner is not None:
            entry["S"]["dataset_len"] = inner
    if not _is_library_class(type(obj)):
        fields = _fields_of(obj)
        if fields:
            entry["R"]["fields"] = fields


def _summarize_dataloader(obj, entry, run):
    namespace = _instance_dict(obj)
    dataset = namespace.get("dataset")
    batch_size = namespace.get("batch_size")
    drop_last = bool(namespace.get("drop_last"))
    entry["R"]["dataset_type"] = _short(type(dataset))
    entry["R"]["drop_last"] = drop_last
    sampler = namespace.get("sampler")
    if sampler is not None:
        entry["R"]["sampler"] = _short(type(sampler))
        entry["R"]["shuffle"] = _short(type(sampler)) == "RandomSampler"
    if type(namespace.get("num_workers")) is int:
        entry["R"]["num_workers"] = namespace["num_workers"]
    collate = namespace.get("collate_fn")
    if collate is not None:
        name = _static_get(collate, "__name__")
        if type(name) is str and name != "default_collate":
            entry["R"]["collate_fn"] = name
    if type(batch_size) is int:
        entry["S"]["batch_size"] = batch_size
    if namespace.get("_dataset_kind") == 1 or _find_class(type(dataset), "torch", "IterableDataset"):
        entry["R"]["iterable"] = True
        return
    n = _dataset_len(dataset) if dataset is not None else None
    if n is None:
        entry["R"]["len_unknown"] = "dataset has a user-defined __len__"
        if not _is_library_class(type(dataset)):
            fields = _fields_of(dataset)
            if fields:
                entry["R"]["dataset_fields"] = fields
        return
    entry["S"]["n_samples"] = n
    batch_sampler = namespace.get("batch_sampler")
    if type(batch_size) is int and batch_size > 0 and (
        batch_sampler is None or _short(type(batch_sampler)) == "BatchSampler"
    ):
        batches = n // batch_size if drop_last else -(-n // batch_size)
        entry["S"]["n_batches"] = batches
        entry["S"]["len"] = batches


# TensorFlow and Keras.


def _summarize_tf_tensor(obj, entry, run):
    shape = _get(obj, "shape")
    if type(shape) is tuple:
        dims = _shape_list(shape)
    else:
        dims = _shape_list(shape) if shape is not None and _get(shape, "rank") is not None else None
    if dims is not None:
        entry["S"]["shape"] = dims
        entry["S"]["ndim"] = len(dims)
    dtype = _get(obj, "dtype")
    name = _get(dtype, "name") if dtype is not None else None
    if type(name) is str:
        entry["R"]["dtype"] = name
    elif dtype is not None:
        entry["R"]["dtype"] = str(dtype)
    if _find_class(type(obj), "tensorflow", "Variable") is not None:
        entry["R"]["variable"] = True
        trainable = _get(obj, "trainable")
        if type(trainable) is bool:
            entry["R"]["trainable"] = trainable
    names = _class_names(type(obj))
    eager = ("tensorflow", "_EagerTensorBase") in names or ("tensorflow", "Variable") in names
    if not eager or dims is None or any(d is None for d in dims):
        return
    numel = 1
    for d in dims:
        numel *= d
    np = _numpy()
    if np is None or numel > NUMERIC_FULL_SCAN:
        return

    def values():
        array = obj.numpy()
        if numel <= SMALL_VALUE_ITEMS and array.dtype.kind not in "OV":
            value = _small_value(array.tolist(), depth=len(dims) + 1)
            if value is not _NO_JSON:
                entry["V"]["value"] = value
        if array.dtype.kind in "fiub":
            _numeric_stats(np, array, entry["V"])

    run.defer(entry, values, numel)


def _name_of(thing):
    if thing is None:
        return None
    if type(thing) is str:
        return thing
    name = _static_get(thing, "__name__")
    if type(name) is str:
        return name
    name = _static_get(thing, "name")
    if type(name) is str:
        return name
    return _short(type(thing))


def _keras_layer_facts(layer, shapes=False):
    facts = {"type": _short(type(layer))}
    name = _static_get(layer, "name")
    if type(name) is str:
        facts["name"] = _truncate(name, MAX_EXAMPLE_STR)[0]
    if shapes:
        output = _static_get(layer, "output")
        shape = _get(output, "shape") if output is not None and not _opaque(output) else None
        if shape is not None:
            facts["output_shape"] = _shape_list(shape)
    for key in ("units", "filters", "kernel_size", "rate", "output_dim", "input_dim"):
        value = _small_value(_static_get(layer, key))
        if value is not _NO_JSON and value is not None:
            facts[key] = value
    activation = _static_get(layer, "activation")
    if activation is not None:
        facts["activation"] = _name_of(activation)
    return facts


def _summarize_keras_model(obj, entry, run):
    built = _static_get(obj, "built")
    if type(built) is bool:
        entry["V"]["built"] = built
    compiled = _static_get(obj, "compiled")
    if type(compiled) is not bool:
        compiled = _static_get(obj, "_is_compiled")
    if type(compiled) is bool:
        entry["V"]["compiled"] = compiled
    layers = _static_get(obj, "layers")
    if type(layers) is list:
        entry["S"]["n_layers"] = len(layers)
        if layers:
            entry["S"]["first_layer"] = _keras_layer_facts(layers[0])
            entry["S"]["last_layer"] = _keras_layer_facts(layers[-1])
            entry["S"]["layers"] = [_keras_layer_facts(layer, shapes=bool(built)) for layer in layers[:MAX_LAYERS_LISTED]]
            if len(layers) > MAX_LAYERS_LISTED:
                entry["S"]["layers_truncated"] = len(layers) - MAX_LAYERS_LISTED
            activation = entry["S"]["last_layer"].get("activation")
            if activation is not None:
                entry["R"]["last_activation"] = activation
    if built:
        count = _static_get(obj, "count_params")
        try:
            entry["S"]["n_params"] = int(count())
        except Exception:
            pass
        for side, key in (("inputs", "input_shape"), ("outputs", "output_shape")):
            tensors = _static_get(obj, side)
            if _type_in(tensors, (list, tuple)) and tensors:
                entry["S"][key] = _shape_list(_get(tensors[0], "shape"))
                if len(tensors) > 1:
                    entry["S"]["n_" + side] = len(tensors)
    if compiled:
        optimizer = _static_get(obj, "optimizer")
        if optimizer is not None:
            entry["R"]["optimizer"] = _short(type(optimizer))
        loss = _static_get(obj, "loss")
        if loss is not None:
            entry["R"]["loss"] = (
                _name_of(loss) if type(loss) is not dict else {k: _name_of(v) for k, v in loss.items()}
            )
        config = _static_get(obj, "_compile_config")
        settings = _static_get(config, "config") if config is not None else None
        metrics = settings.get("metrics") if type(settings) is dict else None
        if _type_in(metrics, (list, tuple)):
            entry["R"]["metrics"] = [_name_of(m) for m in metrics[:MAX_ITEMS]]
        elif metrics is not None:
            entry["R"]["metrics"] = [_name_of(metrics)]


def _summarize_keras_layer(obj, entry, run):
    entry["R"].update(_keras_layer_facts(obj))
    built = _static_get(obj, "built")
    if type(built) is bool:
        entry["V"]["built"] = built
    if built:
        count = _static_get(obj, "count_params")
        try:
            entry["S"]["n_params"] = int(count())
        except Exception:
            pass


def _summarize_tf_dataset(obj, entry, run):
    spec = _get(obj, "element_spec")
    if spec is not None:
        entry["R"]["element_spec"] = _truncate(repr(spec), 300)[0]
    cardinality = _get(obj, "cardinality")
    try:
        entry["S"]["n_samples"] = int(cardinality())
    except Exception:
        pass


def _summarize_keras_iterator(obj, entry, run):
    namespace = _instance_dict(obj)
    n = namespace.get("n", namespace.get("samples"))
    batch_size = namespace.get("batch_size")
    if type(n) is int:
        entry["S"]["n_samples"] = n
    if type(batch_size) is int:
        entry["S"]["batch_size"] = batch_size
        if type(n) is int and batch_size > 0:
            entry["S"]["n_batches"] = -(-n // batch_size)
            entry["S"]["len"] = entry["S"]["n_batches"]
    image_shape = namespace.get("image_shape")
    if image_shape is not None:
        entry["S"]["image_shape"] = _shape_list(image_shape)
    for key in ("class_mode", "color_mode", "data_format", "subset"):
        value = namespace.get(key)
        if type(value) is str:
            entry["R"][key] = value
    if type(namespace.get("shuffle")) is bool:
        entry["R"]["shuffle"] = namespace["shuffle"]
    x = namespace.get("x")
    if x is not None and _get(x, "shape") is not None:
        entry["S"]["x_shape"] = _shape_list(_get(x, "shape"))
    class_indices = namespace.get("class_indices")
    if type(class_indices) is dict:
        entry["V"]["n_classes"] = namespace.get("num_classes", len(class_indices))
        entry["V"]["classes"] = [_label(k) for k in list(class_indices)[:MAX_NAMES]]


def _summarize_history(obj, entry, run):
    namespace = _instance_dict(obj)
    history = namespace.get("history")
    epochs = namespace.get("epoch")
    if type(history) is dict:
        entry["V"]["history_keys"] = [_label(k) for k in list(history)[:MAX_NAMES]]
        last = {}
        for key, values in list(history.items())[:MAX_NAMES]:
            if type(values) is list and values:
                value = _scalar_json(values[-1], digits=6)
                if value is not _NO_JSON:
                    last[_column_key(_label(key))] = value
        if last:
            entry["V"]["last"] = last
    if type(epochs) is list:
        entry["V"]["epochs"] = len(epochs)


# matplotlib.


def _grid_of(axes):
    spec = _get(axes, "get_subplotspec")
    try:
        subplot = spec() if spec is not None else None
        if subplot is None:
            return None
        rows, cols = subplot.get_gridspec().get_geometry()
        return [int(rows), int(cols)]
    except Exception:
        return None


def _summarize_figure(obj, entry, run):
    axes = _get(obj, "axes") or []
    entry["S"]["n_axes"] = len(axes)
    if axes:
        grid = _grid_of(axes[0])
        if grid is not None:
            entry["S"]["grid"] = grid
    size = _get(obj, "get_size_inches")
    try:
        entry["R"]["figsize"] = [_number(float(x), 4) for x in size()]
    except Exception:
        pass


def _summarize_axes(obj, entry, run):
    grid = _grid_of(obj)
    if grid is not None:
        entry["S"]["grid"] = grid
    for key in ("title", "xlabel", "ylabel"):
        getter = _get(obj, "get_" + key)
        try:
            text = getter()
        except Exception:
            continue
        if type(text) is str and text:
            entry["R"][key] = _truncate(text, MAX_STR)[0]
    for key in ("lines", "patches", "collections", "images"):
        items = _get(obj, key)
        try:
            if items is not None and len(items):
                entry["S"]["n_" + key] = len(items)
        except Exception:
            pass


# Anything else.


def _fields_of(obj):
    """A few instance attributes of an object with a compact description of each."""
    fields = {}
    for key, value in list(_instance_dict(obj).items())[: MAX_ITEMS * 4]:
        if type(key) is not str or key.startswith("_"):
            continue
        fields[key] = _describe_briefly(value)
        if len(fields) >= MAX_ITEMS:
            break
    return fields


def _describe_briefly(value):
    scalar = _scalar_json(value, limit=30)
    if scalar is not _NO_JSON and _type_in(value, (bool, int, float, str, type(None))):
        return scalar
    cls = type(value)
    text = _short(cls)
    if _is_library_class(cls):
        shape = _get(value, "shape") if _lookup(cls, "shape")[0] is not None else None
        if type(shape) is tuple or _short(type(shape)) in ("Size", "TensorShape"):
            return f"{text}{_shape_list(shape)}"
        n = _safe_len(value)
        if n is not None:
            return f"{text}(len={n})"
    return text


def _summarize_generic(obj, entry, run):
    cls = type(obj)
    library = _is_library_class(cls)
    if not library:
        bases = [_qualified(k) for k in _mro(cls)[1:-1] if _is_library_class(k)]
        if bases:
            entry["R"]["library_bases"] = bases[:MAX_ITEMS]
    fields = _fields_of(obj)
    if fields:
        entry["R"]["fields"] = fields
    if not library:
        return
    n = _safe_len(obj)
    if n is not None:
        entry["S"]["len"] = n
    for key in ("shape", "ndim", "dtype"):
        owner, raw = _lookup(cls, key)
        if owner is None and key not in _instance_dict(obj):
            continue
        value = _get(obj, key)
        if key == "shape" and type(value) is tuple:
            entry["S"]["shape"] = _shape_list(value)
        elif key == "ndim" and type(value) is int:
            entry["S"]["ndim"] = value
        elif key == "dtype" and value is not None and _is_library_class(type(value)):
            entry["R"]["dtype"] = _truncate(str(value), 40)[0]
    owner, _ = _lookup(cls, "__repr__")
    if owner is not None and owner is not object and _is_library_class(owner):
        try:
            text = repr(obj)
        except Exception:
            text = None
        if type(text) is str and " at 0x" not in text:
            entry["R"]["repr"] = _truncate(text, MAX_REPR)[0]


# Dispatch.

_BUILTIN_KINDS = {
    type(None): ("none", _summarize_none),
    bool: ("bool", _summarize_scalar),
    int: ("int", _summarize_int),
    float: ("float", _summarize_scalar),
    complex: ("complex", _summarize_complex),
    str: ("str", _summarize_str),
    bytes: ("bytes", _summarize_bytes),
    bytearray: ("bytes", _summarize_bytes),
    list: ("list", _summarize_sequence),
    tuple: ("tuple", _summarize_sequence),
    set: ("set", _summarize_sequence),
    frozenset: ("set", _summarize_sequence),
    dict: ("dict", _summarize_dict),
    range: ("range", _summarize_range),
    types.FunctionType: ("function", _summarize_function),
    types.MethodType: ("method", _summarize_method),
    types.BuiltinFunctionType: ("builtin", _summarize_builtin),
    types.MethodWrapperType: ("builtin", _summarize_builtin),
    types.MethodDescriptorType: ("builtin", _summarize_builtin),
    types.WrapperDescriptorType: ("builtin", _summarize_builtin),
    types.ClassMethodDescriptorType: ("builtin", _summarize_builtin),
    types.GeneratorType: ("other", _summarize_generator),
    types.CoroutineType: ("other", _summarize_generator),
    types.AsyncGeneratorType: ("other", _summarize_generator),
}

# Library classes by (top-level package, qualname); the first match along the MRO wins.
_LIBRARY_KINDS = {
    ("numpy", "ufunc"): ("builtin", _summarize_builtin),
    ("numpy", "_ArrayFunctionDispatcher"): ("function", _summarize_builtin),
    ("numpy", "ndarray"): ("ndarray", _summarize_ndarray),
    ("numpy", "generic"): ("numpy_scalar", _summarize_numpy_scalar),
    ("pandas", "DataFrame"): ("dataframe", _summarize_dataframe),
    ("pandas", "Series"): ("series", _summarize_series),
    ("pandas", "Index"): ("index", _summarize_index),
    ("pandas", "Categorical"): ("categorical", _summarize_categorical),
    ("pandas", "BaseGroupBy"): ("groupby", _summarize_groupby),
    ("sklearn", "BaseEstimator"): ("estimator", _summarize_estimator),
    ("sklearn", "BaseCrossValidator"): ("splitter", _summarize_splitter),
    ("sklearn", "BaseShuffleSplit"): ("splitter", _summarize_splitter),
    ("sklearn", "_RepeatedSplits"): ("splitter", _summarize_splitter),
    ("torch", "Tensor"): ("tensor", _summarize_tensor),
    ("torch", "Module"): ("torch_module", _summarize_torch_module),
    ("torch", "Optimizer"): ("optimizer", _summarize_optimizer),
    ("torch", "DataLoader"): ("dataloader", _summarize_dataloader),
    ("torch", "Dataset"): ("dataset", _summarize_dataset),
    ("torch", "IterableDataset"): ("dataset", _summarize_dataset),
    ("tensorflow", "Tensor"): ("tf_tensor", _summarize_tf_tensor),
    ("tensorflow", "Variable"): ("tf_tensor", _summarize_tf_tensor),
    ("keras", "KerasTensor"): ("tf_tensor", _summarize_tf_tensor),
    ("tensorflow", "DatasetV2"): ("tf_dataset", _summarize_tf_dataset),
    ("keras", "Model"): ("keras_model", _summarize_keras_model),
    ("tf_keras", "Model"): ("keras_model", _summarize_keras_model),
    ("keras", "Layer"): ("keras_layer", _summarize_keras_layer),
    ("tf_keras", "Layer"): ("keras_layer", _summarize_keras_layer),
    ("keras", "History"): ("history", _summarize_history),
    ("tf_keras", "History"): ("history", _summarize_history),
    ("keras", "Iterator"): ("keras_iterator", _summarize_keras_iterator),
    ("tf_keras", "Iterator"): ("keras_iterator", _summarize_keras_iterator),
    ("keras_preprocessing", "Iterator"): ("keras_iterator", _summarize_keras_iterator),
    ("matplotlib", "FigureBase"): ("figure", _summarize_figure),
    ("matplotlib", "_AxesBase"): ("axes", _summarize_axes),
}

# Library bases whose summarizers read user subclasses statically (models, datasets,
# estimators are routinely user subclasses).
_USER_SUBCLASS_KINDS = frozenset(
    (
        "estimator",
        "torch_module",
        "dataset",
        "keras_model",
        "keras_layer",
    )
)


def _classify(obj):
    cls = type(obj)
    # Only plain classes are hashed: a user metaclass may define __hash__.
    known = _BUILTIN_KINDS.get(cls) if type(cls) is type and _is_library_class(cls) else None
    if known is not None:
        return known
    if _inherits(cls, types.ModuleType):
        return "pymodule", _summarize_module
    if _inherits(cls, type):
        return "class", _summarize_class
    library = _is_library_class(cls)
    for root, qualname in _class_names(cls):
        found = _LIBRARY_KINDS.get((root, qualname))
        if found is None:
            continue
        if found[1] is _summarize_keras_iterator and "image" not in _module_of(
            _find_class(cls, root, qualname)
        ):
            continue
        if library or found[0] in _USER_SUBCLASS_KINDS:
            return found
        break
    if library and _module_of(cls).startswith("sklearn.model_selection._split"):
        return "splitter", _summarize_splitter
    return "other", _summarize_generic


def _user_code_entry(cls):
    _guard.rearm()
    entry = _entry(cls, "other")
    entry["error"] = "not summarized: would run user code"
    return entry


def _summarize_object(obj, run):
    cls = type(obj)
    fired = _guard.fired
    try:
        kind, summarize = _classify(obj)
        entry = _entry(cls, kind)
        summarize(obj, entry, run)
    except _UserCode:
        return _user_code_entry(cls)
    except Exception as exc:
        if _guard.fired != fired:
            return _user_code_entry(cls)
        entry = _entry(cls, "other")
        entry["error"] = f"{kind} summary failed: {type(exc).__name__}"
        try:
            _summarize_generic(obj, entry, run)
        except (Exception, _UserCode):
            pass
    if _guard.fired != fired:
        return _user_code_entry(cls)
    return entry


def _kind_of(obj):
    try:
        return _classify(obj)[0]
    except (Exception, _UserCode):
        return "other"


# Evaluating the expressions a cell reads, one safe step at a time.


def _constant(node):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _constant(node.operand)
        if _type_in(value, (int, float, complex)):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Tuple):
        return tuple(_constant(e) for e in node.elts)
    if isinstance(node, ast.List):
        return [_constant(e) for e in node.elts]
    if isinstance(node, ast.Slice):
        return slice(
            _constant(node.lower) if node.lower is not None else None,
            _constant(node.upper) if node.upper is not None else None,
            _constant(node.step) if node.step is not None else None,
        )
    raise _Refused("subscript is not a constant")


_NEVER_SUBSCRIPTED = frozenset(("dataset", "dataloader", "keras_iterator", "tf_dataset"))

# Library properties that copy or render whole objects, or import modules.
_COSTLY_ATTRIBUTES = {
    ("pandas", "DataFrame"): frozenset(("values", "T", "_values", "style", "plot")),
    ("pandas", "Series"): frozenset(("style", "plot")),
}


def _absent_attribute(obj):
    return {
        "type": "",
        "kind": "absent",
        "S": {},
        "R": {"owner_type": _qualified(type(obj))},
        "V": {},
    }


def _attribute(obj, name):
    cls = type(obj)
    if _inherits(cls, types.ModuleType):
        namespace = _module_dict(obj)
        if name in namespace:
            return namespace[name]
        module_name = namespace.get("__name__")
        if type(module_name) is str and module_name + "." + name in sys.modules:
            return sys.modules[module_name + "." + name]
        if "__getattr__" in namespace or type(obj) is not types.ModuleType:
            raise _Refused("module attribute would be resolved lazily (may import)", obj)
        raise _Absent(_absent_attribute(obj))
    if _is_library_class(cls) and not _inherits(cls, type):
        for key in _class_names(cls):
            if name in _COSTLY_ATTRIBUTES.get(key, ()):
                raise _Refused("not evaluated: library property that copies or imports", obj)
        try:
            static = _inspect["getattr_static"](obj, name)
        except AttributeError:
            static = _MISSING
        dynamic = _dynamic_lookup(cls)
        if static is _MISSING and not dynamic:
            raise _Absent(_absent_attribute(obj))
        fired = _guard.fired
        try:
            return getattr(obj, name)
        except AttributeError:
            # The library's own lookup ran and failed, as it will in the cell; unless it
            # failed because the guard stopped code of the user's inside it.
            if dynamic and _guard.fired != fired:
                _guard.rearm()
                raise _Refused("not evaluated: the class looks attributes up dynamically", obj)
            raise _Absent(_absent_attribute(obj))
        except Exception as exc:
            raise _Raised(exc, obj)
    try:
        static = _inspect["getattr_static"](obj, name)
    except AttributeError:
        static = _MISSING
    except Exception:
        raise _Refused("attribute lookup would run user code", obj)
    if static is _MISSING:
        owner, _ = _lookup(cls, "__getattr__")
        if owner is None and _dynamic_lookup(cls):
            raise _Refused("not evaluated: the class looks attributes up dynamically", obj)
        if owner is not None and not _is_library_class(owner):
            raise _Refused("not evaluated: user-defined __getattr__", obj)
        if owner is not None:
            value = _static_get(obj, name, _MISSING)
            if value is not _MISSING:
                return value
        raise _Absent(_absent_attribute(obj))
    if _inherits(cls, type):
        return _class_attribute(obj, name, static)
    value = _static_get(obj, name, _MISSING)
    if value is _MISSING:
        raise _Refused("not evaluated: user-defined property or descriptor", obj)
    return value


def _class_attribute(cls, name, static):
    if _type_in(static, (types.FunctionType, property)) or not _lookup(type(static), "__get__")[0]:
        return static
    if type(static) is staticmethod:
        return static.__func__
    if type(static) is classmethod:
        return types.MethodType(static.__func__, cls)
    if _is_library_class(cls) or _type_in(static, _SAFE_DESCRIPTOR_TYPES):
        try:
            return getattr(cls, name)
        except AttributeError:
            raise _Absent(_absent_attribute(cls))
        except Exception as exc:
            raise _Raised(exc, cls)
    raise _Refused("not evaluated: user-defined descriptor", cls)


def _subscript(obj, key):
    cls = type(obj)
    if _inherits(cls, type):
        raise _Refused("not evaluated: subscript of a class", obj)
    if not _is_library_class(cls):
        raise _Refused("not evaluated: user-defined __getitem__", obj)
    if _kind_of(obj) in _NEVER_SUBSCRIPTED:
        raise _Refused("not evaluated: would load data from a dataset or loader", obj)
    try:
        copied = _copy_bytes(obj, key)
    except Exception:
        copied = 0
    if copied > MAX_COPY_BYTES:
        raise _Refused(f"not evaluated: the selection would copy about {copied >> 20} MiB", obj)
    if _lookup(cls, "__missing__")[0] is not None:
        try:
            present = dict.__contains__(obj, key)
        except TypeError as exc:
            raise _Raised(exc, obj)
        if not present:
            raise _Refused("key absent; the mapping creates missing keys", obj)
        return dict.__getitem__(obj, key)
    try:
        return obj[key]
    except (KeyError, IndexError):
        raise _Absent(
            {
                "type": "",
                "kind": "absent",
                "S": {},
                "R": {"key": _key_label(key), "owner_type": _qualified(cls)},
                "V": {},
            }
        )
    except Exception as exc:
        raise _Raised(exc, obj)


_PANDAS_INDEXERS = frozenset(("pandas.core.indexing._LocIndexer", "pandas.core.indexing._iLocIndexer"))


def _copy_bytes(obj, key):
    """The bytes ``obj[key]`` copies, for the containers whose subscripts can copy whole
    columns of data: numpy arrays and torch tensors (advanced indexing; exact but for repeated
    positions), pandas frames and their ``loc``/``iloc`` indexers (lists of labels or positions,
    unless pandas copies on write; 8 bytes an element, an estimate read from the shape alone,
    since a frame's dtypes cost a scan of its columns). 0 for a view, or for any other
    container."""
    kind = _kind_of(obj)
    if kind in ("ndarray", "tensor"):
        return _advanced_indexing_bytes(obj, key)
    if kind == "dataframe":
        if type(key) is not list or _copy_on_write():
            return 0
        return (_safe_len(obj) or 0) * len(key) * 8
    if _qualified(type(obj)) not in _PANDAS_INDEXERS:
        return 0
    frame = _static_get(obj, "obj")
    if _kind_of(frame) != "dataframe" or _copy_on_write():
        return 0
    rows_key, columns_key = key if type(key) is tuple and len(key) == 2 else (key, slice(None))
    if type(rows_key) is not list and type(columns_key) is not list:
        return 0
    shape = _shape_list(frame.shape) or [0, 0]

    def selected(part, n):
        if type(part) is list:
            return len(part)
        return (n or 0) if type(part) is slice else 1

    return selected(rows_key, shape[0]) * selected(columns_key, shape[1]) * 8


def _advanced_indexing_bytes(array, key):
    parts = list(key) if type(key) is tuple else [key]
    if not any(type(part) is list for part in parts):
        return 0
    shape = _shape_list(array.shape)
    if shape is None or any(n is None for n in shape):
        return 0
    itemsize = array.element_size() if _kind_of(array) == "tensor" else array.itemsize
    if Ellipsis in parts:
        # The axes an ellipsis stands for are whole.
        at = parts.index(Ellipsis)
        indexing = len([part for part in parts if part is not None and part is not Ellipsis])
        parts[at : at + 1] = [slice(None)] * max(len(shape) - indexing, 0)
    size, axis = 1, 0
    for part in parts:
        if part is None:
            continue
        if axis >= len(shape):
            break
        if type(part) is list:
            size *= len(part)
        elif type(part) is slice:
            try:
                size *= len(range(*part.indices(shape[axis])))
            except TypeError:
                size *= shape[axis]
        axis += 1
    for n in shape[axis:]:
        size *= n
    return size * itemsize


def _copy_on_write():
    """pandas returns views for selections and copies only on a later write (pandas 3, or the
    option set in pandas 2)."""
    pd = _pandas()
    if pd is None:
        return False
    version = _module_dict(pd).get("__version__")
    if type(version) is str and version.split(".")[0].isdigit() and int(version.split(".")[0]) >= 3:
        return True
    try:
        return pd.options.mode.copy_on_write is True
    except Exception:
        return False


def _key_label(key):
    if type(key) is list:
        return [_key_label(k) for k in key[:MAX_NAMES]]
    if type(key) is slice:
        return repr(key)
    if type(key) is tuple:
        return _label(key, limit=MAX_STR)
    value = _scalar_json(key, limit=MAX_STR)
    return value if value is not _NO_JSON else repr(key)


def _evaluate(node, namespace, memo=None):
    """The object `node` denotes, evaluated from its root name outwards one step at a time
    (iteratively: a chain thousands of attributes deep is valid Python). `memo` keeps the
    subscripts already evaluated in one request (`df[['a', 'b']]` and `df[['a', 'b']].mean`
    select the columns once)."""
    steps = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        steps.append(node)
        node = node.value
    if not isinstance(node, ast.Name):
        raise _Refused("not a name, attribute chain or constant subscript")
    if node.id in namespace:
        value = namespace[node.id]
    elif node.id in builtins.__dict__:
        value = builtins.__dict__[node.id]
    else:
        raise _Missing(node.id)
    for step in reversed(steps):
        if isinstance(step, ast.Attribute):
            value = _attribute(value, step.attr)
            continue
        key = _ast["dump"](step) if memo is not None and len(steps) < 64 else None
        if key is not None and key in memo:
            value = memo[key]
            continue
        value = _subscript(value, _constant(step.slice))
        if key is not None:
            memo[key] = value
    return value


def _parse_expression(expression):
    """The AST of an expression, or None. CPython builds ASTs recursively and gives up on a
    chain about a thousand attributes deep, which is still valid Python: a plain dotted chain
    is then built here, one attribute at a time."""
    text = expression.strip()
    try:
        return _ast["parse"](text, mode="eval").body
    except (RecursionError, MemoryError):
        pass
    except (SyntaxError, ValueError):
        return None
    parts = text.split(".")
    if not all(part.isidentifier() for part in parts):
        return None
    node = ast.Name(id=parts[0], ctx=ast.Load())
    for part in parts[1:]:
        node = ast.Attribute(value=node, attr=part, ctx=ast.Load())
    return node


def _user_namespace():
    shell = _kernel_shell()
    if shell is not None:
        namespace = _instance_dict(shell).get("user_ns")
        if type(namespace) is not dict:
            namespace = _get(shell, "user_ns")
        if type(namespace) is dict:
            return namespace
    main = sys.modules.get("__main__")
    return _module_dict(main) if _is_a(main, types.ModuleType) else {}


# Requests.


class _Reply:
    """The answer: its repr is the JSON document, so that the kernel returns it as text."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


class _quiet:
    """Warnings ignored and user code refused while the probe works. Output is left alone:
    replacing ``sys.stdout`` would swallow what the user's other threads print meanwhile."""

    __slots__ = ("warnings",)

    def __enter__(self):
        self.warnings = _IgnoredWarnings()
        self.warnings.__enter__()
        try:
            _guard.__enter__()
        except BaseException:
            self.warnings.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        try:
            _guard.__exit__(*exc)
        finally:
            self.warnings.__exit__(*exc)
        return False


def _parse_request(request):
    try:
        parsed = _json_loads(request) if type(request) is str else request
    except ValueError:
        parsed = None
    return parsed if type(parsed) is dict else {}


def _dumps(document):
    try:
        return _dumps_strict(document)
    except ValueError:
        return _dumps_strict(_finite(document))


def _dumps_strict(document):
    return _json_dumps(
        document,
        ensure_ascii=False,
        allow_nan=False,
        default=lambda o: "<" + _qualified(type(o)) + ">",
    )


def _finite(value):
    if type(value) is float:
        return _number(value)
    if type(value) is dict:
        return {k: _finite(v) for k, v in value.items()}
    if _type_in(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def settle(request):
    """Once crane's start-up work in the kernel is done: the channel's handler follows this call
    with one full collection (``_collect``). That work (its modules injected) allocates enough
    to advance the collector's schedule, which would move a full collection into the user's
    first cell; after one now the schedule starts afresh, as in a kernel without crane.
    Nothing of the user's exists yet but what a startup file made."""
    return _Reply(_json_dumps({"settled": True}))


def summarize(request):
    """Summaries of the objects denoted by ``request["expressions"]`` as one JSON document."""
    try:
        with _quiet():
            document = _summarize_request(_parse_request(request))
            return _Reply(_dumps(document))
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return _Reply(_json_dumps({"variables": {}, "missing": [], "error": f"probe failed: {type(exc).__name__}"}))


def _summarize_request(request):
    budget_ms = request.get("budget_ms", DEFAULT_BUDGET_MS)
    max_bytes = request.get("max_bytes", DEFAULT_MAX_BYTES)
    budget_ms = float(budget_ms) if _type_in(budget_ms, (int, float)) else DEFAULT_BUDGET_MS
    max_bytes = int(max_bytes) if type(max_bytes) is int else DEFAULT_MAX_BYTES
    work = request.get("work", DEFAULT_WORK)
    work = work if type(work) is int and work >= 0 else DEFAULT_WORK
    expressions = request.get("expressions")
    expressions = [e for e in expressions if type(e) is str] if type(expressions) is list else []
    run = _Run(budget_ms, work)
    modules_before = len(sys.modules)
    namespace = _user_namespace()
    variables = {}
    missing = []
    objects = {}
    parsed = {}
    evaluated = {}
    for expression in list(dict.fromkeys(expressions))[:MAX_EXPRESSIONS]:
        node = _parse_expression(expression)
        if node is None:
            continue
        parsed[expression] = node
        if run.structure_expired():
            variables[expression] = {"type": "", "kind": "other", "error": "time budget exhausted", "S": {}, "R": {}, "V": {}}
            continue
        try:
            obj = _evaluate(node, namespace, evaluated)
        except _Missing as exc:
            if exc.name not in missing:
                missing.append(exc.name)
            continue
        except _Absent as exc:
            variables[expression] = exc.entry
            continue
        except _Refused as exc:
            entry = _entry(type(exc.owner), "other") if exc.owner is not None else {"type": "", "kind": "other", "S": {}, "R": {}, "V": {}}
            if exc.owner is not None:
                entry["type"] = ""
                entry["R"]["owner_type"] = _qualified(type(exc.owner))
            entry["error"] = exc.reason
            variables[expression] = entry
            continue
        except _Raised as exc:
            message = _truncate(str(exc.exc), MAX_STR)[0] if _is_library_class(type(exc.exc)) else ""
            variables[expression] = {
                "type": "",
                "kind": "other",
                "error": f"raises {type(exc.exc).__name__}: {message}",
                "S": {},
                "R": {"raises": type(exc.exc).__name__, "owner_type": _qualified(type(exc.owner))},
                "V": {},
            }
            continue
        except _UserCode:
            _guard.rearm()
            variables[expression] = {"type": "", "kind": "other", "error": "not evaluated: would run user code", "S": {}, "R": {}, "V": {}}
            continue
        except Exception as exc:
            variables[expression] = {"type": "", "kind": "other", "error": f"evaluation failed: {type(exc).__name__}", "S": {}, "R": {}, "V": {}}
            continue
        objects[expression] = obj
        variables[expression] = _summarize_object(obj, run)
        _note_call_signature(obj, variables[expression])
    _note_attributes(parsed, variables)
    for entry, compute, cost, plain in run.deferred:
        reason = run.out_of_budget(cost)
        if reason is not None:
            entry["V"]["skipped"] = reason
            continue
        fired = _guard.fired
        try:
            with _unguarded_if(plain):
                compute()
        except _UserCode:
            pass
        except Exception as exc:
            entry["V"]["error"] = type(exc).__name__
        if _guard.fired != fired:
            _guard.rearm()
            entry["V"] = {"skipped": "would run user code"}
    document = {"variables": variables, "missing": missing, "libraries": _library_versions()}
    registries = _registries()
    if registries:
        document["registries"] = registries
    elapsed = (_perf() - run.start) * 1000.0
    document["cost"] = {"ms": round(elapsed, 2), "bytes": 0, "sampled": run.sampled}
    if len(sys.modules) != modules_before:
        document["cost"]["modules_added"] = len(sys.modules) - modules_before
    return _bounded(document, max_bytes)


def _source(node):
    """The structure of an expression, the same for two that read the same; None when it is
    too deeply nested to print. (``ast.dump``'s copy: ``ast.unparse`` is a class of Python
    code that finds the kernel's builtins.)"""
    try:
        return _ast["dump"](node)
    except RecursionError:
        return None


_VERSIONED_LIBRARIES = (
    "numpy", "pandas", "sklearn", "scipy", "torch", "torchvision", "tensorflow", "keras",
    "matplotlib", "seaborn", "statsmodels", "lightgbm", "xgboost", "polars",
)


def _library_versions():
    """``__version__`` of the libraries the user imported (never importing one)."""
    versions = {}
    for name in _VERSIONED_LIBRARIES:
        module = sys.modules.get(name)
        if module is None or not _is_a(module, types.ModuleType):
            continue
        version = _module_dict(module).get("__version__")
        if _is_a(version, str):
            # torch's is a str subclass; str.__str__ makes a plain copy.
            versions[name] = _truncate(str.__str__(version), 40)[0]
    return versions


# Registries a library keeps in a module dict and code may extend (`register_scale`).
_REGISTRIES = (("matplotlib.scale", "_scale_mapping"),)


def _registries():
    """The names in each registry of a module the user imported (never importing one)."""
    found = {}
    for module_name, attribute in _REGISTRIES:
        module = sys.modules.get(module_name)
        if module is None or not _is_a(module, types.ModuleType):
            continue
        mapping = _module_dict(module).get(attribute)
        if type(mapping) is not dict or len(mapping) > MAX_NAMES:
            continue
        names = [str.__str__(name) for name in mapping if _is_a(name, str)]
        if len(names) == len(mapping):
            found[module_name] = sorted(names)
    return found


def _note_attributes(parsed, variables):
    """``R.attributes`` of each object whose attributes the requested expressions use."""
    by_source = {_source(node): expression for expression, node in parsed.items()}
    for expression, node in parsed.items():
        if not isinstance(node, ast.Attribute):
            continue
        owner = by_source.get(_source(node.value))
        if owner not in variables or expression not in variables:
            continue
        owner_entry = variables[owner]
        entry = variables[expression]
        if entry.get("kind") == "absent":
            presence = "absent"
        elif entry.get("error") and entry.get("type") == "":
            continue
        elif entry.get("kind") in ("method", "builtin", "function"):
            presence = "method"
        else:
            presence = "attribute"
        owner_entry.setdefault("R", {}).setdefault("attributes", {})[node.attr] = presence


def _shrink(entry, level):
    if level == 1:
        columns = entry.get("V", {}).get("columns")
        if type(columns) is dict:
            for facts in columns.values():
                facts.pop("examples", None)
        entry.get("V", {}).pop("examples", None)
        entry.get("R", {}).pop("repr", None)
        entry.get("R", {}).pop("fields", None)
    elif level == 2:
        columns = entry.get("R", {}).get("columns")
        if type(columns) is list and len(columns) > 10:
            entry["R"]["columns_truncated"] = entry["R"].get("columns_truncated", 0) + len(columns) - 10
            del columns[10:]
            kept = {_column_key(c["name"]) for c in columns}
            stats = entry.get("V", {}).get("columns")
            if type(stats) is dict:
                for key in [k for k in stats if k not in kept]:
                    del stats[key]
    elif level == 3:
        entry["V"] = {k: v for k, v in entry.get("V", {}).items() if _type_in(v, (bool, int, float))}
    elif level == 4:
        if "call_signature" in entry.get("R", {}):
            del entry["R"]["call_signature"]
            entry["R"]["call_signature_unknown"] = "dropped: size budget"
        for section in ("S", "R"):
            entry[section] = {
                k: v for k, v in entry.get(section, {}).items() if _type_in(v, (bool, int, float, str))
            }
    else:
        entry["S"], entry["R"], entry["V"] = {}, {}, {}
        entry["error"] = "dropped: size budget"


def _bounded(document, max_bytes):
    text = _dumps(document)
    level = 1
    while len(text.encode("utf-8")) > max_bytes and level <= 5:
        sizes = sorted(
            document["variables"].items(), key=lambda item: -len(_dumps(item[1]))
        )
        for _, entry in sizes:
            _shrink(entry, level)
            text = _dumps(document)
            if len(text.encode("utf-8")) <= max_bytes:
                break
        level += 1
    if len(text.encode("utf-8")) > max_bytes:
        document["variables"] = {}
        document["error"] = "size budget exceeded"
        text = _dumps(document)
    # `text` is the document as it stands.
    document["cost"]["bytes"] = len(text.encode("utf-8"))
    return document


def api_docs(request):
    """Docstrings and signatures of the library functions, methods and classes a cell calls."""
    try:
        with _quiet():
            return _Reply(_dumps(_api_docs_request(_parse_request(request))))
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return _Reply(_json_dumps({"docs": [], "error": f"probe failed: {type(exc).__name__}"}))


def _api_docs_request(request):
    callees = request.get("callees")
    callees = [c for c in callees if type(c) is str] if type(callees) is list else []
    budget_chars = request.get("budget_chars", 4000)
    budget_chars = budget_chars if type(budget_chars) is int and budget_chars > 0 else 4000
    run = _Run(float(request.get("budget_ms", DEFAULT_BUDGET_MS)) if _type_in(request.get("budget_ms"), (int, float)) else DEFAULT_BUDGET_MS)
    namespace = _user_namespace()
    found = []
    for callee in list(dict.fromkeys(callees))[:MAX_EXPRESSIONS]:
        if run.expired():
            break
        fired = _guard.fired
        try:
            obj = _evaluate(_ast["parse"](callee.strip(), mode="eval").body, namespace)
            documented = _library_callable(obj)
            if documented is None:
                continue
            doc = _inspect["getdoc"](documented)
            if type(doc) is not str or not doc.strip():
                continue
            item = {"callee": callee, "name": _callable_name(documented), "signature": _library_signature(documented), "doc": doc}
        except _UserCode:
            _guard.rearm()
            continue
        except Exception:
            continue
        if _guard.fired != fired:
            _guard.rearm()
            continue
        found.append(item)
    share = budget_chars // max(len(found), 1)
    docs = []
    for item in found:
        text, truncated = _truncate_lines(item["doc"], share)
        item["doc"] = text
        if truncated:
            item["truncated"] = True
        if item["signature"] is None:
            del item["signature"]
        docs.append(item)
    return {"docs": docs}


def _library_callable(obj):
    """The library function, method or class behind ``obj``, or None for user code."""
    cls = type(obj)
    if _inherits(cls, type):
        return obj if _is_library_class(obj) else None
    if cls is types.MethodType:
        function = obj.__func__
        module = _static_get(function, "__module__")
        return obj if _module_is_library(module) else None
    if cls is types.FunctionType:
        return obj if _module_is_library(obj.__module__) else None
    if _is_library_class(cls) and (
        _kind_of(obj) in ("builtin", "function") or _lookup(cls, "__call__")[0] is not None
    ):
        return obj
    return None


# Call signatures: what a call of a library callable binds its arguments to.

MAX_SIGNATURE_PARAMETERS = 64
# Wrappers whose own code binds the arguments to the wrapped function's signature before doing
# anything else, so that a call the signature refuses raises its TypeError: scikit-learn's
# validate_params calls inspect.Signature.bind (or, with validation off, the function itself).
_BINDING_WRAPPERS = {
    (
        "sklearn.utils._param_validation",
        "validate_params.<locals>.decorator.<locals>.wrapper",
    ): "signature_bind",
}


class _NoSignature(Exception):
    """A library callable whose shown signature is not certainly what a call binds to."""


def _plain_parameters(function):
    """The parameters of a library ``def`` that is no wrapper, in signature syntax without
    default values: ``(self, x, y=, *, sample_weight=)``. Read from the code object and the
    defaults, which is how the interpreter binds a call: ``inspect.signature`` shows a default
    of ``inspect.Parameter.empty`` (torch.fx does this) as none."""
    namespace = _instance_dict(function)
    if "__wrapped__" in namespace:
        raise _NoSignature("a wrapper (__wrapped__): it may accept what its signature does not show")
    if "__signature__" in namespace:
        raise _NoSignature("sets __signature__: it may accept what its signature does not show")
    code = function.__code__
    names = code.co_varnames
    positional = code.co_argcount
    posonly = code.co_posonlyargcount
    keyword_only = code.co_kwonlyargcount
    defaults = function.__defaults__ or ()
    kwdefaults = function.__kwdefaults__ or {}
    var_positional = bool(code.co_flags & inspect.CO_VARARGS)
    var_keyword = bool(code.co_flags & inspect.CO_VARKEYWORDS)
    if positional + keyword_only + var_positional + var_keyword > MAX_SIGNATURE_PARAMETERS:
        raise _NoSignature(f"more than {MAX_SIGNATURE_PARAMETERS} parameters")
    items = []
    first_default = positional - len(defaults)
    for index in range(positional):
        items.append(names[index] + ("=" if index >= first_default else ""))
        if index == posonly - 1:
            items.append("/")
    cursor = positional + keyword_only
    if var_positional:
        items.append("*" + names[cursor])
        cursor += 1
    elif keyword_only:
        items.append("*")
    for index in range(positional, positional + keyword_only):
        items.append(names[index] + ("=" if names[index] in kwdefaults else ""))
    if var_keyword:
        items.append("**" + names[cursor])
    return "(" + ", ".join(items) + ")"


def _function_signature(function, bound):
    """``R.call_signature`` of a library ``def`` (or a wrapper known to bind its arguments)."""
    namespace = _instance_dict(function)
    binder = "interpreter"
    wrapped = namespace.get("__wrapped__")
    if wrapped is not None:
        code = function.__code__
        origin = (function.__globals__.get("__name__"), getattr(code, "co_qualname", code.co_name))
        binder = _BINDING_WRAPPERS.get(origin)
        if binder is None or type(wrapped) is not types.FunctionType or "__signature__" in namespace:
            raise _NoSignature("a wrapper (__wrapped__): it may accept what its signature does not show")
        function = wrapped
    parameters = _plain_parameters(function)
    module = function.__module__
    return {
        "callable": f"{module}.{function.__qualname__}" if type(module) is str else function.__qualname__,
        "name": function.__qualname__,
        "parameters": parameters,
        "bound": bound,
        "binder": binder,
    }


def _call_signature(obj):
    """What a call of the library callable ``obj`` binds its arguments to; ``_NoSignature``
    when that is not certain (a C function, a wrapper, a partial, a class whose ``__new__``
    or metaclass takes the arguments first)."""
    cls = type(obj)
    if _inherits(cls, type):
        owner, _ = _lookup(cls, "__call__")
        if owner is not type:
            raise _NoSignature("its metaclass defines __call__")
        owner, _ = _lookup(obj, "__new__")
        if owner is not object:
            raise _NoSignature("the class defines __new__")
        owner, init = _lookup(obj, "__init__")
        if type(init) is not types.FunctionType:
            raise _NoSignature("its __init__ is not a Python function")
        fact = _function_signature(init, True)
        fact["callable"] = _qualified(obj)
        return fact
    if cls is types.MethodType:
        function = obj.__func__
        if type(function) is not types.FunctionType:
            raise _NoSignature("not a Python function")
        return _function_signature(function, True)
    if cls is types.FunctionType:
        return _function_signature(obj, False)
    if _qualified(cls) == "functools.partial":
        raise _NoSignature("functools.partial: its bound arguments can be given again")
    raise _NoSignature("not a Python function: inspect.signature may not be what a call accepts")


# Data objects that can be called (a torch module, a Keras model) are judged by their facts.
_SIGNED_KINDS = frozenset(("function", "method", "builtin", "class", "other"))


def _note_call_signature(obj, entry):
    if entry.get("error") or entry.get("kind") not in _SIGNED_KINDS or _library_callable(obj) is None:
        return
    fired = _guard.fired
    try:
        entry["R"]["call_signature"] = _call_signature(obj)
    except _NoSignature as exc:
        entry["R"]["call_signature_unknown"] = str(exc)
    except _UserCode:
        entry["R"]["call_signature_unknown"] = "reading it would run user code"
    except Exception as exc:
        entry["R"]["call_signature_unknown"] = f"inspect.signature failed: {type(exc).__name__}"
    if _guard.fired != fired:
        _guard.rearm()
        entry["R"].pop("call_signature", None)
        entry["R"]["call_signature_unknown"] = "reading it would run user code"


def _callable_name(obj):
    if _is_a(obj, type):
        return _qualified(obj)
    if type(obj) is types.MethodType:
        obj = obj.__func__
    module = _static_get(obj, "__module__")
    qualname = _static_get(obj, "__qualname__") or _static_get(obj, "__name__")
    if type(qualname) is not str:
        return _qualified(type(obj))
    return f"{module}.{qualname}" if type(module) is str else qualname


def _library_signature(obj):
    """The signature without annotations (they cost tokens and say little to a reader)."""
    try:
        signature = inspect.signature(obj)
        signature = signature.replace(
            parameters=[p.replace(annotation=p.empty) for p in signature.parameters.values()],
            return_annotation=signature.empty,
        )
        text = str(signature)
    except Exception:
        return None
    return _truncate(text, 400)[0]


def _truncate_lines(text, limit):
    if len(text) <= limit:
        return text, False
    cut = text.rfind("\n", 0, limit)
    if cut < limit // 2:
        cut = limit
    return text[:cut].rstrip() + "\n\u2026", True
