# scikit-learn: estimators (fitted or not, their key parameters, pipelines' steps) and splitters.


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
