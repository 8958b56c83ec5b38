
# crane's verdict on an abridged run's crash: whether it reads what the abridgement changed, and
# whether it is certain all the same. Concatenated after ``crane_abridge.py``, whose record of
# the run (``_abridgement``: the loops cut, the calls shortened, the functions that ran
# shortened) it reads; it runs in the forked child after the crash, except
# ``second_abridgement``, which the dry run's ``run`` calls in the kernel.
#
# A crash in such a run may be an artefact of abridging (a history with 2 entries, a counter
# that never reached its end). ``_Dependence`` decides, by a flow-sensitive data-flow walk of
# the cell and of each notebook function on the traceback, whether the failing statement reads
# a value the abridgement changed: a name bound from a value carried from one iteration to the
# next of an abridged loop (an accumulator, a container grown or stored into), the result of a
# shortened library call, and whatever is computed from those. A value bound afresh in an
# iteration from values it does not depend on (a batch, a loop's own item, a model trained
# fewer steps) is not changed: the last iteration sees the real last item, and a model's
# structure does not depend on how long it was trained.


# Methods that grow a container.
_GROWING_METHODS = frozenset(
    (
        "append", "extend", "insert", "add", "update", "setdefault", "appendleft",
        "extendleft", "put", "push", "concat",
    )
)


def _names_read(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _read_beside_stores(statement):
    """The names ``statement`` reads, but for the name a subscript or attribute store goes into
    (``samples`` in ``samples[i] = x``, ``d`` in ``d[k] += 1``): the key and the value are read,
    the container only stored into."""
    bases = set()
    targets = getattr(statement, "targets", None) or [getattr(statement, "target", None)]
    for target in targets:
        for node in ast.walk(target) if target is not None else ():
            if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
                while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
                    node = node.value
                if isinstance(node, ast.Name):
                    bases.add(id(node))
    return {
        n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in bases
    }


def _root(node):
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _grown_names(body):
    """Names ``body`` grows or stores into, whatever it binds them to: augmented, stored into
    under a key or an attribute, or grown by a method (``scores.append(s)``)."""
    grown = set()
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.AugAssign) or (
                isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store)
            ):
                root = _root(node.target if isinstance(node, ast.AugAssign) else node)
                if root:
                    grown.add(root)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _GROWING_METHODS:
                root = _root(node.func.value)
                if root:
                    grown.add(root)
    return grown


def _bound_names(node):
    """The plain names a simple statement binds."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
    return {
        part.id for target in targets for part in ast.walk(target)
        if isinstance(part, ast.Name) and isinstance(part.ctx, ast.Store)
    }


def _selections_by(node, grown, raising=None, ordered=frozenset(), scope=None):
    """The names of ``grown`` that ``node`` selects something by: read in a subscript's index
    (``candidates[np.argmax(scores)]``, ``cols[mask]``), in a comprehension's condition
    (``[c for c, s in zip(cols, scores) if s > t]``) or in a ``key`` function
    (``max(models, key=lambda m: scores[m])``); or read by what a subscript picks one entry of
    by position (``sorted(zip(scores, models))[-1]``, ``table.sort_values("score").iloc[0]``,
    a name computed from them) or an assignment unpacks (``best, model = max(zip(...))``):
    whether an ordering by the values put it there is not known. Which entry the values pick,
    and so its type, its keys or how many are kept, is a fact about the values. Not the
    subscript that raised (``raising``): its crash is about indexing with that index, not about
    what it picks. A string key picks a column or an entry by name, which the code names; a
    position in a container a loop grew (``ordered``: ``losses[-1]``) picks what an iteration
    made, in the iterations' order; a key of a dictionary or a label (``.loc``) picks by what
    the entry is called, not where an ordering put it."""
    if not grown:
        return set()
    found = set()
    for part in ast.walk(node):
        if isinstance(part, ast.Subscript) and part is not raising:
            found |= _names_read(part.slice) & grown
            if not _by_name(part.slice) and not _by_label(part.value, scope):
                kept = ordered if isinstance(part.value, ast.Name) else frozenset()
                found |= (_names_read(part.value) & grown) - kept
        elif isinstance(part, ast.comprehension):
            for condition in part.ifs:
                found |= _names_read(condition) & grown
        elif isinstance(part, ast.keyword) and part.arg == "key":
            found |= _names_read(part.value) & grown
        elif isinstance(part, ast.Assign) and not isinstance(part.value, (ast.Tuple, ast.List)):
            if any(isinstance(target, (ast.Tuple, ast.List)) for target in part.targets):
                found |= _names_read(part.value) & grown
    return found


def _handed_over(node):
    """The names ``node`` hands to a call, as an argument or as the receiver of a method other
    than one that grows it (``results.sort(...)``, ``random.shuffle(results)``): the call may
    reorder them."""
    handed = set()
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        if isinstance(call.func, ast.Attribute) and call.func.attr not in _GROWING_METHODS:
            root = _root(call.func.value)
            if root:
                handed.add(root)
        for argument in [*call.args, *(keyword.value for keyword in call.keywords)]:
            if isinstance(argument, ast.Starred):
                argument = argument.value
            if isinstance(argument, ast.Name):
                handed.add(argument.id)
    return handed


def _by_label(value, scope):
    """Whether a subscript of ``value`` looks its index up by what the entry is called: pandas'
    ``.loc`` and ``.at``, or a name that holds a dictionary (exactly ``dict`` or one of
    ``collections``' subclasses) in ``scope``."""
    if isinstance(value, ast.Attribute):
        return value.attr in ("loc", "at")
    if isinstance(value, ast.Name) and scope is not None:
        collections = sys.modules.get("collections")
        kinds = {dict, *(getattr(collections, name, dict) for name in ("defaultdict", "OrderedDict", "Counter"))}
        return type(scope.get(value.id)) in kinds
    return False


def _by_name(index):
    """Whether a subscript's ``index`` picks by names the code gives (``"loss"``,
    ``["a", "b"]``, ``("score", "mean")``) or keeps every entry (``:``, ``None``, ``...``)
    rather than picking by a position or a computed key."""
    if isinstance(index, ast.Constant):
        return type(index.value) is str or index.value is None or index.value is Ellipsis
    if isinstance(index, ast.Slice):
        return True
    if isinstance(index, (ast.Tuple, ast.List)):
        return all(_by_name(element) for element in index.elts)
    return False


def _counted_exact(loop):
    """The names an abridged ``loop`` leaves with the full run's lengths and shapes but not its
    values: what its padding grew (``_Loop.exact``) and what it rebuilt from itself with the same
    structure before every iteration after the first (``_steady``: ``U = 0.9 * U + g``)."""
    return loop.exact() | _steady(loop)


def _stored_names(body):
    """Names an iteration of ``body`` leaves for the next: bound, augmented, stored into, or
    grown by a method."""
    into, other = _stores(body)
    return into | other


def _stores(statements):
    """What ``statements`` store, at any depth: the roots stored into under an index
    (``U[u] = ...``, ``acc[i] += x``), and apart from them the names bound or deleted, the roots
    of an attribute set or of a subscript deleted, of a growing method's receiver, the functions
    and classes defined and the names an ``except`` binds."""
    into, other = set(), set()
    for node in (part for statement in statements for part in ast.walk(statement)):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            root = _root(node)
            if root:
                into.add(root)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            root = _root(node)
            if root:
                other.add(root)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            other.add(node.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _GROWING_METHODS:
            root = _root(node.func.value)
            if root:
                other.add(root)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            other.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            other.add(node.name)
    return into, other


# Methods that store under a key or remove: which keys a container holds after them depends
# on the iterations that ran.
_KEYED_METHODS = frozenset(
    ("insert", "add", "update", "setdefault", "put", "push", "pop", "popitem", "remove", "discard", "clear")
)


def _keyed_stores(body, steady=frozenset(), own=frozenset(), scope=None):
    """Names an iteration of ``body`` may leave differently depending on which iterations ran:
    stored under a condition (``if``, ``try``, ``match``) or after a ``continue``, or into a
    key the iteration computes (``d[name] = ...``, ``d.update(...)``, ``df.loc[rows, col] =``).
    What every iteration does the same way (bind a name, append to a list, set an attribute)
    changes with the number of iterations only. A ``steady`` name (``crane_steady.py``), rebuilt
    from itself at the body's top level, is not keyed for that; nor is a store under the key an
    enclosing loop takes from the dictionary itself (``own``, ``_own_keys``, whose dictionaries
    ``scope`` holds)."""
    names = set()
    skipping = False
    for statement in body:
        if skipping or isinstance(statement, (ast.If, ast.Try, getattr(ast, "TryStar", ast.Try), ast.Match)):
            names |= _stored_names([statement])
        elif isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
            inner = own | _own_keys(statement, scope)
            names |= _keyed_stores(statement.body, own=inner, scope=scope) | _stored_names(statement.orelse)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            names |= _keyed_stores(statement.body, own=own, scope=scope)
        else:
            names |= _computed_keys(statement, steady, own)
        skipping = skipping or _continues(statement)
    return names


def _own_keys(loop, scope):
    """``{(container, key)}`` where ``loop`` takes each ``key`` from the dictionary
    ``container`` itself (``_dict_iterated``) and its body never rebinds either: storing
    ``container[key]`` there replaces an entry and adds no key, whichever iterations ran
    (Python refuses a dictionary that changes size while it is iterated)."""
    iterated = _dict_iterated(loop, scope)
    if iterated is None:
        return frozenset()
    source, target = iterated
    if target is None or {source, target} & _stored_names_bound(loop.body):
        return frozenset()
    return frozenset({(source, target)})


def _dict_iterated(loop, scope):
    """``(container, key name or None)`` where ``loop`` iterates over the keys of
    ``container``, a ``dict`` by exact class in ``scope`` (``for name in params:``,
    ``params.keys()``, ``for name, value in params.items():``): as many iterations as it has
    keys, and those keys, whatever its values. ``None`` otherwise."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return None
    source = loop.iter
    method = None
    if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and not source.args and not source.keywords:
        method, source = source.func.attr, source.func.value
    if not isinstance(source, ast.Name) or method not in (None, "keys", "items"):
        return None
    if scope is None or type(scope.get(source.id)) is not dict:
        return None
    target = loop.target
    if method == "items":
        target = target.elts[0] if isinstance(target, ast.Tuple) and len(target.elts) == 2 else None
    return source.id, target.id if isinstance(target, ast.Name) else None


def _settled_in_first(node, loop):
    """Names the body of the abridged loop ``node`` binds under a condition (``if``, ``with``
    blocks around it, no nested loop or ``try``) by one plain assignment, with no other store
    into them, which its first iteration made (``loop.first``): a best checkpoint kept as
    ``best = {'epoch': epoch, 'state_dict': ...}`` when a score improves. The first iteration
    ran as the real one does, so the real run binds it too, by the same statement, whichever
    iteration binds it last: the structure of what it holds is that statement's, as for a name
    every iteration binds (which iteration it was decides its values, which the walk with
    ``keyed`` does not judge)."""
    if loop is None or loop.first is None:
        return frozenset()
    before, after = loop.first
    binders = {}
    others = set()

    def visit(statements):
        for statement in statements:
            if isinstance(statement, ast.If):
                visit(statement.body)
                visit(statement.orelse)
                others.update(_stored_names([statement.test]))
            elif isinstance(statement, (ast.With, ast.AsyncWith)):
                visit(statement.body)
            elif (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and not any(isinstance(n, ast.NamedExpr) for n in ast.walk(statement.value))
                and statement.targets[0].id not in _names_read(statement.value)
            ):
                binders.setdefault(statement.targets[0].id, []).append(statement)
            else:
                others.update(_stored_names([statement]))

    visit(node.body)
    settled = set()
    for name, statements in binders.items():
        if len(statements) != 1 or name in others or name not in after:
            continue
        if name not in before or after[name] is not before[name]:
            settled.add(name)
    return frozenset(settled)


def _stored_names_bound(body):
    """The names ``body`` binds as names (not what it stores into)."""
    return {
        node.id
        for statement in body
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del))
    }


def _own_key(node, own):
    """Whether the subscript ``node`` is ``container[key]`` of a pair of ``own``."""
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and isinstance(node.slice, ast.Name)
        and (node.value.id, node.slice.id) in own
    )


def _computed_keys(statement, steady=frozenset(), own=frozenset()):
    """Names ``statement`` stores into under a computed key, and names it binds from their own
    value (``x = x[1:]``, ``total += v``): a value rebuilt from the one before has the shape
    the number of iterations gives it."""
    names = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and _own_key(node, own):
            continue
        if isinstance(node, ast.AugAssign) and _own_key(node.target, own):
            continue
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if not _constant(node.slice):
                root = _root(node)
                if root:
                    names.add(root)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _KEYED_METHODS:
                root = _root(node.func.value)
                if root:
                    names.add(root)
        elif isinstance(node, ast.AugAssign):
            root = _root(node.target)
            if root and not (isinstance(node.target, ast.Name) and root in steady):
                names.add(root)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            own = {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
            names |= (own & _names_read(node.value)) - steady
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def _constant(node):
    if isinstance(node, ast.Tuple):
        return all(_constant(element) for element in node.elts)
    return isinstance(node, ast.Constant)


def _jumps(nodes, kinds):
    """A node of ``kinds`` among ``nodes`` and what they hold, outside the loops' bodies (their
    ``else`` counts) and the functions and classes nested in them: a jump of this loop's body."""
    todo = list(nodes)
    while todo:
        node = todo.pop()
        if isinstance(node, kinds):
            return True
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            todo.extend(node.orelse)
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return False


# How the marker of a changed test that may skip or end its loop's iterations starts.
_ITERATIONS_DECIDED = "<the iterations decided by the test"


def _leaves_frame(body):
    """A ``return`` or ``raise`` among ``body`` and what it holds, but for the functions and
    classes defined there: the statements after it may not run."""
    todo = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Return, ast.Raise)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return False


def _continues(statement):
    """A ``continue`` or ``break`` of the loop whose body holds ``statement``."""
    return _jumps([statement], (ast.Continue, ast.Break))


def _leaves_early(body):
    """A ``break`` or ``return`` of this loop's body (not of a loop or function inside it)."""
    return _jumps(body, (ast.Break, ast.Return))


def _function_effects(name):
    """``(positional, changed)`` for the notebook function ``name`` whose run was abridged:
    the names of its positional parameters in order, and ``{"params": ..., "globals": ...}``,
    the parameters and global names a walk of its body with ``keyed`` leaves changed (what it
    stores under a condition or a computed key, or from a value an abridged loop of its
    carried), whether an earlier cell or the checked cell defines it. ``None`` where its
    definition is not known here (two functions of one name), it takes ``*args`` or
    ``**kwargs``, or it calls another notebook function whose run was abridged (whose effects
    this does not follow)."""
    known = _abridgement.shortened_codes.get(name)
    if known is None:
        return None
    code, namespace = known
    tree = _cell_source(code.co_filename)
    found = _definition(tree, code) if tree is not None else None
    if found is None or isinstance(found, ast.Lambda) or found.args.vararg is not None or found.args.kwarg is not None:
        return None
    for call in ast.walk(found):
        if isinstance(call, ast.Call) and _callee_name(call) in _abridgement.shortened_functions - {name}:
            return None
    arguments = found.args
    positional = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
    params = set(positional) | {a.arg for a in arguments.kwonlyargs}
    local = set()
    declared = set()
    for node in ast.walk(found):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            local.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
    scope = _Scope(types.SimpleNamespace(f_locals={}, f_globals=namespace))
    # The values its loops carry are changed for the tests that read them.
    carried = set().union(
        *(_stored_names(loop.body) for loop in ast.walk(found) if isinstance(loop, (ast.For, ast.AsyncFor, ast.While)))
    )
    walk = _Dependence(code.co_filename, -1, set(), scope, keyed=True, guards=carried)
    _, _, left = walk.judge(found.body)
    return positional, {
        "params": left & params,
        "globals": {n for n in left if not n.startswith("<")} - params - (local - declared),
    }


def _callee_name(call):
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _shortened_calls(node):
    """Names of the notebook functions whose run was abridged that ``node`` calls (by name: a
    method call counts by its attribute)."""
    if not _abridgement.shortened_functions:
        return set()
    return {
        name
        for call in ast.walk(node)
        if isinstance(call, ast.Call)
        for name in (_callee_name(call),)
        if name in _abridgement.shortened_functions
    }


class _Dependence:
    """Whether the statement at ``line`` of one body (a cell or a function), reached with the
    runtime positions of its abridged loops, reads a value the abridgement changed.

    With ``keyed``, only what depends on *which* iterations ran counts as changed: what an
    abridged loop stores under a condition, with a key it computes, or after a ``continue``
    (``_keyed_stores``), and what a notebook function whose run was abridged returned or did
    to its arguments; what every iteration grows or binds the same way (a list of batch
    outputs) and a shortened library call's result (keyed by its configuration) are not."""

    def __init__(
        self,
        filename,
        line,
        tainted,
        scope,
        callee=None,
        keyed=False,
        counts=False,
        values=False,
        span=None,
        guards=frozenset(),
        uncut=False,
    ):
        self.keyed = keyed
        # A library call the abridgement shortened changes nothing by being shortened: what
        # the walk then finds changed, the call was given.
        self.uncut = uncut
        # Where in the failing statement the exception was raised (``_raising_span``), if known.
        self.span = span
        # The frame's names (a ``_Scope``): what a shortened call drove (``_driven_names``)
        # and, for a crash about values (``_about_values``), what an abridged loop touched
        # (``_touched``).
        self.scope = scope
        self.values = values
        # With ``counts``: as without ``keyed``, except that what an abridged loop's padding
        # grew (``crane_padding.py``) has the full run's lengths and keys after the loop; its
        # values are stand-ins, so whatever is computed from it is changed.
        self.counts = counts
        # The names the loops being walked padded (growing them there changes no length).
        self.exempt = set()
        self.padded = set()
        # With ``keyed``: names an abridged loop grew (``_grown_names``), whose entries are the
        # iterations that ran (and copies of them): what a statement selects by their values
        # (``_selections_by``: ``candidates[np.argmax(scores)]``) is changed.
        self.grown = set()
        # Of those, the names loops grew that nothing has rebound since: their entries are in
        # the order the iterations made them.
        self.ordered = set()
        if counts:
            for loop in _abridgement.loops.values():
                if loop.skipped and loop.filename == filename:
                    self.padded |= _counted_exact(loop)
        self.filename = filename
        self.line = line
        self.skipped = _abridgement.skipped_lines(filename)
        self.calls = _abridgement.call_lines(filename)
        # The notebook function the failing statement called and the crash is in (judged in
        # its own frame), if any.
        self.callee = callee
        self.initial = set(tainted)
        self.found = None
        # The expression the exception came out of (``_raising_expression``), and the changed
        # names it reads itself (``found`` adds the path's facts and the tests around it).
        self.raising = None
        self.direct = None
        self.inside = 0
        # Walking an iteration that is not the one the failing statement ran in.
        self.quiet = False
        # The changed names the tests around the statement being walked read (``if``,
        # ``while``, ``match``, a loop's changed iterable): whether it runs at all depends on them.
        self.control = []
        # Names whose values a test reads as changed whatever the mode: with ``keyed`` or
        # ``counts`` a name may be unchanged in structure or length (a list every iteration
        # appends to, a padded history) while its values, which a test reads, are not the full
        # run's. The walk without either gives them (``ever``: every name it found changed).
        self.guards = guards
        self.ever = set()
        # Names the iteration being walked bound afresh, before the statement being walked, at
        # the top of the body of the innermost abridged loop (``fresh_body``): its target
        # (``"item"``) and a copy made there (``"copy"``, ``_copy_call``). Storing into them
        # stores into that iteration's own objects.
        self.fresh = {}
        self.fresh_body = None
        # With ``keyed``: names the abridged loops being walked bind under a condition by one
        # assignment that their first iteration made (``_settled_in_first``).
        self.settled = frozenset()
        self.settled_used = set()
        # The body judged (a cell's statements, a function's), once ``judge`` has it.
        self.body = []

    def judge(self, body):
        """``(depends, names)`` for the failing statement, ``(True, set())`` if not found."""
        self.body = body
        tainted = self._body(body, set(self.initial))
        if self.found is None:
            return True, set(), tainted
        return bool(self.found), self.found, tainted

    def _body(self, body, tainted):
        for statement in body:
            if self.found is not None:
                break
            tainted = self._statement(statement, tainted)
            self.ever |= tainted
            if body is self.fresh_body and isinstance(statement, ast.Assign) and _copy_call(statement.value):
                self.fresh.update((target.id, "copy") for target in statement.targets if isinstance(target, ast.Name))
        return tainted

    def _in_place(self, root):
        """Whether a store into ``root`` inside an abridged loop leaves it changed whatever is
        stored: it may hold what earlier iterations stored, unless this iteration bound it
        afresh (``fresh``): its own item, or a copy that is one of the classes whose copy
        shares nothing with what it was made from (``_copies_afresh``)."""
        if not self.inside or self.keyed:
            return False
        kind = self.fresh.get(root)
        return not (kind == "item" or (kind == "copy" and _copies_afresh(self.scope.get(root))))

    def _at(self, node):
        return node.lineno <= self.line <= (node.end_lineno or node.lineno)

    def _check(self, reads, tainted, line=None, node=None):
        if self.found is None and not self.quiet:
            raising = _raising_expression(node, self.span)
            if raising is not None:
                # The expression the exception came out of: the rest of the statement
                # (the receiver of ``val_aucs.append(score(...))``) fed nothing into it.
                reads = _names_read(raising)
            self.raising, self.direct = raising, reads & tainted
            # Names in <...> are facts of the path (a loop that may have ended early), read by
            # every statement after them.
            self.found = (reads & tainted) | {name for name in tainted if name.startswith("<")}
            for part in node if isinstance(node, list) else [] if node is None else [node]:
                self.found |= {
                    f"<a selection by the values of {name}>"
                    for name in _selections_by(part, self.grown, raising, self.ordered, self.scope)
                }
            self.found |= set().union(*self.control)
            if self._shortened_at(line):
                self.found.add("<abridged call>")
            for part in node if isinstance(node, list) else [] if node is None else [node]:
                self.found |= {
                    f"<what {name}() returned from an abridged run>"
                    for name in _shortened_calls(part) - {self.callee}
                }

    def _statement(self, node, tainted):
        if isinstance(node, ast.For):
            return self._for(node, tainted)
        if isinstance(node, (ast.While, ast.AsyncFor)):
            return self._plain_loop(node, tainted)
        if isinstance(node, ast.If):
            if self._at(node) and self.line < node.body[0].lineno:
                self._check(_names_read(node.test), tainted, node.lineno, node.test)
                return tainted
            guard = _names_read(node.test) & (tainted | self.guards)
            taken, other = self._guarded(guard, [node.body, node.orelse], tainted)
            return self._after_guard(guard, node.lineno, [*node.body, *node.orelse], taken | other)
        if isinstance(node, (ast.With, ast.AsyncWith)):
            if self._at(node) and self.line < node.body[0].lineno:
                self._check(
                    set().union(*(_names_read(i) for i in node.items)),
                    tainted,
                    node.lineno,
                    [item.context_expr for item in node.items],
                )
                return tainted
            for item in node.items:
                if item.optional_vars is not None:
                    changed = bool(_names_read(item.context_expr) & tainted) or bool(
                        _shortened_calls(item.context_expr)
                    )
                    self._bind(item.optional_vars, changed, tainted)
            return self._body(node.body, tainted)
        if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            after_body = self._body(node.body, set(tainted))
            merged = tainted | after_body
            for handler in node.handlers:
                merged |= self._body(handler.body, set(merged))
            merged |= self._body(node.orelse, set(after_body))
            return self._body(node.finalbody, merged)
        if isinstance(node, ast.Match):
            if self._at(node) and not any(self._at(case.pattern) or any(self._at(s) for s in case.body) for case in node.cases):
                self._check(_names_read(node.subject), tainted, node.lineno, node.subject)
                return tainted
            guard = _names_read(node.subject) & (tainted | self.guards)
            merged = set(tainted).union(*self._guarded(guard, [case.body for case in node.cases], tainted))
            return self._after_guard(guard, node.lineno, [s for case in node.cases for s in case.body], merged)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if self._at(node) and not any(self._at(s) for s in node.body):
                self._check(set(), tainted)
            tainted.discard(node.name)
            return tainted
        # A simple statement.
        reads = _names_read(node)
        if self._at(node):
            self._check(reads, tainted, node.lineno, node)
            return tainted
        shortened = _shortened_calls(node)
        called = self._shortened_at(node.lineno)
        # The object a store goes into is not read for its values: storing into a padded
        # name (``samples[0] = theta`` before its loop) leaves its lengths and keys as they are.
        changed = (
            bool(reads & tainted)
            or bool(_read_beside_stores(node) & self.padded)
            or bool(_selections_by(node, self.grown, ordered=self.ordered, scope=self.scope))
            or called
            or bool(shortened)
        )
        if node.lineno in self.calls and not self.uncut:
            # What a library call shortened here drove (a callback, a scorer) ran fewer rounds
            # (``crane_driven.py``); for a crash about values, its receiver and its arguments
            # too (a model fitted fewer epochs).
            tainted |= _driven_names(node, self.scope)
            if self.values:
                tainted |= _touched([node], self.scope)
        if self.counts and isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            padded_call = node.lineno in self.calls and not called
            if isinstance(target, ast.Name) and not reads & tainted and not shortened and (
                padded_call or _path_root(node.value) in self.padded
            ):
                # A padded history, or a part of a padded value read by attributes and
                # constant keys: the full run's lengths and keys, stand-in values.
                tainted.discard(target.id)
                self.padded.add(target.id)
                return tainted
        if shortened:
            # What such a call did to its arguments may differ too (a list it grew in a loop).
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and _callee_name(call) in shortened:
                    tainted |= self._call_effects(call)
        if self.grown and _read_beside_stores(node) & self.grown:
            # Computed from what a loop grew, it carries those values on: a mask made here
            # selects by them where it is applied (``keep = np.array(scores) > t``).
            self.grown |= _bound_names(node)
        self.ordered -= _bound_names(node) | _handed_over(node)
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind(target, changed, tainted)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._bind(node.target, changed, tainted)
        elif isinstance(node, ast.AugAssign):
            root = _root(node.target)
            if root and root not in self.exempt and (changed or self._in_place(root)):
                tainted.add(root)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                tainted.discard((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    tainted.discard(target.id)
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
                root = _root(call.func.value)
                grows = call.func.attr in _GROWING_METHODS and (self._in_place(root) or changed)
                searched = (
                    self.calls.get(node.lineno, {}).get("kind") in _RECEIVER_CHANGED
                    and not self.keyed and self.counts != "keys" and not self.uncut
                )
                if root and (grows or searched) and root not in self.exempt:
                    tainted.add(root)
        return tainted

    def _guarded(self, guard, bodies, tainted):
        """What each of ``bodies`` leaves, walked as what runs only as the test reading
        ``guard`` decides."""
        self.control.append(guard)
        try:
            return [self._body(body, set(tainted)) for body in bodies]
        finally:
            self.control.pop()

    def _after_guard(self, guard, line, body, tainted):
        """After a test that read changed names: what its branches bind or store depends on it
        (``x = 1`` in one, ``x = 2`` in the other), and so does every statement after it where a
        branch may jump away (``return``, ``continue``, ``break``, ``raise``)."""
        if guard:
            tainted |= _stored_names(body) - self.settled
            if _leaves_frame(body):
                tainted.add(f"<whether the test at line {line} let the path through>")
            elif _jumps(body, (ast.Continue, ast.Break)):
                tainted.add(f"{_ITERATIONS_DECIDED} at line {line}>")
        return tainted

    @staticmethod
    def _left_loop(entry, after, node, exact=frozenset()):
        """What a loop leaves once it ends: the iterations a changed test skipped or ended
        (``_after_guard``) decided what every statement of its body left, but for the shapes
        of what it keeps ``exact`` (an array stored into keeps its shape whichever iterations
        stored; a padded list grows before any ``continue``)."""
        decided = {name for name in after if name.startswith(_ITERATIONS_DECIDED) and name not in entry}
        if decided:
            stored = _stored_names([getattr(node, "target", node.body[0]), *node.body]) - exact
            after = (after - decided) | stored
        return after

    def _call_effects(self, call):
        """The names a call of a notebook function whose run was abridged may leave changed:
        its arguments and its receiver; with ``keyed``, where its definition is known, only the
        arguments given to the parameters it leaves changed, and the globals it does
        (``_function_effects``)."""
        roots = {}
        for position, argument in enumerate(call.args):
            roots[position] = _root(argument)
        for keyword in call.keywords:
            roots[keyword.arg] = _root(keyword.value)
        everything = {root for root in roots.values() if root}
        if isinstance(call.func, ast.Attribute):
            root = _root(call.func.value)
            if root:
                everything.add(root)
        effects = _function_effects(_callee_name(call)) if self.keyed and isinstance(call.func, ast.Name) else None
        if effects is not None and not effects[1]["params"]:
            # It leaves no parameter changed: whatever the arguments, only its globals.
            return set(effects[1].get("globals", ()))
        if effects is None or any(isinstance(a, ast.Starred) for a in call.args) or None in roots:
            return everything
        positional, changed = effects
        left = set(changed.get("globals", ()))
        for key, root in roots.items():
            param = positional[key] if type(key) is int and key < len(positional) else key
            if type(param) is int or param in changed["params"]:
                # An argument beyond the named parameters, or one the function leaves changed.
                if root:
                    left.add(root)
        return left

    def _shortened_at(self, line):
        """A library call the abridged run shortened is on ``line``, and what it returned is
        changed (in ``counts``, a padded one is not: its lengths and keys are the full run's)."""
        call = self.calls.get(line)
        return (
            call is not None and not self.keyed and not self.uncut
            and not (self.counts and (call.get("padded") or self.counts == "keys"))
        )

    def _bind(self, target, changed, tainted):
        if isinstance(target, ast.Name):
            self.fresh.pop(target.id, None)
            if target.id in self.exempt:
                # Rebuilt from itself with the same structure before every iteration
                # (``_counted_exact``): whatever it held, it holds as before.
                return
            if changed:
                tainted.add(target.id)
            else:
                tainted.discard(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._bind(element, changed, tainted)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, changed, tainted)
        else:
            root = _root(target)
            if root in self.exempt:
                return
            if root and (changed or self._in_place(root) or bool(_names_read(target) & tainted)):
                tainted.add(root)

    def _header(self, node, tainted):
        if self._at(node) and self.line < node.body[0].lineno:
            self._check(_names_read(node.iter), tainted, node.lineno, node.iter)
            return True
        return False

    def _iterable_changed(self, node, tainted):
        return bool(_names_read(node.iter) & tainted) or bool(_shortened_calls(node.iter))

    def _for(self, node, tainted):
        if node.lineno not in self.skipped:
            return self._plain_loop(node, tainted)
        if self._header(node, tainted):
            return tainted
        changed = self._iterable_changed(node, tainted)
        loop = _abridgement.loop(self.filename, node.lineno)
        if self.keyed:
            carried = _keyed_stores(
                node.body, _steady(loop) if loop is not None else frozenset(), _own_keys(node, self.scope), self.scope
            )
            settled = _settled_in_first(node, loop)
            carried -= settled
            self.settled_used |= settled
        else:
            carried = _stored_names(node.body)
        if self.values:
            carried |= _touched(node.body, self.scope, loop=loop)
        # What the padding grew has the full run's lengths and keys: after the loop, and in its
        # last iteration where padded before it (``late``: only after it).
        exact = (
            set() if loop is None else _counted_exact(loop) if self.counts else loop.exact() if self.keyed else set()
        )
        late = (loop.late & exact) - tainted if loop is not None else set()
        carried -= exact - late
        inside_body = any(self._at(statement) for statement in node.body)
        exempt = self.exempt
        if self.counts:
            self.exempt = exempt | exact
        elif self.keyed and loop is not None:
            # An array stored into keeps its shape and dtype whatever value is stored (NumPy
            # and torch cast it): storing a changed value changes none of its structure.
            self.exempt = exempt | (loop.arrays & exact)
        self.inside += 1
        fresh, fresh_body, settled_before = self.fresh, self.fresh_body, self.settled
        self.fresh_body = node.body
        if self.keyed:
            self.settled = settled_before | settled
        try:
            first = set(tainted)
            self._iteration(node, changed, first)
            if inside_body and loop is not None and loop.position == 0:
                return self._body(node.body, first)
            quiet, self.quiet = self.quiet, self.quiet or inside_body
            first = self._body(node.body, first)
            self.quiet = quiet
            last = tainted | first | carried
            early = f"<the loop at line {node.lineno} may end before its last iteration>"
            leaves = _leaves_early(node.body)
            if leaves:
                # A real run may break out (or return) before the last item, which the
                # abridged run then ran where the real one never would.
                last.add(early)
            self._iteration(node, changed, last)
            last = self._body(node.body, last)
        finally:
            self.inside -= 1
            self.exempt = exempt
            # What the loop bound is no longer what the enclosing iteration bound afresh.
            stored = _stored_names([node.target, *node.body])
            self.fresh = {name: kind for name, kind in fresh.items() if name not in stored}
            self.fresh_body, self.settled = fresh_body, settled_before
        last = self._left_loop(tainted, last - late, node, exact - late)
        if self.keyed:
            self.grown |= _grown_names(node.body)
            self.ordered |= _grown_names(node.body)
        if leaves and not node.orelse and not _jumps(node.body, (ast.Return,)):
            # A ``break`` leaves for the statements after the loop, which the real run reaches
            # too, whichever iteration it left in: what it finds there differs only in what an
            # iteration binds or stores (its own state, that iteration's values).
            last.discard(early)
            last |= _stored_names([node.target, *node.body])
            if self.values:
                last |= _touched(node.body, self.scope, loop=loop)
        return self._body(node.orelse, last)

    def _iteration(self, node, changed, tainted):
        """An iteration of the abridged loop ``node`` begins: its target is bound, afresh
        where its iterable is unchanged."""
        self.fresh = {}
        self._bind(node.target, changed, tainted)
        if not changed:
            self.fresh = {n.id: "item" for n in ast.walk(node.target) if isinstance(n, ast.Name)}

    def _plain_loop(self, node, tainted):
        if isinstance(node, ast.While):
            if self._at(node) and self.line < node.body[0].lineno:
                self._check(_names_read(node.test), tainted, node.lineno, node.test)
                return tainted
        elif self._header(node, tainted):
            return tainted
        entry = set(tainted)
        for _ in range(3):
            probe = _Dependence(
                self.filename, -1, entry, self.scope, keyed=self.keyed, counts=self.counts, values=self.values
            )
            probe.inside = self.inside
            probe.padded, probe.exempt, probe.guards = self.padded, self.exempt, self.guards
            probe.grown, probe.ordered = self.grown, self.ordered
            if isinstance(node, (ast.For, ast.AsyncFor)):
                probe._bind(node.target, self._iterable_changed(node, entry), entry)
            after = probe._body(node.body, set(entry))
            self.ever |= probe.ever
            if after <= entry:
                break
            entry |= after
        if isinstance(node, (ast.For, ast.AsyncFor)):
            self._bind(node.target, self._iterable_changed(node, entry), entry)
            # Over a tuple or list written out, as many iterations run whatever its values.
            fixed = isinstance(node.iter, (ast.Tuple, ast.List)) and not any(
                isinstance(element, ast.Starred) for element in node.iter.elts
            )
            # Over a dictionary's keys, as many iterations run as it has keys: its structure,
            # which the walk with ``keyed`` or ``counts`` judges, not its values.
            keys = _dict_iterated(node, self.scope) is not None
            guard = set() if fixed else _names_read(node.iter) & (entry if keys else entry | self.guards)
        else:
            guard = _names_read(node.test) & (entry | self.guards)
        (result,) = self._guarded(guard, [node.body], entry)
        if guard:
            # How many iterations run depends on a changed value.
            result |= _stored_names([node.target if isinstance(node, (ast.For, ast.AsyncFor)) else node.test, *node.body])
        return self._body(node.orelse, self._left_loop(tainted, result | entry, node))


def abridged_verdict(exc, cell_tree, changed=()):
    """What the exception says once abridging is accounted for: ``{"certain": bool,
    "depends_on": [...]}``. Every frame of the notebook's code on the traceback, outermost
    first, is judged with the names that reached it changed; ``changed`` are the names whose
    values were not the kernel's before the cell (a replica's stand-ins). An uncertain verdict
    also says, as ``structural``, what the exception is about when it is about structure and
    what it reads depends on how many iterations ran but not on which, or (with ``counts``)
    when it is about lengths, keys or positions and what it reads is exact but for what the
    padding grew: the condition for a second abridgement to make it certain
    (``second_abridgement``)."""
    scheduled = _scheduled_epoch(exc, cell_tree, changed)
    if scheduled is not None:
        return scheduled
    verdict = _judge_frames(exc, cell_tree, changed, keyed=False)
    guards = verdict.pop("ever", ())
    verdict.pop("settled", None)
    innermost = verdict.pop("innermost", None)
    if not verdict["certain"] and not _abridgement.count_keyed:
        step = _search_step(exc, innermost)
        if step is not None:
            return {
                "certain": True,
                "depends_on": [],
                "grounds": (
                    f"It reads {', '.join(verdict['depends_on'])}, which the abridgement changed, but "
                    f"only as the search's best pipeline, whose step {step} raised: no candidate of "
                    f"the search sets a parameter of {step} or of a step before it, and the refit "
                    "fits those steps on the same data whichever candidate wins, so the full run's "
                    "best pipeline transforms the same arguments as the abridged one did."
                ),
            }
        step = _pipeline_step(exc, innermost)
        if step is not None and _fitted_on_exact(innermost, _path_root(innermost.raising.func.value)):
            return {
                "certain": True,
                "depends_on": [],
                "grounds": (
                    f"It reads {', '.join(verdict['depends_on'])}, which the abridgement changed, but "
                    f"only as the pipeline whose step {step} raised: that step and those before it "
                    "are scikit-learn's own, with no rounds to cut and nothing left to chance, and "
                    "were fitted on data the abridgement did not change, so the full run's pipeline "
                    "transforms the same arguments as the abridged one did, whatever the abridgement "
                    "cut in the steps after it."
                ),
            }
        unfinite = _unfinite_argument(exc, innermost)
        if unfinite is not None:
            function, argument = unfinite
            return {
                "certain": True,
                "depends_on": [],
                "grounds": (
                    f"It reads {', '.join(verdict['depends_on'])}, which the abridgement changed, but "
                    f"raised in {function}, and {argument}, given to it, holds them: the abridgement did not "
                    f"change {argument}, so the full run's call is given the same values and refuses "
                    "them too."
                ),
            }
        fitted = _fitted_width(exc, innermost)
        if fitted is not None and _judge_frames(exc, cell_tree, changed, keyed=True, guards=guards)["certain"]:
            root, attributes, searched = fitted
            why = (
                "no candidate of the search sets a parameter of a step before it, and the refit "
                "fits those steps on the same data whichever candidate wins, so the full run's "
                "winner has the same shape there"
                if searched
                else "the abridged fit had the full run's data and settings but for its rounds, "
                "and no step before it has rounds to cut, so the full fit has the same shape there"
            )
            return {
                "certain": True,
                "depends_on": [],
                "grounds": (
                    f"It reads {root}, which the abridgement changed, but only for {attributes}, "
                    "whose shape scikit-learn fixes from the data the estimator was fitted on, "
                    f"whatever its parameters: {why}, and the crash is about lengths or shapes, "
                    "not values."
                ),
            }
        absent = _column_absent(exc, innermost) if set(verdict["depends_on"]) == getattr(innermost, "found", None) else None
        if absent is not None:
            name, columns, sources = absent
            return {
                "certain": True,
                "depends_on": [],
                "grounds": (
                    f"It reads {', '.join(verdict['depends_on'])}, which the abridgement changed, but "
                    f"raised looking up the column {exc.args[0]!r} of {name}, a pandas frame whose "
                    f"columns can only be among {', '.join(repr(c) for c in sorted(columns)) or 'none'}: "
                    f"{'; '.join(sources)}, which no iteration decides, and what was done to it since "
                    f"keeps or drops columns only. Whichever iterations ran, {exc.args[0]!r} is not one "
                    "of them."
                ),
            }
        layer = _layer_lookup(exc, innermost)
        if layer is not None and _judge_frames(exc, cell_tree, changed, keyed=True, guards=guards)["certain"]:
            return {
                "certain": True,
                "depends_on": [],
                "grounds": (
                    f"It reads {', '.join(verdict['depends_on'])}, which the abridgement changed, but only "
                    f"as the torch layer {layer} it calls last: that raised IndexError on its "
                    "arguments, which the abridgement did not change, against the sizes of its "
                    "weights, which training does not change (torch.nn's own layers look up "
                    "indices and targets against shapes, never against the weights' values)."
                ),
            }
    stepped = _steps_counted() if _raised_by_scheduler(exc) else set()
    if stepped and not _abridgement.count_keyed and not any(name.startswith("<") for name in verdict["depends_on"]):
        # Raised by a scheduler the skips stepped (``crane_steps.py``), from its count and its
        # settings: the count is the full run's only if every iteration steps it as the ones
        # that ran did (whatever else the failing statement reads, and unless the path itself
        # may differ: a loop that may end early, a call's result).
        names = ", ".join(sorted(stepped))
        return {
            "certain": False,
            "depends_on": [f"<the steps of {names} counted for the skipped iterations>"],
            "structural": (
                f"the steps {names} takes in each iteration, which both abridged runs measured "
                "the same in every iteration they ran and counted for the ones they skipped, and "
                "the length of its schedule, which its settings decide"
            ),
            "counts": True,
        }
    if not verdict["certain"] and not _abridgement.count_keyed and not _missing_read(exc, verdict["depends_on"]):
        about = structural_kind(exc)
        numbered = numbered_shape_kind(exc) if about is None else None
        if _unseen_kinds():
            # What each iteration makes the same way rests on items alike: one of a kind
            # no item run had (an int among floats) may make another structure.
            about = numbered = None
        counted = counted_kind(exc) if _padded_any() else None
        # A missing key is missing from keys the container was built with: from the code or a
        # library's settings (a history's metric names, a search's results), which the walk
        # with ``keyed`` reads as the full run's, or from the values the loops made (a frame
        # indexed by each iteration's store, a dictionary of names an abridged loop appended),
        # which the skipped iterations would have added to: for a ``KeyError`` the walk reads
        # loops as with ``counts`` (what is computed from what they grew is changed) and
        # shortened library calls' results as their settings made them (``"keys"``).
        walk = {"keyed": False, "counts": "keys"} if isinstance(exc, KeyError) else {"keyed": True}
        if counted is not None and _judge_frames(exc, cell_tree, changed, keyed=False, counts=True, guards=guards)["certain"]:
            # What it reads has the full run's lengths and keys (the padding's).
            verdict["structural"] = about or numbered or counted
            verdict["counts"] = True
        elif (about or numbered) and (keyed := _judge_frames(exc, cell_tree, changed, guards=guards, **walk))["certain"]:
            verdict["structural"] = about or numbered
            if numbered:
                # Shapes given in numbers beside words of counts: the second run's message must
                # be the same to the number.
                verdict["counts"] = True
            read = set(verdict["depends_on"])
            settled = sorted(set(keyed.get("settled", ())) & read)
            if settled:
                verdict["structural"] += (
                    f", and {', '.join(settled)}, assigned under a condition by one statement, was "
                    "assigned by the loop's first iteration, which runs as the real one does: what it "
                    "holds is what that statement makes, whichever iteration ran it last"
                )
    if verdict.get("structural"):
        read = set(verdict["depends_on"])
        steady = sorted(set().union(*((_steady(loop) - loop.arrays) & read for loop in _abridgement.loops.values())))
        if steady:
            verdict["structural"] += (
                f", and {', '.join(steady)}, rebuilt from itself in each iteration, had the same "
                "class, shape and dtype before every iteration the loop ran after the first"
            )
    if verdict["certain"] and _abridgement.left_alone:
        names = ", ".join(sorted(_abridgement.left_alone))
        verdict["grounds"] = (
            f"The failing statement reads nothing the abridgement changed: {names}, which the loop "
            "reads, held at the crash what it held when the loop was first entered, so the "
            "iterations that ran left it alone (the skipped ones are taken to do as they did)."
        )
    return verdict


def _missing_read(exc, names):
    """Whether a changed name the failing statement reads (``names``, in the innermost notebook
    frame) holds a missing value: NaN, ``None``, ``NaT`` in a NumPy array, a pandas frame or
    series (exactly those classes) or a list or tuple; where that cannot be told, ``True``.
    Whether values are missing is a fact about values, not structure: an abridged run that
    scored fewer rows leaves rows a join or a reindex fills with NaN, and pandas and Python
    raise on them in words of types ("Cannot setitem on a Categorical with a new category" when
    filling them, "'<' not supported between instances of 'float' and 'str'" when sorting them)
    that the full run, missing nothing, never raises."""
    frame = None
    for tb in _frames_of(exc):
        filename = tb.tb_frame.f_code.co_filename
        if filename == FILENAME or _is_cell_file(filename):
            frame = tb.tb_frame
    if frame is None:
        return True
    scope = _Scope(frame)
    for name in names:
        if name.startswith("<"):
            continue
        value = scope.get(name)
        if value is _UNKNOWN:
            continue
        missing = _under_guard(_holds_missing, value)
        if missing is not False:
            return True
    return False


def _holds_missing(value):
    kind = type(value)
    if kind in (list, tuple):
        if len(value) > 100_000:
            return True
        # A list of frames a loop accumulated (``parts``): each frame, up to a thousand.
        return any(
            item is None or (type(item) is float and item != item)
            or (position < 1_000 and _data_kind(type(item)) is not None and _holds_missing(item))
            for position, item in enumerate(value)
        )
    data = _data_kind(kind)
    if data not in ("ndarray", "DataFrame", "Series"):
        return False
    pandas = sys.modules.get("pandas")
    if pandas is None:
        # An array without pandas: NaN in floats, None in objects.
        numpy = sys.modules.get("numpy")
        if value.dtype.kind in "fc":
            return bool(numpy.isnan(value).any())
        return value.dtype.kind == "O"
    return bool(pandas.isna(value).to_numpy().any()) if data != "ndarray" else bool(pandas.isna(value).any())


def _copy_call(node):
    """Whether ``node`` makes a full copy: ``x.copy()`` (``deep=True`` at most), ``x.clone()``,
    ``copy.deepcopy(x)``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in ("copy", "clone"):
        deep = all(
            keyword.arg == "deep" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True
            for keyword in node.keywords
        )
        return not node.args and deep
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name == "deepcopy" and len(node.args) == 1 and not node.keywords


def _copies_afresh(value):
    """Whether ``value`` is of a class whose full copy shares no data with what it was made
    from: Python's list, dict and set, and exactly NumPy's array, pandas' frame and series and
    torch's tensor (``_data_kind``; a subclass may copy otherwise)."""
    kind = type(value)
    return kind in (list, dict, set) or _data_kind(kind) in ("ndarray", "DataFrame", "Series", "Tensor")


def _unseen_kinds():
    """Whether an abridged loop skipped an item of a kind (``_item_kind``) that no item it ran
    had."""
    return any(loop.skipped and loop.kinds_drawn - loop.kinds_ran for loop in _abridgement.loops.values())


def _padded_any():
    return any(loop.skipped and _counted_exact(loop) for loop in _abridgement.loops.values()) or any(
        call.get("padded") for call in _abridgement.calls
    )


def _path_root(node):
    """The name ``node`` reads by attributes and constant subscripts only, else ``None``."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Subscript) and not _constant(node.slice):
            return None
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _raising_span(code, offset):
    """The source positions ``(line, end line, column, end column)`` of the instruction at
    ``offset`` of ``code`` (the interpreter's own, as its tracebacks underline them), or
    ``None``."""
    import itertools

    try:
        # One entry per code unit (2 bytes), caches included.
        positions = next(itertools.islice(code.co_positions(), offset // 2, None), None)
    except Exception:
        return None
    return positions if positions is not None and None not in positions else None


def _raising_expression(node, span):
    """The expression of ``node`` (a statement, an expression or a list of them) whose
    positions are ``span``, or ``None``: where a name bound inside the statement (``:=``) could
    carry a value from one part to another, none."""
    if span is None or node is None:
        return None
    parts = node if isinstance(node, list) else [node]
    found = None
    for part in parts:
        for child in ast.walk(part):
            if isinstance(child, ast.NamedExpr):
                return None
            if (
                found is None
                and isinstance(child, ast.expr)
                and (child.lineno, child.end_lineno, child.col_offset, child.end_col_offset) == span
            ):
                found = child
    return found


def _about_values(exc, tree, line):
    """Whether ``exc`` is about values rather than structure: an assertion, arithmetic, a
    message about NaN, convergence, signs, order and the like (``_VALUE_WORDS``), or an
    exception the notebook's own ``raise`` or ``assert`` at ``line`` of ``tree`` raised (a
    check the user wrote on what the code computed)."""
    if isinstance(exc, (AssertionError, ArithmeticError)):
        return True
    try:
        if _words(str(exc)) & _VALUE_WORDS:
            return True
    except BaseException:
        return True
    return tree is not None and any(
        isinstance(node, (ast.Raise, ast.Assert)) and node.lineno <= line <= (node.end_lineno or node.lineno)
        for node in ast.walk(tree)
    )


class _Scope:
    """A frame's names as the code there finds them (locals, globals, builtins)."""

    def __init__(self, frame):
        self.frame = frame

    def get(self, name):
        frame = self.frame
        if name in frame.f_locals:
            return frame.f_locals[name]
        if name in frame.f_globals:
            return frame.f_globals[name]
        return _UNKNOWN

    def items(self):
        """Each name the frame binds, with its value (a local before a global of its name)."""
        seen = set()
        for namespace in (self.frame.f_locals, self.frame.f_globals):
            for name, value in namespace.items():
                if name not in seen:
                    seen.add(name)
                    yield name, value


# Values no iteration or call changes in place: modules, classes, builtin functions; and
# (``_READ_ONLY_VALUES``, by exact type: a subclass may carry attributes) Python's immutable
# values, which a call given one can only read (``fit.forecast(HORIZON)``).
_INERT_KINDS = (types.ModuleType, type, types.BuiltinFunctionType)


def _touched(body, scope, depth=0, loop=None):
    """The names ``body`` reads whose values an iteration may change in place: everything but
    modules, classes, builtins, names not found and, for the body of ``loop``, plain data
    (``_plain_data``) whose content is what it was when the loop was first entered; a notebook
    function it reads adds the global names its code reads (two levels deep). An abridged loop
    ran fewer iterations on them: a model trained fewer steps has its structure, not its
    weights."""
    plain, data = (loop.plain, loop.data) if loop is not None else ({}, {})
    return _touched_names(set().union(*(_names_read(node) for node in body)), scope, depth, plain, data)


def _touched_names(names, scope, depth, plain=None, data=None):
    plain, data = plain or {}, data or {}
    touched = set()
    for name in names:
        value = scope.get(name)
        # By ``type``, not ``isinstance``: a ``__class__`` of the user's is never asked.
        kind = type(value)
        if value is _UNKNOWN or issubclass(kind, _INERT_KINDS) or kind in _READ_ONLY_VALUES:
            continue
        if (name in plain and _plain_copy(value, [_PLAIN_ENTRIES]) == plain[name]) or (
            name in data and data[name][0] is value and _data_print(value) == data[name][1]
        ):
            # Left alone by every iteration that ran (the skipped ones are taken to do as they
            # did): a list of labels handed to a library call each time, the same array, frame
            # or series with the content it had at the loop's first entry (a table the loop
            # only reads rows of).
            _abridgement.left_alone.add(name)
            continue
        if kind is types.FunctionType:
            code = value.__code__
            if depth < 2 and (code.co_filename == FILENAME or _is_cell_file(code.co_filename)):
                touched |= _touched_names(_code_names(code), scope, depth + 1, plain, data)
            continue
        touched.add(name)
    return touched


def _code_names(code):
    """The global names ``code`` and the code nested in it read or bind (not the attribute
    names: ``self.model`` names no global ``model``)."""
    import dis

    names, todo = set(), [code]
    while todo:
        current = todo.pop()
        todo.extend(const for const in current.co_consts if type(const) is types.CodeType)
        names.update(
            instruction.argval
            for instruction in dis.get_instructions(current)
            if instruction.opname in _GLOBAL_OPS
        )
    return names


_GLOBAL_OPS = frozenset(("LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME", "STORE_NAME", "DELETE_NAME"))


# The code names of the comprehensions that run in a frame of their own (a generator
# expression runs later, where it is consumed, so it is not one of them).
_COMPREHENSIONS = frozenset(("<listcomp>", "<dictcomp>", "<setcomp>"))


def _judge_frames(exc, cell_tree, changed, keyed, counts=False, guards=(), start=None, first=frozenset(), uncut=False):
    """``{"certain", "depends_on", "ever"}``: whether the failing statement of each notebook
    frame on the traceback, outermost first, reads what the abridgement changed; ``ever``, per
    frame, every name the walk found changed, which later walks with ``keyed`` or ``counts``
    take as ``guards``. With ``start`` (an entry of the traceback, a notebook function's frame
    a library called), the frames from there on, the first with ``first`` changed. With
    ``uncut``, a library call the abridgement shortened changes nothing by being shortened
    (what it is given still does)."""
    if any(call["filename"] is None for call in _abridgement.calls):
        return {"certain": False, "depends_on": ["<a call shortened outside the notebook's code>"]}
    frames = []
    shortened = None
    for tb in _frames_of(exc) if start is None else _traceback_from(start):
        code = tb.tb_frame.f_code
        if code.co_filename == FILENAME or _is_cell_file(code.co_filename):
            # Before Python 3.12 a comprehension runs in a frame of its own, at once, as part
            # of the statement that holds it: that statement is judged, in its frame.
            if code.co_name not in _COMPREHENSIONS:
                frames.append((code.co_filename, tb.tb_lineno, code, tb.tb_frame, _raising_span(code, tb.tb_lasti)))
        elif code.co_filename == _OWN_FILENAME and frames and shortened is None and code is not _STEP_CODE:
            if not (code is _ROUNDS_CUT_CODE and id(exc) in _full_fit_errors):
                shortened = code.co_name
    if shortened is not None:
        # Raised inside a call the abridged run shortened (a fit, a search, a batch fetched):
        # what raised is the shortened call, which the real run does not make.
        return {"certain": False, "depends_on": [f"<a call the abridged run shortened ({shortened})>"]}
    if not frames:
        return {"certain": False, "depends_on": ["<no frame of the notebook>"]}
    reasons = set()
    ever = []
    settled = set()
    global_taint = set()
    caller_changed = False
    caller = None
    # Whether each call from one notebook frame into the next passed changed values to known
    # parameters only (``_tainted_params``).
    mapped = True
    filename, line = frames[-1][:2]
    values = _about_values(exc, cell_tree if filename == FILENAME else _cell_source(filename), line)
    for index, (filename, line, code, frame, span) in enumerate(frames):
        if filename == FILENAME and code.co_name == "<module>":
            body = cell_tree.body
            tainted = set(changed)
        else:
            tree = cell_tree if filename == FILENAME else _cell_source(filename)
            found = _definition(tree, code) if tree is not None else None
            if found is None:
                return {"certain": False, "depends_on": [f"<source of {code.co_name}>"]}
            body = found.body if type(found.body) is list else [ast.copy_location(ast.Return(found.body), found.body)]
            tainted = set(global_taint) | (set(first) if index == 0 else set())
            if caller_changed:
                given = _tainted_params(caller, found, frame) if caller.found == caller.direct else None
                mapped = mapped and given is not None
                tainted |= given if given is not None else {a.arg for a in ast.walk(found.args) if isinstance(a, ast.arg)}
        callee = frames[index + 1][2].co_name if index + 1 < len(frames) else None
        walk = _Dependence(
            filename,
            line,
            tainted,
            _Scope(frame),
            callee,
            keyed,
            counts,
            values,
            span,
            guards[index] if index < len(guards) else frozenset(),
            uncut,
        )
        depends, names, state = walk.judge(body)
        caller = walk
        settled |= walk.settled_used
        ever.append(walk.ever | state)
        if index == 0:
            global_taint = state if not depends else state | names
        caller_changed = depends
        if depends:
            reasons |= names or {f"<line {line}>"}
    return {
        "certain": not reasons,
        "depends_on": sorted(reasons),
        "ever": ever,
        "settled": settled,
        "innermost": caller if mapped else None,
    }


def _under_guard(function, *arguments):
    """``function(*arguments)`` under the guard against user code; ``None`` where it would run
    code of the user's or fails."""
    try:
        with _guard:
            return function(*arguments)
    except _UserCode:
        _guard.rearm()
    except Exception:
        pass
    return None


def _traceback_from(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _frames_of(exc):
    tb = exc.__traceback__ if exc is not None else None
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _attribute_path(node, scope):
    """The object ``node`` (a name and attributes) reaches, read from instance dictionaries and
    a torch module's ``_modules`` without running code of the user's; ``None`` if not found."""
    if isinstance(node, ast.Name):
        value = scope.get(node.id)
        return None if value is _UNKNOWN else value
    if not isinstance(node, ast.Attribute):
        return None
    owner = _attribute_path(node.value, scope)
    if owner is None:
        return None
    try:
        state = object.__getattribute__(owner, "__dict__")
    except Exception:
        return None
    if type(state) is not dict:
        return None
    modules = state.get("_modules")
    if type(modules) is dict and node.attr in modules:
        return modules[node.attr]
    return state.get(node.attr)


def _tainted_params(caller, definition, frame):
    """The parameters of ``definition`` (running in ``frame``) that the call its caller's walk
    ``caller`` stopped at (its raising expression) passed changed values to, the receiver of a
    method and the module whose ``forward`` torch runs included; a parameter left to its
    default only where that is a constant. ``None`` where the call and the definition do not
    match for certain (a star, a name or an arity that differ, a plain name given that the
    parameter does not hold)."""
    call, changed = caller.raising, caller.direct
    if not isinstance(call, ast.Call) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    arguments = definition.args
    if arguments.vararg or arguments.kwarg or any(keyword.arg is None for keyword in call.keywords):
        return None
    positional = [a.arg for a in arguments.posonlyargs + arguments.args]
    func = call.func
    if isinstance(func, ast.Name) and func.id == definition.name:
        receiver = None
    elif positional and positional[0] == "self" and isinstance(func, ast.Attribute) and func.attr == definition.name:
        receiver = func.value
    elif positional and positional[0] == "self" and definition.name == "forward" and isinstance(func, ast.Name):
        # torch runs a module's ``forward`` from its ``__call__``: the module is ``self``.
        receiver = func
    else:
        return None
    offset = 0 if receiver is None else 1
    if len(call.args) + offset > len(positional):
        return None
    given = {}
    if receiver is not None:
        given[positional[0]] = receiver
    for position, argument in enumerate(call.args):
        given[positional[position + offset]] = argument
    named = set(positional) | {a.arg for a in arguments.kwonlyargs}
    for keyword in call.keywords:
        if keyword.arg not in named or keyword.arg in given:
            return None
        given[keyword.arg] = keyword.value
    defaults = dict(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
    defaults.update((a.arg, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None)
    tainted = set()
    for param in named:
        expression = given.get(param)
        if expression is None:
            if not isinstance(defaults.get(param), ast.Constant):
                tainted.add(param)
        elif _names_read(expression) & changed:
            tainted.add(param)
        if isinstance(expression, ast.Name):
            # The parameter holds what its caller named, unless the mapping is wrong (or the
            # function bound it anew since, which its own walk follows).
            value = caller.scope.get(expression.id)
            if value is _UNKNOWN or (param in frame.f_locals and frame.f_locals[param] is not value and param not in _stored_names(definition.body)):
                return None
    return tainted


# Certainty from a second abridgement.
#
# An abridgement changes how many iterations ran and what is computed from that number (sums,
# lengths of accumulations, counts, a history's entries); it does not change how each iteration
# makes its values (an output's shape and dtype, an object's type and attributes, the keys a
# library builds from its configuration), as long as that does not depend on which iterations
# ran. So a crash is certain when (1) the exception is about such structure: a shape or size
# mismatch between elements, a dtype or type error, a key the code names as a string, a missing
# attribute; never an index, an empty sequence, a length, a number or a name left unbound,
# which are counts (``structural_kind``); (2) what the failing statement reads depends on the
# abridgement only through what every iteration does the same way (``_Dependence`` with
# ``keyed``: nothing stored under a condition or a computed key, no early exit, no Keras
# ``validation_freq``); and (3) a second run in a new fork, abridged otherwise (loops run their
# first two and last iterations, Keras fit 3 epochs of 2 steps, searches the first and last
# candidate on 3 folds), raises the same exception with the same message at the same line. (3)
# checks (1) and (2) empirically: a message that carries a count (a length, a shape holding
# the number of epochs) differs between the two runs. Only a number that says where in a
# sequence the error is (``at entry 1``, ``at entry 2``) may differ (``_positions_masked``).


def _message(exc):
    """``str(exc)``, or ``None`` where that raises (an exception of the user's may)."""
    try:
        return str(exc)
    except BaseException:
        return None


def _words(text):
    return set("".join(c if c.isalnum() else " " for c in text.lower()).split())


def _unquoted_words(text):
    """The words of ``text`` outside its quotes: what is quoted in a message names something (a
    class, ``got an instance of 'Index'``; a column; a key), it says nothing of counts."""
    return _words(_unquoted(text))


def _unquoted(text):
    """``text`` with what it quotes left out (a space in its place)."""
    parts, quote = [], None
    for index, char in enumerate(text):
        before = text[index - 1] if index else " "
        after = text[index + 1] if index + 1 < len(text) else " "
        if quote is None and char in "'\"`" and not before.isalnum():
            # An opening quote, not an apostrophe ("Can't").
            quote = char
        elif quote is not None and char == quote and not after.isalnum():
            quote = None
            parts.append(" ")
        elif quote is None:
            parts.append(char)
    return "".join(parts)


# Words of a message that speak of counts, positions or values rather than structure.
_COUNT_WORDS = frozenset(
    (
        "empty", "length", "lengths", "len", "range", "bounds", "index", "indices", "zero",
        "least", "number", "sample", "samples", "nan", "inf", "finite", "singular",
        "converge", "converged", "count", "counts",
    )
)
_SHAPE_WORDS = frozenset(("shape", "shapes", "size", "sizes", "dimension", "dimensions", "ndim"))
_FEATURE_WORDS = frozenset(("feature", "features"))
_TYPE_WORDS = frozenset(("dtype", "dtypes", "type", "types"))
_GRAD_WORDS = frozenset(("grad", "grad_fn", "requires_grad"))
_KEY_WORDS = frozenset(("key", "keys"))


def structural_kind(exc):
    """What ``exc`` is about, in words for the verdict, when that is structure rather than a
    count; ``None`` otherwise."""
    if exc is None:
        return None
    if _about_axes(exc):
        return "the number of dimensions of an array or tensor, which the shape of each element decides, not the number of iterations"
    if _about_index_type(exc):
        return "the type of an index (integers or booleans, which an array or tensor of another dtype is not), which each iteration makes the same way, whatever their number"
    if not isinstance(exc, KeyError) and isinstance(exc, (LookupError, NameError, ArithmeticError, StopIteration)):
        return None
    message = _message(exc)
    if message is None:
        return None
    words = _unquoted_words(message)
    if isinstance(exc, KeyError):
        key = exc.args[0] if len(exc.args) == 1 else None
        if type(key) is str:
            return f"the key {key!r}, which the code names: the keys a container holds come from the code and the libraries' settings, not from the number of iterations"
        return None
    if isinstance(exc, AttributeError):
        return "an attribute the object lacks, which its type decides, not the number of iterations"
    if isinstance(exc, TypeError) and not words & _VALUE_WORDS:
        # About types whatever words of counts it has: "only integer scalar arrays can be
        # converted to a scalar index", "list indices must be integers or slices, not str".
        return "the types of the values, which each iteration makes the same way, whatever their number"
    if words & _COUNT_WORDS:
        return None
    if not isinstance(exc, (ValueError, RuntimeError)):
        return None
    if words & _GRAD_WORDS:
        return "whether a tensor records its gradient, which the operations that made it decide, not the number of iterations"
    if words & _FEATURE_WORDS:
        return "the features the data has and a model was fitted on, which the data decides, not the number of iterations or rounds"
    if words & _SHAPE_WORDS:
        return "the shapes of the elements (tensors, arrays), which each iteration makes the same way, whatever their number"
    named = any(_is_dtype_name(word) for word in words) and not words & _VALUE_WORDS
    if words & _TYPE_WORDS or named or "mix of" in message.lower():
        return "the types or dtypes of the values, which each iteration makes the same way, whatever their number"
    if words & _KEY_WORDS and not any(char.isdigit() for char in _unquoted(message)):
        # torch's "Missing key(s) in state_dict: "0.weight" ...": keys it quotes, as a
        # ``KeyError`` of a string key names one.
        return "the keys it names, which the code and the libraries' settings decide, not the number of iterations"
    return None


def _is_dtype_name(word):
    """Whether ``word`` (lower case) names a dtype by its width (``int64``, ``float32``,
    ``uint8``, ``complex128``, ``datetime64``): pandas' "You are trying to merge on int64 and
    str columns" speaks of dtypes without the word."""
    for stem in ("uint", "int", "float", "complex", "datetime", "timedelta"):
        if word.startswith(stem):
            width = word[len(stem):]
            return width.isdigit() and int(width) in (8, 16, 32, 64, 128)
    return False


# Words of an ``IndexError`` that speak of the index's type, and those that speak of where it
# points or how many entries there are.
_INDEX_TYPE_WORDS = frozenset(
    ("type", "types", "dtype", "dtypes", "integer", "integers", "boolean", "bool", "long", "int", "byte")
)
_INDEX_COUNT_WORDS = (_COUNT_WORDS - {"index", "indices"}) | _SHAPE_WORDS | frozenset(("axis", "match", "out"))


def _about_index_type(exc):
    """Whether ``exc`` is an ``IndexError`` about the type of the index alone: NumPy's "arrays
    used as indices must be of integer (or boolean) type" and "only integers, slices ... are
    valid indices", torch's "tensors used as indices must be long, int, byte or bool tensors".
    An index of floats is floats however many iterations made it; one out of bounds, of a
    boolean mask of another length or of too many axes speaks of positions or sizes and is not
    this."""
    if type(exc) is not IndexError:
        return False
    message = _message(exc)
    if message is None:
        return False
    words = _unquoted_words(message)
    return bool(words & _INDEX_TYPE_WORDS) and not words & (_INDEX_COUNT_WORDS | _VALUE_WORDS)


def numbered_shape_kind(exc):
    """What ``exc`` is about when its message speaks of shapes and gives them in numbers, beside
    words that may speak of counts (pandas' "Shape of passed values is (6, 3), indices imply
    (5, 3)"): structure only if the numbers do not depend on how many iterations ran, which a
    second run with another count checks by giving the same message to the number. ``None``
    where the message has no shape in numbers; asked only where ``structural_kind`` says
    nothing."""
    if not isinstance(exc, (ValueError, RuntimeError)) or isinstance(exc, (LookupError, ArithmeticError)):
        return None
    message = _message(exc)
    if message is None:
        return None
    words = _unquoted_words(message)
    if not words & _SHAPE_WORDS or words & _VALUE_WORDS or not any(char.isdigit() for char in message):
        return None
    return (
        "the shapes it names, which two runs abridged to other numbers of iterations gave the "
        "same to the number: they do not come from how many iterations ran"
    )


def _about_axes(exc):
    """Whether ``exc`` names an axis its array or tensor lacks: NumPy's ``AxisError`` (a
    ``ValueError`` and an ``IndexError``, "axis 1 is out of bounds for array of dimension 1")
    and torch's ``IndexError`` "Dimension out of range". How many axes an array has is its
    elements' shape plus one per level of nesting: the same whether 2 or 2,000 iterations made
    it, unless one made it empty (``_Dependence`` with ``keyed`` rules out what only some
    iterations store) or the axis is one an iteration count can squeeze (the second run, with
    another count, must raise the same message)."""
    kind = type(exc)
    if kind.__name__ == "AxisError" and kind.__module__.partition(".")[0] == "numpy":
        return True
    if kind is not IndexError:
        return False
    try:
        return str(exc).startswith("Dimension out of range")
    except BaseException:
        return False


# Words of a message that speak of the values themselves: a stand-in the padding added is a
# copy of another entry's value, so what such a message says may be the copy's.
_VALUE_WORDS = frozenset(
    (
        "nan", "inf", "infinity", "finite", "singular", "converge", "converged", "overflow",
        "positive", "negative", "probability", "probabilities", "duplicate", "duplicates",
        "unique", "sorted", "monotonic",
    )
)


def counted_kind(exc):
    """What ``exc`` is about when that is lengths, keys or positions, which a padded
    abridgement keeps as the full run makes them (``_Dependence`` with ``counts``); ``None``
    for values, names left unbound and arithmetic."""
    if exc is None or not isinstance(exc, (LookupError, ValueError, RuntimeError, TypeError)):
        return None
    message = _message(exc)
    if message is None:
        return None
    if _words(message) & _VALUE_WORDS:
        return None
    return (
        "the lengths, keys and positions of what the loops accumulated, which both abridged "
        "runs kept as the full run makes them: each skipped iteration added what it would have "
        "added to the lists and dictionaries the loop grows, with a value copied from an "
        "iteration that ran"
    )


# Words after which a number says where in a sequence (``at entry 15``): a count of the
# iterations before, which two abridgements run differently many of.
_POSITION_WORDS = frozenset(
    ("entry", "entries", "position", "element", "item", "index", "row", "batch", "epoch", "iteration", "step")
)


def _positions_masked(message):
    """``message`` with every number that follows a position word replaced by ``#``."""
    tokens, current = [], ""
    for char in message:
        if char.isalnum() == (current[-1:].isalnum() if current else char.isalnum()):
            current += char
        else:
            tokens.append(current)
            current = char
    tokens.append(current)
    words = list(tokens)
    previous = None
    for index, token in enumerate(tokens):
        if token.isdigit() and previous in _POSITION_WORDS:
            words[index] = "#"
        if token.strip() and token.isalnum():
            previous = token.lower()
    return "".join(words)


def _abridgement_text(described):
    loops = [
        (
            f"the loop at line {loop['line']} ran {loop['ran']} of {loop['of']} iterations"
            if loop["in_cell"]
            else f"the loop in `{loop['function']}` ran {loop['ran']} of {loop['of']} iterations"
        )
        + (
            f", keeping the full run's lengths and keys of {', '.join(loop['padded'])} "
            "(stand-ins for the skipped iterations' values)"
            if loop.get("padded")
            else ""
        )
        + (
            f", keeping the shape of {', '.join(loop['shaped'])} (stored into in place; the skipped "
            "iterations' values missing)"
            if loop.get("shaped")
            else ""
        )
        + (
            f", stepping {', '.join(loop['stepped'])} as the skipped iterations would"
            if loop.get("stepped")
            else ""
        )
        for loop in described.get("loops", [])
    ]
    return "; ".join(loops + [call["what"] for call in described.get("calls", [])])


def second_abridgement(first, left, run_again):
    """``first`` (an abridged run's document) made certain when a second run abridged otherwise
    (``run_again(timeout)``, within the ``left`` seconds of the budget) raises the same
    exception, message and line and both say it is structural (see above); else ``first``
    with the second run's outcome noted."""
    abridged = first.get("abridged")
    if (
        first.get("status") != "completed"
        or first.get("ok") is not False
        or type(abridged) is not dict
        or abridged.get("certain") is not False
        or not abridged.get("structural")
    ):
        return first
    if left < 1.0:
        abridged["second"] = "no time left for a second abridged run"
        return first
    second = run_again(left)
    again = second.get("abridged") if type(second.get("abridged")) is dict else {}
    # A crash about counts (``counted_kind``) rests on the padding's exact lengths and keys: its
    # message must be the same to the number.
    masked = (lambda text: text) if abridged.get("counts") else _positions_masked
    same = (
        second.get("status") == "completed"
        and second.get("ok") is False
        and all(second.get(key) == first.get(key) for key in ("exception", "line"))
        and masked(str(second.get("message"))) == masked(str(first.get("message")))
        and bool(again.get("structural"))
        and not (second.get("seal") or {}).get("attempts")
    )
    if not same:
        if second.get("ok") is False:
            abridged["second"] = f"a second abridged run raised {second.get('exception')}: {second.get('message', '')[:200]}"
        else:
            abridged["second"] = f"a second abridged run ended {second.get('status')}"
        return first
    reads = ", ".join(name for name in abridged.get("depends_on", []) if not name.startswith("<"))
    read = f"It reads {reads}, which the abridgement changed, but the" if reads else "The"
    abridged["confirmed"] = (
        f"{read} same error appeared at the same line in a second run abridged otherwise "
        f"({_abridgement_text(again)}); it is about {abridged['structural']}."
    )
    abridged["depends_on"] = []
    abridged["certain"] = True
    first["second_run_ms"] = second.get("duration_ms")
    return first


# The file crane's own functions run from, whatever name the module was given.
_OWN_FILENAME = abridged_verdict.__code__.co_filename
