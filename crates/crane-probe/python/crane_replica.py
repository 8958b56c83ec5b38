"""crane's replica: judging a cell by execution where the kernel cannot be forked (a started
TensorFlow runtime, CUDA). This part owns the replica's process and the run of a cell in it.

The same source is the kernel's dry-run module and the replica's. In the kernel, ``export``
writes what the cell reads into a private directory crane made (``crane_replica_export.py``:
values copied exactly, ``crane_replica_pickle.py``, stand-ins of large data,
``crane_replica_standin.py``, the notebook's definitions). The replica is a warm interpreter of
the same environment, started by crane beside the kernel, isolated in a directory of its own and
importing only from the kernel's library directories (``_library_path``): ``serve()`` answers
crane's requests one line each (``hello``, ``import`` of the kernel's libraries, ``status``,
``run``). For a run it forks a child (``spawn``) that seals itself like a dry run's, rebuilds
the namespace (``crane_replica_rebuild.py``) and runs the cell as a dry run does
(``crane_cell_run.py``), abridged when asked. A crash whose failing statement reads a stand-in
(or what was computed from one) is reported as approximate; one that reads a name the replica
could not rebuild decides nothing.

Joined after the snapshot's files, before the rest of the replica's, in the dry-run module.
"""

REPLICA_PROTOCOL = 1
# How long a replica's child may take to rebuild the cell's objects before the cell's own time.
REBUILD_TIMEOUT_S = 60.0


class _ReplicaRun(_DryRun):
    """A replica child's role: seal, rebuild the namespace, run the cell as a dry run does."""

    def __init__(self, code, timeout, address_space, abridged, manifest):
        super().__init__(code, timeout, address_space, True, abridged)
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
