"""crane's fork's descriptors: a fork that runs a cell ahead of the kernel gets descriptors of
its own, so that nothing it does through them reaches the kernel's.

A forked process shares every open file description with the kernel: a read through a file the
kernel opened moves the kernel's offset (the real run of ``for line in f:`` would then miss the
rows the fork read), a read from a pipe or a socket takes the kernel's data, and a setting
(``O_NONBLOCK``, a lock, a socket option, ``shutdown``) changes the kernel's descriptor. Before
the cell runs (``privatize_descriptors``, from ``crane_fork_child.py``'s ``_child``, for roles that run a
cell; a snapshot, which may become the kernel, keeps the kernel's):

- a regular file or a directory the kernel has open for reading gets a description of its own
  at the same offset (``/proc/self/fd/N`` opened again for reading only, moved over ``N``): the
  cell reads what the kernel would read, and the kernel's offset stays; one open for reading and
  writing can then only be read (the seal traps a write to it and says why);
- every other descriptor (pipes, sockets, eventfds, epoll, terminals, the kernel's ZeroMQ
  sockets, files open for writing only) is replaced by ``/dev/null`` opened ``O_PATH``, on which
  every call but ``close``, ``dup`` and ``fstat`` fails (``EBADF``); the kernel's description is
  no longer in the fork at all. The seal traps a call that names one and records which
  descriptor it was and why it is not the fork's;
- the numbers below the highest inherited one that were free are taken by ``O_PATH`` ``/dev/null``
  too, so that a descriptor the cell opens is numbered above them all and a filter can tell the
  fork's own descriptors from the kernel's with one comparison (``Descriptors.threshold``).

``keep`` (the fork's pipes to the parent and ``/dev/null`` on 0) stays as it is.
"""

import stat as _stat


class Descriptors:
    """The fork's descriptors below ``threshold`` once privatized: ``readable`` (its own, for
    every call), ``writable`` (its own and open for writing: the pipes to the parent) and
    ``why`` (of every descriptor replaced or reopened read-only: what it was in the kernel and
    why the fork may not use it)."""

    __slots__ = ("threshold", "readable", "writable", "why")

    def __init__(self, threshold, readable, writable, why):
        self.threshold = threshold
        self.readable = readable
        self.writable = writable
        self.why = why

    def describe(self, fd):
        return self.why.get(fd, f"descriptor {fd}, inherited from the kernel")


_descriptors = None


def privatize_descriptors(keep):
    """Make every inherited descriptor but ``keep`` the fork's own or unusable (see the module
    documentation); the result is also kept for the seal (``_descriptors``)."""
    global _descriptors
    import fcntl

    keep = set(keep)
    found = []
    for name in os.listdir("/proc/self/fd"):
        if name.isdigit():
            found.append(int(name))
    dead = os.open(os.devnull, os.O_PATH | os.O_CLOEXEC)
    open_fds = []
    for fd in sorted(found):
        if fd == dead:
            continue
        try:
            os.fstat(fd)
        except OSError:
            continue  # the listing's own descriptor, closed since
        open_fds.append(fd)
    threshold = max(open_fds + [dead]) + 1
    readable, writable, why = [], [], {}
    for fd in open_fds:
        if fd in keep:
            readable.append(fd)
            writable.append(fd)
            continue
        own, reason = _privatize(fd, dead, fcntl)
        if own:
            readable.append(fd)
        if reason is not None:
            why[fd] = reason
    # The free numbers below the threshold, so that every descriptor opened from now on is
    # numbered above it.
    for fd in range(threshold):
        if fd not in open_fds and fd != dead:
            try:
                os.dup2(dead, fd, inheritable=False)
            except OSError:
                pass  # a descriptor opened there later is taken for the kernel's: trapped
    why.setdefault(dead, "not open in the kernel")
    _descriptors = Descriptors(threshold, sorted(readable), sorted(writable), why)
    return _descriptors


def _privatize(fd, dead, fcntl):
    """Make ``fd`` the fork's own or unusable: whether the fork may read it, and why it changed
    (``None``: it did not, or it is the fork's own now and may be written as the kernel's)."""
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        target = "?"
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        mode = os.fstat(fd).st_mode
    except OSError:
        flags, mode = None, 0
    if flags is not None and flags & os.O_PATH:
        return True, None  # no offset, no data: only a name
    access = flags & os.O_ACCMODE if flags is not None else None
    if (_stat.S_ISREG(mode) or _stat.S_ISDIR(mode)) and access in (os.O_RDONLY, os.O_RDWR):
        try:
            offset = os.lseek(fd, 0, os.SEEK_CUR)
            kept = flags & (os.O_NONBLOCK | os.O_DIRECTORY | getattr(os, "O_NOATIME", 0))
            own = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC | kept)
            try:
                os.lseek(own, offset, os.SEEK_SET)
                os.dup2(own, fd, inheritable=False)
            finally:
                os.close(own)
        except OSError as error:
            reason = f"{target}, a file the kernel has open, could not be opened again ({error.strerror})"
        else:
            if access == os.O_RDONLY:
                return True, None
            return True, (
                f"{target}, open for reading and writing in the kernel, is open for reading only "
                "here: a write would change the kernel's file"
            )
    elif _stat.S_ISREG(mode):
        reason = f"{target}, a file the kernel has open for writing: a write would change it"
    else:
        reason = f"{target}, {_kind(target, mode)}"
    try:
        os.dup2(dead, fd, inheritable=False)
    except OSError:
        pass
    return False, reason


def _kind(target, mode):
    if target.startswith("pipe:"):
        return "a pipe the kernel shares: a read would take the kernel's data, a write or a setting would change it"
    if target.startswith("socket:") or _stat.S_ISSOCK(mode):
        return (
            "a socket of the kernel's: a read would take the kernel's data, a write would send, "
            "and a setting or a shutdown would change the kernel's connection"
        )
    if target.startswith("anon_inode:"):
        return f"the kernel's {target[len('anon_inode:'):].strip('[]')}: using it would change the kernel's"
    if _stat.S_ISCHR(mode):
        return "a device the kernel has open: using it would change the device or the kernel's use of it"
    return "a descriptor the kernel shares: using it would change the kernel's"
