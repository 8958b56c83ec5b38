"""Arrays that only the notebook's namespace reaches: what lets crane run a held cell's
statement that only reads such data (a slice, an operator) out of order, past statements of
the cell before it that crane does not run (``crane_analysis::out_of_order``). Those statements
can reach the array only through a name they show, so crane checks their names against the
array's, and the array has to be reachable by no other way.

A numpy array is alone when every reference to it, and to the arrays that share its memory
(the array that owns it and the other views of that one bound in the namespace), comes from
the notebook's namespace (IPython's output cache included) or from those arrays' own ``base``:
a reference count says so exactly, with no walk of the heap (numpy arrays are not tracked by
the collector, so a view held by some other object would never be found by looking for
referrers; it is counted). Memory owned by anything but a numpy array or ``bytes`` (a buffer, a
memory map, a tensor) is not alone. Nor is any array when a function, lambda or class the
kernel ran (its input history) names it, or names a way to the namespace (``globals``, ``eval``,
``get_ipython``...): code a skipped statement calls could then reach it without a name the
statement shows. The answer for each alone array is the names bound to the arrays of its
memory: a skipped statement showing any of them keeps the read from running early.
"""

# Names through which code reaches the namespace without naming what it reads there.
_NAMESPACE_WAYS = frozenset({
    "globals", "vars", "locals", "eval", "exec", "compile", "get_ipython", "__main__", "sys",
    "__dict__", "__builtins__", "inspect", "gc", "__import__", "importlib", "setattr", "getattr",
})

# The most arrays sharing one memory that crane counts.
_ALONE_FAMILY = 64


def alone_arrays(shell, namespace, names):
    """``{name: [names bound to its memory's arrays]}`` for the names of ``names`` whose numpy
    arrays only the namespace reaches (the module's documentation)."""
    numpy = sys.modules.get("numpy")
    if numpy is None or not names:
        return {}
    named = _names_in_bodies(shell)
    if named is None or named & _NAMESPACE_WAYS:
        return {}
    caches = [namespace]
    output = dict.get(namespace, "Out", None)
    if type(output) is dict:
        caches.append(output)
    found = {}
    for name in names:
        if type(name) is not str:
            continue
        aliases = _alone_family(namespace, name, numpy, caches)
        if aliases is not None and not named.intersection(aliases):
            found[name] = aliases
    return found


def _alone_family(namespace, name, numpy, caches):
    """The namespace's names of the arrays sharing the memory of the array ``name`` holds,
    when nothing else refers to any of them; ``None`` otherwise."""
    array = dict.get(namespace, name, None)
    if type(array) is not numpy.ndarray:
        return None
    owner = array if array.base is None else array.base
    if type(owner) is bytes:
        # Immutable memory: only the array itself can be written through, and no view of it
        # (a view of read-only memory is read-only).
        owner = array
    elif type(owner) is not numpy.ndarray or owner.base is not None:
        return None
    # The views of the owner bound in the namespace or its output cache: each holds one
    # reference to it, through its ``base``.
    family = {id(owner): owner}
    for cache in caches:
        for value in dict.values(cache):
            if type(value) is numpy.ndarray and value.base is owner:
                family[id(value)] = value
                if len(family) > _ALONE_FAMILY:
                    return None
    owner_id = id(owner)
    held = dict.fromkeys(family, 0)
    names = set()
    for cache in caches:
        for key, value in dict.items(cache):
            if family.get(id(value), _absent) is value:
                held[id(value)] += 1
                if cache is namespace and type(key) is str:
                    names.add(key)
    # Counted with no reference of this function's but ``family``'s own.
    array = owner = value = None
    for key in family:
        expected = held[key] + (len(family) - 1 if key == owner_id else 0)
        if _references(family[key]) - _BASELINE != expected:
            return None
    return sorted(names)


def _references(value):
    return sys.getrefcount(value)


def _baseline():
    # Counted as the family's members are: one reference in a dict, read by subscript.
    held = {0: object()}
    return _references(held[0])


# What ``_references`` counts of an object its caller holds once, in a dict.
_BASELINE = _baseline()


def _names_in_bodies(shell):
    """Every name a function, lambda or class body of the cells the kernel ran shows (the
    bodies' identifiers and attribute names); ``None`` when a cell cannot be read."""
    import ast

    history = getattr(getattr(shell, "history_manager", None), "input_hist_parsed", None)
    if type(history) is not list:
        return None
    named = set()
    for source in history:
        if type(source) is not str or ("def " not in source and "lambda" not in source
                                       and "class " not in source):
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return None
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Name):
                        named.add(inner.id)
                    elif isinstance(inner, ast.Attribute):
                        named.add(inner.attr)
    return named
