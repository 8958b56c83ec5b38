"""crane's replica, the export's exact copies: one pickle stream that calls nothing the user bound.

Every value goes into one file through one pickler (``_Stream``), so that objects two names share
are shared in the replica too. Pickle copies an object through hooks it looks up on it, and a hook
the user bound would run there, even a C or standard-library callable the guard does not stop:
``_reduction`` lets pickle reduce only what the interpreter's and the libraries' own code copies,
reduces an instance of a class of the user's itself, from its memory alone, and declines
(``_Declined``) the rest, with the reason. The export (``crane_replica_export.py``) owns what is
copied; this part owns how.
"""

class _TooLarge(Exception):
    pass


class _Stream:
    """The one file every value is pickled into, by one pickler, so that objects two names
    share are shared in the replica too (pickle's memo). A value that fails is cut off the
    file and the pickler starts afresh: a new ``generation``, whose values the replica loads
    with a new unpickler."""

    __slots__ = ("file", "pickler", "generation", "written", "limit", "notebook", "classes")

    def __init__(self, path):
        self.file = io.open(path, "wb")
        self.pickler = None
        self.generation = 0
        self.written = 0
        self.limit = 0
        # Names of the notebook's classes and functions the last value refers to.
        self.notebook = set()
        # How instances of each class are copied (``_class_verdict``), by id with the class.
        self.classes = {}

    def write(self, data):
        # Protocol 5 hands large buffers over as ``PickleBuffer``s, which have no ``len``.
        self.written += memoryview(data).nbytes
        if self.written > self.limit:
            raise _TooLarge()
        return self.file.write(data)

    def dump(self, value, limit):
        """``(offset, length, generation)`` of ``value`` pickled in at most ``limit`` bytes."""
        start = self.file.tell()
        self.written, self.limit = 0, limit
        self.notebook = set()
        if self.pickler is None:
            self.pickler = _pickler_class()(self, protocol=5)
            self.pickler.stream = self
        try:
            self.pickler.dump(value)
        except BaseException:
            self.file.seek(start)
            self.file.truncate()
            self.pickler = None
            self.generation += 1
            raise
        return start, self.file.tell() - start, self.generation

    def close(self):
        self.file.close()


_pickler_classes = []


def _pickler_class():
    """A pickler that calls nothing the user bound (``_reduction``), and notes the notebook's
    classes and functions a value refers to (pickled by reference, they must be defined in the
    replica)."""
    if not _pickler_classes:
        import copyreg
        import pickle

        class Pickler(pickle.Pickler):
            stream = None

            def reducer_override(self, obj):
                cls = type(obj)
                if _is_notebook_class(cls):
                    self.stream.notebook.add(_qualname_of(cls).split(".")[0])
                elif _is_notebook_class(obj) or _is_notebook_function(obj):
                    self.stream.notebook.add(_name_of(obj))
                return _reduction(obj, cls, self.stream.classes)

        _pickler_classes.append((Pickler, copyreg))
    Pickler, copyreg = _pickler_classes[0]
    # Only the libraries' own entries of copyreg's table: one the user registered is their code.
    Pickler.dispatch_table = {
        cls: reducer
        for cls, reducer in list(copyreg.dispatch_table.items())
        if type(cls) is type and _all_library(_mro_of(cls)) and _library_callable(reducer)
    }
    return Pickler


# What the export's pickler lets pickle do, and what it does itself. Pickle finds how to copy an
# object by looking hooks up on it (``__reduce_ex__``, ``__reduce__``, ``__getstate__``,
# ``__getnewargs__``), and a hook the user bound there runs, even a C or standard-library
# callable the guard does not stop (``functools.partial(os.system, ...)``). So pickle reduces
# an object itself only when every class of its type is the interpreter's or a library's, and
# the hooks it would find (on the classes, not in the instance's dict) are those classes' own
# code. An instance of a class of the user's is reduced here, from its memory alone: the
# state of its dict and slots and of the builtin it derives from (a tuple's items, a list's,
# a dict's), never by a hook of its class; a class of the user's that defines a hook, or that
# derives from a library class with a reduction of its own, is declined.

_HOOKS = frozenset(("__reduce_ex__", "__reduce__", "__getstate__", "__getnewargs_ex__", "__getnewargs__"))
_LOOKUPS = _HOOKS | frozenset(("__getattribute__", "__getattr__"))
_type_flags = _type_dict["__flags__"].__get__
_HEAP_TYPE = 1 << 9
# Members a class gets from C: they act on the object's own fields.
_C_MEMBERS = (
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
)


class _Declined(Exception):
    """Why crane does not copy a value: its copy would call what the user bound."""


def _reduction(obj, cls, classes):
    """``NotImplemented`` (pickle's own reduction, safe here), or the reduction crane made."""
    if cls is _function_type or issubclass(cls, type):
        if cls is not _function_type and cls is not type and not _all_library(_mro_of(cls)):
            raise _Declined(f"the class {_qualname_of(obj)} has a metaclass of the user's")
        _check_reference(obj)
        return NotImplemented
    verdict = classes.get(id(cls))
    if verdict is None or verdict[0] is not cls:
        verdict = classes[id(cls)] = (cls, _class_verdict(cls))
    how = verdict[1]
    if type(how) is str:
        raise _Declined(how)
    if how is None:
        # Pickle's own: the hooks it finds on the classes are theirs; the instance's dict,
        # which it looks in first, must hold none.
        instance = _instance_dict(obj, _mro_of(cls))
        if instance is not None and any(type(key) is str and key in _HOOKS for key in instance):
            raise _Declined(f"a hook of pickle's is set on the {_qualname_of(cls)} object itself")
        return NotImplemented
    return how(obj, cls)


def _class_verdict(cls):
    """``None``: pickle may reduce instances of ``cls``; a function: crane reduces them; a
    string: why they are declined."""
    mro = _mro_of(cls)
    meta = type(cls)
    if meta is not type and not _all_library(_mro_of(meta)):
        return f"its class {_qualname_of(cls)} has a metaclass of the user's"
    if _all_library(mro):
        for name in _LOOKUPS:
            found = _resolve(mro, name)
            if found is not None and not _library_member(*found):
                return f"{_qualname_of(found[0])}.{name} is not the library's own code"
        return None
    library = []
    for klass in mro:
        if _is_library_class(klass):
            library.append(klass)
            continue
        own = _class_dict(klass)
        for name in _HOOKS:
            if name in own and not (name == "__getnewargs__" and _is_namedtuple_hook(own[name])):
                return f"its class {_qualname_of(klass)} defines {name}, which crane does not run"
    for name in _LOOKUPS:
        found = _resolve(library, name)
        if found is not None and not _library_member(*found):
            return f"{_qualname_of(found[0])}.{name} is not the library's own code"
    reduce_ex, reduce = _resolve(library, "__reduce_ex__"), _resolve(library, "__reduce__")
    enum = sys.modules.get("enum")
    if enum is not None and reduce_ex[0] is _module_dict(enum).get("Enum"):
        # A member of an enumeration: found again by its value, as Enum's own reduction does.
        return lambda obj, cls: (cls, (_instance_dict(obj, mro)["_value_"],))
    if reduce_ex[1] is not object.__dict__["__reduce_ex__"]:
        return f"its class derives from {_qualname_of(reduce_ex[0])}, whose own copy crane does not make of a class of the user's"
    if reduce[1] is not object.__dict__["__reduce__"]:
        owner, method = reduce
        if type(method) in _C_MEMBERS and issubclass(owner, BaseException) and not _type_flags(owner) & _HEAP_TYPE:
            # An exception's: its type, its args and its dict, read from the object's fields.
            return lambda obj, cls: method(obj)
        return f"its class derives from {_qualname_of(owner)}, whose own copy crane does not make of a class of the user's"
    return _reduce_from_memory


def _reduce_from_memory(obj, cls):
    """An instance of a class of the user's, as object's reduction would copy it when its
    classes define no hook: made again by ``cls.__new__`` with the arguments of the builtin it
    derives from, its dict and slots as state, a list's items, a dict's."""
    mro = _mro_of(cls)
    args = ()
    if any(_is_namedtuple_hook(_class_dict(klass).get("__getnewargs__")) for klass in mro):
        args = tuple(tuple.__iter__(obj))
    else:
        found = _resolve([klass for klass in mro if _is_library_class(klass)], "__getnewargs__")
        if found is not None:
            if type(found[1]) not in _C_MEMBERS:
                raise _Declined(f"its class derives from {_qualname_of(found[0])}, whose arguments crane does not read")
            args = found[1](obj)
    state = _instance_dict(obj, mro)
    state = dict(state) if state else None
    slots = _slot_values(obj, mro)
    if slots:
        state = (state, slots)
    items = list.__iter__(obj) if issubclass(cls, list) else None
    pairs = iter(dict.items(obj)) if issubclass(cls, dict) else None
    return (_new_instance, (cls, args), state, items, pairs)


def _new_instance(cls, args):
    """In the replica: an instance made as ``copyreg.__newobj__`` makes one."""
    return cls.__new__(cls, *args)


def _instance_dict(obj, mro):
    """The instance's own dict, through the descriptor its classes made for it (``None``:
    it has none); a class that put something else under ``__dict__`` is declined."""
    for klass in mro:
        entry = _class_dict(klass).get("__dict__")
        if entry is None:
            continue
        if not _type_flags(klass) & _HEAP_TYPE and type(entry) in _C_MEMBERS:
            found = entry.__get__(obj)
            return found if type(found) is dict else None
        if type(entry) is not types.GetSetDescriptorType or entry.__objclass__ is not klass:
            raise _Declined(f"its class {_qualname_of(klass)} replaces __dict__")
        return entry.__get__(obj)
    return None


def _slot_values(obj, mro):
    values = {}
    for klass in mro:
        names = _class_dict(klass).get("__slots__")
        if type(names) is str:
            names = (names,)
        if type(names) not in (tuple, list):
            continue
        for name in names:
            if type(name) is not str or name in ("__dict__", "__weakref__"):
                continue
            key = "_" + _qualname_of(klass).rpartition(".")[2].lstrip("_") + name if name.startswith("__") and not name.endswith("__") else name
            entry = _class_dict(klass).get(key)
            if type(entry) is not types.MemberDescriptorType or entry.__objclass__ is not klass:
                raise _Declined(f"its class {_qualname_of(klass)} replaces its slot {name}")
            try:
                values[key] = entry.__get__(obj)
            except AttributeError:
                pass
    return values


def _resolve(mro, name):
    """``(class, member)`` of the first class in ``mro`` whose own dict holds ``name``."""
    for klass in mro:
        own = _class_dict(klass)
        if name in own:
            return klass, own[name]
    return None


def _is_library_class(klass):
    """A class of the interpreter's (made in C) or of a module of the libraries."""
    if not _type_flags(klass) & _HEAP_TYPE:
        return True
    name = _module_of(klass)
    # Cython's shared types (its compiled functions', their metatype) live in a module of
    # their own, which the metatype's dict does not name.
    if (name if type(name) is str else type.__repr__(klass)[len("<class '") :]).startswith("_cython_"):
        return True
    if type(name) is not str:
        return False
    module = sys.modules.get(name)
    return module is not None and issubclass(type(module), types.ModuleType) and _globals_are_library(_module_dict(module))


def _all_library(mro):
    return all(_is_library_class(klass) for klass in mro)


def _library_member(owner, member):
    """Whether ``member``, found in the dict of ``owner`` (a library's class), is that class's
    own code: a C method of it, or a function of the library's defined in its body."""
    if type(member) in (staticmethod, classmethod):
        member = member.__func__
    if type(member) in _C_MEMBERS:
        return member.__objclass__ is owner
    if not (_library_callable(member) or _compiled_function(member)):
        return False
    return member.__qualname__.startswith(_qualname_of(owner) + ".")


def _compiled_function(member):
    """A function of a library compiled by Cython: its type's own C members give its name and
    its module's globals."""
    kind = type(member)
    own = _class_dict(kind)
    if _qualname_of(kind) not in ("cython_function_or_method", "fused_cython_function") or "__getattribute__" in own:
        return False
    for name in ("__qualname__", "__globals__"):
        entry = own.get(name)
        if type(entry) not in _C_MEMBERS or entry.__objclass__ is not kind:
            return False
    namespace = member.__globals__
    return type(namespace) is dict and _globals_are_library(namespace)


def _library_callable(member):
    if type(member) is _function_type:
        return _globals_are_library(member.__globals__) and _filename_is_library(member.__code__.co_filename)
    if type(member) is types.BuiltinFunctionType:
        module = sys.modules.get(member.__module__) if type(member.__module__) is str else None
        return type(module) is types.ModuleType and _globals_are_library(_module_dict(module))
    return type(member) in _C_MEMBERS


_namedtuple_code = []


def _is_namedtuple_hook(member):
    """``collections.namedtuple``'s ``__getnewargs__`` (the same code in every namedtuple)."""
    if type(member) is not _function_type:
        return False
    if not _namedtuple_code:
        import collections

        _namedtuple_code.append(collections.namedtuple("_T", "").__getnewargs__.__code__)
    return member.__code__ is _namedtuple_code[0]


def _check_reference(value):
    """A class or function pickled by reference: pickle looks it up by its module and
    qualified name, where a module of the user's may answer with its own ``__getattr__``; it
    must be found in the module's dict."""
    if type(value) is _function_type:
        module, qualname = value.__module__, value.__qualname__
    else:
        module, qualname = _module_of(value), _qualname_of(value)
    if type(module) is not str or type(qualname) is not str:
        raise _Declined("it refers to a class or function without a name")
    found = sys.modules.get(module)
    if type(found) is types.ModuleType and _globals_are_library(_module_dict(found)):
        return
    parts = qualname.split(".")
    current = _module_dict(found).get(parts[0]) if type(found) is types.ModuleType else None
    for part in parts[1:]:
        current = _class_dict(current).get(part) if current is not None and issubclass(type(current), type) else None
    if current is not value:
        raise _Declined(f"it refers to {module}.{qualname}, which is not found there")
