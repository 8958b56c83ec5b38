
# crane's replica: judging a cell by execution where the kernel cannot be forked (a started
# TensorFlow runtime, CUDA). Concatenated after ``crane_snapshot.py`` in the dry-run module, so
# the same source is the kernel's module and the replica's:
#
# - in the kernel, ``export(request)`` (called through crane's channel, under the guard) writes
#   what the cell reads into a private directory crane made: each name the cell reads, and those
#   the notebook's functions and classes it uses read, transitively; a value is copied exactly by
#   pickle (library code only: an object whose copy would run code of the user's is declined, and
#   nothing the user bound is called, ``_reduction``) up to a size bound, and above it a large
#   array, frame, series or tensor becomes a stand-in: rows sampled exactly (evenly, first and
#   last, and a row holding each column's first missing value), to be repeated to the real shape.
#   A function or class of the notebook is exported as its definition: the source IPython keeps
#   for its cell, and where in it the definition is. Nothing here changes the kernel: no name, no
#   import, no random state.
# - in the replica, a warm interpreter of the same environment (``serve()``, started by crane
#   beside the kernel, isolated in a directory of its own and importing only from the kernel's
#   library directories, ``_library_path``), each check forks a child (``crane_fork.spawn``) that
#   seals itself like a dry run's, rebuilds the namespace (definitions first, in the cells' own
#   file names so that tracebacks and the abridged run's data-flow check read them as the
#   kernel's), and runs the cell as a dry run does, abridged when asked. A crash whose failing
#   statement reads a stand-in (or what was computed from one) is reported as approximate; one
#   that reads a name the replica could not rebuild decides nothing.

REPLICA_PROTOCOL = 1
# How long a replica's child may take to rebuild the cell's objects before the cell's own time.
REBUILD_TIMEOUT_S = 60.0
# Rows of a stand-in copied exactly.
STANDIN_ROWS = 256
# Above this many elements the rows holding missing values are not looked for.
NAN_SCAN_ELEMENTS = 50_000_000


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
        if type(cls) is type and _all_library(_type_mro(cls)) and _library_callable(reducer)
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
_type_mro = _type_dict["__mro__"].__get__
_type_flags = _type_dict["__flags__"].__get__
_class_dict = _type_dict["__dict__"].__get__
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
        if cls is not _function_type and cls is not type and not _all_library(_type_mro(cls)):
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
        instance = _instance_dict(obj, _type_mro(cls))
        if instance is not None and any(type(key) is str and key in _HOOKS for key in instance):
            raise _Declined(f"a hook of pickle's is set on the {_qualname_of(cls)} object itself")
        return NotImplemented
    return how(obj, cls)


def _class_verdict(cls):
    """``None``: pickle may reduce instances of ``cls``; a function: crane reduces them; a
    string: why they are declined."""
    mro = _type_mro(cls)
    meta = type(cls)
    if meta is not type and not _all_library(_type_mro(meta)):
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
    mro = _type_mro(cls)
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


def export(request):
    """``{"code", "directory", "exact_bytes", "total_bytes", "standin_bytes"}`` to the manifest
    ``{"names": [...], "definitions": [...], "modules": [...], "objects": path}``; see the
    module comment."""
    request = _parse_request(request)
    directory = request.get("directory")
    if type(directory) is not str:
        return _answer({"protocol": REPLICA_PROTOCOL, "status": "failed", "reason": "no directory"})
    shell = _shell()
    namespace = shell.user_ns if shell is not None else {}
    try:
        with _guard:
            names = _cell_names(shell, request.get("code") or "")
    except _UserCode:
        _guard.rearm()
        names = set()
    exporter = _Exporter(namespace, directory, request)
    try:
        exporter.close_over(names)
    finally:
        exporter.stream.close()
    return _answer(exporter.manifest())


def _library_path():
    """The entries of the kernel's import path the replica may import from unsealed: the
    standard library's and site-packages (dist-packages) directories and what lies in them.
    Not '' or the notebook's folder, nor a folder a cell or ``PYTHONPATH`` added: a
    ``token.py`` or ``queue.py`` of the user's there would run in the replica's process, which
    imports modules of those names while it starts. Its sealed child gets the whole path."""
    paths = _guard_sysconfig.get_paths()
    stdlib = [_path["realpath"](paths[key]) + os.sep for key in ("stdlib", "platstdlib") if paths.get(key)]
    here = _path["realpath"](os.getcwd())
    found = []
    for entry in sys.path:
        if type(entry) is not str or not _path["isabs"](entry):
            continue
        real = _path["realpath"](entry)
        parts = real.split(os.sep)
        library = "site-packages" in parts or "dist-packages" in parts or (real + os.sep).startswith(tuple(stdlib))
        if library and real != here and entry not in found:
            found.append(entry)
    return found


def _cell_names(shell, code):
    try:
        source = _transform(shell, code)
    except _UserCode:
        _guard.rearm()
        source = code
    try:
        tree = _ast["parse"](source)
    except (SyntaxError, ValueError):
        return set()
    return _loaded_names(tree)


def _loaded_names(tree):
    return {node.id for node in _walk(tree) if type(node) is ast.Name}


_function_type = types.FunctionType


def _is_notebook_function(value):
    return type(value) is _function_type and _is_cell_file(value.__code__.co_filename)


def _is_notebook_class(value):
    if not issubclass(type(value), type):
        return False
    module = _module_of(value)
    return type(module) is str and module == "__main__"


_DATA_CLASSES = (("numpy", ("ndarray",)), ("pandas", ("DataFrame", "Series")), ("torch", ("Tensor",)), ("torch.nn", ("Parameter",)))


def _data_kind(cls):
    """``"ndarray"``, ``"DataFrame"``, ``"Series"``, ``"Tensor"`` or ``"Parameter"`` for exactly
    these library classes, by identity (a class of the user's may take their names), else
    None: their methods are called to measure and sample them."""
    for module, names in _DATA_CLASSES:
        found = sys.modules.get(module)
        if found is not None and issubclass(type(found), types.ModuleType):
            namespace = _module_dict(found)
            for name in names:
                if namespace.get(name) is cls:
                    return name
    return None


class _Exporter:
    def __init__(self, namespace, directory, request):
        self.namespace = namespace
        self.exact_bytes = _positive(request.get("exact_bytes"), 64 << 20)
        self.total_bytes = _positive(request.get("total_bytes"), 256 << 20)
        self.standin_bytes = _positive(request.get("standin_bytes"), 4 << 30)
        self.path = _path["join"](directory, "objects.pickle")
        self.stream = _Stream(self.path)
        self.copied = 0
        self.names = []
        self.definitions = []
        self.modules = set()
        self.seen = set()

    def close_over(self, names):
        """Export ``names`` and, for the notebook's functions and classes among them, the names
        their definitions read, until none is left."""
        todo = sorted(name for name in names if type(name) is str)
        while todo:
            # Modules and definitions first, then values, plain data before objects: a value
            # the replica fails to rebuild makes those pickled after it in the same stream fail
            # too, and it is models, not arrays, that fail there (a custom Keras object).
            found = []
            for name in todo:
                if name not in self.seen:
                    self.seen.add(name)
                    value = self.namespace.get(name, _absent)
                    if value is not _absent:
                        try:
                            with _guard:
                                rank = _export_rank(value)
                        except _UserCode:
                            _guard.rearm()
                            rank = 2
                        found.append((rank, name, value))
            found.sort(key=lambda entry: (entry[0], entry[1]))
            todo = []
            for _, name, value in found:
                try:
                    with _guard:
                        more = self._export(name, value)
                except _UserCode:
                    _guard.rearm()
                    self._declined(name, "copying it would run code defined in the notebook")
                    more = set()
                except Exception as error:
                    self._declined(name, f"crane could not export it ({type(error).__name__}: {_first_line(error)})")
                    more = set()
                todo.extend(sorted(more - self.seen))

    def manifest(self):
        return {
            "protocol": REPLICA_PROTOCOL,
            "status": "exported",
            "objects": self.path,
            "names": self.names,
            "definitions": self.definitions,
            "modules": sorted(self.modules),
            "python": sys.executable,
            "cwd": os.getcwd(),
            "sys_path": [entry for entry in sys.path if type(entry) is str],
            "library_path": _library_path(),
        }

    def _declined(self, name, why):
        self.names.append({"name": name, "kind": "declined", "why": why})

    def _export(self, name, value):
        """Export one value; the names its definition reads, for a notebook function or class."""
        cls = type(value)
        if issubclass(cls, types.ModuleType):
            module = _module_dict(value).get("__name__")
            if type(module) is not str:
                self._declined(name, "a module without a name")
                return set()
            self.names.append({"name": name, "kind": "module", "module": module})
            self.modules.add(module.split(".")[0])
            return set()
        if _is_notebook_function(value) or _is_notebook_class(value):
            return self._definition(name, value)
        self._note_module(cls)
        size = _known_size(value)
        room = min(self.exact_bytes, self.total_bytes - self.copied)
        if size is not None and size > room:
            return self._standin(name, value, size)
        try:
            offset, length, generation = self.stream.dump(value, room)
        except _TooLarge:
            return self._standin(name, value, size)
        except _UserCode:
            raise
        except _Declined as error:
            self._declined(name, f"copying it would run code defined in the notebook or bound by it: {error}")
            return set()
        except Exception as error:
            self._declined(name, f"it cannot be copied ({type(error).__name__}: {_first_line(error)})")
            return set()
        self.copied += length
        self.names.append({"name": name, "kind": "exact", "offset": offset, "length": length, "generation": generation})
        return set(self.stream.notebook)

    def _note_module(self, cls):
        module = _module_of(cls)
        if type(module) is str and module not in ("builtins", "__main__"):
            self.modules.add(module.split(".")[0])

    def _standin(self, name, value, size):
        if size is not None and size > self.standin_bytes:
            self._declined(name, f"it holds {_megabytes(size)}, more than the replica's budget")
            return set()
        made = _standin_of(value)
        if made is None:
            self._declined(name, f"it is larger than crane copies and no stand-in is made for a {_type_name(type(value))}")
            return set()
        reduced, what = made
        try:
            offset, length, generation = self.stream.dump(reduced, self.exact_bytes)
        except _UserCode:
            raise
        except Exception as error:
            self._declined(name, f"no stand-in could be made ({type(error).__name__}: {_first_line(error)})")
            return set()
        self.names.append(
            {"name": name, "kind": "standin", "offset": offset, "length": length, "generation": generation, "what": what}
        )
        return set()

    def _definition(self, name, value):
        found = _definition_site(value)
        if found is None:
            self._declined(name, "its definition's source is not known")
            return set()
        filename, line, tree, source = found
        node = _definition_at(tree, line, _name_of(value))
        if node is None:
            self._declined(name, "its definition was not found in its cell's source")
            return set()
        if type(value) is _function_type and value.__closure__:
            self._declined(name, "it is a closure over another function's variables")
            return set()
        self.definitions.append({"name": name, "filename": filename, "line": node.lineno, "source": source})
        return _loaded_names(node) - {name}


_PLAIN_TYPES = (int, float, complex, bool, str, bytes, type(None), list, tuple, dict, set, frozenset, range, slice)


def _export_rank(value):
    """0 for modules and the notebook's definitions, 1 for plain values, arrays, frames and
    tensors, 2 for any other object."""
    cls = type(value)
    if issubclass(cls, types.ModuleType) or _is_notebook_function(value) or _is_notebook_class(value):
        return 0
    module = _module_of(cls)
    module = module if type(module) is str else ""
    # By identity: a metaclass's ``__eq__`` is the user's code.
    if any(cls is plain for plain in _PLAIN_TYPES) or module.split(".")[0] in ("numpy", "pandas"):
        return 1
    if module == "torch" and _qualname_of(cls) in ("Tensor", "Parameter"):
        return 1
    return 2


class _StandIn:
    """How a stand-in is rebuilt in the replica: ``kind`` and what it needs, pickled."""

    def __init__(self, kind, sample, shape, extra):
        self.kind = kind
        self.sample = sample
        self.shape = shape
        self.extra = extra


def _standin_of(value):
    """``(stand-in, description)`` for a large array, frame, series or tensor, else None."""
    qualname = _data_kind(type(value))
    if qualname == "ndarray":
        if value.ndim == 0 or value.dtype.hasobject and value.shape[0] == 0:
            return None
        rows = _sample_rows(value.shape[0], _nan_rows_numpy(value))
        sample = value[rows]
        return _StandIn("ndarray", sample, tuple(value.shape), None), _described("array", value.shape, rows)
    if qualname in ("DataFrame", "Series"):
        rows = _sample_rows(len(value), _nan_rows_pandas(value))
        sample = value.iloc[rows]
        index = value.index
        extra = None
        if _qualname_of(type(index)) == "RangeIndex":
            extra = ("range", index.start, index.stop, index.step, index.name)
        return _StandIn(qualname, sample, (len(value),), extra), _described(
            "frame" if qualname == "DataFrame" else "series", (len(value),), rows, exact_index=extra is not None
        )
    if qualname in ("Tensor", "Parameter"):
        if value.dim() == 0 or value.device.type != "cpu":
            return None
        detached = value.detach()
        rows = _sample_rows(detached.shape[0], [])
        sample = detached[rows].clone()
        extra = (bool(value.requires_grad), qualname == "Parameter")
        return _StandIn("tensor", sample, tuple(detached.shape), extra), _described("tensor", tuple(detached.shape), rows)
    return None


def _described(what, shape, rows, exact_index=True):
    text = f"a stand-in {what} of the same shape {tuple(shape)}, dtypes"
    if what in ("frame", "series"):
        text += ", columns" if what == "frame" else ""
        text += " and index" if exact_index else " (its index repeated)"
    return text + f", its values {len(rows)} real rows repeated"


def _sample_rows(length, extra):
    if length <= 0:
        return []
    count = min(length, STANDIN_ROWS)
    if count == 1:
        rows = {0}
    else:
        rows = {round(i * (length - 1) / (count - 1)) for i in range(count)}
    rows.update(row for row in extra if 0 <= row < length)
    return sorted(rows)


def _nan_rows_numpy(array):
    if array.size > NAN_SCAN_ELEMENTS or array.dtype.kind not in "fc" or array.ndim == 0:
        return []
    missing = array != array
    if array.ndim == 1:
        found = missing.nonzero()[0]
        return [int(found[0])] if len(found) else []
    flat = missing.reshape(array.shape[0], -1)
    columns = flat.any(axis=0).nonzero()[0]
    return [int(flat[:, column].argmax()) for column in columns[:STANDIN_ROWS]]


def _nan_rows_pandas(value):
    if value.size > NAN_SCAN_ELEMENTS:
        return []
    missing = value.isna()
    if missing.ndim == 1:
        found = missing.to_numpy().nonzero()[0]
        return [int(found[0])] if len(found) else []
    matrix = missing.to_numpy()
    columns = matrix.any(axis=0).nonzero()[0]
    return [int(matrix[:, column].argmax()) for column in columns[:STANDIN_ROWS]]


def _known_size(value):
    """Bytes of a large array, frame, series or tensor, read from the library (None: unknown)."""
    qualname = _data_kind(type(value))
    try:
        if qualname == "ndarray":
            return int(value.nbytes)
        if qualname in ("DataFrame", "Series"):
            return int(value.memory_usage(deep=False, index=True).sum()) if qualname == "DataFrame" else int(value.memory_usage(deep=False, index=True))
        if qualname in ("Tensor", "Parameter"):
            return int(value.element_size()) * int(value.nelement())
    except _UserCode:
        raise
    except Exception:
        return None
    return None


def _definition_site(value):
    """``(filename, line, tree, source)`` of a notebook function's or class's definition."""
    if type(value) is _function_type:
        code = value.__code__
        candidates = [(code.co_filename, code.co_firstlineno)]
    else:
        candidates = []
        for member in type.__dict__["__dict__"].__get__(value).values():
            if type(member) in (staticmethod, classmethod):
                member = member.__func__
            if type(member) is property:
                member = member.fget
            if type(member) is _function_type and _is_cell_file(member.__code__.co_filename):
                candidates.append((member.__code__.co_filename, member.__code__.co_firstlineno))
    for filename, line in candidates:
        entry = linecache.cache.get(filename)
        if type(entry) is not tuple or len(entry) != 4:
            continue
        source = "".join(entry[2])
        try:
            tree = _ast["parse"](source)
        except (SyntaxError, ValueError):
            continue
        return filename, line, tree, source
    return None


def _definition_at(tree, line, name):
    """The outermost ``def`` or ``class`` named ``name`` at module level of ``tree`` whose lines
    (decorators included) hold ``line``."""
    for node in tree.body:
        if type(node) in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) and node.name == name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if first <= line <= (node.end_lineno or node.lineno):
                return node
    return None


def _name_of(value):
    if type(value) is _function_type:
        return value.__code__.co_name
    return type.__dict__["__name__"].__get__(value)


def _type_name(cls):
    return _join(_module_of(cls), _qualname_of(cls)) or "value"


def _positive(value, default):
    return value if type(value) is int and value > 0 else default


def _megabytes(size):
    return f"{size / 1e6:.1f} MB"


def _first_line(error):
    try:
        text = str(error)
    except Exception:
        return ""
    return text.splitlines()[0][:200] if text else ""


# The replica's side.


def _unpickler(file, namespace):
    """An unpickler that finds the notebook's classes and functions in the replica's namespace."""
    import pickle

    class Unpickler(pickle.Unpickler):
        def find_class(self, module, name):
            if module == "__main__":
                value = namespace[name.split(".")[0]]
                for part in name.split(".")[1:]:
                    value = getattr(value, part)
                return value
            return super().find_class(module, name)

    return Unpickler(file)


def _rebuilt(standin):
    if type(standin) is not _StandIn:
        return standin
    import numpy

    sample, shape = standin.sample, standin.shape
    if standin.kind == "ndarray":
        if len(sample) == 0:
            return numpy.zeros(shape, dtype=sample.dtype)
        return numpy.resize(sample, shape)
    if standin.kind in ("DataFrame", "Series"):
        positions = numpy.resize(numpy.arange(len(sample)), shape[0])
        made = sample.take(positions)
        if standin.extra is not None and standin.extra[0] == "range":
            import pandas

            _, start, stop, step, name = standin.extra
            made.index = pandas.RangeIndex(start, stop, step, name=name)
        return made
    if standin.kind == "tensor":
        import torch

        requires_grad, parameter = standin.extra
        positions = torch.arange(shape[0]) % max(len(sample), 1)
        made = sample[positions] if len(sample) else torch.zeros(shape, dtype=sample.dtype)
        if parameter:
            return torch.nn.Parameter(made, requires_grad=requires_grad)
        return made.requires_grad_(requires_grad) if made.is_floating_point() else made
    raise ValueError(f"unknown stand-in {standin.kind}")


class _Rebuilt:
    """What a replica's child rebuilt, approximated and could not rebuild."""

    def __init__(self):
        self.exact = []
        self.approximated = {}
        self.declined = {}

    def changed(self):
        return set(self.approximated) | set(self.declined)

    def describe(self):
        return {"exact": sorted(self.exact), "approximated": self.approximated, "declined": self.declined}


def _rebuild(shell, manifest):
    """Fill the replica's namespace from the kernel's export: modules, the notebook's
    definitions, the values in the order they were pickled, then the definitions that needed
    a value."""
    namespace = shell.user_ns
    rebuilt = _Rebuilt()
    entries = manifest.get("names") or []
    for entry in entries:
        if entry.get("kind") == "declined":
            rebuilt.declined[entry["name"]] = entry.get("why") or "not exported"
        elif entry.get("kind") == "module":
            try:
                namespace[entry["name"]] = _import_module(entry["module"])
                rebuilt.exact.append(entry["name"])
            except BaseException as error:
                rebuilt.declined[entry["name"]] = f"importing {entry['module']} failed ({type(error).__name__})"
    definitions = list(manifest.get("definitions") or [])
    for definition in definitions:
        filename, source = definition["filename"], definition["source"]
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    pending = _define_all(definitions, namespace, rebuilt)
    values = [entry for entry in entries if entry.get("kind") in ("exact", "standin")]
    if values:
        _load_values(manifest.get("objects"), values, namespace, rebuilt)
    for definition in _define_all(pending, namespace, rebuilt):
        rebuilt.declined[definition["name"]] = "its definition needs a name the replica does not have"
    return rebuilt


def _import_module(name):
    import importlib

    return importlib.import_module(name)


def _load_values(path, entries, namespace, rebuilt):
    """Unpickle the values in the order they were pickled; a value that fails is declined and
    the next starts a new unpickler (so that a reference to what failed fails too, loudly)."""
    unpickler, generation = None, None
    with io.open(path, "rb") as file:
        for entry in entries:
            name = entry["name"]
            if unpickler is None or entry["generation"] != generation:
                file.seek(entry["offset"])
                unpickler, generation = _unpickler(file, namespace), entry["generation"]
            try:
                value = _rebuilt(unpickler.load())
            except BaseException as error:
                unpickler = None
                if type(error) is KeyError:
                    why = f"it needs {error.args[0] if error.args else 'a name'}, which the replica does not have"
                else:
                    why = f"it could not be rebuilt ({type(error).__name__}: {_first_line(error)})"
                rebuilt.declined[name] = why
                continue
            namespace[name] = value
            if entry["kind"] == "standin":
                rebuilt.approximated[name] = entry.get("what") or "a stand-in"
            else:
                rebuilt.exact.append(name)


def _define_all(definitions, namespace, rebuilt):
    """Run the definitions, again while one needs another defined after it; those still
    needing a name are returned."""
    pending = list(definitions)
    while pending:
        left = [definition for definition in pending if not _define(definition, namespace, rebuilt)]
        if len(left) == len(pending):
            return left
        pending = left
    return []


def _define(definition, namespace, rebuilt):
    filename = definition["filename"]
    try:
        tree = compile(definition["source"], filename, "exec", ast.PyCF_ONLY_AST)
        node = _definition_at(tree, definition["line"], definition["name"])
        if node is None:
            rebuilt.declined[definition["name"]] = "its definition was not found"
            return True
        code = compile(ast.Module(body=[node], type_ignores=[]), filename, "exec")
        exec(code, namespace)
    except NameError:
        return False
    except BaseException as error:
        rebuilt.declined[definition["name"]] = f"its definition raised {type(error).__name__}: {_first_line(error)}"
        return True
    rebuilt.exact.append(definition["name"])
    return True


class _ReplicaRun(_DryRun):
    """A replica child's role: seal, rebuild the namespace, run the cell as a dry run does."""

    def __init__(self, code, timeout, address_space, abridged, manifest):
        super().__init__(code, timeout, address_space, True, abridged, beside=False)
        self.alarm_s = timeout + REBUILD_TIMEOUT_S
        self.manifest = manifest
        self.report_fd = None

    def seal(self, own_fds):
        self.report_fd = own_fds[-1]
        super().seal(own_fds)

    def run(self, child):
        state = _seal_state
        modules_before = set(sys.modules)
        attempts_before = len(state.attempts) if state is not None else 0
        started = _perf()
        _enter_kernel_directory(self.manifest)
        rebuilt = _rebuild(child.shell, self.manifest)
        rebuild_ms = (_perf() - started) * 1000.0
        attempts = state.attempts[attempts_before:] if state is not None else []
        if attempts:
            what = attempts[0].get("what") if type(attempts[0]) is dict else None
            return {
                "status": "unsupported",
                "reasons": [f"rebuilding the cell's objects in the replica tried to {what or 'reach outside it'}"],
            }
        # The cell's time starts now: rebuilding (a Keras model, say) is not the cell's.
        _write_all(self.report_fd, READY_LINE)
        report = _execute(child.shell, self.code, self.abridged, changed=rebuilt.changed())
        report["replica"] = rebuilt.describe()
        report["replica"]["rebuild_ms"] = round(rebuild_ms, 3)
        report.update(seal_report())
        report["imported"] = _library_modules(set(sys.modules) - modules_before)
        return report


def _library_modules(names):
    found = []
    for name in sorted(names):
        module = sys.modules.get(name)
        origin = getattr(getattr(module, "__spec__", None), "origin", None)
        if type(origin) is str and _filename_is_library(origin):
            found.append(name)
    return found


def _run_in_child(code, timeout, limit, abridged, manifest, shell):
    role = _ReplicaRun(code, timeout, vm_size() + limit, abridged, manifest)
    return _fork_and_report(role, shell, timeout, limit, ready_within=REBUILD_TIMEOUT_S)


def _enter_kernel_directory(manifest):
    """The kernel's working directory and import path, so that the cell finds its files."""
    directory = manifest.get("cwd")
    if type(directory) is str:
        try:
            os.chdir(directory)
        except OSError:
            pass
    path = manifest.get("sys_path")
    if type(path) is list and all(type(entry) is str for entry in path):
        sys.path[:] = path


# The replica's process.


def serve():
    """The replica: one JSON request per line on stdin, one JSON answer per line on what was
    stdout (libraries that print write to stderr instead); it ends with its input."""
    protocol = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    shell = _replica_shell()
    for line in sys.stdin.buffer:
        request = _parse_request(line.decode("utf-8", "replace"))
        try:
            answer = _serve_one(shell, request)
        except BaseException as error:
            answer = {"status": "failed", "reason": f"{type(error).__name__}: {_first_line(error)}"}
        answer["protocol"] = REPLICA_PROTOCOL
        answer["id"] = request.get("id")
        protocol.write(_json_dumps(answer, ensure_ascii=False, default=str).encode("utf-8", "replace") + b"\n")


def _replica_shell():
    from traitlets.config import Config
    from IPython.core.interactiveshell import InteractiveShell

    import tempfile

    config = Config()
    # The replica keeps no history: the user's history database is the kernel's.
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    # Found once here, where a probe file may be written: a sealed child could not.
    tempfile.gettempdir()
    return shell


def _serve_one(shell, request):
    op = request.get("op")
    if op == "hello":
        return {"status": "ready", "pid": os.getpid(), "python": sys.version.split()[0]}
    if op == "import":
        return _import_libraries(request.get("modules") or [])
    if op == "status":
        return {"status": "ready", "pid": os.getpid(), "rss_bytes": _resident_bytes(), "modules": len(sys.modules)}
    if op == "run":
        return _replica_fork(shell, request)
    return {"status": "failed", "reason": f"unknown request {op!r}"}


def _import_libraries(modules):
    """Import what the kernel imported, library modules only: a module of the user's runs its
    code at import, which happens in a sealed child, never here."""
    import importlib
    import importlib.util

    imported, skipped = [], {}
    for name in modules:
        if type(name) is not str or not name or name in sys.modules:
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = getattr(spec, "origin", None) if spec is not None else None
        if origin not in ("built-in", "frozen") and not (type(origin) is str and _filename_is_library(origin)):
            skipped[name] = "not a library module"
            continue
        try:
            importlib.import_module(name)
            imported.append(name)
        except BaseException as error:
            skipped[name] = f"{type(error).__name__}: {_first_line(error)}"
    return {"status": "ready", "imported": imported, "skipped": skipped}


def _resident_bytes():
    return _proc_field_kb(_read_proc("/proc/self/status"), "VmRSS") * 1024


def _replica_fork(shell, request):
    reasons = unsupported_reasons()
    if reasons:
        return {"status": "unsupported", "reasons": [f"the replica cannot fork: {reason}" for reason in reasons]}
    manifest = request.get("manifest")
    if type(manifest) is not dict:
        return {"status": "failed", "reason": "no manifest"}
    _import_libraries(manifest.get("modules") or [])
    timeout = max(float(request.get("timeout_s") or 30.0), 0.001)
    limit = request.get("memory_limit_bytes")
    if type(limit) is not int or limit <= 0:
        limit = available_memory() // 2
    code = request.get("code") or ""
    abridged = request.get("abridge") is True
    document = _run_in_child(code, timeout, limit, abridged, manifest, shell)
    imported = document.pop("imported", None) or []
    if document.get("seal", {}).get("attempts") and imported:
        # The child imported libraries the replica had not, and the seal blocked something:
        # often the import itself (a cache directory made, a user name looked up), which the
        # kernel did unsealed. Imported here, they are not imported again in the next child.
        _import_libraries(imported)
        document = _run_in_child(code, timeout, limit, abridged, manifest, shell)
        document.pop("imported", None)
        document["warmed"] = imported
    return document
