# Which summarizer an object gets (builtin type, library class along the MRO, user subclass),
# and the generic summary of anything else.


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
