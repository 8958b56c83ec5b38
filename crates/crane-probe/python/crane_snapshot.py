
# crane's kernel snapshots: a second role on the fork of crane_fork.py, in the dry-run module.
#
# crane calls, through its call channel (never an execute request):
#
# - ``take(request)``: kill the snapshots ``request["drop"]`` names (reaped at the next call:
#   the teardown of a large one is not waited for), then fork a snapshot of the kernel as it is
#   now (the fork's refusals apply: a kernel that cannot be forked safely takes none, and the
#   answer says why). The kernel makes a Unix socket listening in a private (0700) directory,
#   forks, closes its end and answers at once with the socket's path: it waits for nothing but
#   the fork. The child goes into its own process group, outlives the kernel but dies with the
#   proxy (the kernel's parent, watched through a pidfd; with the kernel where there is none),
#   is less likely than the kernel to be taken by the OOM killer (no at-fork hook of the
#   kernel's runs) and blocks in a poll at once: no CPU, no Python running, next to
#   no page of the kernel's copied. The rest of the isolation every fork of crane's gets
#   (streams to a pipe, one thread per native runtime, crane's guards left) waits for the
#   takeover.
# - ``drop(request)``: end and reap the snapshots ``request["pids"]`` names (and those a take
#   killed).
# - ``prepare(request)``: what the first take would do before it forks, done before the kernel
#   serves its first cell.
#
# The proxy reaches a snapshot through its socket: ``die`` ends it, ``takeover`` makes it the
# kernel (``_take_over``): a new ZeroMQ context, sockets on new ports with the kernel's key and
# signature scheme, the IOPub, heartbeat, control and shell-channel threads, stdout, stderr and
# the display hooks on the new session, a fresh event loop, around the child's copy of the shell
# (namespace, history, execution count, modules); it answers with its connection file and what
# a rollback cannot give back of the files the kernel holds open (``_not_given_back``). From
# the start it dies with the process that asked for it (``_die_with_peer``), and before the
# first request that can run code it gives each regular file the offset it had at the take
# (the kernel's open file descriptions are shared with the fork) without writing twice what
# the replaced kernel flushed (``_give_back``): the descriptors are read at the take, before
# the fork.
#
# The kernel reaps its snapshots: each call first collects those that ended (killed by a take,
# from outside by the proxy's memory watch, or by the system).

SNAPSHOT_PROTOCOL = 1
# How long a fork may take to say it is ready.
READY_TIMEOUT_S = 20.0
_NO_MEMORY_LIMIT = 1 << 62

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
    answer.update(_fork_snapshot())
    return _snapshot_answer(answer)


def _fork_snapshot():
    """The status of a new snapshot, and its pid, socket and times, or why there is none."""
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
        listener, path = _listen()
    except OSError as error:
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


def _listen():
    """A Unix socket listening in a new private (0700) directory, and its path."""
    import socket
    import tempfile

    directory = tempfile.mkdtemp(prefix="crane-snapshot-")
    path = os.path.join(directory, "control")
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
                    _remove(path, directory)
                    os._exit(0)
                connection, _ = listener.accept()
            except InterruptedError:
                continue
            except OSError:
                os._exit(0)
            command = _read_line(connection, MAX_REQUEST_BYTES)
            if command.startswith("dryrun "):
                _dry_run_beside(connection, command[len("dryrun "):])
                continue
            if command == "takeover":
                listener.close()
                if self.death_fd is not None:
                    os.close(self.death_fd)
                _remove(path, None)
                _take_over(child, connection, directory, self.descriptors)
            _remove(path, directory)
            os._exit(0)


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


def _send_line(connection, document):
    try:
        connection.sendall(_json_dumps(document, default=str).encode("utf-8") + b"\n")
    except OSError:
        pass


def _take_over(child, connection, directory, descriptors):
    """Become the kernel; never returns. A failure before the new kernel serves is told to
    the proxy, which then keeps the kernel it has. The process that asked (the proxy) is the
    one this kernel dies with, from the start."""
    try:
        _die_with_peer(connection, os.path.join(directory, "kernel.json"), directory)
        child.isolate()
        app, kernel, connection_file = _rebuild_kernel(child, directory)
        not_given_back = _not_given_back(descriptors)
        _give_back_at_first_request(kernel, descriptors)
    except BaseException as error:
        _send_line(connection, {"status": "failed", "reason": f"{type(error).__name__}: {error}"})
        os._exit(CHILD_FAILED)
    loop = kernel.io_loop

    def serving():
        _send_line(
            connection,
            {
                "status": "serving",
                "pid": os.getpid(),
                "connection_file": connection_file,
                "execution_count": getattr(child.shell, "execution_count", None),
                "not_given_back": not_given_back,
            },
        )
        connection.close()

    loop.add_callback(serving)
    try:
        loop.start()
    except KeyboardInterrupt:
        pass
    finally:
        try:
            import atexit

            atexit._run_exitfuncs()
        finally:
            os._exit(0)


def _rebuild_kernel(child, directory):
    import asyncio
    import atexit

    from ipykernel.kernelapp import IPKernelApp

    shell = child.shell
    if shell is None or not IPKernelApp.initialized():
        raise RuntimeError("this kernel is not an ipykernel application")
    app = IPKernelApp.instance()
    old_kernel = app.kernel
    _leave_every_guard()
    # The kernel this replaces is ended by the proxy: this process must outlive it.
    _set_death_signal(0)
    # Objects the kernel never freed stay in the permanent generation otherwise.
    gc.unfreeze()
    # The snapshots listed here are the kernel's, not this process's.
    _snapshots.clear()
    _sockets.clear()
    _dying.clear()
    # The kernel's own descriptors 1 and 2 (the proxy's pipes), under the new output streams.
    for fd, name in ((1, "stdout"), (2, "stderr")):
        original = getattr(getattr(old_kernel, "_" + name, None), "_original_stdstream_copy", None)
        if type(original) is int:
            try:
                os.dup2(original, fd)
            except OSError:
                pass
    # A fresh event loop on this thread: the kernel's is still running below this frame.
    asyncio.events._set_running_loop(None)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    from tornado.ioloop import IOLoop

    IOLoop.current()
    app.session = app.session.clone()
    app.session.pid = os.getpid()
    app.context = None
    for name in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"):
        setattr(app, name, 0)
    connection_file = os.path.join(directory, "kernel.json")
    app.connection_file = connection_file
    app.init_sockets()
    app.init_heartbeat()
    app.write_connection_file()
    # Before the output streams are made: what the detach replaced comes back first.
    replaced = child.streams.replaced
    display_pub = replaced.get("display_pub")
    if display_pub is not None:
        shell.display_pub = display_pub
    sys.stdout, sys.stderr = replaced.get("stdout"), replaced.get("stderr")
    app.init_io()
    # Whatever kept the kernel's streams (logging handlers, tqdm) writes to the new ones.
    for name in ("stdout", "stderr"):
        original, new = replaced.get(name), getattr(sys, name)
        for attribute in ("write", "writelines", "flush"):
            try:
                setattr(original, attribute, getattr(new, attribute))
            except Exception:
                pass
    try:
        app.init_signal()
    except Exception:
        pass
    type(old_kernel).clear_instance()
    app.init_kernel()
    kernel = app.kernel
    shell.kernel = kernel
    # Comms opened before keep working: they publish through the new kernel.
    manager = getattr(kernel, "comm_manager", None)
    if manager is not None:
        manager.kernel = kernel
        for comm in list(getattr(manager, "comms", {}).values()):
            try:
                comm.kernel = kernel
            except Exception:
                pass
    _restart_history_thread(shell)
    # crane's own message: the modules are here, the new kernel must serve their calls.
    for name, module in list(sys.modules.items()):
        serve = getattr(module, "serve_calls", None) if name.startswith("_crane_") else None
        if serve is not None:
            try:
                serve()
            except Exception:
                pass
    # The kernel's parent poller watched the process that started it; this one dies with the
    # proxy instead (``_die_with_peer``), whoever adopts it.
    app.poller = None
    kernel.start()
    atexit.register(_remove, connection_file, directory)
    return app, kernel, connection_file


def _restart_history_thread(shell):
    import threading

    history = getattr(shell, "history_manager", None)
    # The cache locks were held across the fork (``_hold_history_locks``): no thread of this
    # process will release them.
    for name in ("db_input_cache_lock", "db_output_cache_lock"):
        if hasattr(history, name):
            setattr(history, name, threading.Lock())
    thread = getattr(history, "save_thread", None)
    if thread is None or thread.is_alive():
        return
    try:
        from IPython.core.history import HistorySavingThread

        # A connection of its own, and a session of its own: the kernel it replaces wrote the
        # lines of the cells run since the snapshot under the old one. Not through
        # ``init_db``, which moves a history file it finds locked aside as corrupt.
        _reconnect_history(history)
        history.save_thread = HistorySavingThread(history)
        history.save_thread.start()
    except Exception:
        history.save_thread = None


def _reconnect_history(history):
    hist_file = str(getattr(history, "hist_file", ":memory:"))
    if not getattr(history, "enabled", False) or hist_file == ":memory:":
        return
    try:
        import sqlite3

        options = dict(detect_types=sqlite3.PARSE_DECLTYPES | sqlite3.PARSE_COLNAMES)
        options.update(getattr(history, "connection_options", {}) or {})
        connection = sqlite3.connect(hist_file, **options)
    except Exception:
        return
    try:
        history.new_session(connection)
    except Exception:
        # Locked for longer than sqlite waits: the lines go on under the old session.
        connection.close()
        return
    history.db = connection


def _set_death_signal(signum):
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signum), 0, 0, 0)
    except Exception:
        pass


def _remove(file, directory):
    for remove, path in ((os.unlink, file), (os.rmdir, directory)):
        try:
            if path is not None:
                remove(path)
        except OSError:
            pass


# The proxy's life: a kernel a takeover made dies with the process that asked for it.


def _die_with_peer(connection, connection_file, directory):
    """End this process (removing its connection file and directory) when the process at the
    other end of ``connection`` ends, whoever adopts this one meanwhile: a kernel's parent
    poller only sees a parent that changed, and under a child subreaper (systemd --user, a
    supervisor) the proxy's death makes the subreaper this kernel's parent, not init. The
    peer is watched through a pidfd (Linux 5.3), else by polling its start time; it is known
    to be the one that connected as long as the connection is open, which is checked after
    the pidfd is made, so that a pid reused meanwhile is not watched."""
    import socket
    import struct
    import threading

    try:
        size = struct.calcsize("3i")
        pid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, size))[0]
    except (AttributeError, OSError):
        # No peer credentials (not Linux): ipykernel's poller, which ends an orphan of init.
        from ipykernel.parentpoller import ParentPollerUnix

        ParentPollerUnix(parent_pid=0).start()
        return
    pidfd = None
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        started = _start_time(pid)
    poller = select.poll()
    poller.register(connection.fileno(), select.POLLIN | getattr(select, "POLLRDHUP", 0))
    if poller.poll(0):
        raise RuntimeError("the process that asked for the takeover hung up")

    def watch():
        if pidfd is not None:
            waiting = select.poll()
            waiting.register(pidfd, select.POLLIN)
            while not waiting.poll():
                pass
        else:
            while _start_time(pid) == started:
                time.sleep(1.0)
        _remove(connection_file, directory)
        os._exit(1)

    threading.Thread(target=watch, name="crane-proxy-watch", daemon=True).start()


def _start_time(pid):
    """A process's start time (field 22 of its stat), ``None`` once it is gone."""
    stat = _read_proc(f"/proc/{pid}/stat")
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


# Descriptors: what a takeover gives back of the kernel's open files, and what it cannot.

# The kernel's own descriptors (its pipes, its history database), as ``(fd, device, inode)``:
# read when the kernel is prepared, before its first cell, else at its first take.
_own_descriptors = None


def _kernel_descriptors():
    global _own_descriptors
    if _own_descriptors is None:
        _own_descriptors = {(fd, entry["dev"], entry["ino"]) for fd, entry in _open_descriptors().items()}
    return _own_descriptors


def _count_as_own(taken):
    """The descriptors the new kernel opened for itself by its first request (its pipes, its
    history database's new connection), counted among the kernel's own: a later return does
    not name them."""
    known = {(fd, entry["dev"], entry["ino"]) for fd, entry in taken.items()}
    own = _kernel_descriptors()
    for fd, entry in _open_descriptors().items():
        if (fd, entry["dev"], entry["ino"]) not in known:
            own.add((fd, entry["dev"], entry["ino"]))


def _open_descriptors():
    """The kernel's regular files and pipes beyond its standard streams (shared with the
    process that started it), by number: for each, its kind, and for a regular file its
    offset, whether it appends, its size and its modification time (a pipe, whether it is
    read from; sockets are the kernel's messaging's). A regular file's open file description is
    shared with the snapshot, so the offset is wherever the kernel leaves it."""
    import fcntl
    import stat

    found = {}
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return found
    standard = set()
    for fd in (0, 1, 2):
        try:
            standard.add((os.fstat(fd).st_dev, os.fstat(fd).st_ino))
        except OSError:
            pass
    for name in names:
        fd = int(name) if name.isdigit() else -1
        try:
            status = os.fstat(fd) if fd > 2 else None
        except OSError:
            continue
        if status is None or (status.st_dev, status.st_ino) in standard:
            continue
        entry = {"dev": status.st_dev, "ino": status.st_ino}
        if stat.S_ISREG(status.st_mode):
            try:
                offset = os.lseek(fd, 0, os.SEEK_CUR)
                flags = fcntl.fcntl(fd, fcntl.F_GETFL)
            except OSError:
                continue
            entry.update(kind="file", offset=offset, append=bool(flags & os.O_APPEND), size=status.st_size, mtime=status.st_mtime_ns)
        elif stat.S_ISFIFO(status.st_mode):
            try:
                readable = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_WRONLY
            except OSError:
                continue
            entry.update(kind="pipe", readable=readable)
        else:
            continue
        found[fd] = entry
    return found


def _same_description(fd, entry):
    try:
        status = os.fstat(fd)
    except OSError:
        return None
    return status if (status.st_dev, status.st_ino) == (entry["dev"], entry["ino"]) else None


def _not_given_back(taken):
    """What the rollback's line names, one phrase each: the files of the user's that were
    written since the take (what was written stays; the offset goes back), and the pipes the
    user's code reads from (what was read from them since is gone). Not the kernel's own
    descriptors, nor IPython's history database, whichever connection holds it."""
    phrases = []
    own = _kernel_descriptors()
    history = str(getattr(getattr(_shell(), "history_manager", None), "hist_file", ""))
    history = os.path.realpath(history) if history else ""
    history = {history + suffix for suffix in ("", "-journal", "-wal", "-shm")} if history else set()
    for fd, entry in sorted(taken.items()):
        status = _same_description(fd, entry)
        if status is None or (fd, entry["dev"], entry["ino"]) in own:
            continue
        try:
            name = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            name = f"descriptor {fd}"
        if name in history:
            continue
        if entry["kind"] == "file":
            if (status.st_size, status.st_mtime_ns) != (entry["size"], entry["mtime"]):
                where = "writes to it go to its end" if entry["append"] else f"its position is back at byte {entry['offset']}"
                phrases.append(
                    f"the file {name} keeps what was written to it since ({status.st_size} bytes, {entry['size']} before; {where})"
                )
        elif entry["readable"]:
            phrases.append(f"what was read since from the {entry['kind']} {name} (descriptor {fd}) is gone")
    return phrases


# Requests a new kernel serves before the proxy made it its kernel: they run nothing of the
# user's, and the files stay as the kernel the proxy still has left them.
_BEFORE_THE_SWITCH = ("kernel_info_request", "connect_request", "comm_info_request", "history_request", "is_complete_request")


def _give_back_at_first_request(kernel, taken):
    """Give the files their offsets back (``_give_back``) just before the new kernel handles
    its first request that can run code (a cell, a comm message, crane's own call): the proxy
    sends none before it switched to this kernel, having ended the one it replaces, whose
    files' descriptions this process shares; should the proxy not switch, nothing changed."""
    handlers = kernel.shell_handlers
    done = []

    def wrapped(handler):
        def handle(*args, **kwargs):
            if not done:
                done.append(True)
                try:
                    _count_as_own(taken)
                    _give_back(taken)
                except Exception:
                    pass  # the request is served all the same: a kernel that hangs is worse
            return handler(*args, **kwargs)

        return handle

    for name, handler in list(handlers.items()):
        if name not in _BEFORE_THE_SWITCH:
            handlers[name] = wrapped(handler)


def _give_back(taken):
    """Each regular file's offset as it was at the take (its reads resume there, its writes
    go there), and no output written twice: a file object that appends holds, in this copy,
    what it had not flushed at the take, which the replaced kernel may have written since."""
    grown = {}
    for fd, entry in taken.items():
        status = _same_description(fd, entry) if entry["kind"] == "file" else None
        if status is None:
            continue
        try:
            os.lseek(fd, entry["offset"], os.SEEK_SET)
        except OSError:
            continue
        if entry["append"] and status.st_size > entry["size"]:
            grown[fd] = entry
    if grown:
        _drop_appended_twice(grown)


def _drop_appended_twice(grown):
    """For the file objects over appending files that grew since the take: what they hold
    unflushed is taken out by flushing it into a memory file that stands in for the file at
    the take (same size, same offset, appending); where the file holds exactly those bytes at
    its end of then, the replaced kernel wrote them and they are dropped, else they go back
    into the object's buffer. Only the io module's own classes, by exact type: a subclass's
    ``flush`` is the user's code."""
    text, buffered = [], []
    for value in gc.get_objects():
        cls = type(value)
        if cls is io.TextIOWrapper:
            text.append(value)
        elif cls is io.BufferedWriter or cls is io.BufferedRandom:
            buffered.append(value)
    for fd, entry in grown.items():
        over = [value for value in text + buffered if _fileno(value) == fd]
        if not over:
            continue
        try:
            unflushed, written = _unflushed(fd, entry, over)
        except OSError:
            continue
        for value in over:
            if type(value) is not io.TextIOWrapper:
                try:
                    value.tell()  # its idea of the raw offset, from the file itself again
                except (OSError, ValueError):
                    pass
        if unflushed and written != unflushed:
            owner = next((value for value in over if type(value) is not io.TextIOWrapper), None)
            if owner is not None:
                owner.write(unflushed)


def _unflushed(fd, entry, over):
    """What the file objects ``over`` the appending file ``fd`` hold unflushed, flushed into
    a stand-in of the file at the take, and what the file holds where those bytes went then."""
    import fcntl

    saved = os.dup(fd)
    inheritable = os.get_inheritable(fd)
    try:
        stand_in = os.memfd_create("crane-unflushed", os.MFD_CLOEXEC)
    except OSError:
        os.close(saved)
        raise
    try:
        os.ftruncate(stand_in, entry["size"])
        os.lseek(stand_in, entry["offset"], os.SEEK_SET)
        fcntl.fcntl(stand_in, fcntl.F_SETFL, os.O_APPEND)
        os.dup2(stand_in, fd, inheritable)
        try:
            for value in over:
                try:
                    value.flush()
                except (OSError, ValueError):
                    pass
        finally:
            os.dup2(saved, fd, inheritable)
        unflushed = os.pread(stand_in, os.fstat(stand_in).st_size - entry["size"], entry["size"])
        written = _read_at(fd, len(unflushed), entry["size"])
    finally:
        os.close(saved)
        os.close(stand_in)
    return unflushed, written


def _read_at(fd, length, offset):
    """What the file open as ``fd`` holds there, read through a description of its own (``fd``
    may be open for writing only); ``None`` when it cannot be read."""
    try:
        reader = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.pread(reader, length, offset)
    except OSError:
        return None
    finally:
        os.close(reader)


def _fileno(value):
    try:
        return value.fileno() if not value.closed else None
    except (OSError, ValueError):
        return None
