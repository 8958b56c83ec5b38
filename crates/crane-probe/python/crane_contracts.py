
# Library contracts that make an abridged run's crash certain though the failing statement reads
# what the abridgement changed: what a library's own code fixes whichever iterations or
# candidates ran. Concatenated after ``crane_dependence.py``, whose ``abridged_verdict`` asks
# them, in the forked child after the crash, about the traceback or the innermost notebook
# frame's walk (a ``_Dependence``: the raising expression, the changed names it reads, its
# frame's names).
# Each reads objects through instance dictionaries and ``type``'s own descriptors, or under the
# guard against user code (``_under_guard``), and answers ``None`` wherever it is not sure.
#
# - ``_layer_lookup``: torch.nn's own layers look indices up against the shapes of their
#   weights, never their values.
# - ``_search_step``: a step of a scikit-learn search's best pipeline that no candidate sets a
#   parameter of, nor of a step before it, is refitted alike whichever candidate wins.
# - ``_pipeline_step``: a step of a pipeline before the one whose fit the abridgement cut in
#   rounds, with no rounds or chance of its own, is fitted alike on the same data.
# - ``_unfinite_argument``: scikit-learn's metrics refuse NaN and infinity in any array they
#   are given, whatever the others hold.
# - ``_scheduled_epoch``: Keras's ``LearningRateScheduler`` calls the notebook's schedule with
#   the epoch's number, which the abridged fit gives its epochs as the full fit does.
# - ``_fitted_width``: the shape of a fitted linear model's ``coef_``, a tree or ensemble's
#   ``feature_importances_`` and any estimator's ``n_features_in_`` is fixed by the data it was
#   fitted on, whatever its parameters or rounds; a fit cut in rounds, or a search's best
#   pipeline whose steps before the last no candidate sets, feeds its last step the full run's
#   data.


def _only_direct(innermost):
    """Whether the innermost notebook frame's walk found changed only names its raising
    expression reads itself: no test around the statement, no fact of the path to it."""
    return (
        innermost is not None and innermost.found == innermost.direct
        and not any(name.startswith("<") for name in innermost.found)
    )


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


# The calls that fit a scikit-learn estimator on what they are given.
_FITTING_METHODS = frozenset(("fit", "fit_transform", "fit_predict", "partial_fit"))


def _fitted_on_exact(innermost, root):
    """Whether ``root`` is fitted in the innermost notebook frame's body, before the failing
    line, and what each statement that fits it (``root.fit(...)``) reads has the full run's
    values, a library call's shortening aside (``uncut``): what a pipeline's steps learn from
    the data (an encoder's categories, a scaler's means) is then the full run's. A fit replaces
    what an estimator learned before, so the estimators it reads count by their settings only
    (``_settings_exact``)."""
    if root is None:
        return False
    fits = {
        node.lineno
        for statement in innermost.body
        for node in ast.walk(statement)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr in _FITTING_METHODS and _path_root(node.func.value) == root
    }
    if not fits or max(fits) >= innermost.line:
        return False
    exact = set()
    return all(_line_exact(innermost, line, exact) for line in sorted(fits))


def _line_exact(innermost, line, exact):
    """Whether the statement at ``line`` of the innermost frame's body reads nothing whose
    values the abridgement changed but estimators whose settings are the full run's
    (``exact``, grown as they are found)."""
    walk = _Dependence(innermost.filename, line, set(innermost.initial), innermost.scope, values=True, uncut=True)
    depends, names, _ = walk.judge(innermost.body)
    if not depends:
        return True
    if not names:
        return False
    return all(name in exact or _settings_exact(innermost, name, exact) for name in names)


def _settings_exact(innermost, name, exact):
    """Whether ``name`` holds a scikit-learn estimator whose settings are the full run's: the
    body sets none of them (no ``set_params``, no store into it or its attributes) and every
    statement of it that binds ``name`` reads nothing changed but such estimators."""
    value = innermost.scope.get(name)
    if value is _UNKNOWN or not str(_module_of(type(value))).startswith("sklearn."):
        return False
    bindings = []
    for statement in innermost.body:
        for node in ast.walk(statement):
            if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load) and _root(node) == name:
                return False
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "set_params" and _root(node.func.value) == name:
                return False
            if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
                if not any(
                    isinstance(parent, ast.Assign) and node in parent.targets for parent in ast.walk(statement)
                ):
                    return False
                bindings.append(node.lineno)
    exact.add(name)
    return all(_line_exact(innermost, line, exact) for line in bindings)


# scikit-learn's modules of metrics whose functions check every array they are given for NaN
# and infinity before they compute anything.
_FINITE_METRICS = frozenset(("sklearn.metrics._regression", "sklearn.metrics._classification", "sklearn.metrics._ranking"))


def _unfinite_argument(exc, innermost):
    """``(callee, argument)`` where ``exc`` is a ``ValueError`` about NaN or infinity that
    the innermost notebook frame's raising call raised, a scikit-learn metric
    (``_FINITE_METRICS``) or a scikit-learn estimator that refuses NaN asked about data
    (``model.predict(X)``, ``_refuses_nan``), and one of the arrays it is given (for an
    estimator, the first) is unchanged by the abridgement and holds NaN or infinity (a name, or
    a column of a frame by a written-out name): the full run gives the call the same array,
    which it refuses whatever else it is given. ``callee`` says so in words. ``None``
    otherwise."""
    if type(exc) is not ValueError or not _only_direct(innermost) or not _words(_message(exc)) & {"nan", "infinity"}:
        return None
    call = innermost.raising
    if not isinstance(call, ast.Call) or not isinstance(call.func, (ast.Name, ast.Attribute)):
        return None
    function = _under_guard(_attribute_path, call.func, innermost.scope)
    if isinstance(function, types.FunctionType) and function.__module__ in _FINITE_METRICS:
        arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
        name = f"scikit-learn's {function.__name__}, which refuses NaN and infinity in any array it is given"
    elif isinstance(call.func, ast.Attribute) and call.func.attr in _PIPELINE_METHODS and call.args:
        # ``model.predict(X)``: what the estimator is asked about is its first argument.
        receiver = _under_guard(_attribute_path, call.func.value, innermost.scope)
        if not _under_guard(_refuses_nan, receiver):
            return None
        arguments = call.args[:1]
        name = (
            f"{_qualname_of(type(receiver))}.{call.func.attr}, which refuses NaN and infinity in the "
            "data it is given, as scikit-learn's tags for its class say"
        )
    else:
        return None
    for argument in arguments:
        if _names_read(argument) & innermost.found:
            continue
        value = _under_guard(_array_given, argument, innermost.scope)
        if value is not None and _under_guard(_unfinite, value):
            return name, ast.unparse(argument)
    return None


def _refuses_nan(estimator):
    """Whether ``estimator`` is a scikit-learn estimator of its own (no estimator among its
    parameters: not a pipeline, a search or an ensemble of the notebook's choosing) whose tags
    say it does not allow NaN in its input: it checks the data it is asked about for NaN and
    infinity before anything else."""
    if not str(_module_of(type(estimator))).startswith("sklearn.") or not hasattr(type(estimator), "__sklearn_tags__"):
        return False
    if any(hasattr(value, "get_params") for value in estimator.get_params(deep=False).values()):
        return False
    return estimator.__sklearn_tags__().input_tags.allow_nan is False


def _array_given(node, scope):
    """The value of ``node``: a name, or a column of exactly a pandas frame by a written-out
    name; ``None`` for anything else."""
    if isinstance(node, ast.Name):
        value = scope.get(node.id)
        return None if value is _UNKNOWN else value
    pandas = sys.modules.get("pandas")
    if (
        pandas is None or not isinstance(node, ast.Subscript) or not isinstance(node.value, ast.Name)
        or not isinstance(node.slice, ast.Constant) or type(node.slice.value) is not str
    ):
        return None
    frame = scope.get(node.value.id)
    if type(frame) is not _module_dict(pandas).get("DataFrame"):
        return None
    return frame[node.slice.value]


def _unfinite(value):
    """Whether ``value``, exactly a NumPy array or a pandas series of floats, holds NaN or
    infinity."""
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return False
    kind = _data_kind(type(value))
    if kind == "Series":
        value = value.to_numpy()
    elif kind != "ndarray":
        return False
    return value.dtype.kind == "f" and not bool(numpy.isfinite(value).all())


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
    found = _search_of(receiver, scope)
    if found is None:
        return None
    search, pipeline = found
    grids = _search_grids(search)
    return None if grids is None else _early_step(exc, pipeline, grids)


def _early_step(exc, pipeline, grids):
    """The name of the step of ``pipeline`` that raised ``exc`` (the last step on the
    traceback), where it is not the pipeline's last and it and the steps before it are
    ``_unsearched`` by ``grids``; ``None`` otherwise."""
    steps = _pipeline_steps(pipeline)
    if steps is None:
        return None
    raising = {id(tb.tb_frame.f_locals.get("self")) for tb in _frames_of(exc)}
    index = max((i for i, (_, step) in enumerate(steps) if id(step) in raising), default=None)
    if index is None or index == len(steps) - 1 or not _unsearched(grids, steps[: index + 1]):
        return None
    return steps[index][0]


def _pipeline_step(exc, innermost):
    """The name of the step, not the last, of a scikit-learn ``Pipeline`` (exactly that class,
    not a search) that raised ``exc``, where the innermost notebook frame's raising call
    (``_receiver_call``) asks that pipeline (``model.predict(X)``) and that step and those
    before it are scikit-learn's own with no ``random_state`` left to chance and no rounds to cut
    (``_unsearched``): whatever the abridgement cut in a later step's fit, the fit fitted these
    alike on the data it was given. ``None`` otherwise."""
    call = _receiver_call(innermost)
    if call is None or not isinstance(call.func, ast.Attribute) or call.func.attr not in _PIPELINE_METHODS:
        return None
    return _under_guard(lambda: _early_step(exc, _attribute_path(call.func.value, innermost.scope), []))


def _sklearn_class(name, module_name):
    """scikit-learn's class ``name`` of the module ``module_name``, if that is imported."""
    module = sys.modules.get(module_name)
    return _module_dict(module).get(name) if module is not None else None


def _search_of(receiver, scope):
    """``(search, best)`` where ``receiver`` is a fitted ``GridSearchCV`` or
    ``RandomizedSearchCV`` (exactly those classes), or the ``best_estimator_`` of exactly one
    such search among the frame's names; ``None`` otherwise."""
    searches = tuple(_sklearn_class(name, "sklearn.model_selection") for name in ("GridSearchCV", "RandomizedSearchCV"))
    if type(receiver) in searches:
        best = object.__getattribute__(receiver, "__dict__").get("best_estimator_")
        return None if best is None else (receiver, best)
    found = [
        value for _, value in scope.items()
        if type(value) in searches and object.__getattribute__(value, "__dict__").get("best_estimator_") is receiver
    ]
    return (found[0], receiver) if len(found) == 1 and receiver is not None else None


def _pipeline_steps(value):
    """The ``(name, estimator)`` steps of ``value``, a ``Pipeline`` (exactly that class), read
    from its instance dictionary; ``None`` otherwise."""
    if type(value) is not _sklearn_class("Pipeline", "sklearn.pipeline"):
        return None
    steps = object.__getattribute__(value, "__dict__").get("steps")
    if type(steps) is not list or not all(type(step) is tuple and len(step) == 2 for step in steps):
        return None
    return steps


def _search_grids(search):
    """The dictionaries of parameters ``search`` tries, or ``None`` when any is not a
    dictionary of names."""
    settings = object.__getattribute__(search, "__dict__")
    grid = settings.get("param_grid", settings.get("param_distributions"))
    grids = grid if type(grid) is list else [grid]
    if not all(type(candidate) is dict and all(type(key) is str for key in candidate) for candidate in grids):
        return None
    return grids


def _unsearched(grids, steps):
    """Whether no candidate of a search trying ``grids`` sets a parameter of any of ``steps``
    (the first steps of its pipeline; ``grids`` empty for a pipeline fitted without a search),
    and those are scikit-learn's own, with no ``random_state`` left to chance and no rounds an
    abridged fit would cut (``_round_parameters``): the fit or refit fits them alike on the same
    data, in the abridged run as in the full one, whichever candidate wins."""
    early = {name for name, _ in steps}
    if any("__" not in key or key.split("__", 1)[0] in early for grid in grids for key in grid):
        return False
    for _, step in steps:
        params = step.get_params(deep=True)
        for name, value in [("", step), *params.items()]:
            if hasattr(value, "get_params"):
                if not str(type(value).__module__).startswith("sklearn."):
                    return False
                if _round_parameters(value.get_params(deep=False)):
                    return False
            if name.endswith("random_state") and value is None:
                return False
    return True


# Fitted attributes whose shape scikit-learn fixes from the data an estimator was fitted on (its
# width, its classes or targets) whatever its parameters, and the estimators that hold them
# after every fit: the modules their classes come from, or the classes themselves
# (``module:Class``). An ``SVC``'s ``coef_`` is not among them: only a linear kernel has one.
_FITTED_WIDTH = {
    "coef_": ("sklearn.linear_model.", "sklearn.svm._classes:LinearSVC", "sklearn.svm._classes:LinearSVR"),
    "feature_importances_": ("sklearn.ensemble.", "sklearn.tree."),
    "n_features_in_": ("sklearn.",),
}


def _holds_fitted_width(estimator, attribute):
    kind = type(estimator)
    module, name = _module_of(kind), _qualname_of(kind)
    if type(module) is not str or type(name) is not str:
        return False
    return any(
        f"{module}:{name}" == owner if ":" in owner else module.startswith(owner)
        for owner in _FITTED_WIDTH.get(attribute, ())
    )


def _accessors(node):
    """The root name of ``node`` and what it reads from it, outermost last:
    ``("attr", name)`` and ``("item", constant)``; ``None`` for anything else."""
    path = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            path.append(("attr", node.attr))
        elif isinstance(node.slice, ast.Constant) and type(node.slice.value) in (int, str):
            path.append(("item", node.slice.value))
        elif (
            isinstance(node.slice, ast.UnaryOp) and isinstance(node.slice.op, ast.USub)
            and isinstance(node.slice.operand, ast.Constant) and type(node.slice.operand.value) is int
        ):
            path.append(("item", -node.slice.operand.value))
        else:
            return None
        node = node.value
    return (node.id, path[::-1]) if isinstance(node, ast.Name) else None


def _step_of(steps, key):
    """The estimator of ``steps`` under ``key`` (a name or a position), or ``None``."""
    if type(key) is str:
        found = [step for name, step in steps if name == key]
        return found[0] if len(found) == 1 else None
    return steps[key][1] if -len(steps) <= key < len(steps) else None


def _final_estimator_read(path, best, search):
    """Where ``path`` (``_accessors``' list, after the root) reads the final estimator of the
    search's best estimator ``best`` and then one fitted attribute, ``(estimator, attribute,
    rest)``: ``rest`` the constant subscripts after it. Pipelines are read through their steps
    in their instance dictionaries (``named_steps[...]``, ``named_steps.x``, ``[...]``,
    ``steps[i][1]``, ``_final_estimator``); no code runs. ``None`` otherwise."""
    if search is not None and path[:1] != [("attr", "best_estimator_")]:
        return None
    value, index = best, 0 if search is None else 1
    steps = _pipeline_steps(value)
    while steps is not None and index < len(path):
        kind, key = path[index]
        if kind == "item":
            value, index = _step_of(steps, key), index + 1
        elif key == "named_steps" and index + 1 < len(path) and type(path[index + 1][1]) is str:
            value, index = _step_of(steps, path[index + 1][1]), index + 2
        elif key == "steps" and path[index + 1 : index + 3] in ([("item", -1), ("item", 1)], [("item", len(steps) - 1), ("item", 1)]):
            value, index = steps[-1][1], index + 3
        elif key == "_final_estimator":
            value, index = steps[-1][1], index + 1
        else:
            return None
        if value is not steps[-1][1]:
            return None
        steps = None
    if value is None or _pipeline_steps(value) is not None or index >= len(path) or path[index][0] != "attr":
        return None
    rest = path[index + 1 :]
    if any(kind != "item" for kind, _ in rest):
        return None
    return value, path[index][1], rest


def _argument_leaves(call):
    """The expressions ``call`` is given, with list, tuple and dictionary displays opened."""
    pending = [*call.args, *(keyword.value for keyword in call.keywords)]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.List, ast.Tuple)):
            pending.extend(node.elts)
        elif isinstance(node, ast.Dict):
            pending.extend(part for part in (*node.keys, *node.values) if part is not None)
        else:
            yield node


def _fitted_width(exc, innermost):
    """``(root, what, searched)`` where ``exc`` is about lengths or shapes, raised by the
    innermost notebook frame's raising call, whose only changed read is ``root``, given to that
    call directly (or in a display) and only as a fitted attribute whose shape the data fixes
    (``_FITTED_WIDTH``) of the last step of ``root``'s estimator: a scikit-learn estimator or
    pipeline whose fit the abridgement cut to fewer rounds (``model.feature_importances_``), or
    a shortened search's winner (``searched``: ``best.named_steps["model"].coef_[0]``,
    ``search.best_estimator_.feature_importances_``). The steps before that one are fitted
    alike in both runs (``_unsearched``). ``what`` names the attributes. ``None``
    otherwise."""
    if innermost is None or innermost.found != innermost.direct or len(innermost.direct) != 1:
        return None
    call = innermost.raising
    if not isinstance(call, ast.Call) or (counted_kind(exc) is None and structural_kind(exc) is None):
        return None
    (root,) = innermost.direct
    if root in _names_read(call.func):
        return None
    reads = []
    held = None
    for leaf in _argument_leaves(call):
        if root not in _names_read(leaf):
            continue
        if isinstance(leaf, ast.Name) and held is None:
            # Bound on an earlier line: ``importances = model.feature_importances_``.
            held = _bound_read(root, innermost)
            if held is None:
                return None
            continue
        found = _accessors(_shape_kept(leaf, innermost.scope))
        if found is None or found[0] != root:
            return None
        reads.append(found[1])
    if held is not None:
        if reads:
            return None
        line, (name, read) = held
        found = _under_guard(_fitted_reads, name, [read], innermost.scope)
        return None if found is None else (f"{root}, which line {line} read from {name}", *found[1:])
    return _under_guard(_fitted_reads, root, reads, innermost.scope) if reads else None


# What an array is asked that changes no array's shape (``resize`` would, in place).
_SHAPE_KEPT = frozenset(
    (
        "shape", "size", "ndim", "dtype", "sum", "mean", "max", "min", "std", "var", "argmax",
        "argmin", "argsort", "round", "copy", "tolist", "astype", "ravel", "flatten", "reshape",
        "any", "all", "cumsum", "sort", "T",
    )
)


# NumPy's functions whose result has a shape that the shape of their one argument decides
# (elementwise, or a reshape of it), and the array methods that, called without arguments, do.
_SHAPE_FUNCTIONS = frozenset(
    (
        "abs", "absolute", "ravel", "squeeze", "round", "around", "exp", "log", "log1p", "sqrt",
        "square", "sign", "negative", "asarray", "array", "copy",
    )
)
_SHAPE_METHODS = frozenset(("ravel", "flatten", "squeeze", "round", "copy"))


def _shape_kept(node, scope):
    """What ``node`` computes its result from where only that argument's shape decides the
    result's (``np.abs(x)``, ``abs(x)``, ``x.ravel()``, ``np.round(x, 3)``, nested), else
    ``node`` itself."""
    numpy = sys.modules.get("numpy")
    while isinstance(node, ast.Call) and not node.keywords:
        func = node.func
        # Constants beside it (``np.round(x, 3)``) say nothing of its shape.
        constants = all(isinstance(argument, ast.Constant) for argument in node.args[1:])
        if (
            node.args and constants and isinstance(func, ast.Attribute) and func.attr in _SHAPE_FUNCTIONS
            and isinstance(func.value, ast.Name) and numpy is not None and scope.get(func.value.id) is numpy
        ):
            node = node.args[0]
        elif len(node.args) == 1 and isinstance(func, ast.Name) and func.id == "abs" and scope.get("abs") is _UNKNOWN:
            node = node.args[0]
        elif (
            isinstance(func, ast.Attribute) and func.attr in _SHAPE_METHODS
            and all(isinstance(argument, ast.Constant) for argument in node.args)
        ):
            node = func.value
        else:
            break
    return node


def _bound_read(name, innermost):
    """``(line, (root, path))`` where ``name`` holds what one statement of the innermost frame's body
    read from ``root`` by attributes and constant subscripts (``imp = model.feature_importances_``),
    an array or a number: that statement binds ``name`` and nothing else does, it and the
    failing statement are at the top of the body, and the statements between them do not name
    ``root`` and use ``name`` only in ways that keep an array's shape: given to a call, indexed,
    asked what ``_SHAPE_KEPT`` names (``print(imp.sum())``). ``None`` otherwise."""
    numpy = sys.modules.get("numpy")
    value = innermost.scope.get(name)
    if numpy is None or type(value) not in (numpy.ndarray, int):
        return None
    body = innermost.body
    failing = [i for i, node in enumerate(body) if node.lineno <= innermost.line <= (node.end_lineno or node.lineno)]
    bindings = [
        i for i, node in enumerate(body)
        if any(isinstance(part, ast.Name) and part.id == name and not isinstance(part.ctx, ast.Load) for part in ast.walk(node))
    ]
    if len(failing) != 1 or len(bindings) != 1 or bindings[0] >= failing[0]:
        return None
    binding = body[bindings[0]]
    if not (isinstance(binding, ast.Assign) and len(binding.targets) == 1 and isinstance(binding.targets[0], ast.Name)):
        return None
    found = _accessors(_shape_kept(binding.value, innermost.scope))
    if found is None or found[0] == name:
        return None
    root = found[0]
    for node in body[bindings[0] + 1 : failing[0]]:
        for part in ast.walk(node):
            if isinstance(part, ast.Name) and part.id == root:
                return None
            if (
                isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == name
                and (part.attr not in _SHAPE_KEPT or not isinstance(part.ctx, ast.Load))
            ):
                return None
            if isinstance(part, ast.Call) and isinstance(part.func, ast.Name) and part.func.id == name:
                return None
    return binding.lineno, found


def _fitted_reads(root, reads, scope):
    value = scope.get(root)
    found = _search_of(value, scope)
    if found is not None:
        search, best = found
        grids = _search_grids(search)
        if grids is None:
            return None
    elif str(_module_of(type(value))).startswith("sklearn."):
        search, best, grids = None, value, []
    else:
        return None
    steps = _pipeline_steps(best)
    if steps is not None:
        if not steps or not _unsearched(grids, steps[:-1]):
            return None
        final = steps[-1][0]
        if any(key.split("__", 1)[0] != final for grid in grids for key in grid):
            return None
    attributes = set()
    for path in reads:
        read = _final_estimator_read(path, best, search if value is search else None)
        if read is None:
            return None
        estimator, attribute, _ = read
        if not _holds_fitted_width(estimator, attribute):
            return None
        attributes.add(f"{_qualname_of(type(estimator))}'s {attribute}")
    return root, ", ".join(sorted(attributes)), search is not None


def _scheduled_epoch(exc, cell_tree, changed):
    """The certain verdict on ``exc`` where it came out of the notebook's schedule that Keras's
    own ``LearningRateScheduler`` called in a shortened fit (through crane's ``told``: its
    first and its last epoch are the full fit's), the cell's own statement making that fit,
    and the schedule's failing statement reads nothing changed: its first argument (the
    epoch's number) is exact, its others (the rate the abridged fit had) are changed, and so
    is each global it reads that the cell changed before the fit, or that is not the plain data
    or the array, frame or series (by fingerprint) it was when the fit began
    (``_schedule_entries``). ``None`` otherwise."""
    entries = list(_frames_of(exc))
    told = [i for i, tb in enumerate(entries) if tb.tb_frame.f_code is _TOLD_CODE]
    if len(told) != 1:
        return None
    before, after = entries[: told[0]], entries[told[0] + 1 :]
    notebook = [
        tb for tb in before
        if tb.tb_frame.f_code.co_filename == FILENAME or _is_cell_file(tb.tb_frame.f_code.co_filename)
    ]
    if len(notebook) != 1 or notebook[0].tb_frame.f_code.co_filename != FILENAME:
        return None
    # The callback ``told`` called (Keras filters its own frames out of the traceback).
    method = entries[told[0]].tb_frame.f_locals.get("_original")
    if type(method) is not types.MethodType or any(tb.tb_frame.f_code.co_filename == _OWN_FILENAME for tb in after):
        return None
    callback = method.__self__
    if not _keras_scheduler(callback) or method.__func__.__name__ != "on_epoch_begin":
        return None
    schedule = object.__getattribute__(callback, "__dict__").get("schedule")
    entry = _abridgement.fit_entries.get(id(schedule))
    called = [i for i, tb in enumerate(after) if entry is not None and tb.tb_frame.f_code is entry[0].__code__]
    if entry is None or entry[0] is not schedule or not called:
        return None
    start = after[called[0]]
    if any(_is_cell_file(tb.tb_frame.f_code.co_filename) for tb in after[: called[0]]):
        return None
    frame, code = start.tb_frame, schedule.__code__
    parameters = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    if not parameters:
        return None
    epoch = frame.f_locals.get(parameters[0])
    # What the cell changed before its fit, and what the epochs that ran may have changed.
    cell = notebook[0]
    walk = _Dependence(FILENAME, cell.tb_lineno, set(changed), _Scope(cell.tb_frame))
    _, _, before_fit = walk.judge(cell_tree.body)
    _, plain, data = entry
    kept = set(_abridgement.left_alone)
    touched = _touched_names(_code_names(code), _Scope(frame), 0, plain, data)
    alone = sorted(_abridgement.left_alone - kept)
    _abridgement.left_alone = kept
    first = set(parameters[1:]) | touched | (before_fit & _code_names(code))
    verdict = _judge_frames(exc, cell_tree, (), keyed=False, start=start, first=first)
    if not verdict.get("certain"):
        return None
    reads = f"; what it reads besides ({', '.join(alone)}) held what it held when the fit began" if alone else ""
    return {
        "certain": True,
        "depends_on": [],
        "grounds": (
            f"It was raised in {code.co_name}, which Keras's LearningRateScheduler called with "
            f"epoch {epoch!r}: the abridged fit gives its epochs the full fit's numbers (its last "
            f"is the full fit's last), and the failing statement reads that number{reads}, "
            "nothing the abridgement changed, so the full fit calls it alike and raises there too."
        ),
    }
