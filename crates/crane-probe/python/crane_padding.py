
# crane's padding of an abridged loop: what the iterations it skipped would have added to the
# lists and dictionaries the loop grows, with stand-in values, so that after the loop their
# lengths and keys are the full run's.
#
# Concatenated after ``crane_abridge.py``, whose ``_kept`` calls ``_pad_mark`` before the
# iteration run last before the skip, ``_pad_skipped`` at the skip and ``_pad_after`` when the
# loop asks for an item after its last; runs in the forked child only. ``crane_dependence.py``
# reads what was padded (``_Loop.padded``, ``_Loop.late``).
#
# A loop's plan (``_padding_plan``, from its syntax) lists the statements of its body that grow
# a container the same way in every iteration in which they run: ``name.append(value)`` (and
# ``name.extend([a, b])`` or ``name += [a, b]``, a display of as many entries each time; an
# ``extend`` or ``+=`` of anything else outside ``if`` statements, by the width the iterations
# run since the last skip each grew the list by, which must be one number; each of these also on
# a list under a constant key of a plain or default dictionary, ``history["loss"].append(v)``)
# and ``name[key] = value``, at the body's top level, inside ``with`` blocks, or inside ``if``
# statements whose test reads only the loop's own variables and names the loop does not bind
# (nor a function of the notebook declares ``global``),
# through operators on numbers and strings (``epoch % 5 == 4``), as the key must too. For each
# skipped item crane evaluates those tests and keys itself, on values of Python's own immutable
# types only (no code of the user's or a library's runs), and appends or stores a stand-in: the
# value the same statement made in the iteration run before the skip, or, when that iteration's
# test was false, in the last iteration (the stand-ins then go in once it ends, where the skipped
# iterations would have put them). A name the body grows or binds any other way, appends to in
# more than one statement, or grows after a ``continue`` or ``break`` is not padded, nor is any
# name of a loop that can ``break`` or ``return`` (it may end early), nor a container
# that is not exactly a ``list`` or a ``dict``. A numpy array or a torch tensor the loop stores
# into (``oof[va] = ...``, whatever the index, at any depth of the body and after a
# ``continue`` too) and binds no other way gets nothing: found the same object with the same
# shape and dtype at the skip, its shape and dtype are the full run's already, only the values
# the skipped iterations would have stored are missing.
#
# A Keras ``fit`` cut to fewer epochs has its ``History`` padded the same way
# (``_pad_keras_history``): every metric's list gets an entry per epoch of the real fit, the
# validation metrics one per epoch the user's ``validation_freq`` validates (none: no such key),
# copied from the last abridged epoch, which validates for that. Only where nothing can end
# the fit early: the callbacks (if any) are Keras's own that never stop training.

_PAD_EVALUATIONS = 200_000
_PAD_ENTRIES = 1_000_000
_PURE_TYPES = (int, float, str, bool, type(None))


class _Unknown:
    """An item (or a part of one) crane does not hold: a batch not fetched."""


_UNKNOWN = _Unknown()


class _Impure(Exception):
    """An expression crane will not evaluate on these values."""


class _Growth:
    """A statement of a loop's body that grows ``name``: ``kind`` ``"append"`` (a list, by
    ``width`` entries each time: one for ``x.append(v)``, as many as the display holds for
    ``x.extend([a, b])`` or ``x += [a, b]``, ``None`` where the iterations run measure it),
    ``"store"`` (under ``key``: a dictionary, or an array) or ``"into"`` (an array, at an index
    crane does not evaluate); ``guards``: the ``(test, expected truth)`` of the ``if``
    statements around it."""

    __slots__ = ("name", "kind", "guards", "key", "width", "part")

    def __init__(self, name, kind, guards, key, width=1, part=None):
        self.name = name
        self.kind = kind
        self.guards = guards
        self.key = key
        self.width = width
        # An append to ``name[part]``, a list under a constant key of a dictionary
        # (``history["loss"].append(loss)``): ``part`` is that key.
        self.part = part

    @property
    def slot(self):
        """Which container it grows: the name, and the constant key within it, if any."""
        return (self.name, self.part)


class _Plan:
    """What a loop's skipped iterations would grow: the loop's target, its growths in the
    body's order, and the loop variables their tests and keys read."""

    __slots__ = ("target", "growths", "reads")

    def __init__(self, target, growths, reads):
        self.target = target
        self.growths = growths
        self.reads = reads


def _target_names(target):
    """The names a ``for`` target binds, or ``None`` when it binds anything else."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        names = set()
        for element in target.elts:
            inner = _target_names(element)
            if inner is None:
                return None
            names |= inner
        return names
    return None


_PURE_NODES = (
    ast.Constant, ast.Name, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Tuple,
    ast.JoinedStr, ast.FormattedValue, ast.Load, ast.operator, ast.unaryop, ast.boolop,
    ast.cmpop,
)


def _pure(node, targets, stored):
    """Whether ``node`` is an expression crane evaluates itself: operators on the loop's own
    variables, constants and names the loop does not bind."""
    for part in ast.walk(node):
        if not isinstance(part, _PURE_NODES):
            return False
        if isinstance(part, (ast.Pow, ast.LShift, ast.MatMult)):
            return False
        if isinstance(part, ast.Name) and part.id in stored and part.id not in targets:
            return False
    return True


def _fixed_display(node):
    """A list or tuple display without starred entries: the same number of entries each time."""
    return isinstance(node, (ast.List, ast.Tuple)) and not any(
        isinstance(element, ast.Starred) for element in node.elts
    )


def _padding_plan(node):
    """The plan of a ``for`` statement, or ``None`` when nothing in it can be padded."""
    targets = _target_names(node.target)
    if targets is None or _leaves_early(node.body):
        return None
    # A test or key may read only names nothing rebinds while the loop runs: not the body, nor
    # a function it calls that declares them ``global``.
    stored = _stored_names(node.body) | _rebindable_names()
    growths = []
    bad = set(targets)

    def grown(statement):
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            call = statement.value
            func = call.func
            slot = _list_slot(func.value) if isinstance(func, ast.Attribute) else None
            if slot is None or len(call.args) != 1 or call.keywords or isinstance(call.args[0], ast.Starred):
                return None
            name, part = slot
            argument = call.args[0]
            if func.attr == "append":
                return name, "append", None, argument, 1, part
            if func.attr == "extend":
                # A display of a fixed number of entries: as many appends; anything else: as
                # many as the iterations run measure (``width`` None).
                width = len(argument.elts) if _fixed_display(argument) else None
                return name, "append", None, argument, width, part
            return None
        if (
            isinstance(statement, ast.AugAssign)
            and isinstance(statement.op, ast.Add)
            and isinstance(statement.target, ast.Name)
        ):
            fixed = isinstance(statement.value, ast.List) and _fixed_display(statement.value)
            width = len(statement.value.elts) if fixed else None
            return statement.target.id, "append", None, statement.value, width, None
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                if not isinstance(target.slice, ast.Slice) and _pure(target.slice, targets, stored):
                    return target.value.id, "store", target.slice, statement.value, 1, None
                # Into an array, whatever the index: its shape and dtype stay.
                return target.value.id, "into", None, statement.value, 1, None
        return None

    def walk(statements, guards):
        """Walks ``statements``; ``True`` once a ``continue`` or ``break`` was met."""
        for index, statement in enumerate(statements):
            if _continues(statement):
                # What comes after a ``continue`` runs in some iterations only: nothing there is
                # padded, but an array stored into keeps its shape whether it runs or not.
                into = _stored_into_only(statements[index:])
                bad.update(_stored_names(statements[index:]) - into)
                growths.extend(_Growth(name, "into", (), None) for name in sorted(into))
                return True
            found = grown(statement)
            if found is not None:
                name, kind, key, value, width, part = found
                bad.update(_stored_names([ast.Expr(value)]))
                growths.append(_Growth(name, kind, guards, key, width, part))
            elif isinstance(statement, ast.If) and _pure(statement.test, targets, stored):
                stop = walk(statement.body, guards + ((statement.test, True),))
                stop = walk(statement.orelse, guards + ((statement.test, False),)) or stop
                if stop:
                    bad.update(_stored_names(statements[index + 1 :]))
                    return True
            elif isinstance(statement, (ast.With, ast.AsyncWith)):
                for item in statement.items:
                    bad.update(_stored_names([ast.Expr(item.context_expr)]))
                    if item.optional_vars is not None:
                        bad.update(_names_bound(item.optional_vars))
                if walk(statement.body, guards):
                    bad.update(_stored_names(statements[index + 1 :]))
                    return True
            else:
                nested = _stored_into_only([statement])
                bad.update(_stored_names([statement]) - nested)
                # Stored into at any depth (a loop over users inside a loop over epochs):
                # an array keeps its shape there too, whatever the inner loop stores.
                growths.extend(_Growth(name, "into", (), None) for name in sorted(nested))
        return False

    walk(node.body, ())
    # A list appended to by one statement only: which entry is whose is then known.
    appends = {}
    for growth in growths:
        if growth.kind == "append":
            appends[growth.slot] = appends.get(growth.slot, 0) + 1
    kinds = {}
    for growth in growths:
        kinds.setdefault(growth.name, set()).add(growth.kind)
    kept = [
        g
        for g in growths
        if g.name not in bad
        and appends.get(g.slot, 0) <= 1
        and (kinds[g.name] == {"append"} or "append" not in kinds[g.name])
        # A measured width is measured in iterations that all grow the list.
        and not (g.width is None and g.guards)
    ]
    if not kept:
        return None
    compiled = []
    reads = set()
    for growth in kept:
        guards = tuple((test, expected) for test, expected in growth.guards)
        for test, _ in guards:
            reads |= _names_read(test) & targets
        if growth.key is not None:
            reads |= _names_read(growth.key) & targets
        compiled.append(_Growth(growth.name, growth.kind, guards, growth.key, growth.width, growth.part))
    return _Plan(node.target, compiled, reads)


def _stored_into_only(statements):
    """The names ``statements`` (at any depth: a nested loop, an ``if`` crane does not
    evaluate, what follows a ``continue``) only store into under an index (``U[u] = ...``,
    ``acc[i] += x``, ``U[u], V[v] = a, b``) and bind, delete from, set an attribute of or grow
    no other way. Whether a store runs or not, an array keeps its shape and dtype; the plan
    keeps only the arrays among them (``_pad_mark``)."""
    into, other = _stores(statements)
    return into - other


def _list_slot(node):
    """``(name, None)`` for ``name``, ``(name, key)`` for ``name[key]`` with a constant string or
    integer key; ``None`` for anything else."""
    if isinstance(node, ast.Name):
        return node.id, None
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and isinstance(node.slice, ast.Constant)
        and type(node.slice.value) in (str, int)
    ):
        return node.value.id, node.slice.value
    return None


def _rebindable_names():
    """The names some function of the notebook (the cell included) declares ``global`` or
    ``nonlocal``: a call of it may rebind them between two iterations."""
    if _abridgement.rebindable is None:
        names = set()
        for filename in list(linecache.cache):
            if filename == FILENAME or _is_cell_file(filename):
                tree = _cell_source(filename)
                for node in ast.walk(tree) if tree is not None else ():
                    if isinstance(node, (ast.Global, ast.Nonlocal)):
                        names.update(node.names)
        _abridgement.rebindable = names
    return _abridgement.rebindable


def _names_bound(target):
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


# Evaluating tests and keys on values of Python's own immutable types.

_BINARY = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
    ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b,
    ast.RShift: lambda a, b: a >> b,
}
_COMPARE = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
    ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}


def _pure_value(value):
    if type(value) in _PURE_TYPES:
        return True
    return type(value) is tuple and len(value) <= 64 and all(_pure_value(v) for v in value)


def _evaluate(node, scope):
    """``node``'s value in ``scope`` (a function of a name), only ever applying Python's own
    operators to values of its own immutable types; ``_Impure`` for anything else."""
    if isinstance(node, ast.Constant):
        value = node.value
    elif isinstance(node, ast.Name):
        value = scope(node.id)
    elif isinstance(node, ast.Tuple):
        value = tuple(_evaluate(element, scope) for element in node.elts)
    elif isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left, scope), _evaluate(node.right, scope)
        function = _BINARY.get(type(node.op))
        if function is None or (isinstance(node.op, ast.Mult) and (type(left) in (str, tuple) or type(right) in (str, tuple))):
            raise _Impure()
        try:
            value = function(left, right)
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise _Impure() from exc
    elif isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, scope)
        try:
            if isinstance(node.op, ast.Not):
                value = not operand
            elif isinstance(node.op, ast.USub):
                value = -operand
            elif isinstance(node.op, ast.UAdd):
                value = +operand
            else:
                value = ~operand
        except TypeError as exc:
            raise _Impure() from exc
    elif isinstance(node, ast.BoolOp):
        value = _evaluate(node.values[0], scope)
        for other in node.values[1:]:
            if isinstance(node.op, ast.And) and not value:
                break
            if isinstance(node.op, ast.Or) and value:
                break
            value = _evaluate(other, scope)
    elif isinstance(node, ast.Compare):
        left = _evaluate(node.left, scope)
        value = True
        for op, comparator in zip(node.ops, node.comparators):
            right = _evaluate(comparator, scope)
            try:
                if not _COMPARE[type(op)](left, right):
                    value = False
                    break
            except TypeError as exc:
                raise _Impure() from exc
            left = right
    elif isinstance(node, ast.JoinedStr):
        value = "".join(str(_evaluate(part, scope)) for part in node.values)
    elif isinstance(node, ast.FormattedValue):
        inner = _evaluate(node.value, scope)
        spec = _evaluate(node.format_spec, scope) if node.format_spec is not None else ""
        # No conversion, ``!s`` or ``!r`` (``!a`` is not evaluated).
        conversion = {-1: None, 115: str, 114: repr}.get(node.conversion, _Impure)
        if conversion is _Impure:
            raise _Impure()
        try:
            converted = conversion(inner) if conversion else inner
            value = type(converted).__format__(converted, spec)
        except (TypeError, ValueError) as exc:
            raise _Impure() from exc
    else:
        raise _Impure()
    if not _pure_value(value):
        raise _Impure()
    return value


def _bind_item(target, item, wanted, into):
    """The loop variables in ``wanted`` bound from ``item`` as ``target`` unpacks it (only
    tuples and lists are unpacked; what crane does not hold is ``_UNKNOWN``)."""
    if isinstance(target, ast.Name):
        if target.id in wanted:
            into[target.id] = item
        return
    if item is not _UNKNOWN and type(item) in (tuple, list) and len(item) == len(target.elts):
        for element, part in zip(target.elts, item):
            _bind_item(element, part, wanted, into)
    else:
        for name in _names_bound(target) & wanted:
            into[name] = _UNKNOWN


# The runtime side, called from ``_kept``.


def _loop_frame(loop):
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename != loop.filename:
        frame = frame.f_back
    return frame


def _lookup(frame, name):
    if name in frame.f_locals:
        return frame.f_locals[name]
    return frame.f_globals.get(name, _UNKNOWN)


class _Mark:
    """The containers a plan grows, with their sizes (and an array's structure,
    ``_structure``), before the iteration run last before the skip."""

    __slots__ = ("frame", "before", "shapes")

    def __init__(self, frame, before, shapes):
        self.frame = frame
        self.before = before
        self.shapes = shapes


def _pad_mark(loop):
    _steps_mark(loop)
    if loop.plan is None and not loop.steady_names:
        return None
    frame = _loop_frame(loop)
    _steady_mark(loop, frame)
    if loop.plan is None or frame is None:
        return None
    before, shapes = {}, {}
    for growth in loop.plan.growths:
        container = _slot_value(frame, growth)
        if growth.kind == "append" and (type(container) is list or (container is None and growth.part is not None)):
            # A dictionary's entry not there yet (a ``defaultdict`` makes it on the first
            # append): empty until the iteration makes it.
            size = 0 if container is None else len(container)
            before[growth.slot] = (container, size)
            if growth.width is None:
                loop.size_marks.append((growth.slot, container, size))
        elif growth.kind != "append":
            if _fixed_shape(container):
                before[growth.slot] = (container, None)
                shapes[growth.slot] = _structure(container)
            elif type(container) is dict:
                before[growth.slot] = (container, len(container))
    return _Mark(frame, before, shapes)


def _slot_value(frame, growth):
    """The container ``growth`` grows, as the frame holds it now: ``None`` for a dictionary's
    entry not there yet, ``_UNKNOWN`` where the name holds no plain or default dictionary. A
    dictionary's entry is read as ``dict`` reads it (no ``__missing__``, no method of a
    subclass)."""
    value = _lookup(frame, growth.name)
    if growth.part is None:
        return value
    collections = sys.modules.get("collections")
    dictionaries = (dict, getattr(collections, "defaultdict", dict))
    if type(value) not in dictionaries:
        return _UNKNOWN
    return dict.get(value, growth.part)


def _fixed_shape(value):
    """A numpy array or a torch tensor, exactly: storing into one keeps its shape and dtype."""
    numpy = sys.modules.get("numpy")
    torch = sys.modules.get("torch")
    return (numpy is not None and type(value) is getattr(numpy, "ndarray", None)) or (
        torch is not None and type(value) is getattr(torch, "Tensor", None)
    )


def _scope(frame, bound):
    def scope(name):
        if name in bound:
            value = bound[name]
        else:
            value = _lookup(frame, name)
        if value is _UNKNOWN:
            raise _Impure()
        return value

    return scope


def _holds(growth, scope):
    for test, expected in growth.guards:
        if bool(_evaluate(test, scope)) is not expected:
            return False
    return True


def _binding(loop, item):
    """The loop variables the plan's tests and keys read, bound from ``item`` (what the loop's
    target unpacks); a value crane does not evaluate on is ``_UNKNOWN``. Kept per skipped item
    in place of the item itself."""
    plan = loop.plan
    if plan is None or not plan.reads:
        return {}
    bound = {}
    _bind_item(plan.target, item, plan.reads, bound)
    return {name: (value if _pure_value(value) else _UNKNOWN) for name, value in bound.items()}


def _pad_skipped(loop, mark, run_binding, count, bindings):
    """Pads what the plan grows for ``count`` skipped items (``bindings``: their ``_binding``s,
    read only when the plan's tests or keys read the loop's variables; ``None`` when there were
    too many to keep); ``run_binding`` is the iteration run last's. Returns what waits for the
    loop's end. Nothing it meets reaches the cell: a failure leaves the loop unpadded."""
    if mark is None or loop.plan is None or count == 0:
        return None
    try:
        return _pad_plan(loop, mark, run_binding, count, bindings)
    except Exception:
        loop.unpadded.update(g.name for g in loop.plan.growths)
        return None
    finally:
        loop.size_marks = []


def _pad_plan(loop, mark, run_binding, count, bindings):
    plan = loop.plan
    growths = []
    for growth in plan.growths:
        entry = mark.before.get(growth.slot)
        now = _slot_value(mark.frame, growth) if entry is not None and entry[1] is None else None
        if now is not None and now is entry[0] and _structure(now) == mark.shapes.get(growth.slot):
            # An array stored into, the same object of the same shape and dtype after the
            # iteration run before the skip (no in-place ``resize``): the skipped iterations
            # change its values, not its shape; there is nothing to evaluate, however many
            # they are.
            loop.padded.add(growth.name)
            loop.arrays.add(growth.name)
        else:
            growths.append(growth)
    if not growths:
        return []
    if count > _PAD_ENTRIES or (plan.reads and (bindings is None or count * len(growths) > _PAD_EVALUATIONS)):
        loop.unpadded.update(g.name for g in growths)
        return None
    bound_items = list(bindings) if plan.reads else None
    by_slot = {}
    for growth in growths:
        by_slot.setdefault(growth.slot, []).append(growth)
    pending = []
    for slot, growths in by_slot.items():
        name = slot[0]
        entry = mark.before.get(slot)
        now = _slot_value(mark.frame, growths[0])
        if entry is not None and entry[0] is None:
            # A dictionary's entry not there before the iteration run before the skip: the one
            # it made, or, where it made none, the one the last iteration makes.
            if type(now) is list:
                entry = (now, 0)
            elif now is None and len(growths) == 1 and growths[0].width is not None:
                try:
                    made = _made(growths[0], mark.frame, count, bound_items)
                except _Impure:
                    loop.unpadded.add(name)
                    continue
                if any(key is not _SKIP for key in made):
                    pending.append((growths[0], None, 0, made, None))
                continue
            else:
                entry = None
        if entry is None or now is not entry[0]:
            loop.unpadded.add(name)
            continue
        try:
            earlier = [
                size
                for marked, container, size in loop.size_marks
                if marked == slot and (container is entry[0] or container is None)
            ]
            waiting = _pad_name(growths, mark.frame, entry, count, bound_items, run_binding, earlier)
        except _Impure:
            loop.unpadded.add(name)
            continue
        if waiting is None:
            loop.padded.add(name)
        else:
            pending.append(waiting)
    return pending


# Where a growth's tests are false for an item.
_SKIP = object()
# No value to copy yet.
_NO_STANDIN = object()


def _made(growth, frame, count, bound_items):
    """Per skipped item, what ``growth`` does there: ``_SKIP`` where its tests are false, else
    its key (``True`` for an append)."""

    def one(scope):
        if not _holds(growth, scope):
            return _SKIP
        return _evaluate(growth.key, scope) if growth.key is not None else True

    if bound_items is None:
        return [one(_scope(frame, {}))] * count
    return [one(_scope(frame, bound)) for bound in bound_items]


def _standin(growth, frame, container, size, run_binding, earlier):
    """The value ``growth`` made in the iteration run before the skip (for an append, the list
    of the entries it added), or ``_NO_STANDIN``. A measured width must be the same in every
    iteration run since the last skip (``earlier``: the list's lengths before each)."""
    if growth.kind == "append":
        if growth.width is None:
            lengths = [*earlier, len(container)]
            if len(lengths) < 2 or len({b - a for a, b in zip(lengths, lengths[1:])}) != 1:
                raise _Impure()
            return container[size:]
        if len(container) == size + growth.width:
            return container[size:]
        if len(container) != size:
            # Grown otherwise too (through a function, an alias): the count is not the plan's.
            raise _Impure()
        return _NO_STANDIN
    scope = _scope(frame, run_binding)
    if _holds(growth, scope):
        key = _evaluate(growth.key, scope)
        if key in container:
            return container[key]
    return _NO_STANDIN


def _pad_name(growths, frame, entry, count, bound_items, run_binding, earlier):
    """Pads one container for the skipped items, item by item in the statements' order; what
    waits for the last iteration's value when there is none yet (a single statement only)."""
    container, size = entry
    if size is None:
        # An array stored into whose shape or dtype an iteration changed (``_pad_plan`` pads
        # the others): not padded.
        raise _Impure()
    if any(growth.kind == "into" for growth in growths):
        raise _Impure()
    made = [_made(growth, frame, count, bound_items) for growth in growths]
    if all(key is _SKIP for column in made for key in column):
        return None
    standins = [_standin(growth, frame, container, size, run_binding, earlier) for growth in growths]
    if any(standin is _NO_STANDIN for standin in standins):
        if len(growths) > 1:
            raise _Impure()
        growth = growths[0]
        keys_before = set(container) if growth.kind == "store" else None
        return (growth, container, len(container), made[0], keys_before)
    if growths[0].kind == "append":
        # One statement appends to a list (a plan keeps no more).
        container.extend(standins[0] * sum(1 for key in made[0] if key is not _SKIP))
        return None
    for index in range(count):
        for standin, column in zip(standins, made):
            if column[index] is not _SKIP:
                container[column[index]] = standin
    return None


def _pad_after(loop, pending, last_binding):
    """Once the loop's last iteration ended: the stand-ins that waited for its value, put
    where the skipped iterations would have put them."""
    for growth, container, size, made, keys_before in pending or ():
        try:
            _pad_late(loop, growth, container, size, made, keys_before, last_binding)
            loop.padded.add(growth.name)
            loop.late.add(growth.name)
        except Exception:
            loop.unpadded.add(growth.name)


def _pad_late(loop, growth, container, size, made, keys_before, last_binding):
    """The stand-ins of one container put in after the last iteration (``_Impure`` where the
    last iteration made no value to copy either)."""
    keys = [key for key in made if key is not _SKIP]
    if container is None:
        # A dictionary's entry the last iteration made.
        container = _slot_value(_loop_frame(loop), growth)
        if type(container) is not list:
            raise _Impure()
    if growth.kind == "append":
        if len(container) != size + growth.width:
            raise _Impure()
        container[size:size] = container[size:] * len(keys)
    else:
        scope = _scope(_loop_frame(loop), last_binding)
        if not _holds(growth, scope):
            raise _Impure()
        key = _evaluate(growth.key, scope)
        if key not in container:
            raise _Impure()
        standin = container[key]
        # The last iteration's key goes after the skipped ones when it was new.
        moved = key not in keys_before
        if moved:
            del container[key]
        for skipped_key in keys:
            container[skipped_key] = standin
        if moved:
            container[key] = standin


# A Keras fit's history.

# Keras's callbacks that never stop a fit before its last epoch.
_KERAS_STEADY_CALLBACKS = frozenset(
    (
        "History", "ProgbarLogger", "ModelCheckpoint", "CSVLogger", "TensorBoard",
        "LearningRateScheduler", "ReduceLROnPlateau",
    )
)


def _keras_history_padding(arguments, epochs):
    """``(validation_freq, validates)`` when a fit of ``epochs`` so called can have its history
    padded, else ``None``."""
    if type(epochs) is not int or arguments.get("initial_epoch", 0) != 0:
        return None
    callbacks = arguments.get("callbacks")
    if callbacks is not None:
        if type(callbacks) not in (list, tuple):
            return None
        for callback in callbacks:
            cls = type(callback)
            module = getattr(cls, "__module__", "") or ""
            if cls.__name__ not in _KERAS_STEADY_CALLBACKS or module.split(".")[0] != "keras":
                return None
    frequency = arguments.get("validation_freq", 1)
    if not (type(frequency) is int and frequency > 0) and not (
        type(frequency) in (list, tuple) and all(type(e) is int for e in frequency)
    ):
        return None
    split = arguments.get("validation_split", 0.0)
    validates = arguments.get("validation_data") is not None or (type(split) in (int, float) and split > 0)
    return frequency, validates


def _pad_keras_history(history, epochs, frequency, validates):
    """``history`` (what the abridged ``fit`` returned) given the entries of a fit of
    ``epochs``; whether it was."""
    record = getattr(history, "history", None)
    if type(history).__name__ != "History" or type(record) is not dict:
        return False
    if not all(type(values) is list and values for values in record.values()):
        return False
    if validates:
        validated = sum(
            1
            for epoch in range(1, epochs + 1)
            if (epoch % frequency == 0 if type(frequency) is int else epoch in frequency)
        )
    else:
        validated = 0
    for key in list(record):
        values = record[key]
        wanted = validated if key.startswith("val_") else epochs
        if wanted == 0:
            del record[key]
        elif wanted <= len(values):
            del values[wanted:]
        else:
            values.extend([values[-1]] * (wanted - len(values)))
    history.epoch = list(range(epochs))
    if type(getattr(history, "params", None)) is dict:
        history.params["epochs"] = epochs
    return True
