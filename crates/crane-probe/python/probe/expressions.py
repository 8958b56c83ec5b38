# Evaluating the expressions a cell reads (names, attributes, constant subscripts), one safe step
# at a time: no user code, no copy larger than the probe may allocate.


def _constant(node):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _constant(node.operand)
        if _type_in(value, (int, float, complex)):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Tuple):
        return tuple(_constant(e) for e in node.elts)
    if isinstance(node, ast.List):
        return [_constant(e) for e in node.elts]
    if isinstance(node, ast.Slice):
        return slice(
            _constant(node.lower) if node.lower is not None else None,
            _constant(node.upper) if node.upper is not None else None,
            _constant(node.step) if node.step is not None else None,
        )
    raise _Refused("subscript is not a constant")


_NEVER_SUBSCRIPTED = frozenset(("dataset", "dataloader", "keras_iterator", "tf_dataset"))

# Library properties that copy or render whole objects, or import modules.
_COSTLY_ATTRIBUTES = {
    ("pandas", "DataFrame"): frozenset(("values", "T", "_values", "style", "plot")),
    ("pandas", "Series"): frozenset(("style", "plot")),
}


def _absent_attribute(obj):
    return {
        "type": "",
        "kind": "absent",
        "S": {},
        "R": {"owner_type": _qualified(type(obj))},
        "V": {},
    }


def _attribute(obj, name):
    cls = type(obj)
    if _inherits(cls, types.ModuleType):
        namespace = _module_dict(obj)
        if name in namespace:
            return namespace[name]
        module_name = namespace.get("__name__")
        if type(module_name) is str and module_name + "." + name in sys.modules:
            return sys.modules[module_name + "." + name]
        if "__getattr__" in namespace or type(obj) is not types.ModuleType:
            raise _Refused("module attribute would be resolved lazily (may import)", obj)
        raise _Absent(_absent_attribute(obj))
    if _is_library_class(cls) and not _inherits(cls, type):
        for key in _class_names(cls):
            if name in _COSTLY_ATTRIBUTES.get(key, ()):
                raise _Refused("not evaluated: library property that copies or imports", obj)
        try:
            static = _inspect["getattr_static"](obj, name)
        except AttributeError:
            static = _MISSING
        dynamic = _dynamic_lookup(cls)
        if static is _MISSING and not dynamic:
            raise _Absent(_absent_attribute(obj))
        fired = _guard.fired
        try:
            return getattr(obj, name)
        except AttributeError:
            # The library's own lookup ran and failed, as it will in the cell; unless it
            # failed because the guard stopped code of the user's inside it.
            if dynamic and _guard.fired != fired:
                _guard.rearm()
                raise _Refused("not evaluated: the class looks attributes up dynamically", obj)
            raise _Absent(_absent_attribute(obj))
        except Exception as exc:
            raise _Raised(exc, obj)
    try:
        static = _inspect["getattr_static"](obj, name)
    except AttributeError:
        static = _MISSING
    except Exception:
        raise _Refused("attribute lookup would run user code", obj)
    if static is _MISSING:
        owner, _ = _lookup(cls, "__getattr__")
        if owner is None and _dynamic_lookup(cls):
            raise _Refused("not evaluated: the class looks attributes up dynamically", obj)
        if owner is not None and not _is_library_class(owner):
            raise _Refused("not evaluated: user-defined __getattr__", obj)
        if owner is not None:
            value = _static_get(obj, name, _MISSING)
            if value is not _MISSING:
                return value
        raise _Absent(_absent_attribute(obj))
    if _inherits(cls, type):
        return _class_attribute(obj, name, static)
    value = _static_get(obj, name, _MISSING)
    if value is _MISSING:
        raise _Refused("not evaluated: user-defined property or descriptor", obj)
    return value


def _class_attribute(cls, name, static):
    if _type_in(static, (types.FunctionType, property)) or not _lookup(type(static), "__get__")[0]:
        return static
    if type(static) is staticmethod:
        return static.__func__
    if type(static) is classmethod:
        return types.MethodType(static.__func__, cls)
    if _is_library_class(cls) or _type_in(static, _SAFE_DESCRIPTOR_TYPES):
        try:
            return getattr(cls, name)
        except AttributeError:
            raise _Absent(_absent_attribute(cls))
        except Exception as exc:
            raise _Raised(exc, cls)
    raise _Refused("not evaluated: user-defined descriptor", cls)


def _subscript(obj, key):
    cls = type(obj)
    if _inherits(cls, type):
        raise _Refused("not evaluated: subscript of a class", obj)
    if not _is_library_class(cls):
        raise _Refused("not evaluated: user-defined __getitem__", obj)
    if _kind_of(obj) in _NEVER_SUBSCRIPTED:
        raise _Refused("not evaluated: would load data from a dataset or loader", obj)
    try:
        copied = _copy_bytes(obj, key)
    except Exception:
        copied = 0
    if copied > MAX_COPY_BYTES:
        raise _Refused(f"not evaluated: the selection would copy about {copied >> 20} MiB", obj)
    if _lookup(cls, "__missing__")[0] is not None:
        try:
            present = dict.__contains__(obj, key)
        except TypeError as exc:
            raise _Raised(exc, obj)
        if not present:
            raise _Refused("key absent; the mapping creates missing keys", obj)
        return dict.__getitem__(obj, key)
    try:
        return obj[key]
    except (KeyError, IndexError):
        raise _Absent(
            {
                "type": "",
                "kind": "absent",
                "S": {},
                "R": {"key": _key_label(key), "owner_type": _qualified(cls)},
                "V": {},
            }
        )
    except Exception as exc:
        raise _Raised(exc, obj)


_PANDAS_INDEXERS = frozenset(("pandas.core.indexing._LocIndexer", "pandas.core.indexing._iLocIndexer"))


def _copy_bytes(obj, key):
    """The bytes ``obj[key]`` copies, for the containers whose subscripts can copy whole
    columns of data: numpy arrays and torch tensors (advanced indexing; exact but for repeated
    positions), pandas frames and their ``loc``/``iloc`` indexers (lists of labels or positions,
    unless pandas copies on write; 8 bytes an element, an estimate read from the shape alone,
    since a frame's dtypes cost a scan of its columns). 0 for a view, or for any other
    container."""
    kind = _kind_of(obj)
    if kind in ("ndarray", "tensor"):
        return _advanced_indexing_bytes(obj, key)
    if kind == "dataframe":
        if type(key) is not list or _copy_on_write():
            return 0
        return (_safe_len(obj) or 0) * len(key) * 8
    if _qualified(type(obj)) not in _PANDAS_INDEXERS:
        return 0
    frame = _static_get(obj, "obj")
    if _kind_of(frame) != "dataframe" or _copy_on_write():
        return 0
    rows_key, columns_key = key if type(key) is tuple and len(key) == 2 else (key, slice(None))
    if type(rows_key) is not list and type(columns_key) is not list:
        return 0
    shape = _shape_list(frame.shape) or [0, 0]

    def selected(part, n):
        if type(part) is list:
            return len(part)
        return (n or 0) if type(part) is slice else 1

    return selected(rows_key, shape[0]) * selected(columns_key, shape[1]) * 8


def _advanced_indexing_bytes(array, key):
    parts = list(key) if type(key) is tuple else [key]
    if not any(type(part) is list for part in parts):
        return 0
    shape = _shape_list(array.shape)
    if shape is None or any(n is None for n in shape):
        return 0
    itemsize = array.element_size() if _kind_of(array) == "tensor" else array.itemsize
    if Ellipsis in parts:
        # The axes an ellipsis stands for are whole.
        at = parts.index(Ellipsis)
        indexing = len([part for part in parts if part is not None and part is not Ellipsis])
        parts[at : at + 1] = [slice(None)] * max(len(shape) - indexing, 0)
    size, axis = 1, 0
    for part in parts:
        if part is None:
            continue
        if axis >= len(shape):
            break
        if type(part) is list:
            size *= len(part)
        elif type(part) is slice:
            try:
                size *= len(range(*part.indices(shape[axis])))
            except TypeError:
                size *= shape[axis]
        axis += 1
    for n in shape[axis:]:
        size *= n
    return size * itemsize


def _copy_on_write():
    """pandas returns views for selections and copies only on a later write (pandas 3, or the
    option set in pandas 2)."""
    pd = _pandas()
    if pd is None:
        return False
    version = _module_dict(pd).get("__version__")
    if type(version) is str and version.split(".")[0].isdigit() and int(version.split(".")[0]) >= 3:
        return True
    try:
        return pd.options.mode.copy_on_write is True
    except Exception:
        return False


def _key_label(key):
    if type(key) is list:
        return [_key_label(k) for k in key[:MAX_NAMES]]
    if type(key) is slice:
        return repr(key)
    if type(key) is tuple:
        return _label(key, limit=MAX_STR)
    value = _scalar_json(key, limit=MAX_STR)
    return value if value is not _NO_JSON else repr(key)


def _evaluate(node, namespace, memo=None):
    """The object `node` denotes, evaluated from its root name outwards one step at a time
    (iteratively: a chain thousands of attributes deep is valid Python). `memo` keeps the
    subscripts already evaluated in one request (`df[['a', 'b']]` and `df[['a', 'b']].mean`
    select the columns once)."""
    steps = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        steps.append(node)
        node = node.value
    if not isinstance(node, ast.Name):
        raise _Refused("not a name, attribute chain or constant subscript")
    if node.id in namespace:
        value = namespace[node.id]
    elif node.id in builtins.__dict__:
        value = builtins.__dict__[node.id]
    else:
        raise _Missing(node.id)
    for step in reversed(steps):
        if isinstance(step, ast.Attribute):
            value = _attribute(value, step.attr)
            continue
        key = _ast["dump"](step) if memo is not None and len(steps) < 64 else None
        if key is not None and key in memo:
            value = memo[key]
            continue
        value = _subscript(value, _constant(step.slice))
        if key is not None:
            memo[key] = value
    return value


def _parse_expression(expression):
    """The AST of an expression, or None. CPython builds ASTs recursively and gives up on a
    chain about a thousand attributes deep, which is still valid Python: a plain dotted chain
    is then built here, one attribute at a time."""
    text = expression.strip()
    try:
        return _ast["parse"](text, mode="eval").body
    except (RecursionError, MemoryError):
        pass
    except (SyntaxError, ValueError):
        return None
    parts = text.split(".")
    if not all(part.isidentifier() for part in parts):
        return None
    node = ast.Name(id=parts[0], ctx=ast.Load())
    for part in parts[1:]:
        node = ast.Attribute(value=node, attr=part, ctx=ast.Load())
    return node


def _user_namespace():
    shell = _kernel_shell()
    if shell is not None:
        namespace = _instance_dict(shell).get("user_ns")
        if type(namespace) is not dict:
            namespace = _get(shell, "user_ns")
        if type(namespace) is dict:
            return namespace
    main = sys.modules.get("__main__")
    return _module_dict(main) if _is_a(main, types.ModuleType) else {}
