
# What a shortened library call drives: the objects it was given that it runs or changes once
# per round (a Keras fit's callbacks, a scorer, a function a group apply calls), read by
# ``crane_dependence.py`` after a crash in an abridged run.
#
# A shortened call runs fewer rounds, and so does what it was given to run each round: a
# callback that keeps the best weights from its sixth epoch on keeps none after 2 epochs, a
# scorer that appends each fold's score to a list of the notebook's appended 2 of 5. Their state
# is then the shortened call's, like a loop's carried names, and no second abridgement vouches
# for it (which rounds ran decides it, through code the walk does not see). Deny by default:
# every argument of the call counts as driven but data the call only reads (values of Python's
# immutable types, arrays, frames, series, tensors, datasets) and estimators scikit-learn
# clones before it fits them (its rule for every function that takes one). What is driven
# counts as changed under every name the frame binds to it (a callback listed beside its own
# name), and so do the global names the notebook's own code among it reads (its class's
# methods, a function it holds): the list a callback appends to.


def _driven_names(statement, scope):
    """The names that hold what a shortened call on ``statement`` drove, or what the
    notebook's code it drove reads, in the frame ``scope`` (a ``_Scope``)."""
    driven = []
    for call in ast.walk(statement):
        if not isinstance(call, ast.Call):
            continue
        for argument in [*call.args, *(keyword.value for keyword in call.keywords)]:
            for name in _names_read(argument):
                value = scope.get(name)
                if value is _UNKNOWN or _only_read(value):
                    continue
                driven.append(value)
                if type(value) in (list, tuple):
                    driven.extend(item for item in value if not _only_read(item))
    if not driven:
        return set()
    ids = {id(value) for value in driven}
    names = {name for name, value in scope.items() if id(value) in ids}
    code = set()
    for value in driven:
        for function in _functions_driven(value):
            code |= _code_names(function.__code__)
    return names | _touched_names(code, scope, 1)


def _functions_driven(value):
    """The notebook's functions ``value`` is or holds (in its own attributes, one level), and
    the methods its class and the classes it derives from define in the notebook, found
    without running any code of the value's."""
    import gc

    kind = type(value)
    if kind is types.FunctionType:
        candidates = [value]
    else:
        # Its attributes (the instance's dict, as the interpreter refers to it) and the
        # namespaces of its classes (``type``'s own descriptors: neither is asked).
        holders = [holder for holder in gc.get_referents(value) if type(holder) is dict]
        holders += [_class_dict(cls) for cls in _mro_of(kind)]
        candidates = [candidate for holder in holders for candidate in holder.values()]
    return [
        candidate
        for candidate in candidates
        if type(candidate) is types.FunctionType
        and (candidate.__code__.co_filename == FILENAME or _is_cell_file(candidate.__code__.co_filename))
    ]


_READ_ONLY_VALUES = frozenset((int, float, complex, bool, str, bytes, type(None), range, frozenset))

# Classes of data a training or search call reads and never changes: (module, class), the
# class taken from the module only where it is loaded (a kernel without pandas has no frame).
_READ_ONLY_DATA = (
    ("numpy", "ndarray"),
    ("numpy", "generic"),
    ("pandas", "DataFrame"),
    ("pandas", "Series"),
    ("pandas", "Index"),
    ("torch", "Tensor"),
    ("tensorflow", "Tensor"),
    ("tensorflow.python.data.ops.dataset_ops", "DatasetV2"),
)


def _only_read(value, depth=0):
    """Whether ``value`` is data a shortened call only reads (a tuple or list of it too)."""
    kind = type(value)
    if kind in _READ_ONLY_VALUES or issubclass(kind, _INERT_KINDS):
        return True
    if kind is tuple or kind is list:
        # A list of column names is data too; one holding a callback is not.
        return depth < 2 and all(_only_read(item, depth + 1) for item in value)
    # The class's own method resolution order, read without asking the class (no virtual
    # subclasses, no ``__subclasscheck__``).
    mro = _mro_of(kind)
    for module_name, class_name in (*_READ_ONLY_DATA, ("sklearn.base", "BaseEstimator")):
        module = sys.modules.get(module_name)
        cls = getattr(module, class_name, None) if module is not None else None
        if cls is not None and any(base is cls for base in mro):
            return True
    return False
