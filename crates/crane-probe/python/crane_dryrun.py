"""crane's dry run: execute a cell in a copy-on-write fork of the kernel, leave the kernel as it was.

crane injects this module like the probe (through the ``user_expressions`` of a silent execute
request, kept in ``sys.modules`` under a private name) and calls two functions, each answering
with an object whose ``repr`` is one JSON document:

- ``inspect(request)``: the reasons a fork is unsafe in this kernel, and what the names the cell
  calls are bound to (``{"origins": {"rq": "requests"}}``), so that crane can judge side effects;
- ``run(request)``: fork; the child detaches from the kernel's messaging (no ZeroMQ socket is
  used: streams, file descriptors 1 and 2, the display publisher, the display hook and the IOPub
  thread all point at a pipe the parent reads), applies the limits and runs the cell with the
  kernel's own IPython transformations, in its copy of the user namespace; it reports through a
  second pipe and ends with ``os._exit``. The parent waits no longer than the timeout, kills the
  child's process group (the child and everything it started), always reaps it, and returns.

Standard library only. Nothing here prints, binds a user name, imports a library the user has
not imported or runs code the user defined, in the kernel process: ``inspect`` and the checks
before the fork run under the guard of ``crane_guard.py``, which the child never inherits.
"""

import ast
import gc
import io
import json
import linecache
import math
import os
import select
import signal
import sys
import time
import types
import warnings

PROTOCOL = 1
FILENAME = "<crane-dry-run>"
TAIL_BYTES = 8_000
MAX_TRACEBACK_LINES = 60
MAX_MESSAGE_CHARS = 2_000
# How often the parent measures the memory the child has made its own (copied or new pages).
MEMORY_POLL_SECONDS = 0.1
# The child's own alarm, a second line of defence should the parent vanish.
ALARM_MARGIN_SECONDS = 2
# Exit status of a child that failed before it could report (never a user cell's outcome).
CHILD_FAILED = 70

_perf = time.perf_counter


class _Reply:
    """The answer: its repr is the JSON document, so that the kernel returns it as text."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _answer(document):
    return _Reply(json.dumps(document, ensure_ascii=False, separators=(",", ":"), default=str))


def _parse_request(request):
    try:
        parsed = json.loads(request) if type(request) is str else request
    except ValueError:
        parsed = None
    return parsed if type(parsed) is dict else {}


# Safety checks.


def unsupported_reasons():
    """Why forking this kernel is unsafe: each reason is one sentence, empty when it is safe."""
    reasons = []
    if sys.platform == "win32" or not hasattr(os, "fork"):
        return [f"this platform ({sys.platform}) has no fork"]
    reasons.extend(_cuda_reasons())
    reasons.extend(_native_runtime_reasons())
    reasons.extend(_shared_worker_reasons())
    return reasons


def _cuda_reasons():
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    is_initialized = getattr(cuda, "is_initialized", None)
    try:
        if is_initialized is not None and is_initialized():
            return ["CUDA is initialised in the kernel (torch): a forked process cannot use it"]
    except Exception:
        pass
    return []


def _native_runtime_reasons():
    reasons = []
    context = sys.modules.get("tensorflow.python.eager.context")
    ctx = getattr(context, "_context", None) if context is not None else None
    if ctx is not None and getattr(ctx, "_context_handle", None) is not None:
        devices = getattr(ctx, "_physical_devices", None) or []
        if any(getattr(device, "device_type", None) == "GPU" for device in devices):
            reasons.append("CUDA is initialised in the kernel (tensorflow): a forked process cannot use it")
        reasons.append(
            "the TensorFlow runtime is started in the kernel: its thread pools do not exist in a "
            "fork, so TensorFlow ops there deadlock"
        )
    bridge = sys.modules.get("jax._src.xla_bridge")
    if bridge is not None and getattr(bridge, "_backends", None):
        reasons.append(
            "the JAX runtime is started in the kernel: its threads do not exist in a fork, so "
            "JAX computations there deadlock"
        )
    return reasons


def _shared_worker_reasons():
    threading = sys.modules.get("threading")
    if threading is None:
        return []
    found = []
    for thread in threading.enumerate():
        target = getattr(thread, "_target", None)
        origin = (getattr(target, "__module__", None), getattr(target, "__qualname__", None))
        cls = type(thread)
        if origin == ("multiprocessing.pool", "Pool._handle_workers"):
            found.append(
                "a multiprocessing pool is running in the kernel: a fork would share its worker "
                "processes and queues with the kernel"
            )
        elif cls.__module__ == "concurrent.futures.process":
            found.append(
                "a process pool executor is running in the kernel: a fork would share its worker "
                "processes and queues with the kernel"
            )
        elif origin == ("concurrent.futures.thread", "_worker"):
            found.append(
                "a thread pool executor has live workers in the kernel: they do not exist in a "
                "fork, so work submitted there never runs"
            )
    return list(dict.fromkeys(found))


# What the names a cell calls are bound to.

_type_dict = type.__dict__
_module_of = _type_dict["__module__"].__get__
_qualname_of = _type_dict["__qualname__"].__get__
_module_dict = types.ModuleType.__dict__["__dict__"].__get__


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
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    imported = {}
    for node in ast.walk(tree):
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


_absent = object()


def _shell():
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    return get_ipython() if get_ipython is not None else None


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
        source = _transform(shell, code)
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
        }
    )


# The parent side of a run.


def run(request):
    """Run ``request["code"]`` in a fork; see the module documentation for the answer."""
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
    limit = request.get("memory_limit_bytes")
    if type(limit) is not int or limit <= 0:
        limit = _available_memory() // 2
    shell = _shell()
    address_space = _vm_size() + limit
    result_read, result_write = os.pipe()
    output_read, output_write = os.pipe()
    # While the fork lives, processes it orphans are adopted by the kernel, which reaps them
    # with the fork: none is left to init as a zombie or an orphan.
    adopting = _adopt_orphans(True)
    with warnings.catch_warnings():
        # Python 3.12 warns that forking a threaded process may deadlock: the child uses no
        # thread of the kernel's, and the warning would go to the notebook.
        warnings.simplefilter("ignore")
        started = _perf()
        try:
            pid = os.fork()
        except OSError as error:
            pid = None
            failure = error
    if pid is None:
        for fd in (result_read, result_write, output_read, output_write):
            os.close(fd)
        if adopting:
            _adopt_orphans(False)
        return _answer({"protocol": PROTOCOL, "status": "unsupported", "reasons": [f"fork failed: {failure}"]})
    if pid == 0:
        try:
            os.close(result_read)
            os.close(output_read)
            _child(shell, code, timeout, address_space, result_write, output_write)
        finally:
            os._exit(CHILD_FAILED)
    fork_ms = (_perf() - started) * 1000.0
    os.close(result_write)
    os.close(output_write)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # the child did it first, or is already gone
    waiting = _Waiting(pid, result_read, output_read, limit)
    try:
        status = waiting.wait(started + timeout)
    finally:
        torn_down = _perf()
        exit_status = _kill_and_reap(pid)
        teardown_ms = (_perf() - torn_down) * 1000.0
        if adopting:
            _adopt_orphans(False)
    try:
        document = waiting.document(status, exit_status, timeout)
        document.update(
            {
                "protocol": PROTOCOL,
                "pid": pid,
                "fork_ms": round(fork_ms, 3),
                "teardown_ms": round(teardown_ms, 3),
                "memory_limit_bytes": limit,
                "stdout_tail": waiting.output_tail(),
            }
        )
    finally:
        os.close(result_read)
        os.close(output_read)
    return _answer(document)


class _Waiting:
    """The parent reading the child's pipes until its report, the deadline or the memory limit."""

    def __init__(self, pid, result_fd, output_fd, limit):
        self.pid = pid
        self.result_fd = result_fd
        self.output_fd = output_fd
        self.limit = limit
        self.result = bytearray()
        self.output = bytearray()
        self.output_open = True
        self.memory_used = 0

    def wait(self, deadline):
        """``"reported"``, ``"exited"`` (no report), ``"timed_out"`` or ``"memory_limit"``."""
        poller = select.poll()
        poller.register(self.result_fd, select.POLLIN)
        poller.register(self.output_fd, select.POLLIN)
        next_poll = _perf() + MEMORY_POLL_SECONDS
        while True:
            now = _perf()
            if now >= deadline:
                return "timed_out"
            if now >= next_poll:
                next_poll = now + MEMORY_POLL_SECONDS
                self.memory_used = _private_memory(self.pid)
                if self.memory_used > self.limit:
                    return "memory_limit"
            wait_ms = max(0, math.ceil((min(deadline, next_poll) - now) * 1000.0))
            ready = {fd for fd, _ in poller.poll(wait_ms)}
            if self.output_fd in ready:
                self._read_output()
                if not self.output_open:
                    poller.unregister(self.output_fd)
            if self.result_fd in ready:
                chunk = os.read(self.result_fd, 1 << 16)
                if not chunk:
                    return "exited"
                self.result += chunk
                if self.result.endswith(b"\n"):
                    return "reported"

    def _read_output(self):
        chunk = os.read(self.output_fd, 1 << 16)
        if not chunk:
            self.output_open = False
            return
        self.output += chunk
        if len(self.output) > 2 * TAIL_BYTES:
            del self.output[:-TAIL_BYTES]

    def drain_output(self):
        # What the child wrote before it reported; its descendants may hold the pipe open, so
        # read only what is there.
        poller = select.poll()
        poller.register(self.output_fd, select.POLLIN)
        while self.output_open and poller.poll(0):
            self._read_output()

    def output_tail(self):
        self.drain_output()
        return bytes(self.output[-TAIL_BYTES:]).decode("utf-8", "replace")

    def document(self, status, exit_status, timeout):
        if status == "reported":
            try:
                report = json.loads(bytes(self.result))
            except ValueError:
                report = None
            if type(report) is dict:
                return report
        if status == "timed_out":
            return {"status": "timed_out", "timeout_ms": round(timeout * 1000.0, 3)}
        if status == "memory_limit":
            return {"status": "memory_limit", "used_bytes": self.memory_used}
        died = {"status": "died"}
        if exit_status is not None and os.WIFSIGNALED(exit_status):
            died["signal"] = os.WTERMSIG(exit_status)
        elif exit_status is not None and os.WIFEXITED(exit_status):
            died["exit_code"] = os.WEXITSTATUS(exit_status)
        return died


def _kill_and_reap(pid):
    """Kill the child's process group (it and all it started), then reap the child. The group
    is killed before the reap so that its id cannot have been reused meanwhile."""
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except OSError:
            pass
    status = None
    while True:
        try:
            status = os.waitpid(pid, 0)[1]
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            break
    # The rest of the group, killed above and adopted by the kernel when the fork died.
    while True:
        try:
            os.waitpid(-pid, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            return status


PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37


def _adopt_orphans(enable):
    """Make the kernel a child subreaper (Linux) or stop it being one. Enabling answers
    whether this call changed anything: a kernel that already was one stays one."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if enable:
            current = ctypes.c_int(0)
            if libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(current), 0, 0, 0) != 0 or current.value:
                return False
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1 if enable else 0, 0, 0, 0) == 0
    except Exception:
        return False


def _read_proc(path):
    try:
        with open(path, "rb") as file:
            return file.read().decode("ascii", "replace")
    except OSError:
        return ""


def _proc_field_kb(text, field):
    for line in text.splitlines():
        if line.startswith(field + ":"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    return 0


def _vm_size():
    return _proc_field_kb(_read_proc("/proc/self/status"), "VmSize")


def _available_memory():
    available = _proc_field_kb(_read_proc("/proc/meminfo"), "MemAvailable")
    if available:
        return available
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 1 << 31


def _private_memory(pid):
    """Memory only the child maps: pages it copied on write and pages it allocated."""
    rollup = _read_proc(f"/proc/{pid}/smaps_rollup")
    return _proc_field_kb(rollup, "Private_Dirty") + _proc_field_kb(rollup, "Private_Clean")


# The child.


def _child(shell, code, timeout, address_space, result_fd, output_fd):
    os.setpgid(0, 0)
    _die_with_parent()
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(math.ceil(timeout) + ALARM_MARGIN_SECONDS)
    _detach(shell, output_fd)
    # Objects inherited from the kernel are never collected here; not scanning them keeps
    # their pages shared with the kernel.
    gc.freeze()
    _one_thread_per_runtime()
    _limit_address_space(address_space)
    report = _execute(shell, code)
    payload = json.dumps(report, ensure_ascii=False, separators=(",", ":"), default=str)
    _write_all(result_fd, payload.encode("utf-8", "replace") + b"\n")
    os._exit(0)


def _die_with_parent():
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    except Exception:
        pass  # the alarm still ends the child


def _limit_address_space(address_space):
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    except (ImportError, ValueError, OSError):
        pass  # the parent's memory watch still applies


def _one_thread_per_runtime():
    # torch's OpenMP workers do not exist in a fork, and a parallel region waits for them
    # forever; with one thread torch runs its kernels inline.
    torch = sys.modules.get("torch")
    set_num_threads = getattr(torch, "set_num_threads", None)
    if set_num_threads is not None:
        try:
            set_num_threads(1)
        except Exception:
            pass


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Streams:
    """The child's text streams: everything goes, in order, to the output pipe."""

    def __init__(self, output_fd):
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        os.close(output_fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        raw = io.FileIO(1, "w", closefd=False)
        self.stream = io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace", write_through=True)
        self.displayed = 0

    def text(self, text):
        try:
            self.stream.write(text)
        except (OSError, ValueError):
            pass


def _detach(shell, output_fd):
    """Point everything that could reach the kernel's sockets at the output pipe, before the
    cell (or anything else) writes a byte."""
    streams = _Streams(output_fd)
    stream = streams.stream
    for name in ("stdout", "stderr"):
        original = getattr(sys, name, None)
        # Objects that kept a reference to the kernel's stream (logging handlers, tqdm) write
        # through it: its methods are replaced on the instance.
        for attribute, value in (("write", stream.write), ("writelines", stream.writelines), ("flush", stream.flush)):
            try:
                setattr(original, attribute, value)
            except Exception:
                pass
        setattr(sys, name, stream)
    # Whatever still tries to publish (comms, tracebacks of display formatters) is dropped
    # before it reaches a socket or ipykernel's pipe from forked processes to the kernel.
    kernel = getattr(shell, "kernel", None)
    for target, attributes in (
        (getattr(kernel, "iopub_thread", None), ("send_multipart", "_really_send", "schedule")),
        (getattr(kernel, "session", None), ("send",)),
    ):
        for attribute in attributes if target is not None else ():
            try:
                setattr(target, attribute, _drop)
            except Exception:
                pass
    if shell is not None:
        _replace_display(shell, streams)
    sys.displayhook = lambda value: _display_result(shell, streams, value)
    return streams


def _drop(*args, **kwargs):
    return None


def _replace_display(shell, streams):
    from IPython.core.displaypub import DisplayPublisher

    class _PipeDisplayPublisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            streams.displayed += 1
            text = data.get("text/plain") if isinstance(data, dict) else None
            if isinstance(text, str):
                streams.text(text + "\n")

        def clear_output(self, wait=False):
            pass

    # Without a shell it registers no event callbacks.
    shell.display_pub = _PipeDisplayPublisher()


def _display_result(shell, streams, value):
    if value is None:
        return
    streams.displayed += 1
    text = None
    formatter = getattr(shell, "display_formatter", None)
    if formatter is not None:
        data, _ = formatter.format(value)
        text = data.get("text/plain")
    if not isinstance(text, str):
        text = repr(value)
    streams.text(text + "\n")


def _execute(shell, code):
    started = _perf()
    report = {"status": "completed", "ok": True}
    source = code
    offset = 0
    try:
        source = _transform(shell, code)
        offset = _removed_leading_lines(code, source)
        linecache.cache[FILENAME] = (len(source), None, source.splitlines(True), FILENAME)
        _run_source(shell, source, quiet=code.rstrip().endswith(";"))
    except BaseException as exc:
        if isinstance(exc, MemoryError):
            report["status"] = "memory_limit"
        report.update(_exception_report(exc, offset))
    finally:
        report["duration_ms"] = round((_perf() - started) * 1000.0, 3)
    return report


def _removed_leading_lines(code, source):
    # IPython drops the cell's leading blank lines; lines are reported in the cell as written.
    removed = len(code.splitlines()) - len(source.splitlines())
    blank = len(code) - len(code.lstrip("\n\r\t "))
    leading = code[:blank].count("\n")
    return max(0, min(removed, leading))


def _run_source(shell, source, quiet):
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = compile(source, FILENAME, "exec", ast.PyCF_ONLY_AST | flags)
    if shell is not None:
        tree = shell.transform_ast(tree)
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
