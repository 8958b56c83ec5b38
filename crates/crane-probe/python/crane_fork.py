"""crane's fork of the kernel: the only ``os.fork`` in crane, and everything a fork needs.

This part owns the fork and the parent's side of it:

- the fork itself, invisible to the kernel: no hook of ``os.register_at_fork`` runs because of
  it, in the kernel or in the child (``crane_atfork.py``, joined before this part), and the
  kernel is a child subreaper while the fork lives (``spawn``);
- the parent's side: reading the child's pipes until its report, a deadline or a memory limit,
  killing the child's process group and reaping it (``Forked``);
- the extension points for what the child does: a ``Role`` (``seal()`` first, then
  ``run(child)``, whose dict is the child's report), e.g. run a cell and report (the dry run).

The files joined after it own the rest: the refusals, ``unsupported_reasons()``, why forking
this kernel is unsafe now (``crane_fork_refusals.py``); the child's setup before its role
(``crane_fork_child.py``: its own process group, death with the parent, an alarm, the detach
from the kernel's messaging, descriptors of its own, ``crane_fds.py``, one thread per native
runtime, an address-space limit); what the system says of processes and memory
(``crane_proc.py``); the seal (``crane_seal.py``).

Standard library only (its imports serve the files joined after it); joined before the module
that uses it (the dry-run module's parts), behind the guard of ``crane_guard.py``: the child leaves the
guard before its role runs.
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


# Exit status of a child that failed before it could report (never a role's outcome).
CHILD_FAILED = 70

_perf = time.perf_counter


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
    # cell) gets only the processor time the kernel leaves idle from this moment on (a
    # ``time.perf_counter`` value; ``None``: never): its waiter moves it there.
    yields_cpu_at = None

    def seal(self, own_fds):
        pass

    def run(self, child):
        return {}

    def leave(self):
        """Exit the child of a role that waits, once it is done or must not begin (the process
        it dies with is gone): a role that made files of its own removes them first."""
        os._exit(0)


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
    return Forked(pid, started, fork_ms, result_read, output_read, adopting, role.yields_cpu_at)


class Forked:
    """A live child seen from the parent: its pipes, its wait, its end."""

    def __init__(self, pid, started, fork_ms, result_fd, output_fd, adopting, yields_cpu_at=None):
        self.pid = pid
        self.yields_cpu_at = yields_cpu_at
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
            if self.yields_cpu_at is not None and now >= self.yields_cpu_at:
                self.yields_cpu_at = None
                _only_idle_processor_time(self.pid)
            if now >= next_poll:
                next_poll = now + MEMORY_POLL_SECONDS
                self.memory_used = _private_memory(self.pid)
                if self.memory_used > limit:
                    return "memory_limit"
            wake = min(deadline, next_poll, deadline if self.yields_cpu_at is None else self.yields_cpu_at)
            wait_ms = max(0, math.ceil((wake - now) * 1000.0))
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


def _only_idle_processor_time(pid):
    # SCHED_IDLE for every thread of the child: the kernel's threads (and every other process)
    # always run first; threads it starts later inherit it from the thread starting them. Its
    # list of threads is read again until no new one appears. Where SCHED_IDLE is missing, the
    # lowest nice value. A child already gone has nothing to move.
    moved = set()
    for _ in range(8):
        try:
            threads = {int(tid) for tid in os.listdir(f"/proc/{pid}/task")} - moved
        except (OSError, ValueError):
            return
        if not threads:
            return
        for tid in threads:
            try:
                os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
            except (AttributeError, OSError):
                try:
                    os.setpriority(os.PRIO_PROCESS, tid, 19)
                except OSError:
                    pass
        moved |= threads


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
