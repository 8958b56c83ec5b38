
# crane's abridged dry run: a long cell run to its end in seconds, in the dry run's sealed child.
#
# Concatenated after ``crane_dryrun.py``; everything here runs in the forked child only, after
# the seal and after the child left crane's guards. When a cell's dry run reaches its first
# budget, crane runs it again in a new fork, abridged:
#
# - every ``for`` loop of the cell, and of the functions and methods defined in earlier cells
#   (their source is IPython's, in ``linecache``), runs its first and its last iteration: the
#   loop's iterable is wrapped (``__crane_abridged__``), the first item is taken as Python takes
#   it, the items between are drawn without running the body, and the last item is run (also
#   the first item that takes ``if`` branches on the loop's variables that the items run do not:
#   ``_branch_plan``, ``if (epoch + 1) % 10 == 0:``; over a ``range`` the last item's branches
#   are known ahead, over items drawn once they are not, ``_BranchWatch``); a
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
# The library loops' cuts are in ``crane_abridge_libraries.py``, and the padding of what the
# skipped iterations would have grown in ``crane_padding.py`` (both concatenated after this
# file). A crash in such a run is judged by ``crane_dependence.py`` (concatenated after them):
# whether it reads what the abridgement changed, and whether a second abridgement makes it
# certain all the same.

_ABRIDGED_NAME = "__crane_abridged__"
_ABRIDGED_ENUMERATE_NAME = "__crane_abridged_enumerate__"


class _Loop:
    """One rewritten ``for`` statement: where it is, and how its runs went."""

    __slots__ = (
        "filename", "line", "function", "entered", "ran", "skipped", "position", "plan",
        "padded", "late", "unpadded", "branches", "ahead", "whole", "step_marks", "stepped",
        "size_marks", "steady_names", "structures", "arrays", "plain", "first", "read", "data",
        "kinds_ran", "kinds_drawn",
    )

    def __init__(self, filename, line, function, plan=None, branches=None, whole=False, steady_names=(), read=frozenset()):
        self.filename = filename
        self.line = line
        self.function = function
        self.entered = 0
        self.ran = 0
        self.skipped = 0
        # The position of the item the loop's body runs now: 0 for the first.
        self.position = 0
        # Over a ``range``: the items after the one running now that are neither run nor
        # skipped yet (a crash there leaves them so; the record counts them all the same).
        self.ahead = 0
        # What the skipped iterations' growth of lists and dictionaries is padded by
        # (``crane_padding.py``): the names padded (``late``: only once the loop ended), and
        # those a skip could not pad.
        self.plan = plan
        self.padded = set()
        self.late = set()
        self.unpadded = set()
        # The padded names that are arrays or tensors stored into (exact in shape and dtype).
        self.arrays = set()
        # The tests of its ``if`` statements on the loop's own variables (``_branch_plan``): an
        # item whose tests come out otherwise than the first's and the last's runs too.
        self.branches = branches
        # No ``break``, ``return`` or ``continue`` in its body: every iteration runs to its end.
        # The schedulers' counts before each iteration run since the last skip, and how far the
        # skips stepped each (``crane_steps.py``).
        self.whole = whole
        self.step_marks = []
        self.stepped = {}
        # The lengths of the lists an ``extend`` of a measured width grows, before each
        # iteration run since the last skip (``crane_padding.py``).
        self.size_marks = []
        # The names its body rebuilds from themselves, and their structure before each
        # iteration it ran (``crane_steady.py``).
        self.steady_names = steady_names
        # The plain data its frame held when it was first entered (``_plain_data``, taken by
        # ``_kept``): what a crash about values finds the same was left alone by the
        # iterations that ran.
        self.plain = {}
        # The names its body reads, and the fingerprints of those that held a NumPy array or a
        # pandas frame or series when it was first entered (``_data_prints``): the same
        # fingerprint at a crash about values says the iterations that ran left it alone.
        self.read = read
        self.data = {}
        # What its frame bound just before its first iteration and once that iteration ended
        # (``_kept``), the first time it was entered: ``(before, after)``, or ``None``.
        self.first = None
        self.structures = {}
        # The kinds (``_item_kind``) of the items it ran, and of every item drawn from an
        # iterable that is not a ``range`` or a ``DataLoader``: an item of a kind no item run
        # had may make another structure than the ones run did.
        self.kinds_ran = set()
        self.kinds_drawn = set()

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
        # Their code objects and globals by name (``None`` where two of one name ran).
        self.shortened_codes = {}
        # The second abridgement (``_install(source, second=True)``): loops run their first two
        # and last iterations, library loops a little more (see ``second_abridgement``).
        self.second = False
        # A shortened library call whose result's keys depend on how many epochs ran (Keras's
        # ``validation_freq``): no agreement of two abridgements makes its crash certain.
        self.count_keyed = False
        # Names a notebook function declares ``global`` or ``nonlocal`` (``crane_padding.py``),
        # read once.
        self.rebindable = None
        # What the loops' fingerprints of data may still read (``_data_prints``), once made.
        self.print_budget = None
        # Names a crash about values read that an abridged loop left as it found them
        # (``_touched_names``): what its certainty rests on, for the verdict's words.
        self.left_alone = set()
        # What each learning-rate schedule of the notebook's that a shortened Keras fit calls
        # read when the fit began (``_schedule_entries``), by the schedule's ``id``.
        self.fit_entries = {}

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
                "of": loop.ran + loop.skipped + loop.ahead,
                "entered": loop.entered,
                "padded": sorted(loop.exact() - loop.arrays),
                "shaped": sorted(loop.exact() & loop.arrays),
                "stepped": sorted(loop.stepped),
            }
            for loop in sorted(
                self.loops.values(), key=lambda loop: (loop.filename != FILENAME, loop.filename, loop.line)
            )
            if loop.skipped
        ]
        calls = [
            {
                "what": call["what"] + (
                    ", " + call.get("padding", "its history padded to every epoch") if call.get("padded") else ""
                ),
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
            known = _abridgement.shortened_codes.setdefault(code.co_name, (code, frame.f_globals))
            if known is not None and known[0] is not code:
                _abridgement.shortened_codes[code.co_name] = None
        frame = frame.f_back


# Plain data: Python's own immutable scalars and strings, and lists, tuples, dictionaries and
# sets of them, by exact class (no code of the user's runs to read or compare them).
_PLAIN_SCALARS = (str, int, float, bool, bytes, complex, type(None))
_PLAIN_ENTRIES = 5_000
_PLAIN_TOTAL = 100_000


def _plain_copy(value, budget):
    """A copy of ``value`` that compares equal to a later ``_plain_copy`` of it exactly where
    its content is the same, or ``_NOT_PLAIN`` (not plain data, or more than ``budget[0]``
    entries in all, which it spends)."""
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return (kind, value)
    if kind not in (list, tuple, dict, set, frozenset):
        return _NOT_PLAIN
    budget[0] -= len(value)
    if budget[0] < 0:
        return _NOT_PLAIN
    if kind is dict:
        entries = [(_plain_copy(key, budget), _plain_copy(item, budget)) for key, item in value.items()]
        flat = [part for pair in entries for part in pair]
    else:
        entries = [_plain_copy(item, budget) for item in value]
        flat = entries
    if any(part is _NOT_PLAIN for part in flat):
        return _NOT_PLAIN
    if kind in (set, frozenset):
        # Sets compare by content whatever their order; their entries hash as they did.
        return (kind, frozenset(entries))
    return (kind, tuple(entries))


_NOT_PLAIN = object()


def _plain_data(frame):
    """``{name: copy}`` for the plain data ``frame`` binds (its locals, then its globals): each
    of at most ``_PLAIN_ENTRIES`` entries, ``_PLAIN_TOTAL`` in all."""
    if frame is None:
        return {}
    total = _PLAIN_TOTAL
    found = {}
    for namespace in (frame.f_locals, frame.f_globals):
        for name, value in list(namespace.items()):
            if name in found or type(value) not in (list, tuple, dict, set, frozenset):
                continue
            budget = [min(_PLAIN_ENTRIES, total)]
            copy = _plain_copy(value, budget)
            if copy is not _NOT_PLAIN:
                found[name] = copy
                total -= min(_PLAIN_ENTRIES, total) - budget[0]
            if total <= 0:
                return found
    return found


# What the fingerprints of one abridged run's loops may read in all: bytes of array data, and
# objects walked (``crane_fingerprint.py``). Past it, a name has no fingerprint and stays
# touched.
_DATA_PRINT_BYTES = 512 << 20
_DATA_PRINT_OBJECTS = 500_000


def _data_prints(frame, names):
    """``{name: (value, fingerprint)}`` for each of ``names`` that ``frame`` binds to exactly a
    NumPy array or a pandas frame or series (``_data_kind``) with a fingerprint within the
    run's budget. The value is held, so that its ``id`` stays its own."""
    found = {}
    if frame is None:
        return found
    for name in sorted(names):
        value = _Scope(frame).get(name)
        if value is _UNKNOWN or _data_kind(type(value)) not in ("ndarray", "DataFrame", "Series"):
            continue
        fingerprint = _data_print(value)
        if fingerprint is not None:
            found[name] = (value, fingerprint)
    return found


def _data_print(value):
    """The fingerprint of ``value``'s content (``_Fingerprint``, under the guard against user
    code), or ``None`` past the budget or where it cannot be read."""
    budget = _abridgement.print_budget
    if budget is None:
        budget = _abridgement.print_budget = _Budget()
        budget.bytes_left, budget.objects_left = _DATA_PRINT_BYTES, _DATA_PRINT_OBJECTS
    return _under_guard(_Fingerprint({}, budget).of, value)


def _skip(loop, count):
    """``count`` iterations of ``loop`` skipped, in the frame that runs the loop."""
    loop.skipped += count
    if count > 0:
        # Above the generators that feed the loop: the loop's own frame and its callers.
        _record_functions(sys._getframe(1))


def _kept(loop, iterable, start=None):
    """``(position, item)`` for the first and the last item (``_kept_items``); the first time
    ``loop`` is entered, what its frame binds is kept just before its first iteration and once
    that iteration ended (``loop.first``): what a name bound under a condition held after the
    first iteration, which the real run ran as the abridged one did."""
    items = _kept_items(loop, iterable, start)
    try:
        first = loop is not None and loop.entered == 0
        for item in items:
            if first:
                frame = _loop_frame(loop)
                loop.plain = _plain_data(frame)
                loop.data = _data_prints(frame, loop.read)
                before = _bound_now(frame)
            yield item
            if first:
                loop.first = (before, _bound_now(_loop_frame(loop)))
                first = False
    finally:
        items.close()


def _bound_now(frame):
    """``{name: value}`` of what ``frame`` binds (its locals, or the module's globals), held so
    that no value dies and leaves its ``id`` to another."""
    return dict(frame.f_locals) if frame is not None else {}


def _kept_items(loop, iterable, start=None):
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
    loop.step_marks, loop.size_marks = [], []
    if type(iterable) is range:
        count = len(iterable)
        if count == 0:
            return
        run = 2 if _abridgement.second and count > 2 else 1
        mark = None
        for position in range(run):
            loop.position = position
            loop.ahead = count - 1 - position
            loop.ran += 1
            mark = _pad_mark(loop)
            yield position, iterable[position]
        # The items whose branches neither end takes, each after the items before it skipped.
        previous = run - 1
        for position in _branch_positions(loop, iterable, run, start):
            mark = yield from _skipped_then(
                loop,
                mark,
                binding(previous, iterable[previous]),
                (binding(p, iterable[p]) for p in range(previous + 1, position)),
                position - previous - 1,
                position,
                iterable[position],
                binding(position, iterable[position]),
            )
            previous = position
        if count > previous + 1:
            yield from _skipped_then_last(
                loop,
                mark,
                binding(previous, iterable[previous]),
                (binding(p, iterable[p]) for p in range(previous + 1, count - 1)),
                count,
                previous + 1,
                iterable[count - 1],
                binding(count - 1, iterable[count - 1]),
            )
        return
    batches = _dataloader_batches(iterable)
    if batches is not None:
        yield from _kept_batches(loop, iterable, batches, binding, start)
        return
    # A builtin container's length is known ahead (a crash then counts the items after it).
    size = len(iterable) if type(iterable) in _SIZED else None
    iterator = iter(iterable)
    for first in iterator:
        break
    else:
        return
    loop.position = 0
    loop.ahead = size - 1 if size else 0
    loop.ran += 1
    mark = _pad_mark(loop)
    _note_kind(loop, first, ran=True)
    yield 0, first
    count, ran = 1, first
    if _abridgement.second:
        for second in iterator:
            loop.position = 1
            loop.ahead = max(0, loop.ahead - 1)
            loop.ran += 1
            mark = _pad_mark(loop)
            _note_kind(loop, second, ran=True)
            yield 1, second
            count, ran = 2, second
            break
    # The items whose branches no item run before takes run too, as they are drawn.
    watch = _BranchWatch(loop, start, _loop_frame(loop) if loop.branches is not None else None)
    watch.ran(0, first)
    if count == 2:
        watch.ran(1, ran)
    previous = count - 1

    def kept_bindings():
        # The skipped items' bindings, kept only where the padding reads the loop's variables.
        return [] if mark is not None and loop.plan.reads else None

    held = kept_bindings()
    last = _no_item
    for item in iterator:
        _note_kind(loop, item)
        if last is not _no_item:
            position = count - 1
            if watch.new(position, last):
                mark = yield from _skipped_then(
                    loop, mark, binding(previous, ran), held, position - previous - 1, position, last,
                    binding(position, last),
                )
                previous, ran = position, last
                held = kept_bindings()
            elif held is not None:
                held.append(binding(position, last))
                if len(held) > _PAD_EVALUATIONS:
                    held = None
        last = item
        count += 1
    if last is not _no_item:
        yield from _skipped_then_last(
            loop, mark, binding(previous, ran), held, count, previous + 1, last, binding(count - 1, last)
        )


# At most this many items of a loop run for its branches, and its tests are evaluated at most
# this many times over all the loop's entries (a loop of a function called again and again
# would otherwise cost its evaluations at every call).
_BRANCH_ITEMS = 2
_BRANCH_EVALUATIONS = 100_000


class _Branches:
    """A loop's ``if`` tests on its own variables: its target, the tests, the variables read,
    and how many evaluations of them its entries have spent."""

    __slots__ = ("target", "tests", "reads", "spent")

    def __init__(self, target, tests, reads):
        self.target = target
        self.tests = tests
        self.reads = reads
        self.spent = 0


def _branch_plan(node):
    """The tests of a ``for`` statement's ``if`` statements (in its body, not in a function
    defined there) that read the loop's own variables and otherwise only constants and names
    nothing rebinds while it runs, as crane evaluates them itself (``_pure``): which branch an
    iteration takes is then known before it runs. ``None`` where there is none, or where the
    loop may end early (a ``break``, a ``return``): the items after one that ends it never run
    in the real run."""
    targets = _target_names(node.target)
    if targets is None or _leaves_early(node.body):
        return None
    stored = _stored_names(node.body) | _rebindable_names()
    tests = {}

    def walk(nodes):
        for child in nodes:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(child, ast.If) and _names_read(child.test) & targets and _pure(child.test, targets, stored):
                tests.setdefault(ast.dump(child.test), child.test)
            walk(ast.iter_child_nodes(child))

    walk(node.body)
    if not tests:
        return None
    tests = list(tests.values())[:8]
    reads = set().union(*(_names_read(test) & targets for test in tests))
    return _Branches(node.target, tests, reads)


def _branch_positions(loop, items, run, start):
    """The positions of ``items`` (a ``range``), past the first ``run``, whose iteration
    takes branches that neither the first items nor the last take: the first of each such
    set of branches, at most ``_BRANCH_ITEMS``, in order. Empty where a test cannot be evaluated
    on some item (its value is not one of Python's own immutable types, or a name it reads is
    not there)."""
    branches = loop.branches if loop is not None else None
    count = len(items)
    if branches is None or count <= run + 1:
        return []
    cost = count * len(branches.tests)
    if branches.spent + cost > _BRANCH_EVALUATIONS:
        return []
    branches.spent += cost
    frame = _loop_frame(loop)
    if frame is None:
        return []

    def taken(position):
        return _branch_taken(branches, frame, start, position, items[position])

    try:
        seen = {taken(position) for position in range(run)} | {taken(count - 1)}
        extra = []
        for position in range(run, count - 1):
            branch = taken(position)
            if branch not in seen:
                seen.add(branch)
                extra.append(position)
                if len(extra) == _BRANCH_ITEMS:
                    break
    except Exception:
        return []
    return extra


def _branch_taken(branches, frame, start, position, item):
    """The outcomes of the loop's branch tests on ``item`` at ``position``."""
    bound = {}
    _bind_item(branches.target, item if start is None else (start + position, item), branches.reads, bound)
    scope = _scope(frame, bound)
    return tuple(bool(_evaluate(test, scope)) for test in branches.tests)


class _BranchWatch:
    """Over items drawn once, in order (a list, a dictionary's items, a generator): whether an
    item takes ``if`` branches on the loop's variables that no item run before it took (the
    first of each such set of branches, at most ``_BRANCH_ITEMS``; the last item's are not known
    ahead, so one may be run that the last would have shown too). Silent where a test cannot
    be evaluated on some item, or the loop's budget of evaluations is spent."""

    __slots__ = ("branches", "frame", "start", "seen", "picked")

    def __init__(self, loop, start, frame):
        self.branches = loop.branches if loop is not None else None
        self.frame = frame
        self.start = start
        self.seen = set()
        self.picked = 0

    def ran(self, position, item):
        """``item`` ran: its branches are seen."""
        if self.branches is not None:
            self.seen.add(self._taken(position, item))

    def new(self, position, item):
        if self.branches is None or self.picked >= _BRANCH_ITEMS:
            return False
        branch = self._taken(position, item)
        if branch is None or branch in self.seen:
            return False
        self.seen.add(branch)
        self.picked += 1
        return True

    def _taken(self, position, item):
        branches = self.branches
        if branches is None or self.frame is None or branches.spent + len(branches.tests) > _BRANCH_EVALUATIONS:
            self.branches = None
            return None
        branches.spent += len(branches.tests)
        try:
            return _branch_taken(branches, self.frame, self.start, position, item)
        except Exception:
            self.branches = None
            return None


def _skipped_then_last(loop, mark, run_binding, bindings, count, run, last, last_binding):
    """After ``run`` items of ``count``: the items between skipped and padded for
    (``bindings``: theirs, or ``None``), then the ``last``."""
    yield from _skipped_then(
        loop, mark, run_binding, bindings, count - run - 1, count - 1, last, last_binding
    )


def _skipped_then(loop, mark, run_binding, bindings, skipped, position, item, item_binding):
    """``skipped`` items skipped and padded for (``bindings``: theirs, or ``None``; ``mark``
    and ``run_binding``: the item run before them), then ``item`` at ``position`` run; returns
    the mark taken before it, for the items skipped after it."""
    _skip(loop, skipped)
    _steps_skipped(loop, skipped)
    pending = _pad_skipped(loop, mark, run_binding, skipped, bindings)
    loop.position = position
    loop.ahead = max(0, loop.ahead - skipped - 1)
    loop.ran += 1
    mark = _pad_mark(loop)
    _note_kind(loop, item, drawn=False, ran=True)
    yield position, item
    _pad_after(loop, pending, item_binding)
    return mark


# At most this many kinds of items are told apart per loop; past them, the drawn items get a
# kind of their own (``_MANY_KINDS``) that no item run has.
_KINDS = 32
_MANY_KINDS = object()


def _note_kind(loop, item, drawn=True, ran=False):
    """Notes the kind of ``item`` among the items drawn and, where it ran, among those run (an
    item run later than it was drawn is noted with ``drawn=False``). The run kinds stop growing
    at ``_KINDS``: a kind left out of them only keeps more crashes uncertain."""
    numpy = sys.modules.get("numpy")
    kind = _item_kind(item, getattr(numpy, "ndarray", None) if numpy is not None else None)
    if drawn:
        loop.kinds_drawn.add(kind if len(loop.kinds_drawn) < _KINDS else _MANY_KINDS)
    if ran and len(loop.kinds_ran) < _KINDS:
        loop.kinds_ran.add(kind)


def _item_kind(item, ndarray, depth=0):
    """What of ``item``'s structure crane reads without running code of the user's or a
    library's: its exact class; for a tuple, a list or a dictionary (exactly those, up to 16
    entries, two levels deep) its entries' kinds, under their keys where those are strings or
    integers; for a NumPy array (``ndarray``: NumPy's class, or ``None`` before NumPy is
    imported) its dtype. A loop over ``[1, 2, 2.5]`` has items of two kinds."""
    cls = type(item)
    if depth < 2 and (cls is tuple or cls is list) and len(item) <= 16:
        return (cls, tuple(_item_kind(part, ndarray, depth + 1) for part in item))
    if depth < 2 and cls is dict and len(item) <= 16:
        return (
            cls,
            tuple(
                (key if type(key) in (str, int) else type(key), _item_kind(value, ndarray, depth + 1))
                for key, value in dict.items(item)
            ),
        )
    if ndarray is not None and cls is ndarray:
        return (cls, str(item.dtype))
    return cls


_no_item = object()
_SIZED = (list, tuple, dict, str, type({}.keys()), type({}.values()), type({}.items()))


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


def _kept_batches(loop, loader, batches, binding, start):
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
    # Batches crane does not fetch: only their positions are known, which is what a branch
    # test on an ``enumerate``'s count reads.
    watch = _BranchWatch(loop, start, _loop_frame(loop) if loop.branches is not None else None)
    for position in range(count):
        watch.ran(position, _UNKNOWN)
    previous = count - 1
    last = None
    for indices in batches:
        if last is not None:
            position = count - 1
            if watch.new(position, _UNKNOWN):
                mark = yield from _skipped_then(
                    loop,
                    mark,
                    binding(previous, _UNKNOWN),
                    (binding(p, _UNKNOWN) for p in range(previous + 1, position)),
                    position - previous - 1,
                    position,
                    _fetch(loader, last),
                    binding(position, _UNKNOWN),
                )
                previous = position
        last = indices
        count += 1
    if last is not None:
        yield from _skipped_then_last(
            loop,
            mark,
            binding(previous, _UNKNOWN),
            (binding(p, _UNKNOWN) for p in range(previous + 1, count - 1)),
            count,
            previous + 1,
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
            whole = not _jumps(node.body, (ast.Break, ast.Return, ast.Continue))
            _abridgement.loops[key] = _Loop(
                self.filename,
                node.lineno,
                self.function,
                _padding_plan(node),
                _branch_plan(node),
                whole,
                _steady_names(node.body),
                frozenset().union(*(_names_read(statement) for statement in node.body)),
            )
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
    _install_steps()
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
    """The definition of ``code`` in ``tree``: a ``def`` of its name at its first line, or the
    one ``lambda`` that starts on that line; ``None`` otherwise."""
    lambdas = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if code.co_firstlineno in (first, node.lineno):
                return node
        elif isinstance(node, ast.Lambda) and code.co_name == "<lambda>" and node.lineno == code.co_firstlineno:
            lambdas.append(node)
    return lambdas[0] if len(lambdas) == 1 else None


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
