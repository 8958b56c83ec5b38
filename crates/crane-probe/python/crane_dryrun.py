"""crane's dry run: execute a cell in a copy-on-write fork of the kernel, leave the kernel as it was.

crane injects this module like the probe (through the ``user_expressions`` of a silent execute
request, kept in ``sys.modules`` under a private name) and calls two functions, each answering
with an object whose ``repr`` is one JSON document:

- ``inspect(request)``: the reasons a fork is unsafe in this kernel, and what the names the cell
  calls are bound to (``{"origins": {"rq": "requests"}}``), so that crane can judge side effects;
- ``run(request)``: a fork (``crane_fork.py`` and the files joined after it own it: refusals,
  isolation, limits, wait, kill and reap) whose role runs the cell with the kernel's own IPython
  transformations, in its copy of the user namespace, and reports how it ended
  (``crane_cell_run.py``, which the replica's runs share).

Standard library only. Nothing here prints, binds a user name, imports a library the user has
not imported or runs code the user defined, in the kernel process: ``inspect`` and the checks
before the fork run under the guard of ``crane_guard.py``, which the child leaves before the cell.
"""

PROTOCOL = 1


# What the names a cell calls are bound to.


def _origin(value):
    """Dotted origin of a bound value, read without running user code: a module's name, a
    function's or class's qualified name, or the qualified name of an instance's class."""
    # type() and issubclass() on real classes never run user code; isinstance() may.
    cls = type(value)
    if issubclass(cls, types.ModuleType):
        name = _module_dict(value).get("__name__")
        return name if type(name) is str else None
    if issubclass(cls, type):
        return _join(_module_of(value), _qualname_of(value))
    if cls in (types.FunctionType, types.BuiltinFunctionType):
        return _join(value.__module__, value.__qualname__)
    return _join(_module_of(cls), _qualname_of(cls))


def _imports_in(source):
    """Names bound by the cell's own import statements, to the dotted names they import."""
    try:
        tree = _ast["parse"](source)
    except (SyntaxError, ValueError):
        return {}
    imported = {}
    for node in _walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    imported[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    imported[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    imported[alias.asname or alias.name] = node.module + "." + alias.name
    return imported


def _origins(shell, names, source):
    namespace = shell.user_ns if shell is not None else {}
    builtins_dict = _module_dict(sys.modules["builtins"])
    imported = _imports_in(source)
    origins = {}
    for name in names:
        if type(name) is not str:
            continue
        if name in imported:
            origins[name] = imported[name]
            continue
        value = namespace.get(name, _absent)
        if value is _absent:
            value = builtins_dict.get(name, _absent)
        if value is _absent:
            continue
        try:
            origin = _origin(value)
        except Exception:
            origin = None
        if origin is not None:
            origins[name] = origin
    return origins


def inspect(request):
    """``{"code", "names"}`` to ``{"unsupported": [...], "origins": {...}, "compiles": bool}``."""
    try:
        with _guard:
            return _inspect(request)
    except _UserCode:
        return _answer({"protocol": PROTOCOL, "unsupported": [_USER_CODE_REASON], "origins": {}, "compiles": False})


def _inspect(request):
    request = _parse_request(request)
    code = request.get("code") or ""
    shell = _shell()
    try:
        try:
            source = _transform(shell, code)
        except _UserCode:
            # IPython's transformations met code of the user's (a builtin the user replaced):
            # the cell is judged as written; the child transforms it with the originals.
            _guard.rearm()
            source = code
        compile(source, FILENAME, "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        compiles = True
    except Exception:
        source, compiles = code, False
    return _answer(
        {
            "protocol": PROTOCOL,
            "unsupported": unsupported_reasons(),
            "origins": _origins(shell, request.get("names") or [], source),
            "compiles": compiles,
            "unsealable": sealable(),
        }
    )


# The dry run: a fork whose role runs the cell and reports.


def run(request, cancel_fd=None):
    """Run ``request["code"]`` in a fork; see the module documentation for the answer. With
    ``cancel_fd``, the fork is ended as soon as that descriptor is readable or hung up."""
    request = _parse_request(request)
    try:
        with _guard:
            reasons = unsupported_reasons()
    except _UserCode:
        reasons = [_USER_CODE_REASON]
    if reasons:
        return _answer({"protocol": PROTOCOL, "status": "unsupported", "reasons": reasons})
    code = request.get("code") or ""
    timeout = max(float(request.get("timeout_s") or 30.0), 0.001)
    sealed = request.get("seal") is True
    abridged = request.get("abridge") is True
    beside = request.get("beside") is True
    # Beside the kernel's real run, the fork (the first and the second) shares the processor
    # with it for its first ``full_share_s`` seconds, then gets only the time it leaves idle.
    share = request.get("full_share_s")
    share = float(share) if type(share) in (int, float) and share > 0 else 0.0
    # What the machine and the kernel's memory cgroup can still give, before the fork: the
    # fork's budget, and what a failed allocation is judged against (crane_memory.py). Only a
    # full run beside no real run is judged: an abridged run's sizes may be the abridgement's.
    room = _room()
    limit = request.get("memory_limit_bytes")
    if type(limit) is not int or limit <= 0:
        limit = (room["budget"] if room else available_memory()) // 2
    started = _perf()
    yields_cpu_at = started + share if beside else None
    document = _fork_and_report(
        _DryRun(code, timeout, vm_size() + limit, sealed, abridged, yields_cpu_at), _shell(), timeout, limit,
        cancel_fd=cancel_fd,
    )
    failed = document.pop("failed_request", None)
    if failed is not None and room is not None and not abridged and not beside:
        document["request"] = judged_request(failed, room)
    if abridged:
        # An uncertain crash of a structural kind: a second run, abridged otherwise, in what is
        # left of the budget and at least half of it, so that a first run slowed by a busy
        # machine leaves it time (crane_dependence.py, "Certainty from a second abridgement";
        # ``ABRIDGED_LIMIT`` in the waiters: one and a half budgets in all).
        document = second_abridgement(
            document,
            max(timeout - (_perf() - started), timeout / 2),
            lambda left: _fork_and_report(
                _DryRun(code, left, vm_size() + limit, sealed, "second", yields_cpu_at), _shell(), left, limit,
                cancel_fd=cancel_fd,
            ),
        )
    document["protocol"] = PROTOCOL
    return _answer(document)


def _room():
    try:
        with _guard:
            return memory_room()
    except (_UserCode, Exception):
        return None
