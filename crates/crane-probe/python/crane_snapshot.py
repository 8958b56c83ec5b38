"""crane's kernel snapshots: a copy-on-write fork of the kernel taken before a cell runs.

crane injects this module like the dry-run module (behind the same guard and channel, with the
dry run's refusals in the same module) and calls two functions, each answering with an object
whose ``repr`` is one JSON document:

- ``take(request)``: drop the snapshots ``request["drop"]`` names, then fork a snapshot. The
  child holds no thread but the one that forked (the kernel's shell thread), leaves the kernel's
  process group so that an interrupt meant for the kernel never reaches it, ignores SIGINT, asks
  to die with the kernel (``PR_SET_PDEATHSIG``) and blocks in ``read`` on a pipe only this module
  writes: it uses no CPU, runs no Python and touches none of the kernel's sockets or threads
  until it is told something. Closing the pipe, or SIGKILL, ends it. A kernel where a fork is
  unsafe (the dry run's refusals: CUDA, a started TensorFlow or JAX runtime, worker pools) takes
  none, and the answer says why.
- ``drop(request)``: end and reap the snapshots ``request["pids"]`` names.

The kernel reaps its snapshots: each call first collects those that ended (crane's watch of the
machine's memory kills them with SIGKILL from outside, without waiting for the busy kernel).

Standard library only. Nothing here prints, binds a user name or imports a library the user
has not imported.
"""

SNAPSHOT_PROTOCOL = 1

# The write end of each live snapshot's pipe, by its pid.
_snapshot_pipes = {}


def take(request):
    """``{"drop": [pid...]}`` to ``{"status": "taken", "pid", "fork_ms", "reaped"}`` or
    ``{"status": "refused", "reasons": [...]}``."""
    request = _parse_request(request)
    reaped = _reap_ended()
    _end_snapshots(request.get("drop") or [])
    try:
        with _guard:
            reasons = unsupported_reasons()
    except _UserCode:
        reasons = [_USER_CODE_REASON]
    if reasons:
        return _snapshot_answer({"status": "refused", "reasons": reasons, "reaped": reaped})
    command_read, command_write = os.pipe()
    kernel_pid = os.getpid()
    with warnings.catch_warnings():
        # Python warns that forking a threaded process may deadlock: the child runs nothing
        # of the kernel's threads, and the warning would go to the notebook.
        warnings.simplefilter("ignore")
        started = _perf()
        try:
            pid = os.fork()
        except OSError as error:
            os.close(command_read)
            os.close(command_write)
            return _snapshot_answer({"status": "refused", "reasons": [f"fork failed: {error}"], "reaped": reaped})
    if pid == 0:
        try:
            os.close(command_write)
            _hold(command_read, kernel_pid)
        finally:
            os._exit(0)
    fork_ms = (_perf() - started) * 1000.0
    os.close(command_read)
    _snapshot_pipes[pid] = command_write
    return _snapshot_answer({"status": "taken", "pid": pid, "fork_ms": round(fork_ms, 3), "reaped": reaped})


def drop(request):
    """``{"pids": [pid...]}`` to ``{"dropped": [pid...], "reaped": [pid...]}``."""
    request = _parse_request(request)
    reaped = _reap_ended()
    return _snapshot_answer({"dropped": _end_snapshots(request.get("pids") or []), "reaped": reaped})


def _snapshot_answer(document):
    document["protocol"] = SNAPSHOT_PROTOCOL
    return _answer(document)


def _end_snapshots(pids):
    ended = []
    for pid in pids:
        fd = _snapshot_pipes.pop(pid, None) if type(pid) is int else None
        if fd is None:
            continue
        os.close(fd)
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        _wait(pid, 0)
        ended.append(pid)
    return ended


def _reap_ended():
    """Snapshots that ended (killed by crane's memory watch, or by the system): reaped, and
    their pipes closed."""
    reaped = []
    for pid in list(_snapshot_pipes):
        if _wait(pid, os.WNOHANG):
            os.close(_snapshot_pipes.pop(pid))
            reaped.append(pid)
    return reaped


def _wait(pid, options):
    """True when ``pid`` was reaped now or is no child of this process any more."""
    while True:
        try:
            return os.waitpid(pid, options)[0] == pid
        except InterruptedError:
            continue
        except ChildProcessError:
            return True


def _hold(command_fd, kernel_pid):
    """The snapshot's life: out of the kernel's process group, dead with the kernel, blocked
    until its pipe is closed or written to, either of which ends it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setpgid(0, 0)
    _die_with_parent()
    if os.getppid() != kernel_pid:
        return  # the kernel died before the death signal was armed
    os.read(command_fd, 1)
