
# crane's observation of values an abridged loop carries from one iteration to the next by
# rebuilding them from themselves (``out, h = gru(xb, h)``, ``ema = 0.9 * ema + 0.1 * x``,
# ``ema += x``). Concatenated after ``crane_steps.py``; ``_pad_mark`` calls
# ``_steady_mark`` before each iteration an abridged loop runs, and ``crane_dependence.py``
# reads ``_Loop.steady``. Runs in the forked child only.
#
# A value rebuilt from its previous value has whatever shape the number of iterations gives it
# (``x = x[1:]``, ``acc = np.concatenate([acc, batch])``), so for a crash about structure the
# walk counts it as changed by the abridgement. Its structure (the class, and for an array or a
# tensor its shape, dtype and device; for a tuple, its entries') is read before every iteration
# the loop runs, and where it was the same before each of them but the first (whose value is
# the name's initial one: ``h = None``, zeros), the first iteration made it what every later
# one found and left as it found it: a hidden state carried from batch to batch keeps its
# batch's rows, whichever batch came before. Such a name is
# ``steady``: an observation, trusted only where a second run abridged otherwise, which reads it
# before three iterations, finds it the same before the last two and raises the same error (the second
# abridgement's rule). Only exact classes whose structure crane reads without running code of
# the user's or a library's Python: NumPy arrays, torch tensors and parameters, and tuples of
# those. Not Python's scalars: a count keeps its class while its value, which a shape or a key
# is often made of, is the abridged run's. A steady value's values still differ: the tests that
# read it are changed (``_Dependence.guards``).


def _steady_names(body):
    """Names a statement of ``body`` binds from their own previous value (``h = h.detach()``,
    ``ema += x``), wherever it is: the names whose structure is observed."""
    names = set()
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                own = {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
                names |= own & _names_read(node.value)
    return names


def _structure(value, depth=0):
    """What a crash about structure reads of ``value``, or ``None`` where crane does not read
    it (any other class)."""
    cls = type(value)
    if cls is tuple and depth < 2 and len(value) <= 16:
        parts = tuple(_structure(part, depth + 1) for part in value)
        return None if None in parts else ("tuple", parts)
    numpy = sys.modules.get("numpy")
    if numpy is not None and cls is getattr(numpy, "ndarray", None):
        return ("ndarray", tuple(value.shape), str(value.dtype))
    torch = sys.modules.get("torch")
    if torch is not None and cls in (getattr(torch, "Tensor", None), getattr(getattr(torch, "nn", None), "Parameter", None)):
        return (cls.__name__, tuple(value.shape), str(value.dtype), str(value.device))
    return None


def _steady_mark(loop, frame):
    """Before an iteration ``loop`` runs: the structure of each name it rebuilds from itself."""
    names = loop.steady_names
    if not names or frame is None:
        return
    for name in names:
        seen = loop.structures.setdefault(name, [])
        try:
            value = _lookup(frame, name)
            seen.append(None if value is _UNKNOWN else _structure(value))
        except Exception:
            seen.append(None)


def _steady(loop):
    """The names ``loop`` rebuilds from themselves whose structure was the same, and known,
    before every iteration it ran after the first (at least one in a first abridged run, two in
    the second): what the name held before the first is its initial value (``h = None``), which
    the first iteration made into what every later one found and left."""
    needed = 2 if _abridgement.second else 1
    return {
        name
        for name, seen in loop.structures.items()
        if len(seen) > needed and seen[1] is not None and all(other == seen[1] for other in seen[1:])
    }
