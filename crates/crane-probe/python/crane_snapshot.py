"""crane's kernel snapshots: a second role on the fork of ``crane_fork.py``, in the dry-run module.
This part owns taking, keeping and ending them, and a snapshot's wait.

crane calls, through its call channel (never an execute request):

- ``take(request)``: kill the snapshots ``request["drop"]`` names (reaped at the next call: the
  teardown of a large one is not waited for), then fork a snapshot of the kernel as it is now
  (the fork's refusals apply: a kernel that cannot be forked safely takes none, and the answer
  says why). The kernel makes a Unix socket listening in a private (0700) directory, forks,
  closes its end and answers at once with the socket's path: it waits for nothing but the fork.
  The caller may name that path (``request["socket"]``, in a directory the kernel makes and
  that must not exist yet): a caller whose kernel dies before its answer arrives then still
  finds the snapshot (``pid`` below).
  The child goes into its own process group, outlives the kernel but dies with the proxy (the
  kernel's parent, watched through a pidfd; with the kernel where there is none), is less likely
  than the kernel to be taken by the OOM killer (no at-fork hook of the kernel's runs) and
  blocks in a poll at once: no CPU, no Python running, next to no page of the kernel's copied.
  The rest of the isolation every fork of crane's gets (streams to a pipe, one thread per native
  runtime, crane's guards left) waits for the takeover.
- ``drop(request)``: end and reap the snapshots ``request["pids"]`` names (and those a take
  killed).
- ``prepare(request)``: what the first take would do before it forks, done before the kernel
  serves its first cell.

The proxy reaches a snapshot through its socket (``_Snapshot``): ``die`` ends it, ``pid`` answers
its process id (and leaves it waiting), ``dryrun
REQUEST`` runs the dry run in a fork of it beside the kernel's real run of the cell, and
``fingerprint REQUEST`` answers the fingerprints of the objects the request names
(``crane_fingerprint.py``), and ``takeover`` makes it the kernel (``crane_takeover.py``), which gives back the offsets of the
kernel's open files (``crane_snapshot_files.py``; the descriptors are read here, at the take,
before the fork).

The kernel reaps its snapshots: each call first collects those that ended (killed by a take,
from outside by the proxy's memory watch, or by the system).
"""

SNAPSHOT_PROTOCOL = 1


# The live snapshots, by pid: their ``Forked``, and their sockets' paths.
_snapshots = {}
_sockets = {}
# Snapshots a take dropped: killed, and reaped at the next call.
_dying = {}


def take(request):
    """``{"drop": [pid...]}`` to ``{"status": "taken", "pid", "socket", "fork_ms", "reaped",
    "dropped"}`` or ``{"status": "refused", "reasons": [...], ...}``."""
    request = _parse_request(request)
    _reap_dying(block=False)
    answer = {"reaped": _reap_ended(), "dropped": _kill_snapshots(request.get("drop") or [])}
    answer.update(_fork_snapshot(request.get("socket")))
    return _snapshot_answer(answer)


def _fork_snapshot(socket_path=None):
    """The status of a new snapshot, and its pid, socket and times, or why there is none; its
    socket at ``socket_path`` where the caller names one."""
    try:
        with _guard:
            reasons = unsupported_reasons()
    except _UserCode:
        reasons = [_USER_CODE_REASON]
    if reasons:
        return {"status": "refused", "reasons": reasons}
    # The snapshot's socket is made before the fork: the kernel waits for nothing but the fork,
    # and a command sent before the child reaches ``accept`` waits in the backlog.
    try:
        listener, path = _listen(socket_path)
    except (OSError, ValueError) as error:
        return {"status": "refused", "reasons": [f"no socket for a snapshot: {error}"]}
    shell = _shell()
    # Read before the fork: the cell sent behind the take moves the offsets the kernel shares
    # with its snapshot.
    try:
        with _guard:
            _kernel_descriptors()
            descriptors = _open_descriptors()
    except _UserCode:
        _guard.rearm()
        descriptors = {}
    held = _hold_history_locks(shell)
    try:
        forked = spawn(_Snapshot(listener, path, descriptors, os.getppid()), shell)
    finally:
        for lock in held:
            lock.release()
    listener.close()
    if type(forked) is str:
        _remove(path, os.path.dirname(path))
        return {"status": "refused", "reasons": [forked]}
    forked.close()
    _snapshots[forked.pid] = forked
    _sockets[forked.pid] = path
    return {
        "status": "taken",
        "pid": forked.pid,
        "socket": path,
        "fork_ms": round(forked.fork_ms, 3),
        "ready_ms": round((_perf() - forked.started) * 1000.0, 3),
    }


# How long the kernel waits for IPython's history thread to finish a write before it forks.
HISTORY_LOCK_TIMEOUT_S = 1.0


def _hold_history_locks(shell):
    """IPython's history cache locks, held across the fork: its saving thread writes to SQLite
    inside them, and a fork in the middle of that write would leave SQLite's in-process lock
    state claiming a lock no thread of the snapshot holds (the kernel it becomes would wait on
    the history file for ever). IPython's own at-fork hook stops the thread instead, which
    crane does not let run in the kernel."""
    history = getattr(shell, "history_manager", None)
    held = []
    for name in ("db_input_cache_lock", "db_output_cache_lock"):
        lock = getattr(history, name, None)
        acquire = getattr(lock, "acquire", None)
        if acquire is not None and acquire(timeout=HISTORY_LOCK_TIMEOUT_S):
            held.append(lock)
    return held


def prepare(request):
    """``{}`` to ``{"ready": bool}``: what the first take would otherwise do, done before the
    kernel serves its first cell. Finding the interpreter's at-fork lists walks every object
    the collector tracks: some 10 ms in a kernel that has just started, some 30 ms once a first
    cell imported the data libraries. A kernel being prepared has no snapshot to reap. The
    descriptors open now are the kernel's own (its sockets, its history database): a rollback's
    line does not name them."""
    try:
        with _guard:
            _kernel_descriptors()
    except _UserCode:
        _guard.rearm()
    return _snapshot_answer({"ready": _at_fork_hooks.found()})


def drop(request):
    """``{"pids": [pid...]}`` to ``{"dropped": [pid...], "reaped": [pid...]}``."""
    request = _parse_request(request)
    reaped = _reap_ended()
    return _snapshot_answer({"dropped": _end_snapshots(request.get("pids") or []), "reaped": reaped})


def _snapshot_answer(document):
    document["protocol"] = SNAPSHOT_PROTOCOL
    return _answer(document)


def _end_snapshots(pids):
    """End the snapshots ``pids`` names and reap them (with any a take killed)."""
    ended = _kill_snapshots(pids)
    _reap_dying(block=True)
    return ended


def _kill_snapshots(pids):
    """End the snapshots ``pids`` names without waiting for them: the system tears a large one
    down for milliseconds, beside the kernel's next cell instead of before it. The next call
    reaps them."""
    killed = []
    for pid in pids:
        forked = _snapshots.pop(pid, None) if type(pid) is int else None
        if forked is None:
            continue
        forked.kill()
        _forget_socket(pid)
        _dying[pid] = forked
        killed.append(pid)
    return killed


def _reap_dying(block):
    for pid in list(_dying):
        if block or _has_ended(pid):
            forked = _dying.pop(pid)
            _hand_over_adoption(forked)
            forked.end()


def _has_ended(pid):
    # Not reaped here: ``end`` kills the process group before it reaps, which a reused pid
    # must not be.
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _forget_socket(pid):
    # A snapshot killed cannot remove its socket and directory: its parent does.
    path = _sockets.pop(pid, None)
    if path is not None:
        _remove(path, os.path.dirname(path))


def _hand_over_adoption(forked):
    # The kernel stays a child subreaper while any snapshot lives: the one that made it one
    # hands that over before it goes.
    if forked.adopting:
        for other in _snapshots.values():
            if not other.adopting:
                forked.adopting, other.adopting = False, True
                return


def _reap_ended():
    """Snapshots that ended (killed by the proxy's memory watch, or by the system): reaped."""
    reaped = []
    for pid in list(_snapshots):
        if _has_ended(pid):
            forked = _snapshots.pop(pid)
            _hand_over_adoption(forked)
            forked.end()
            _forget_socket(pid)
            reaped.append(pid)
    return reaped


def _listen(path=None):
    """A Unix socket listening in a new private (0700) directory, and its path: ``path`` where
    the caller names one (its directory is made here, and must not exist: nobody else's socket
    or directory is taken), else one in a directory of its own under the temporary directory."""
    import socket
    import tempfile

    if path is None:
        directory = tempfile.mkdtemp(prefix="crane-snapshot-")
        path = os.path.join(directory, "control")
    else:
        if type(path) is not str or not os.path.isabs(path):
            raise ValueError(f"the socket path {path!r} is not an absolute path")
        directory = os.path.dirname(path)
        os.mkdir(directory, 0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        listener.listen(4)
    except OSError:
        listener.close()
        _remove(path, directory)
        raise
    return listener, path


class _Snapshot(Role):
    """The child's role: wait, blocked in ``accept``, to be told to die, to become the kernel,
    or to dry-run a cell beside the kernel's real run of it (``dryrun REQUEST``: the dry-run
    module's ``run`` in a fork of this snapshot, the kernel's state before the cell; the answer
    is one line, and the run ends when the proxy hangs up first). It stays a snapshot after a
    dry run: the run, as in the kernel, leaves the user's state as it found it."""

    waits = True
    # Set in the child (``_child``): a pidfd of the proxy, readable once it exits, or ``None``
    # where the snapshot dies with the kernel instead.
    death_fd = None

    def __init__(self, listener, path, descriptors, dies_with):
        self.listener = listener
        self.path = path
        self.descriptors = descriptors
        # The proxy (the kernel's parent): the snapshot outlives the kernel, never the proxy.
        self.dies_with = dies_with

    def run(self, child):
        try:
            self._wait(child)
        finally:
            # However the wait ended (told to die, the proxy gone, an error): a snapshot killed
            # by a signal leaves its directory to the kernel that reaps it or to the proxy.
            self.leave()

    def leave(self):
        """Remove this snapshot's socket and directory (and the connection file, should a
        takeover have failed after writing it), and exit."""
        directory = os.path.dirname(self.path)
        _remove(self.path, None)
        _remove(os.path.join(directory, "kernel.json"), directory)
        os._exit(0)

    def _wait(self, child):
        listener, path = self.listener, self.path
        directory = os.path.dirname(path)
        # An interrupt never reaches it (its own process group); a stray one must not end it.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        # Blocked in the poll: no CPU until a connection comes or the proxy is gone.
        waiting = select.poll()
        waiting.register(listener.fileno(), select.POLLIN)
        if self.death_fd is not None:
            waiting.register(self.death_fd, select.POLLIN)
        while True:
            try:
                ready = [fd for fd, _ in waiting.poll()]
                if self.death_fd in ready:
                    return
                connection, _ = listener.accept()
            except InterruptedError:
                continue
            except OSError:
                return
            command = _read_line(connection, MAX_REQUEST_BYTES)
            if command == "pid":
                _send_pid(connection)
                continue
            if command.startswith("dryrun "):
                _dry_run_beside(connection, command[len("dryrun "):])
                continue
            if command.startswith("fingerprint "):
                _send_fingerprints(connection, command[len("fingerprint "):])
                continue
            if command == "takeover":
                listener.close()
                if self.death_fd is not None:
                    os.close(self.death_fd)
                _remove(path, None)
                # Never returns: the kernel it becomes, or its failure, ends this process.
                _take_over(child, connection, directory, self.descriptors)
            return


# The longest request a snapshot reads (a dry run's carries the cell).
MAX_REQUEST_BYTES = 1 << 24


def _dry_run_beside(connection, request):
    try:
        # A cancelled run's answer finds the proxy gone: the send fails, and is let fail.
        connection.sendall(run(request, cancel_fd=connection.fileno()).text.encode("utf-8") + b"\n")
    except OSError:
        pass
    finally:
        connection.close()


def _send_pid(connection):
    """This snapshot's process id: how a proxy whose kernel died before the take's answer came
    finds the snapshot at the socket it named."""
    try:
        connection.sendall(('{"pid": %d}\n' % os.getpid()).encode("ascii"))
    except OSError:
        pass
    finally:
        connection.close()


def _send_fingerprints(connection, request):
    """The fingerprints of the objects a request names, as this snapshot holds them
    (``crane_fingerprint.py``): read, never changed, so it stays the state before the cell."""
    try:
        connection.sendall(fingerprint(request).text.encode("utf-8") + b"\n")
    except OSError:
        pass
    finally:
        connection.close()


def _read_line(connection, limit):
    data = b""
    while not data.endswith(b"\n") and len(data) < limit:
        try:
            chunk = connection.recv(65536)
        except InterruptedError:
            continue
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data.decode("utf-8", "replace").strip()


def _remove(file, directory):
    for remove, path in ((os.unlink, file), (os.rmdir, directory)):
        try:
            if path is not None:
                remove(path)
        except OSError:
            pass
