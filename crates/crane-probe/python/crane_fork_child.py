"""crane's fork, the child's side: what a forked child does before its role runs, so that nothing
it does reaches the kernel.

``_child`` puts the interpreter's own builtins back (the user's replacements come back around the
cell, ``_UserBuiltins``), moves into its own process group and dies with the parent; a child that
runs a cell is the first the OOM killer takes (one that runs beside the kernel's real run of the
cell is moved by its waiter to the processor time the kernel leaves idle, ``Forked.wait``). It
sets its alarm, detaches from
the kernel's messaging (streams, file descriptors 0-2, the display publisher, the display hook and
the IOPub thread all point at a pipe the parent reads, ``_detach``), calls ``gc.freeze``, makes
its descriptors its own (``crane_fds.py``), leaves one thread per native runtime (torch, each
OpenMP runtime), seals itself (the role's ``seal``), limits its address space, leaves crane's
guards and runs the role, whose report it writes to the parent. A role that first only waits (a
snapshot, which may become the kernel and keeps the kernel's descriptors) dies with the proxy
instead, is less likely than the kernel to be taken by the OOM killer, and gets the group, the
death and ``gc.freeze``, the rest but the descriptors when it acts (``Child.isolate``).

Standard library only; joined into the dry-run module after ``crane_fork.py``.
"""

# The child's own alarm, a second line of defence should the parent vanish.
ALARM_MARGIN_SECONDS = 2


def _child(role, shell, result_fd, output_fd):
    _originals_in_child()
    _after_fork_in_child()
    os.setpgid(0, 0)
    if role.waits:
        # A snapshot may outlive the kernel (the proxy makes it the kernel when the kernel
        # dies), never the process it names (the proxy): its wait polls ``death_fd``.
        role.death_fd = _die_with(role)
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


def _die_with(role):
    """A pidfd of ``role.dies_with`` (the kernel's parent before the fork), readable once it
    exits; ``None`` without one (no ``pidfd_open``: Python before 3.9, Linux before 5.3), where
    the child dies with the kernel as every other fork does. The child ends at once
    (``role.leave``) when that process is no longer the kernel's parent (nor, the kernel gone,
    its own): it may have exited, and its pid been reused, before the pidfd was opened; a
    parent seen after the opening proves it was not."""
    pid = getattr(role, "dies_with", None)
    if pid is None:
        _die_with_parent()
        return None
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        role.leave()
    except (AttributeError, OSError):
        _die_with_parent()
        return None
    parent = os.getppid()
    if parent != pid and _parent_of(parent) != pid:
        role.leave()
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
