"""crane's takeover: a snapshot (``crane_snapshot.py``) made the kernel, on new ports.

``_take_over`` makes, around the child's copy of the shell (namespace, history, execution count,
modules): a new ZeroMQ context, sockets on new ports with the kernel's key and signature scheme,
the IOPub, heartbeat, control and shell-channel threads, stdout, stderr and the display hooks on
the new session, a fresh event loop, IPython's history thread again; it answers with its
connection file and what a rollback cannot give back of the files the kernel holds open
(``_not_given_back``, ``crane_snapshot_files.py``). From the start it dies with the process that
asked for it (``_die_with_peer``), whoever adopts it meanwhile.
"""

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
        # No kernel serves from this directory: the connection file, if written, goes with it.
        _remove(os.path.join(directory, "kernel.json"), directory)
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
