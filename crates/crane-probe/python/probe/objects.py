# Summaries of Python's own values: scalars, strings, containers, functions, classes, methods,
# modules and generators.


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
