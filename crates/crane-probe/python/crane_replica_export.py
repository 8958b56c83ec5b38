"""crane's replica, the export in the kernel: what a cell reads, written for the replica to rebuild.

``export(request)`` (called through crane's channel, under the guard) writes into a private
directory crane made each name the cell reads, and those the notebook's functions and classes it
uses read, transitively: a module by its name; a function or class of the notebook as its
definition (the source IPython keeps for its cell, and where in it the definition is); a value
copied exactly by pickle (``crane_replica_pickle.py``) up to a size bound, and above it a large
array, frame, series or tensor as a stand-in (``crane_replica_standin.py``). Modules and
definitions go first, then plain data, then other objects. The manifest it answers with names
each entry and carries the kernel's working directory and import path. Nothing here changes the
kernel: no name, no import, no random state.
"""

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


def _definition_site(value):
    """``(filename, line, tree, source)`` of a notebook function's or class's definition."""
    if type(value) is _function_type:
        code = value.__code__
        candidates = [(code.co_filename, code.co_firstlineno)]
    else:
        candidates = []
        for member in _class_dict(value).values():
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
