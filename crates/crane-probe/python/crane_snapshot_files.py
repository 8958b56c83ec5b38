"""crane's snapshots and the kernel's open files: what a takeover gives back of them, and what it
cannot.

The kernel's open file descriptions are shared with its snapshot, so a file's offset is wherever
the kernel leaves it. The descriptors are read at the take, before the fork
(``_open_descriptors``); before the new kernel's first request that can run code, each regular
file gets the offset it had at the take back, without writing twice what the replaced kernel
flushed (``_give_back``); what cannot be given back, a file written since or a pipe read since,
is named in the rollback's line (``_not_given_back``). The kernel's own descriptors (its pipes,
its history database) are never named.
"""

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
