
# crane's abridged dry run: a long cell run to its end in seconds, in the dry run's sealed child.
#
# Concatenated after ``crane_dryrun.py``; everything here runs in the forked child only, after
# the seal and after the child left crane's guards. When a cell's dry run reaches its first
# budget, crane runs it again in a new fork, abridged:
#
# - every ``for`` loop of the cell, and of the functions and methods defined in earlier cells
#   (their source is IPython's, in ``linecache``), runs its first and its last iteration: the
#   loop's iterable is wrapped (``__crane_abridged__``), the first item is taken as Python takes
#   it, the items between are drawn without running the body, and the last item is run; a
#   ``range`` is indexed, a ``tqdm`` bar's own iterable is used, and a torch ``DataLoader`` over
#   a map-style dataset draws every batch's indices from its own batch sampler and fetches only
#   the first and last batch, through its dataset and collate function;
# - library training loops are shortened: Keras ``fit`` runs at most 2 epochs of 1 step (and 1
#   validation step); scikit-learn searches evaluate their first candidate, and searches and
#   ``cross_validate``/``cross_val_score`` their first two folds (of the splitter the user
#   chose, so each fold is a real one); estimators fit two of their rounds (trees, stages,
#   epochs: ``_shorten_sklearn_rounds``); a pandas ``groupby(...).apply`` of a function giving
#   a scalar per group calls it on the first and last group (``_shorten_pandas_group_apply``);
# - the statements after them run on what the abridged loops produced.
#
# A crash in such a run is judged by ``crane_dependence.py`` (concatenated after this file):
# whether it reads what the abridgement changed, and whether a second abridgement makes it
# certain all the same.

_ABRIDGED_NAME = "__crane_abridged__"
_ABRIDGED_ENUMERATE_NAME = "__crane_abridged_enumerate__"


class _Loop:
    """One rewritten ``for`` statement: where it is, and how its runs went."""

    __slots__ = (
        "filename", "line", "function", "entered", "ran", "skipped", "position", "plan",
        "padded", "late", "unpadded",
    )

    def __init__(self, filename, line, function, plan=None):
        self.filename = filename
        self.line = line
        self.function = function
        self.entered = 0
        self.ran = 0
        self.skipped = 0
        # The position of the item the loop's body runs now: 0 for the first.
        self.position = 0
        # What the skipped iterations' growth of lists and dictionaries is padded by
        # (``crane_padding.py``): the names padded (``late``: only once the loop ended), and
        # those a skip could not pad.
        self.plan = plan
        self.padded = set()
        self.late = set()
        self.unpadded = set()

    def exact(self):
        """The names whose lengths and keys the padding made the full run's after the loop."""
        return self.padded - self.unpadded


class _Abridgement:
    """What the child abridged: the rewritten loops, the library calls it shortened, and the
    sources it read (for the data-flow check after a crash)."""

    def __init__(self):
        self.loops = {}
        self.calls = []
        self.sources = {}
        self.functions = 0
        # Names of the notebook's functions (and methods) that were running when a loop skipped
        # iterations or a library call was shortened: what a call of them returns, and what it
        # did to its arguments, may differ from the real run's.
        self.shortened_functions = set()
        # The second abridgement (``_install(source, second=True)``): loops run their first two
        # and last iterations, library loops a little more (see ``second_abridgement``).
        self.second = False
        # A shortened library call whose result's keys depend on how many epochs ran (Keras's
        # ``validation_freq``): no agreement of two abridgements makes its crash certain.
        self.count_keyed = False
        # Names a notebook function declares ``global`` or ``nonlocal`` (``crane_padding.py``),
        # read once.
        self.rebindable = None

    def loop(self, filename, line):
        return self.loops.get((filename, line))

    def applied(self):
        return bool(self.calls) or any(loop.skipped for loop in self.loops.values())

    def skipped_lines(self, filename):
        return {
            loop.line
            for loop in self.loops.values()
            if loop.filename == filename and loop.skipped
        }

    def call_lines(self, filename):
        return {call["line"]: call for call in self.calls if call["filename"] == filename}

    def describe(self):
        loops = [
            {
                "line": loop.line,
                "function": loop.function,
                "in_cell": loop.filename == FILENAME,
                "ran": loop.ran,
                "of": loop.ran + loop.skipped,
                "entered": loop.entered,
                "padded": sorted(loop.exact()),
            }
            for loop in sorted(
                self.loops.values(), key=lambda loop: (loop.filename != FILENAME, loop.filename, loop.line)
            )
            if loop.skipped
        ]
        calls = [
            {
                "what": call["what"] + (", its history padded to every epoch" if call.get("padded") else ""),
                "line": call["line"],
                "in_cell": call["filename"] == FILENAME,
            }
            for call in self.calls
        ]
        return {"loops": loops, "calls": calls}


_abridgement = _Abridgement()


# Loops.


def _abridged(iterable, filename, line):
    """The items of ``iterable`` a rewritten loop runs: its first and its last."""
    loop = _abridgement.loop(filename, line)
    return (item for _, item in _kept(loop, iterable))


def _abridged_enumerate(function, filename, line, *args, **kwargs):
    """``enumerate(iterable, start)`` of a rewritten loop: the first and last items with the
    numbers ``enumerate`` would give them (any other callee is called as written)."""
    start = kwargs.get("start", args[1] if len(args) > 1 else 0)
    plain = function is enumerate and len(args) + len(kwargs) in (1, 2) and 1 <= len(args)
    if not plain or set(kwargs) - {"start"} or type(start) is not int:
        return _abridged(function(*args, **kwargs), filename, line)
    loop = _abridgement.loop(filename, line)
    return ((start + position, item) for position, item in _kept(loop, args[0], start))


def _record_functions(frame):
    """Add every function of the notebook running at ``frame`` and above it."""
    while frame is not None:
        code = frame.f_code
        if (code.co_filename == FILENAME or _is_cell_file(code.co_filename)) and code.co_name != "<module>":
            _abridgement.shortened_functions.add(code.co_name)
        frame = frame.f_back


def _skip(loop, count):
    """``count`` iterations of ``loop`` skipped, in the frame that runs the loop."""
    loop.skipped += count
    if count > 0:
        # Above the generators that feed the loop: the loop's own frame and its callers.
        _record_functions(sys._getframe(1))


def _kept(loop, iterable, start=None):
    """``(position, item)`` for the first and the last item, with the loop's record kept and
    what the skipped items would have grown padded; ``start``: the loop unpacks
    ``(start + position, item)``, as an ``enumerate`` gives it."""
    iterable = _unwrapped(iterable)
    if loop is None:
        yield from enumerate(iterable)
        return

    def binding(position, item):
        return _binding(loop, item if start is None else (start + position, item))

    loop.entered += 1
    if type(iterable) is range:
        count = len(iterable)
        if count == 0:
            return
        run = 2 if _abridgement.second and count > 2 else 1
        mark = None
        for position in range(run):
            loop.position = position
            loop.ran += 1
            mark = _pad_mark(loop)
            yield position, iterable[position]
        if count > run:
            yield from _skipped_then_last(
                loop,
                mark,
                binding(run - 1, iterable[run - 1]),
                (binding(p, iterable[p]) for p in range(run, count - 1)),
                count,
                run,
                iterable[count - 1],
                binding(count - 1, iterable[count - 1]),
            )
        return
    batches = _dataloader_batches(iterable)
    if batches is not None:
        yield from _kept_batches(loop, iterable, batches, binding)
        return
    iterator = iter(iterable)
    for first in iterator:
        break
    else:
        return
    loop.position = 0
    loop.ran += 1
    mark = _pad_mark(loop)
    yield 0, first
    count, ran = 1, first
    if _abridgement.second:
        for second in iterator:
            loop.position = 1
            loop.ran += 1
            mark = _pad_mark(loop)
            yield 1, second
            count, ran = 2, second
            break
    run = count
    # The skipped items' bindings, kept only where the padding reads the loop's variables.
    held = [] if mark is not None and loop.plan.reads else None
    last = _no_item
    for item in iterator:
        if last is not _no_item and held is not None:
            held.append(binding(count - 1, last))
            if len(held) > _PAD_EVALUATIONS:
                held = None
        last = item
        count += 1
    if last is not _no_item:
        yield from _skipped_then_last(
            loop, mark, binding(run - 1, ran), held, count, run, last, binding(count - 1, last)
        )


def _skipped_then_last(loop, mark, run_binding, bindings, count, run, last, last_binding):
    """After ``run`` items of ``count``: the items between skipped and padded for
    (``bindings``: theirs, or ``None``), then the ``last``."""
    skipped = count - run - 1
    _skip(loop, skipped)
    pending = _pad_skipped(loop, mark, run_binding, skipped, bindings)
    loop.position = count - 1
    loop.ran += 1
    yield count - 1, last
    _pad_after(loop, pending, last_binding)


_no_item = object()


def _unwrapped(iterable):
    # A tqdm bar iterates over its own ``iterable`` and only draws progress.
    cls = type(iterable)
    module = getattr(cls, "__module__", "") or ""
    if module.split(".")[0] == "tqdm" and "iterable" in getattr(iterable, "__dict__", {}):
        inner = iterable.__dict__["iterable"]
        if inner is not None:
            return inner
    return iterable


def _dataloader_batches(loader):
    """The batch sampler's iterator of a torch ``DataLoader`` over a map-style dataset, or
    ``None`` for any other iterable."""
    torch_data = sys.modules.get("torch.utils.data")
    loader_class = getattr(torch_data, "DataLoader", None) if torch_data is not None else None
    if loader_class is None or not isinstance(loader, loader_class):
        return None
    if getattr(loader, "_dataset_kind", None) != 0 or getattr(loader, "batch_sampler", None) is None:
        return None
    return iter(loader.batch_sampler)


def _kept_batches(loop, loader, batches, binding):
    for first in batches:
        break
    else:
        return
    loop.position = 0
    loop.ran += 1
    mark = _pad_mark(loop)
    yield 0, _fetch(loader, first)
    count = 1
    if _abridgement.second:
        for second in batches:
            loop.position = 1
            loop.ran += 1
            mark = _pad_mark(loop)
            yield 1, _fetch(loader, second)
            count = 2
            break
    run = count
    last = None
    for last in batches:
        count += 1
    if count > run:
        # Batches crane does not fetch: only their positions are known.
        yield from _skipped_then_last(
            loop,
            mark,
            binding(run - 1, _UNKNOWN),
            (binding(p, _UNKNOWN) for p in range(run, count - 1)),
            count,
            run,
            _fetch(loader, last),
            binding(count - 1, _UNKNOWN),
        )


def _fetch(loader, indices):
    # What torch's _MapDatasetFetcher does with automatic batching.
    dataset = loader.dataset
    getitems = getattr(dataset, "__getitems__", None)
    data = getitems(indices) if getitems is not None else [dataset[i] for i in indices]
    return loader.collate_fn(data)


# Rewriting loops.


class _LoopRewriter(ast.NodeTransformer):
    """Wraps the iterable of every ``for`` statement (not ``async for``, not comprehensions)."""

    def __init__(self, filename, function=None):
        self.filename = filename
        self.function = function
        self.rewritten = 0

    def visit_FunctionDef(self, node):
        outer, self.function = self.function, self.function or node.name
        self.generic_visit(node)
        self.function = outer
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_For(self, node):
        self.generic_visit(node)
        key = (self.filename, node.lineno)
        if key not in _abridgement.loops:
            _abridgement.loops[key] = _Loop(self.filename, node.lineno, self.function, _padding_plan(node))
        place = [ast.Constant(self.filename), ast.Constant(node.lineno)]
        iterable = node.iter
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Name)
            and iterable.func.id == "enumerate"
            and not any(isinstance(arg, ast.Starred) for arg in iterable.args)
            and all(keyword.arg is not None for keyword in iterable.keywords)
        ):
            call = ast.Call(
                ast.Name(_ABRIDGED_ENUMERATE_NAME, ast.Load()),
                [iterable.func, *place, *iterable.args],
                iterable.keywords,
            )
        else:
            call = ast.Call(ast.Name(_ABRIDGED_NAME, ast.Load()), [iterable, *place], [])
        node.iter = ast.copy_location(call, iterable)
        ast.fix_missing_locations(node.iter)
        self.rewritten += 1
        return node


def abridge_cell(tree):
    """The cell's tree with its loops rewritten (``tree`` is changed in place)."""
    rewriter = _LoopRewriter(FILENAME)
    rewriter.visit(tree)
    return tree


def _install(source, second=False):
    """The loop helpers where rewritten code finds them, the notebook's functions rewritten,
    the library loops shortened (``second``: as the second abridgement does); whether there is
    anything to abridge (a loop in the cell or in a function of the notebook, or a library
    loop). Only ever called in the child."""
    _abridgement.second = second
    live = sys.modules["builtins"].__dict__
    live[_ABRIDGED_NAME] = _abridged
    live[_ABRIDGED_ENUMERATE_NAME] = _abridged_enumerate
    try:
        tree = compile(source, FILENAME, "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        loops = any(isinstance(node, ast.For) for node in ast.walk(tree))
    except (SyntaxError, ValueError):
        loops = False
    _rewrite_notebook_functions()
    shortened = _shorten_keras_fit()
    shortened = _shorten_sklearn_searches() or shortened
    shortened = _shorten_sklearn_rounds() or shortened
    shortened = _shorten_pandas_group_apply() or shortened
    return loops or _abridgement.functions > 0 or shortened


def _is_cell_file(filename):
    # IPython keeps each cell's source in linecache with no modification time.
    entry = linecache.cache.get(filename)
    return type(entry) is tuple and len(entry) == 4 and entry[1] is None and filename != FILENAME


def _cell_source(filename):
    if filename not in _abridgement.sources:
        entry = linecache.cache.get(filename)
        source = "".join(entry[2]) if type(entry) is tuple and len(entry) == 4 else None
        try:
            tree = ast.parse(source) if source is not None else None
        except (SyntaxError, ValueError):
            tree = None
        _abridgement.sources[filename] = tree
    return _abridgement.sources[filename]


def _notebook_functions(namespace):
    """Functions and methods defined in the notebook's cells, reachable from its namespace."""
    seen = set()
    for value in list(namespace.values()):
        candidates = [value]
        if isinstance(value, type) and getattr(value, "__module__", None) == "__main__":
            for member in list(value.__dict__.values()):
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                elif isinstance(member, property):
                    candidates.extend(f for f in (member.fget, member.fset) if f is not None)
                    continue
                candidates.append(member)
        for function in candidates:
            if type(function) is types.FunctionType and id(function) not in seen:
                seen.add(id(function))
                if _is_cell_file(function.__code__.co_filename):
                    yield function


def _rewrite_notebook_functions():
    shell = _shell()
    namespace = shell.user_ns if shell is not None else sys.modules["__main__"].__dict__
    for function in _notebook_functions(namespace):
        try:
            code = _abridged_code(function.__code__)
        except Exception:
            code = None
        if code is not None:
            function.__code__ = code
            _abridgement.functions += 1


def _definition(tree, code):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if code.co_firstlineno in (first, node.lineno):
                return node
    return None


def _abridged_code(code):
    """``code`` compiled again from its cell's source with its loops rewritten, or ``None``
    when it has no loop or its free variables would differ."""
    tree = _cell_source(code.co_filename)
    if tree is None:
        return None
    found = _definition(tree, code)
    if found is None or not any(isinstance(node, ast.For) for node in ast.walk(found)):
        return None
    node = _copy(found)
    node.decorator_list = []
    _LoopRewriter(code.co_filename, node.name).visit(node)
    # Enclosing the definition in a function that binds its free variables gives the new code
    # the same free variables (sorted by name, as CPython orders them) as the old.
    def located(made):
        return ast.copy_location(made, node)

    outer = located(
        ast.FunctionDef(
            name="__crane_outer__",
            args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=[
                *[
                    located(ast.Assign([located(ast.Name(name, ast.Store()))], located(ast.Constant(None))))
                    for name in code.co_freevars
                ],
                node,
                located(ast.Return(located(ast.Name(node.name, ast.Load())))),
            ],
            decorator_list=[],
            returns=None,
        )
    )
    if "type_params" in ast.FunctionDef._fields:
        outer.type_params = []
    module = ast.Module(body=[outer], type_ignores=[])
    ast.fix_missing_locations(module)
    compiled = compile(module, code.co_filename, "exec", dont_inherit=True)
    scratch = {"__builtins__": sys.modules["builtins"]}
    exec(compiled, scratch)
    new = scratch["__crane_outer__"]().__code__
    if new.co_freevars != code.co_freevars:
        return None
    return new.replace(co_name=code.co_name, co_qualname=code.co_qualname)


def _copy(node):
    # A deep copy of an AST node without importing copy's machinery for it.
    fields = {name: _copy_value(value) for name, value in ast.iter_fields(node)}
    new = type(node)(**fields)
    for attribute in node._attributes:
        if hasattr(node, attribute):
            setattr(new, attribute, getattr(node, attribute))
    return new


def _copy_value(value):
    if isinstance(value, ast.AST):
        return _copy(value)
    if type(value) is list:
        return [_copy_value(item) for item in value]
    return value


# Library training loops.


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
            record = _record_call("Keras fit ran " + ", ".join(changes))
        history = fit(*bound.args, **bound.kwargs)
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


class _FirstFolds:
    """A splitter's first two folds: each a real fold of the splitter the user chose. The cut
    is recorded where it is made, whichever function of the library asked for the folds (a
    notebook holds its own references to them, which no patch of a module reaches): inside a
    search, for the search's own record; else as a cross-validation of its own."""

    def __init__(self, splitter):
        self.splitter = splitter

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
            if caller in ("cross_validate", "fit") and not in_full:
                splitter = _FirstFolds(splitter)
            return splitter

        module.check_cv = first_folds
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
            for owner in type.__dict__["__mro__"].__get__(value):
                if "fit" in type.__dict__["__dict__"].__get__(owner):
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
