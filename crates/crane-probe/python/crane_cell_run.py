"""crane's run of a cell in a fork, and its report: what the dry run (``crane_dryrun.py``) and the
replica's runs (``crane_replica.py``) share.

``_DryRun`` is the child's role: seal itself when asked, run the cell with the kernel's own
IPython transformations in its copy of the user namespace, with the user's builtins, abridged
when asked (``crane_abridge.py``), and report how it ended (``_execute``): completed, or the
exception with its line in the cell and its traceback; an allocation refused (a ``MemoryError``,
or a library's words for one) with the request ``crane_memory.py`` judges; for an abridged run's
crash or a replica's stand-ins, what the crash depends on (``crane_dependence.py``).
``_fork_and_report`` forks the child, waits for its report until the timeout or the memory
limit, ends it and describes how it went.
"""

import errno

FILENAME = "<crane-dry-run>"
MAX_TRACEBACK_LINES = 60
MAX_MESSAGE_CHARS = 2_000
# What a child that prepares before its timeout starts writes first (``_fork_and_report``).
READY_LINE = b'{"ready": true}\n'


class _DryRun(Role):
    """The child's role: run the cell with the kernel's own IPython transformations, in its
    copy of the user namespace, and report how it ended."""

    def __init__(self, code, timeout, address_space, sealed, abridged, yields_cpu_at=None):
        self.code = code
        self.alarm_s = timeout
        self.address_space = address_space
        self.sealed = sealed
        self.abridged = abridged
        self.yields_cpu_at = yields_cpu_at

    def seal(self, own_fds):
        if self.sealed:
            seal_child(own_fds, FILENAME)
            install_overlay()

    def run(self, child):
        report = _execute(child.shell, self.code, self.abridged)
        report.update(seal_report())
        return report


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
        overlay_raised(exc)
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
