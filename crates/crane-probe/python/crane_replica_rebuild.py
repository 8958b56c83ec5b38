"""crane's replica, the rebuild in its child: the kernel's export made a namespace again.

In the replica's sealed child, before the cell's own time starts: the kernel's working directory
and import path (``_enter_kernel_directory``), the modules imported, the notebook's definitions
run in their cells' own file names (so that tracebacks and the abridged run's data-flow check read
them as the kernel's), the values unpickled in the order they were pickled (stand-ins rebuilt,
``crane_replica_standin.py``), and what could not be rebuilt recorded with why (``_Rebuilt``).
"""

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
