"""crane's fork of the kernel: the only ``os.fork`` in crane, and everything a fork needs.

This part owns:

- the refusals: ``unsupported_reasons()``, why forking this kernel is unsafe now;
- the fork itself, invisible to the kernel: no hook of ``os.register_at_fork`` runs because of
  it, in the kernel or in the child (``crane_atfork.py``, concatenated before this part), and
  the kernel is a child subreaper while the fork lives (``spawn``);
- the parent's side: reading the child's pipes until its report, a deadline or a memory limit,
  killing the child's process group and reaping it (``Forked``);
- the child's setup before its role: its own process group, death with the parent, an alarm,
  the detach from the kernel's messaging (streams, file descriptors 0-2, the display publisher,
  the display hook and the IOPub thread all point at a pipe the parent reads), ``gc.freeze``,
  descriptors of its own (``crane_fds.py``), one thread per native runtime (torch, each OpenMP
  runtime), an address-space limit; a role that first only waits (a snapshot, which may become
  the kernel and keeps the kernel's descriptors) gets the group, the death and ``gc.freeze``,
  and the rest but the descriptors when it acts (``Child.isolate``);
- the extension points for what the child does then: a ``Role`` (``seal()`` first, then
  ``run(child)``, whose dict is the child's report), e.g. run a cell and report (the dry run).

Standard library only; concatenated before the module that uses it (``crane_dryrun.py``), behind
the guard of ``crane_guard.py``: the child leaves the guard before its role runs.
"""

import gc
import io
import math
import os
import select
import signal
import sys
import time

TAIL_BYTES = 8_000
# How often the parent measures the memory the child has made its own (copied or new pages).
MEMORY_POLL_SECONDS = 0.1
# The child's own alarm, a second line of defence should the parent vanish.
ALARM_MARGIN_SECONDS = 2
# Exit status of a child that failed before it could report (never a role's outcome).
CHILD_FAILED = 70

_perf = time.perf_counter


# Refusals.


def unsupported_reasons():
    """Why forking this kernel is unsafe: each reason is one sentence, empty when it is safe."""
    reasons = []
    if sys.platform == "win32" or not hasattr(os, "fork"):
        return [f"this platform ({sys.platform}) has no fork"]
    if not _at_fork_hooks.found():
        reasons.append(
            "crane cannot find the interpreter's os.register_at_fork lists, so its fork would run "
            "the kernel's before-fork and after-fork hooks in the kernel"
        )
    reasons.extend(_test_refusal())
    reasons.extend(_cuda_reasons())
    reasons.extend(_native_runtime_reasons())
    reasons.extend(_shared_worker_reasons())
    return reasons


def _test_refusal():
    # A test seam: a kernel whose environment holds CRANE_TEST_REFUSE_FORK refuses forks as one
    # that touched a GPU does, on machines that have none.
    # (Read from the environment's own dict: ``os.environ.get`` is Python code that calls
    # builtins the user may have replaced.)
    data = os.environ.__dict__.get("_data")
    seam = data.get(b"CRANE_TEST_REFUSE_FORK") if type(data) is dict else None
    return [f"the kernel refuses forks for a test ({seam.decode('utf-8', 'replace')})"] if seam else []


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


# Roles: what the child does once it is isolated.


class Role:
    """What a forked child does. ``alarm_s`` is the child's own alarm (``None``: none);
    ``address_space`` its RLIMIT_AS in bytes (``None``: none); ``seal(own_fds)`` runs after the
    isolation and before ``run(child)``, whose dict is written to the parent as the report
    (``own_fds``: the descriptors the child may still write, its pipes to the parent; an
    ``OSError`` from it ends the child with an "unsupported" report)."""

    alarm_s = None
    address_space = None
    # A role that first only waits (a snapshot, which has no seal) is isolated when it acts
    # (``Child.isolate``): until then its child runs next to no Python beside the busy kernel
    # and copies next to no page of it.
    waits = False
    # A role that runs while the kernel runs too (a dry run beside the kernel's real run of the
    # cell) gets only the processor time the kernel leaves idle.
    yields_cpu = False

    def seal(self, own_fds):
        pass

    def run(self, child):
        return {}


class Child:
    """What a role gets in the child: the kernel's shell (or ``None``) and the streams that now
    lead to the parent's output pipe (``streams.replaced``: what the detach replaced, for a role
    that becomes the kernel; ``None`` until ``isolate()`` for a role that waits)."""

    __slots__ = ("shell", "streams", "output_fd")

    def __init__(self, shell, streams, output_fd=None):
        self.shell = shell
        self.streams = streams
        self.output_fd = output_fd

    def isolate(self):
        """The isolation a role that waits was spared at the fork: streams to the output pipe,
        one thread per native runtime, crane's guards left."""
        if self.streams is None:
            self.streams = _detach(self.shell, self.output_fd)
            _one_thread_per_runtime()
            _leave_every_guard()
        return self.streams


# The parent's side.


def spawn(role, shell):
    """Fork a child that isolates itself and plays ``role``: a ``Forked``, or the reason the
    fork failed as a string. The caller ends a ``Forked`` with ``end()``, always, and calls this
    only when ``unsupported_reasons()`` is empty."""
    result_read, result_write = os.pipe()
    output_read, output_write = os.pipe()
    # While the fork lives, processes it orphans are adopted by the kernel, which reaps them
    # with the fork: none is left to init as a zombie or an orphan.
    adopting = _adopt_orphans(True)
    with _IgnoredWarnings():
        # Python 3.12 warns that forking a threaded process may deadlock: the child uses no
        # thread of the kernel's, and the warning would go to the notebook.
        saved = _at_fork_hooks.suspend()
        started = _perf()
        try:
            pid = os.fork()
        except OSError as error:
            pid = None
            failure = error
        finally:
            _at_fork_hooks.resume(saved)
    if pid is None:
        for fd in (result_read, result_write, output_read, output_write):
            os.close(fd)
        if adopting:
            _adopt_orphans(False)
        return f"fork failed: {failure}"
    if pid == 0:
        try:
            os.close(result_read)
            os.close(output_read)
            _child(role, shell, result_write, output_write)
        finally:
            os._exit(CHILD_FAILED)
    fork_ms = (_perf() - started) * 1000.0
    os.close(result_write)
    os.close(output_write)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # the child did it first, or is already gone
    return Forked(pid, started, fork_ms, result_read, output_read, adopting)


class Forked:
    """A live child seen from the parent: its pipes, its wait, its end."""

    def __init__(self, pid, started, fork_ms, result_fd, output_fd, adopting):
        self.pid = pid
        self.started = started
        self.fork_ms = fork_ms
        self.result_fd = result_fd
        self.output_fd = output_fd
        self.adopting = adopting
        self.result = bytearray()
        self.output = bytearray()
        self.output_open = True
        self.memory_used = 0
        self.exit_status = None
        self.teardown_ms = None

    def wait(self, deadline, limit, cancel_fd=None):
        """``"reported"``, ``"exited"`` (no report), ``"timed_out"``, ``"memory_limit"`` or
        ``"cancelled"`` (``cancel_fd`` became readable or was hung up: whoever waits on the
        child's outcome gave up)."""
        poller = select.poll()
        poller.register(self.result_fd, select.POLLIN)
        poller.register(self.output_fd, select.POLLIN)
        if cancel_fd is not None:
            poller.register(cancel_fd, select.POLLIN)
        next_poll = _perf() + MEMORY_POLL_SECONDS
        while True:
            now = _perf()
            if now >= deadline:
                return "timed_out"
            if now >= next_poll:
                next_poll = now + MEMORY_POLL_SECONDS
                self.memory_used = _private_memory(self.pid)
                if self.memory_used > limit:
                    return "memory_limit"
            wait_ms = max(0, math.ceil((min(deadline, next_poll) - now) * 1000.0))
            ready = {fd for fd, _ in poller.poll(wait_ms)}
            if cancel_fd is not None and cancel_fd in ready:
                return "cancelled"
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

    def report(self):
        """The child's report, when it wrote one."""
        try:
            report = _json_loads(bytes(self.result))
        except ValueError:
            return None
        return report if type(report) is dict else None

    def kill(self):
        """Kill the child's process group without waiting for it: ``end()`` reaps it."""
        if self.teardown_ms is None:
            _kill(self.pid)

    def end(self):
        """Kill the child's process group, reap it, stop adopting orphans (idempotent)."""
        if self.teardown_ms is not None:
            return
        torn_down = _perf()
        try:
            self.exit_status = _kill_and_reap(self.pid)
        finally:
            self.teardown_ms = (_perf() - torn_down) * 1000.0
            if self.adopting:
                _adopt_orphans(False)

    def death(self):
        """How the child ended, once ``end()`` reaped it."""
        died = {"status": "died"}
        if self.exit_status is not None and os.WIFSIGNALED(self.exit_status):
            died["signal"] = os.WTERMSIG(self.exit_status)
        elif self.exit_status is not None and os.WIFEXITED(self.exit_status):
            died["exit_code"] = os.WEXITSTATUS(self.exit_status)
        return died

    def _read_output(self):
        chunk = os.read(self.output_fd, 1 << 16)
        if not chunk:
            self.output_open = False
            return
        self.output += chunk
        if len(self.output) > 2 * TAIL_BYTES:
            del self.output[:-TAIL_BYTES]

    def output_tail(self):
        # What the child wrote before it reported; its descendants may hold the pipe open, so
        # read only what is there.
        poller = select.poll()
        poller.register(self.output_fd, select.POLLIN)
        while self.output_open and poller.poll(0):
            self._read_output()
        return bytes(self.output[-TAIL_BYTES:]).decode("utf-8", "replace")

    def close(self):
        for fd in (self.result_fd, self.output_fd):
            try:
                os.close(fd)
            except OSError:
                pass


def _kill_and_reap(pid):
    """Kill the child's process group (it and all it started), then reap the child. The group
    is killed before the reap so that its id cannot have been reused meanwhile."""
    _kill(pid)
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


def _kill(pid):
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except OSError:
            pass


PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37


def _adopt_orphans(enable):
    """Make the kernel a child subreaper (Linux) or stop it being one. Enabling answers
    whether this call changed anything: a kernel that already was one stays one."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        prctl = _libc("prctl")
        ctypes = sys.modules["ctypes"]
        if enable:
            current = ctypes.c_int(0)
            if prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(current), 0, 0, 0) != 0 or current.value:
                return False
        return prctl(PR_SET_CHILD_SUBREAPER, 1 if enable else 0, 0, 0, 0) == 0
    except Exception:
        return False


_libc_functions = {}


def _libc(name):
    """The C library's function ``name`` through ctypes, looked up once. ``ctypes``' lookup
    (and its import) is Python code that finds the kernel's builtins: it is done only while
    they are the interpreter's own, else this raises OSError."""
    found = _libc_functions.get(name)
    if found is None:
        if not _builtins_intact():
            raise OSError("the kernel's builtins were replaced since crane's injection")
        import ctypes

        found = _libc_functions[name] = getattr(ctypes.CDLL(None, use_errno=True), name)
    return found


def _read_proc(path):
    try:
        with io.open(path, "rb") as file:
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


def vm_size():
    return _proc_field_kb(_read_proc("/proc/self/status"), "VmSize")


def available_memory():
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


def _child(role, shell, result_fd, output_fd):
    _originals_in_child()
    _after_fork_in_child()
    os.setpgid(0, 0)
    if role.waits:
        # A snapshot may outlive the kernel (the proxy makes it the kernel when the kernel
        # dies), never the process it names (the proxy): its wait polls ``death_fd``.
        role.death_fd = _die_with(getattr(role, "dies_with", None))
        _as_likely_to_go_as(getattr(role, "dies_with", None))
    else:
        _die_with_parent()
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    if role.alarm_s is not None:
        signal.alarm(math.ceil(role.alarm_s) + ALARM_MARGIN_SECONDS)
    if role.waits:
        gc.freeze()
        role.run(Child(shell, None, output_fd))
        os._exit(0)
    _first_to_go_when_memory_runs_out()
    if role.yields_cpu:
        _run_only_when_the_processor_is_idle()
    streams = _detach(shell, output_fd)
    # Objects inherited from the kernel are never collected here; not scanning them keeps
    # their pages shared with the kernel.
    gc.freeze()
    try:
        # The cell reads and sets descriptors of its own, not the kernel's (crane_fds.py).
        privatize_descriptors((0, 1, 2, result_fd))
        privatized = None
    except OSError as error:
        privatized = error
    _one_thread_per_runtime()
    try:
        if privatized is not None:
            raise privatized
        # Before the address-space limit: sealing copies shared anonymous mappings.
        role.seal((1, 2, result_fd))
    except OSError as error:
        report = {"status": "unsupported", "reasons": [f"the fork could not be sealed: {error}"]}
    else:
        if role.address_space is not None:
            _limit_address_space(role.address_space)
        _leave_every_guard()
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        report = role.run(Child(shell, streams))
    payload = _json_dumps(report, ensure_ascii=False, default=str)
    _write_all(result_fd, payload.encode("utf-8", "replace") + b"\n")
    os._exit(0)


# The child's builtins: the interpreter's own while crane's code works (the libraries it calls
# find them in the builtins module), the user's replacements while the cell runs. The child's
# builtins module is its own copy: the kernel's stays as the user left it.

_set_aside = {}


def _originals_in_child():
    """Put crane's snapshot of the interpreter's own builtins back in the child's builtins
    module, setting the user's replacements aside for ``_UserBuiltins``."""
    live = _live_builtins
    for name, value in _own_builtins.items():
        current = _dict_get(live, name, _absent_builtin)
        if current is not value:
            _set_aside[name] = current
            live[name] = value


class _UserBuiltins:
    """The user's replacements of builtins in place, in the child, while the cell runs."""

    __slots__ = ()

    def __enter__(self):
        live = _live_builtins
        for name, value in _set_aside.items():
            if value is _absent_builtin:
                live.pop(name, None)
            else:
                live[name] = value
        return self

    def __exit__(self, *exc):
        live = _live_builtins
        for name in _set_aside:
            live[name] = _own_builtins[name]
        return False


def _leave_every_guard():
    """The fork was made under crane's guard, which the cell must not run under (its first call
    of a notebook function would stop): this module's and that of every other crane module in
    the kernel (the module whose handler took crane's message runs this one's function under
    its own guard)."""
    guards = [_guard]
    for name, module in list(sys.modules.items()):
        if type(name) is str and name.startswith("_crane_") and type(module) is type(sys):
            other = _module_namespace(module).get("_guard")
            if other is not None and all(other is not guard for guard in guards):
                guards.append(other)
    tracers = []
    for guard in guards:
        leave = type(guard).__dict__.get("leave")
        try:
            tracers.append(guard.tracer)
            if leave is not None:
                leave(guard)
            else:  # an older version of a module, injected before this one
                guard.depth = 0
                guard.resume()
        except Exception:
            pass
    # Nested guards each put back the one outside them: none may stay the trace function.
    if any(sys.gettrace() is tracer for tracer in tracers):
        sys.settrace(None)


def _die_with_parent():
    if not sys.platform.startswith("linux"):
        return
    try:
        pr_set_pdeathsig = 1
        _libc("prctl")(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    except Exception:
        pass  # the alarm still ends the child


def _die_with(pid):
    """A pidfd of ``pid`` (the kernel's parent before the fork), readable once it exits; ``None``
    without one (no ``pidfd_open``: Python before 3.9, Linux before 5.3), where the child dies
    with the kernel as every other fork does. The child ends at once when ``pid`` is no longer
    the kernel's parent (nor, the kernel gone, its own): it may have exited, and its pid been
    reused, before the pidfd was opened; a parent seen after the opening proves it was not."""
    if pid is None:
        _die_with_parent()
        return None
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        os._exit(0)
    except (AttributeError, OSError):
        _die_with_parent()
        return None
    parent = os.getppid()
    if parent != pid and _parent_of(parent) != pid:
        os._exit(0)
    return pidfd


def _parent_of(pid):
    fields = _read_proc(f"/proc/{pid}/stat").rpartition(")")[2].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def _as_likely_to_go_as(pid):
    # The proxy raises the kernel's oom_score_adj above its own, so that the system's OOM killer
    # takes the kernel, never the snapshot it can become: the snapshot writes its own back down
    # to the proxy's (allowed without privilege down to the last value a privileged writer set).
    if pid is None:
        return
    try:
        proxy = int(_read_proc(f"/proc/{pid}/oom_score_adj"))
        with io.open("/proc/self/oom_score_adj", "r+") as adjust:
            if proxy < int(adjust.read()):
                adjust.seek(0)
                adjust.write(str(proxy))
    except (OSError, ValueError):
        pass


def _first_to_go_when_memory_runs_out():
    # A child that runs a cell may run beside the kernel's own run of it: should the two
    # exhaust the machine's memory, the system's OOM killer takes the child, not the kernel.
    # (A snapshot, which may become the kernel, goes below the kernel: ``_as_likely_to_go_as``.)
    try:
        with io.open("/proc/self/oom_score_adj", "w") as adjust:
            adjust.write("1000")
    except OSError:
        pass


def _run_only_when_the_processor_is_idle():
    # SCHED_IDLE: the kernel's threads (and every other process) always run first, and the
    # threads this child starts later inherit it. Where it is missing, the lowest nice value.
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        return
    except (AttributeError, OSError):
        pass
    try:
        os.nice(19)
    except OSError:
        pass


def _limit_address_space(address_space):
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    except (ImportError, ValueError, OSError):
        pass  # the parent's memory watch still applies


def _one_thread_per_runtime():
    # A thread pool's workers do not exist in a fork: GNU libgomp's next parallel region waits
    # for them forever (scikit-learn's histogram boosting or k-means after the kernel ran one),
    # and torch's intra-op pool likewise. With one thread each runtime runs its work inline.
    torch = sys.modules.get("torch")
    set_num_threads = getattr(torch, "set_num_threads", None)
    if set_num_threads is not None:
        try:
            set_num_threads(1)
        except Exception:
            pass
    for library in _loaded_openmp_runtimes():
        try:
            library.omp_set_num_threads(1)
        except (AttributeError, OSError):
            pass


# GNU (libgomp, also vendored as libgomp-<hash>.so), LLVM (libomp) and Intel (libiomp5).
_OPENMP_RUNTIME = ("libgomp", "libomp", "libiomp5", "libiomp")


def _loaded_openmp_runtimes():
    """The OpenMP runtimes mapped in this process, opened without loading anything new."""
    paths = []
    for line in _read_proc("/proc/self/maps").splitlines():
        fields = line.split(maxsplit=5)
        path = fields[5] if len(fields) == 6 else ""
        name = os.path.basename(path)
        stem = name.split(".so", 1)[0]
        if ".so" in name and (stem in _OPENMP_RUNTIME or stem.startswith("libgomp-")) and path not in paths:
            paths.append(path)
    if not paths:
        return []
    try:
        import ctypes
    except ImportError:
        return []
    libraries = []
    for path in paths:
        try:
            libraries.append(ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY))
        except OSError:
            pass
    return libraries


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
        # What the detach replaced, for a role that becomes the kernel (a snapshot's takeover).
        self.replaced = {}

    def text(self, text):
        try:
            self.stream.write(text)
        except (OSError, ValueError):
            pass


def _detach(shell, output_fd):
    """Point everything that could reach the kernel's sockets at the output pipe, before the
    role (or anything else) writes a byte."""
    streams = _Streams(output_fd)
    stream = streams.stream
    streams.replaced["displayhook"] = sys.displayhook
    for name in ("stdout", "stderr"):
        original = getattr(sys, name, None)
        streams.replaced[name] = original
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

    streams.replaced["display_pub"] = shell.display_pub
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
