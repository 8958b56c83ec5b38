
# crane's abridged dry run, its second part: library training loops shortened, in the child.
#
# Concatenated after ``crane_abridge.py``, whose ``_install`` calls the ``_shorten_*`` functions
# here, and whose record of the run (``_abridgement``) each cut is written to, where it is made
# (``_record_call``): Keras ``fit`` to 2 epochs of 1 step (its history padded by
# ``crane_padding.py``), scikit-learn searches to their first candidate on the splitter's first
# folds, cross-validation and validation curves to their first folds (their results padded to
# every fold), the rounds of scikit-learn's ensembles and
# early-stopping learners, and a pandas ``groupby(...).apply`` of a per-group score to its first
# and last group. ``crane_dependence.py`` reads the kinds of cuts (``_RECEIVER_CHANGED``) and
# the fits run again in full (``_ROUNDS_CUT_CODE``, ``_full_fit_errors``).


def _calling_line():
    """The notebook's line (file, line) that called into the library, innermost first."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename == FILENAME or _is_cell_file(filename):
            return filename, frame.f_lineno
        frame = frame.f_back
    return None, None


# Kinds of shortened calls whose receiver holds what the cut changed: a search's fitted
# attributes (best parameters, estimator, results) come from the candidates and folds it ran,
# an estimator fitted with fewer rounds holds other fitted values (``"estimator"``).
_RECEIVER_CHANGED = frozenset(("search", "estimator"))


def _record_call(what, kind="fit"):
    filename, line = _calling_line()
    # A call no notebook line made (from a library's thread, say) is kept too, at no line: a
    # cut nothing records would let a crash it caused pass for a certain one.
    call = {"what": what, "filename": filename, "line": line or 0, "kind": kind}
    for recorded in _abridgement.calls:
        if all(recorded[key] == call[key] for key in call):
            call = recorded
            break
    else:
        _abridgement.calls.append(call)
    _record_functions(sys._getframe(1))
    return call


def _shorten_keras_fit():
    keras = sys.modules.get("keras")
    model = getattr(keras, "Model", None) if keras is not None else None
    fit = getattr(model, "fit", None) if model is not None else None
    if fit is None:
        return False
    import inspect as _inspect

    try:
        signature = _inspect.signature(fit)
    except (TypeError, ValueError):
        return False

    def shortened_fit(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return fit(*args, **kwargs)
        arguments = bound.arguments
        epochs = arguments.get("epochs", signature.parameters["epochs"].default)
        kept, steps = (3, 2) if _abridgement.second else (2, 1)
        changes = []
        if type(epochs) is int and epochs > kept:
            arguments["epochs"] = kept
            changes.append(f"{kept} epochs of {epochs}")
        if arguments.get("steps_per_epoch") is None:
            arguments["steps_per_epoch"] = steps
            changes.append(f"{steps} step{'s' if steps > 1 else ''} per epoch")
        if arguments.get("validation_data") is not None and arguments.get("validation_steps") is None:
            arguments["validation_steps"] = steps
        record = padding = None
        if changes:
            padding = _keras_history_padding(arguments, epochs)
            if padding is not None:
                # Every abridged epoch validates, so the padding has a value to copy.
                if padding[1]:
                    arguments["validation_freq"] = 1
            elif arguments.get("validation_freq", 1) != 1:
                # Which epochs validate (``validation_freq``) decides which keys the history
                # has, and nothing pads it.
                _abridgement.count_keyed = True
        restore = []
        if type(epochs) is int and epochs > kept:
            restore = _keras_last_epoch_callbacks(arguments.get("callbacks"), kept - 1, epochs - 1)
            if restore:
                changes.append(f"its callbacks told its last epoch is epoch {epochs}")
        if changes:
            record = _record_call("Keras fit ran " + ", ".join(changes))
            if restore and not arguments.get("initial_epoch"):
                # What the schedules it calls read when the fit begins (``_scheduled_epoch``).
                _abridgement.fit_entries.update(_schedule_entries(arguments.get("callbacks")))
        try:
            history = fit(*bound.args, **bound.kwargs)
        finally:
            _keras_restore_callbacks(restore)
        if padding is not None:
            try:
                record["padded"] = _pad_keras_history(history, epochs, *padding)
            except Exception:
                record["padded"] = False
            if not record["padded"]:
                # Its keys are then the abridged fit's, which validated every epoch.
                _abridgement.count_keyed = True
        return history

    model.fit = shortened_fit
    return True


def _keras_last_epoch_callbacks(callbacks, abridged_last, last):
    """The user's callbacks (a list or tuple of them) told that the abridged fit's last epoch is
    the full fit's (``last``), as an abridged loop runs its last iteration: a schedule indexed
    by epoch, a checkpoint named by it, a callback acting at the final epoch see what the full
    fit's last epoch shows them. Keras's own history is not among them (it is padded). What to
    undo, for ``_keras_restore_callbacks``."""
    if type(callbacks) not in (list, tuple):
        return []
    restore = []
    for callback in callbacks:
        for method in ("on_epoch_begin", "on_epoch_end"):
            try:
                original = getattr(callback, method)
                own = method in object.__getattribute__(callback, "__dict__")
            except Exception:
                continue
            if not callable(original):
                continue

            def told(epoch, *args, _original=original, **kwargs):
                return _original(last if epoch == abridged_last else epoch, *args, **kwargs)

            try:
                setattr(callback, method, told)
            except Exception:
                continue
            restore.append((callback, method, own, original))
    return restore


def _schedule_entries(callbacks):
    """``{id(schedule): (schedule, plain, data)}`` for the notebook's function that each of
    Keras's own ``LearningRateScheduler`` among ``callbacks`` calls: the plain data and the
    arrays, frames and series its code reads as globals, as ``_plain_copy`` and ``_data_print``
    take them at an abridged loop's first entry, so that a crash in it can tell what the epochs
    that ran left alone."""
    found = {}
    for callback in callbacks if type(callbacks) in (list, tuple) else ():
        if not _keras_scheduler(callback):
            continue
        schedule = object.__getattribute__(callback, "__dict__").get("schedule")
        if type(schedule) is not types.FunctionType:
            continue
        code = schedule.__code__
        # A closure's variables are read through cells no fingerprint here covers.
        if code.co_freevars or not (code.co_filename == FILENAME or _is_cell_file(code.co_filename)):
            continue
        names, namespace = _code_names(code), schedule.__globals__
        plain = {}
        for name in names:
            copy = _plain_copy(namespace.get(name, _UNKNOWN), [_PLAIN_ENTRIES])
            if copy is not _NOT_PLAIN:
                plain[name] = copy
        # The schedule's globals as a frame of its own would find them.
        data = _data_prints(types.SimpleNamespace(f_locals={}, f_globals=namespace), names)
        found[id(schedule)] = (schedule, plain, data)
    return found


def _keras_scheduler(callback):
    """Whether ``callback`` is exactly Keras's own ``LearningRateScheduler``."""
    kind = type(callback)
    module = _module_of(kind)
    return _qualname_of(kind) == "LearningRateScheduler" and type(module) is str and module.startswith("keras.")


def _keras_restore_callbacks(restore):
    for callback, method, own, original in restore:
        try:
            if own:
                setattr(callback, method, original)
            else:
                delattr(callback, method)
        except Exception:
            pass


class _FirstFolds:
    """A splitter's first two folds: each a real fold of the splitter the user chose. The cut
    is recorded where it is made, whichever function of the library asked for the folds (a
    notebook holds its own references to them, which no patch of a module reaches): inside a
    search, for the search's own record; else as a cross-validation of its own."""

    def __init__(self, splitter):
        self.splitter = splitter
        # Where it cut a cross-validation outside a search: (folds kept, folds), which
        # ``_pad_cross_validation`` reads from the splitter the cross-validation holds.
        self.cut = None

    def get_n_splits(self, *args, **kwargs):
        return min(self.kept(), self.splitter.get_n_splits(*args, **kwargs))

    @staticmethod
    def kept():
        return 3 if _abridgement.second else 2

    def split(self, *args, **kwargs):
        count = 0
        kept = self.kept()
        for fold in self.splitter.split(*args, **kwargs):
            count += 1
            if count <= kept:
                yield fold
        if count > kept:
            if _searches:
                _searches[-1].append(count)
            else:
                _record_call(f"cross-validation ran {kept} folds of {count}")
                self.cut = (kept, count)


# The fold counts cut inside each search running now, innermost last.
_searches = []


def _shorten_sklearn_searches():
    validation = sys.modules.get("sklearn.model_selection._validation")
    search = sys.modules.get("sklearn.model_selection._search")
    if validation is None and search is None:
        return False
    # Set while a search runs in full: its folds are not shortened either.
    in_full = []
    for module in (validation, search):
        check_cv = getattr(module, "check_cv", None) if module is not None else None
        if check_cv is None:
            continue

        def first_folds(*args, _check_cv=check_cv, **kwargs):
            splitter = _check_cv(*args, **kwargs)
            # cross_val_predict needs every fold to predict every sample: never shortened.
            caller = sys._getframe(1).f_code.co_name
            if caller in ("cross_validate", "validation_curve", "fit") and not in_full:
                splitter = _FirstFolds(splitter)
            return splitter

        module.check_cv = first_folds
    _pad_cross_validation(validation)
    base = getattr(search, "BaseSearchCV", None) if search is not None else None
    if base is None:
        return True
    fit = base.fit

    def shortened_fit(self, *args, **kwargs):
        # A `refit` given as a function is the user's code choosing from every candidate's
        # results, per fold, before the cell sees them: shortened, it would choose from other
        # results than it will for real (a filter left empty, another index). Such a search
        # runs in full.
        if not isinstance(getattr(self, "refit", True), (bool, str)):
            in_full.append(self)
            try:
                return fit(self, *args, **kwargs)
            finally:
                in_full.pop()
        own = type(self)._run_search
        candidates = []

        def first_candidate(evaluate_candidates, *run_args, **run_kwargs):
            def evaluate_first(candidate_params, *a, **k):
                candidate_params = list(candidate_params)
                candidates.append(len(candidate_params))
                # The second abridgement also evaluates the last candidate: another setting.
                kept = candidate_params[:1]
                if _abridgement.second and len(candidate_params) > 1:
                    kept.append(candidate_params[-1])
                return evaluate_candidates(kept, *a, **k)

            return own(self, evaluate_first, *run_args, **run_kwargs)

        # The library may read `_run_search`'s signature to choose what it passes (scikit-learn
        # 1.9 passes `callback_ctx` only to a `_run_search` that takes it): the stand-in takes
        # and forwards whatever the search's own method takes, and shows its signature.
        first_candidate.__wrapped__ = own.__get__(self, type(self))
        folds = []
        _searches.append(folds)
        self._run_search = first_candidate
        try:
            return fit(self, *args, **kwargs)
        finally:
            _searches.pop()
            self.__dict__.pop("_run_search", None)
            changes = []
            kept = 2 if _abridgement.second else 1
            if sum(candidates) > kept * len(candidates):
                changes.append(f"{kept} candidate{'s' if kept > 1 else ''} of {sum(candidates)}")
            if folds:
                changes.append(f"{_FirstFolds.kept()} folds of {folds[0]}")
            if changes:
                _record_call(type(self).__name__ + " ran " + ", ".join(changes), kind="search")

    base.fit = shortened_fit
    return True


def _pad_cross_validation(validation):
    """``cross_validate``'s results (and so ``cross_val_score``'s) and ``validation_curve``'s
    from their first folds, padded to one entry (a validation curve: one per parameter value)
    per fold of the splitter, as Keras's history is to every epoch: each fold not
    run gets the last fold's times, scores and estimator, so every array has the full run's
    length (the number of folds, which the splitter decides, not the data) with stand-in
    values, and the call's record says so (``padded``: what the result holds has the full run's
    lengths, ``crane_dependence.py``). Not where the caller asked for the folds' indices, which
    cannot be stood in for."""
    aggregate = getattr(validation, "_aggregate_score_dicts", None) if validation is not None else None
    if aggregate is None:
        return

    def padded(scores, *args, **kwargs):
        caller = sys._getframe(1)
        name = caller.f_code.co_name
        # Only the cut of the splitter this very cross-validation split with (its ``cv``, as
        # ``check_cv`` gave it): another one's cut, or none, pads nothing.
        splitter = caller.f_locals.get("cv") if name in ("cross_validate", "validation_curve") else None
        cut = splitter.cut if type(splitter) is _FirstFolds else None
        # A validation curve scores every parameter value on each fold, fold after fold: a
        # block per fold, which the last fold's block stands in for.
        block = 1
        if name == "validation_curve":
            values = caller.f_locals.get("param_range")
            block = len(values) if hasattr(values, "__len__") else 0
        if (
            cut is not None
            and block > 0
            and not caller.f_locals.get("return_indices")
            and type(scores) is list
            and 0 < len(scores) == cut[0] * block
            and cut[0] < cut[1]
        ):
            scores = scores + scores[-block:] * (cut[1] - cut[0])
            call = _record_call(f"cross-validation ran {cut[0]} folds of {cut[1]}")
            call["padded"] = True
            call["padding"] = "its results padded to every fold"
        return aggregate(scores, *args, **kwargs)

    padded.__wrapped__ = aggregate
    validation._aggregate_score_dicts = padded


# Errors (by id) raised by a fit run again with the user's rounds after its shortened run
# raised: the fit's own, which the real run raises too.
_full_fit_errors = set()

# The parameters of scikit-learn's estimators that set how many rounds a fit runs, each round
# adding to what is fitted: the trees or stages of an ensemble (``n_estimators``), and the epochs
# of a learner that can stop early (``max_iter`` beside ``early_stopping``: histogram gradient
# boosting's iterations, a neural network's or a linear model's epochs). A solver's
# ``max_iter`` without early stopping only caps its way to convergence: left alone.
_ROUND_PARAMETERS = ("n_estimators", "max_iter")


def _round_parameters(parameters):
    return [
        name
        for name in _ROUND_PARAMETERS
        if name in parameters and (name != "max_iter" or "early_stopping" in parameters)
    ]


def _shorten_sklearn_rounds():
    """Every scikit-learn estimator class imported, or imported by the cell, whose parameters
    include a number of rounds (``_round_parameters``) fits with at most 2 of them (3 in the
    second abridgement): a forest of 2 trees, 2 boosting stages, 2 epochs. What it predicts has
    the shapes, dtypes and classes the full fit gives; its values differ, so the fitted
    estimator counts as changed (``_RECEIVER_CHANGED``). A fit that raises with fewer rounds (a
    parameter whose bounds do not allow so few, or input the fit refuses whatever its rounds)
    runs again with the user's; an error of that run is the fit's own (``_full_fit_errors``),
    not the cut's. An estimator set to start warm (adding to an earlier fit's rounds) is not
    cut."""
    base = sys.modules.get("sklearn.base")
    estimator = getattr(base, "BaseEstimator", None) if base is not None else None
    if estimator is None:
        return False
    owners = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "sklearn" or name.startswith("sklearn.")):
            continue
        for value in list(getattr(module, "__dict__", {}).values()):
            if not (isinstance(value, type) and issubclass(value, estimator)):
                continue
            module_name = _module_of(value)
            if type(module_name) is not str or not module_name.startswith("sklearn."):
                continue
            try:
                parameters = value._get_param_names()
            except Exception:
                continue
            if not _round_parameters(parameters):
                continue
            for owner in _mro_of(value):
                if "fit" in _class_dict(owner):
                    owners[id(owner)] = owner
                    break
    for owner in owners.values():
        owner.fit = _rounds_cut(owner.fit)
    # Estimators the cell itself imports: scikit-learn decorates each ``fit`` as its module is
    # imported (``sklearn.base._fit_context``), so the decorator, read from ``sklearn.base``
    # then, adds the cut (checked at each call: only estimators with rounds are cut).
    context = getattr(base, "_fit_context", None)
    if context is not None:
        def fit_context(*args, **kwargs):
            decorate = context(*args, **kwargs)

            def decorator(fit_method):
                decorated = decorate(fit_method)
                if getattr(fit_method, "__name__", None) != "fit":
                    return decorated
                return _rounds_cut(decorated)

            return decorator

        base._fit_context = fit_context
    return bool(owners) or context is not None


def _rounds_cut(fit):
    def shortened_fit(self, *args, **kwargs):
        state = self.__dict__
        kept = 3 if _abridgement.second else 2
        # A warm start adds to the rounds an earlier fit left: cut, it would keep the cut's
        # rounds in the estimator, and a fit run again in full would start from them.
        if state.get("warm_start", False) is not False:
            return fit(self, *args, **kwargs)
        cut = {
            name: state[name]
            for name in _round_parameters(state)
            if type(state.get(name)) is int and state[name] > kept
        }
        if not cut:
            return fit(self, *args, **kwargs)
        state.update(dict.fromkeys(cut, kept))
        fitted = failed = None
        try:
            fitted = fit(self, *args, **kwargs)
        except Exception:
            failed = True
        finally:
            state.update(cut)
        if failed:
            # Outside the handler: the error shown is the full fit's alone.
            try:
                return fit(self, *args, **kwargs)
            except Exception as error:
                _full_fit_errors.add(id(error))
                raise
        rounds = ", ".join(f"{kept} of {value} {name}" for name, value in cut.items())
        _record_call(f"{type(self).__name__} fit ran {rounds}", kind="estimator")
        return fitted

    shortened_fit.__wrapped__ = fit
    return shortened_fit


def _shorten_pandas_group_apply():
    """A pandas ``groupby(...).apply(func)`` calls ``func`` on every group, in Python: over many
    groups, the long part of a cell. Where ``func`` gives the first group a scalar (a
    per-group score, the commonest shape), it runs on the first and the last group only, and
    the groups between get the first group's value: the result has every group's key and the
    dtype the real one has, with other values, so it counts as changed. Where the first result
    is not a scalar (a frame or series per group, whose index pandas assembles), every group
    runs as without the cut."""
    ops = sys.modules.get("pandas.core.groupby.ops")
    grouper = getattr(ops, "BaseGrouper", None) if ops is not None else None
    apply = getattr(grouper, "apply_groupwise", None) if grouper is not None else None
    indexed_like = getattr(ops, "_is_indexed_like", None) if ops is not None else None
    if apply is None or indexed_like is None:
        return False

    def shortened_apply(self, f, data, *args, **kwargs):
        try:
            count = int(self.ngroups)
            splitter = self._get_splitter(data)
            keys = self.result_index
        except Exception:
            return apply(self, f, data, *args, **kwargs)
        if args or kwargs or count <= 2:
            return apply(self, f, data, *args, **kwargs)
        values = []
        mutated = False
        stand_in = _absent
        for position, (key, group) in enumerate(zip(keys, splitter)):
            if stand_in is not _absent and position < count - 1:
                values.append(stand_in)
                continue
            # As pandas does: the group knows its key, and may be changed by ``f``.
            object.__setattr__(group, "name", key)
            axes = group.axes
            result = f(group)
            if not mutated and not indexed_like(result, axes):
                mutated = True
            values.append(result)
            if position == 0 and _scalar(result):
                stand_in = result
        if stand_in is not _absent:
            _record_call(f"groupby apply ran 2 of {count} groups")
        return values, mutated

    grouper.apply_groupwise = shortened_apply
    return True


def _scalar(value):
    numpy = sys.modules.get("numpy")
    if value is None or type(value) in (bool, int, float, complex, str, bytes):
        return True
    return numpy is not None and isinstance(value, numpy.generic)


# The code of the wrapper of a fit with its rounds cut: a frame of it on a traceback is a call
# the abridged run shortened, unless the error came from the fit run again in full.
_ROUNDS_CUT_CODE = _rounds_cut(None).__code__

# The code of the wrapper that tells a callback the abridged fit's last epoch is the full fit's.
_TOLD_CODE = [
    code for code in _keras_last_epoch_callbacks.__code__.co_consts
    if type(code) is types.CodeType and code.co_name == "told"
][0]
