"""crane's dry run: execute a cell in a copy-on-write fork of the kernel, leave the kernel as it was.

crane injects this module like the probe (through the ``user_expressions`` of a silent execute
request, kept in ``sys.modules`` under a private name) and calls two functions, each answering
with an object whose ``repr`` is one JSON document:

- ``inspect(request)``: the reasons a fork is unsafe in this kernel, and what the names the cell
  calls are bound to (``{"origins": {"rq": "requests"}}``), so that crane can judge side effects;
- ``run(request)``: a fork (``crane_fork.py``, concatenated before this part, owns it: refusals,
  isolation, limits, wait, kill and reap) whose role runs the cell with the kernel's own IPython
  transformations, in its copy of the user namespace, and reports how it ended.

Standard library only. Nothing here prints, binds a user name, imports a library the user has
not imported or runs code the user defined, in the kernel process: ``inspect`` and the checks
before the fork run under the guard of ``crane_guard.py``, which the child leaves before the cell.
"""

import ast
import errno
import linecache
import sys
import types

PROTOCOL = 1
FILENAME = "<crane-dry-run>"
MAX_TRACEBACK_LINES = 60
MAX_MESSAGE_CHARS = 2_000
# What a child that prepares before its timeout starts writes first (``_fork_and_report``).
READY_LINE = b'{"ready": true}\n'


def _answer(document):
    return _Reply(_json_dumps(document, ensure_ascii=False, default=str))


# What the names a cell calls are bound to.

_type_dict = type.__dict__
_module_of = _type_dict["__module__"].__get__
_qualname_of = _type_dict["__qualname__"].__get__
_module_dict = types.ModuleType.__dict__["__dict__"].__get__
# The functions of ``ast`` the module calls, resolving builtins in crane's snapshot.
_ast = _private_functions(ast)


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


def _join(module, qualname):
    if type(qualname) is not str:
        return None
    if type(module) is not str or module == "builtins":
        return qualname
    return module + "." + qualname


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


def _walk(tree):
    """``ast.walk``'s order (breadth first), without its ``from collections import deque``:
    importing from a package runs importlib's Python code, which finds the kernel's builtins."""
    todo = [tree]
    at = 0
    while at < len(todo):
        node = todo[at]
        at += 1
        todo.extend(_ast["iter_child_nodes"](node))
        yield node


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


_absent = object()


def _shell():
    return _kernel_shell()


def _transform(shell, code):
    return shell.transform_cell(code) if shell is not None else code


def inspect(request):
    """``{"code", "names"}`` to ``{"unsupported": [...], "origins": {...}, "compiles": bool}``."""
    try:
        with _guard:
            return _inspect(request)
    except _UserCode:
        return _answer({"protocol": PROTOCOL, "unsupported": [_USER_CODE_REASON], "origins": {}, "compiles": False})


_USER_CODE_REASON = "judging whether a fork is safe here would run code defined in the notebook"


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


class _DryRun(Role):
    """The child's role: run the cell with the kernel's own IPython transformations, in its
    copy of the user namespace, and report how it ended."""

    def __init__(self, code, timeout, address_space, sealed, abridged, beside):
        self.code = code
        self.alarm_s = timeout
        self.address_space = address_space
        self.sealed = sealed
        self.abridged = abridged
        self.yields_cpu = beside

    def seal(self, own_fds):
        if self.sealed:
            seal_child(own_fds, FILENAME)

    def run(self, child):
        report = _execute(child.shell, self.code, self.abridged)
        report.update(seal_report())
        return report


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
    # What the machine and the kernel's memory cgroup can still give, before the fork: the
    # fork's budget, and what a failed allocation is judged against (crane_memory.py). Only a
    # full run beside no real run is judged: an abridged run's sizes may be the abridgement's.
    room = _room()
    limit = request.get("memory_limit_bytes")
    if type(limit) is not int or limit <= 0:
        limit = (room["budget"] if room else available_memory()) // 2
    started = _perf()
    document = _fork_and_report(
        _DryRun(code, timeout, vm_size() + limit, sealed, abridged, beside), _shell(), timeout, limit, cancel_fd=cancel_fd
    )
    failed = document.pop("failed_request", None)
    if failed is not None and room is not None and not abridged and not beside:
        document["request"] = judged_request(failed, room)
    if abridged:
        # An uncertain crash of a structural kind: a second run, abridged otherwise, in the
        # same budget (crane_dependence.py, "Certainty from a second abridgement").
        document = second_abridgement(
            document,
            timeout - (_perf() - started),
            lambda left: _fork_and_report(
                _DryRun(code, left, vm_size() + limit, sealed, "second", beside), _shell(), left, limit, cancel_fd=cancel_fd
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


def _fork_and_report(role, shell, timeout, limit, ready_within=None, cancel_fd=None):
    """Fork a child playing ``role``, wait for its report until ``timeout`` or the memory
    ``limit``, end it, and describe how it went. With ``ready_within``, the child first says it
    is ready (one line) within that many seconds, and the timeout runs from then."""
    forked = spawn(role, shell)
    if type(forked) is str:
        return {"status": "unsupported", "reasons": [forked]}
    try:
        try:
            started, status = forked.started, None
            if ready_within is not None:
                status = forked.wait(started + ready_within, limit)
                if status == "reported" and forked.result.startswith(READY_LINE):
                    del forked.result[: len(READY_LINE)]
                    started = _perf()
                    status = "reported" if forked.result.endswith(b"\n") else None
            if status is None:
                status = forked.wait(started + timeout, limit, cancel_fd)
        finally:
            forked.end()
        document = _document(forked, status, timeout)
        if getattr(role, "sealed", False) and document.get("signal") == signal.SIGSYS:
            document = _trapped_while_blocked(forked)
        document.update(
            {
                "pid": forked.pid,
                "fork_ms": round(forked.fork_ms, 3),
                "teardown_ms": round(forked.teardown_ms, 3),
                "memory_limit_bytes": limit,
                "stdout_tail": forked.output_tail(),
            }
        )
    finally:
        forked.close()
    return document


def _document(forked, status, timeout):
    if status == "reported":
        report = forked.report()
        if report is not None:
            return report
    if status == "timed_out":
        return {"status": "timed_out", "timeout_ms": round(timeout * 1000.0, 3)}
    if status == "memory_limit":
        return {"status": "memory_limit", "used_bytes": forked.memory_used}
    if status == "cancelled":
        return {"status": "cancelled"}
    return forked.death()


def _trapped_while_blocked(forked):
    """A sealed child killed by SIGSYS made a call the seal traps while it blocked signals
    (``subprocess`` blocks them all around its ``vfork``): Linux then kills rather than runs the
    trap's handler. That is an attempt like any other, whose line is unknown."""
    attempt = {"what": "a system call the seal traps, made with signals blocked (a new process?)", "line": None}
    seal = {"attempts": [attempt], "trapped": 1, "remapped": 0, "landlock_abi": None, "ms": 0.0}
    duration = (_perf() - forked.started) * 1000.0
    return {"status": "completed", "ok": False, "duration_ms": round(duration, 3), "seal": seal}


def _execute(shell, code, abridged=False, changed=None):
    """Run the cell; ``changed``: names whose values are not the kernel's (a replica's
    stand-ins), for the data-flow check of what a crash reads."""
    started = _perf()
    report = {"status": "completed", "ok": True}
    source = code
    offset = 0
    raised = None
    try:
        source = _transform(shell, code)
        offset = _removed_leading_lines(code, source)
        linecache.cache[FILENAME] = (len(source), None, source.splitlines(True), FILENAME)
        if abridged and not _install(source, second=abridged == "second"):
            return {"status": "not_abridgeable"}
        with _UserBuiltins():
            _run_source(shell, source, quiet=code.rstrip().endswith(";"), abridged=abridged)
    except BaseException as exc:
        raised = exc
        if _allocation_failed(exc):
            report["status"] = "memory_limit"
            try:
                report["failed_request"] = failing_request(exc)
            except Exception:
                pass
        report.update(_exception_report(exc, offset))
    finally:
        report["duration_ms"] = round((_perf() - started) * 1000.0, 3)
    if abridged and _abridgement.applied():
        report["abridged"] = _abridged_report(raised, source, offset, changed or ())
    elif changed and raised is not None:
        report["depends_on"] = _verdict(raised, source, changed)["depends_on"]
    return report


def _abridged_report(raised, source, offset, changed):
    described = _abridgement.describe()
    for entry in described["loops"] + described["calls"]:
        if entry["in_cell"]:
            entry["line"] += offset
    if raised is not None:
        described.update(_verdict(raised, source, changed))
    return described


def _verdict(raised, source, changed):
    try:
        tree = compile(source, FILENAME, "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        return abridged_verdict(raised, tree, changed)
    except BaseException as exc:
        return {"certain": False, "depends_on": [f"<the data-flow check failed: {type(exc).__name__}>"]}


def _removed_leading_lines(code, source):
    # IPython drops the cell's leading blank lines; lines are reported in the cell as written.
    removed = len(code.splitlines()) - len(source.splitlines())
    blank = len(code) - len(code.lstrip("\n\r\t "))
    leading = code[:blank].count("\n")
    return max(0, min(removed, leading))


def _run_source(shell, source, quiet, abridged=False):
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = compile(source, FILENAME, "exec", ast.PyCF_ONLY_AST | flags)
    if shell is not None:
        tree = shell.transform_ast(tree)
    if abridged:
        tree = abridge_cell(tree)
    namespace = shell.user_ns if shell is not None else sys.modules["__main__"].__dict__
    global_namespace = shell.user_global_ns if shell is not None else namespace
    body = list(tree.body)
    last = body.pop() if body and isinstance(body[-1], ast.Expr) and not quiet else None
    units = [compile(ast.Module(body=body, type_ignores=[]), FILENAME, "exec", flags)]
    if last is not None:
        units.append(compile(ast.Interactive(body=[last]), FILENAME, "single", flags))
    for unit in units:
        outcome = eval(unit, global_namespace, namespace)
        if unit.co_flags & 0x80:  # CO_COROUTINE: the cell awaits at top level
            _run_coroutine(outcome)


def _run_coroutine(coroutine):
    import asyncio
    import threading

    # The kernel's event loop is running on this thread in the kernel; here it never returns,
    # so the cell gets its own loop on a thread of its own.
    failure = []

    def target():
        try:
            asyncio.run(coroutine)
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


# How native libraries word an allocation the system refused (C's strerror(ENOMEM), C++'s
# std::bad_alloc, CUDA's and allocators' own words), lowercased.
_ALLOCATION_WORDS = ("cannot allocate memory", "can't allocate memory", "bad_alloc", "out of memory",
                     "failed to allocate", "unable to allocate")


def _allocation_failed(exc):
    """Whether ``exc`` (or an exception it came from) reports an allocation the system refused.
    In the fork that may be the fork's own memory limit, which the kernel does not have: such
    a run decides nothing unless ``crane_memory.py`` proves the kernel would fail too."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, MemoryError):
            return True
        if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
            return True
        try:
            text = str(exc).lower()
        except BaseException:
            text = ""
        if any(words in text for words in _ALLOCATION_WORDS):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _exception_report(exc, offset):
    import traceback

    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != FILENAME:
        tb = tb.tb_next
    line = tb.tb_lineno if tb is not None else None
    if line is None and isinstance(exc, SyntaxError) and exc.filename == FILENAME:
        line = exc.lineno
    try:
        lines = traceback.format_exception(type(exc), exc, tb)
        text = "".join(lines).splitlines()
        if len(text) > MAX_TRACEBACK_LINES:
            text = text[: MAX_TRACEBACK_LINES // 2] + ["..."] + text[-MAX_TRACEBACK_LINES // 2 :]
    except BaseException:
        text = []
    try:
        message = str(exc)
    except BaseException:
        message = ""
    return {
        "ok": False,
        "exception": type(exc).__name__,
        "message": message[:MAX_MESSAGE_CHARS],
        "traceback": text,
        "line": line + offset if line is not None else None,
    }
