
# Library contracts that make an abridged run's crash certain though the failing statement reads
# what the abridgement changed: what a library's own code fixes whichever iterations or
# candidates ran. Concatenated after ``crane_dependence.py``, whose ``abridged_verdict`` asks
# them, in the forked child after the crash, about the innermost notebook frame's walk (a
# ``_Dependence``: the raising expression, the changed names it reads, its frame's names).
# Each reads objects through instance dictionaries and ``type``'s own descriptors, or under the
# guard against user code (``_under_guard``), and answers ``None`` wherever it is not sure.
#
# - ``_layer_lookup``: torch.nn's own layers look indices up against the shapes of their
#   weights, never their values.
# - ``_search_step``: a step of a scikit-learn search's best pipeline that no candidate sets a
#   parameter of, nor of a step before it, is refitted alike whichever candidate wins.


def _receiver_call(innermost):
    """The call the innermost notebook frame's walk ``innermost`` stopped at, where the only
    changed name it reads is the root of what it calls (the model, the search: ``self`` of
    ``self.emb(ids)``) and its arguments read nothing changed; ``None`` otherwise."""
    if innermost is None or innermost.found != innermost.direct:
        return None
    call = innermost.raising
    if not isinstance(call, ast.Call):
        return None
    root = _path_root(call.func)
    arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
    if root is None or not innermost.direct <= {root} or any(_names_read(a) & innermost.direct for a in arguments):
        return None
    return call


def _layer_lookup(exc, innermost):
    """``"name (Class)"`` where ``exc`` is an ``IndexError`` that a torch.nn layer of torch's own
    (``torch.nn.Embedding``, a loss) raised, called by the innermost notebook frame's raising
    call (``_receiver_call``: the model trained fewer steps reached through ``self``, arguments
    nothing changed); ``None`` otherwise."""
    call = _receiver_call(innermost) if type(exc) is IndexError else None
    nn = sys.modules.get("torch.nn")
    if call is None or nn is None or not issubclass(type(nn), types.ModuleType):
        return None
    kind = type(_under_guard(_attribute_path, call.func, innermost.scope))
    name, module = _qualname_of(kind), _module_of(kind)
    if _module_dict(nn).get(name) is not kind or type(module) is not str or not module.startswith("torch.nn.modules."):
        return None
    return f"{ast.unparse(call.func)} ({name})"


# What a fitted scikit-learn pipeline is asked with data it transforms step by step.
_PIPELINE_METHODS = frozenset(
    ("predict", "predict_proba", "predict_log_proba", "decision_function", "transform", "score", "score_samples")
)


def _search_step(exc, innermost):
    """The name of the step of a shortened search's best pipeline that raised ``exc``, where the
    innermost notebook frame's raising call (``_receiver_call``) asks that pipeline
    (``search.predict_proba(X)``, or ``best.predict(X)`` with ``best`` the search's
    ``best_estimator_``), the step is not the last, the step and those before it are
    scikit-learn's own with no ``random_state`` left to chance, and no candidate of the search
    sets a parameter of them: the refit fits them alike on the same data whichever candidate
    wins. ``None`` otherwise."""
    call = _receiver_call(innermost)
    if call is None or not isinstance(call.func, ast.Attribute) or call.func.attr not in _PIPELINE_METHODS:
        return None
    return _under_guard(
        lambda: _raising_step(exc, _attribute_path(call.func.value, innermost.scope), innermost.scope)
    )


def _raising_step(exc, receiver, scope):
    search_module = sys.modules.get("sklearn.model_selection")
    pipeline_module = sys.modules.get("sklearn.pipeline")
    if search_module is None or pipeline_module is None:
        return None
    searches = tuple(_module_dict(search_module).get(n) for n in ("GridSearchCV", "RandomizedSearchCV"))
    pipeline_class = _module_dict(pipeline_module).get("Pipeline")
    if type(receiver) in searches:
        search = receiver
        pipeline = object.__getattribute__(search, "__dict__").get("best_estimator_")
    elif type(receiver) is pipeline_class:
        pipeline = receiver
        found = [
            value for _, value in scope.items()
            if type(value) in searches and object.__getattribute__(value, "__dict__").get("best_estimator_") is pipeline
        ]
        search = found[0] if len(found) == 1 else None
    else:
        return None
    if search is None or type(pipeline) is not pipeline_class:
        return None
    steps = object.__getattribute__(pipeline, "__dict__").get("steps")
    if type(steps) is not list or not all(type(step) is tuple and len(step) == 2 for step in steps):
        return None
    raising = {id(tb.tb_frame.f_locals.get("self")) for tb in _frames_of(exc)}
    index = max((i for i, (_, step) in enumerate(steps) if id(step) in raising), default=None)
    if index is None or index == len(steps) - 1:
        return None
    settings = object.__getattribute__(search, "__dict__")
    grid = settings.get("param_grid", settings.get("param_distributions"))
    grids = grid if type(grid) is list else [grid]
    early = {name for name, _ in steps[: index + 1]}
    for candidate in grids:
        if type(candidate) is not dict:
            return None
        for key in candidate:
            if type(key) is not str or "__" not in key or key.split("__", 1)[0] in early:
                return None
    for _, step in steps[: index + 1]:
        params = step.get_params(deep=True)
        for name, value in [("", step), *params.items()]:
            if hasattr(value, "get_params") and not str(type(value).__module__).startswith("sklearn."):
                return None
            if name.endswith("random_state") and value is None:
                return None
    return steps[index][0]
