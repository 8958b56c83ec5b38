"""crane's seal: the dry-run child can change nothing outside its own process.

Concatenated into the dry-run module; the child calls ``seal_child(keep_fds, filename)`` before
the cell, once ``crane_fds.py`` made its descriptors its own, and ``seal_report()`` after it. In
order:

1. every shared mapping of ``/proc/self/maps`` (``np.memmap``, shared memory, ``MAP_SHARED``
   files, SysV segments) is replaced in place by a private one with the same bytes (a private
   map of the same file and offset, or a private copy moved over it), so writes stay here;
2. Landlock (when the kernel has it) denies opening for writing, creating, removing, renaming,
   truncating and making files anywhere, and TCP bind/connect; reads stay allowed;
3. a seccomp filter (``crane_allowlist.py``) allows only the system calls that cannot change
   anything outside the process, and traps every other one: it fails with ``EROFS``; a handler
   in machine code keeps the call, its arguments and why it was trapped (the call, a descriptor
   the kernel shared, another argument), then raises a Python-level signal whose handler notes
   the call and the cell's line, so crane knows of every attempt even when the cell swallowed
   the error. What would be trapped though its effect cannot outlive the fork is emulated
   rather than allowed: ``multiprocessing``'s semaphores that it would create under
   ``/dev/shm`` and unlink at once live in the child's memory, and loky's count of the
   machine's physical cores (joblib's, which scikit-learn asks for its threads), which it would
   get by running ``lscpu``, is read from ``/sys`` before the filter is on;
4. Python audit hooks record the same attempts at Python level with what was tried (the file,
   the address, the program) and the cell's line. ``os.mkdir`` of a path that exists is no
   attempt: it fails with ``FileExistsError`` as it would unsealed, and nothing changed.

Only Linux on x86_64 is sealed; ``sealable()`` says whether this kernel can be.
"""

import errno

SEAL_SIGNAL = 34 + 5  # SIGRTMIN + 5: the Python-level notice of a trapped call
SEAL_ERRNO = 30  # EROFS
_SEAL_MAX_ATTEMPTS = 20
_SEAL_MAX_WHAT_CHARS = 300

_SEAL_OPENS = (SYSCALL_NUMBERS["open"], SYSCALL_NUMBERS["openat"])
_SEAL_CONNECT = SYSCALL_NUMBERS["connect"]
# glibc's name service cache daemon: a lookup of a user, a group or a host (``getpwuid``,
# ``getpass.getuser()``, ``gethostbyname``) first connects to its socket, with the size of a
# ``sockaddr_un``, and reads the files (``/etc/passwd``, ``/etc/hosts``) when that fails. The
# connect is trapped as every connect is; it is no attempt: the lookup then gives what the
# files say, as on a machine without the daemon, and nothing was sent.
_SEAL_NSCD_SOCKETS = (b"/var/run/nscd/socket", b"/run/nscd/socket")
_SEAL_SOCKADDR_UN_SIZE = 110
_SEAL_RING = 16  # a power of two: the trap handler masks the count with RING - 1
_SEAL_ENTRY = 256  # bytes of a ring entry: call, trap data, six arguments, an open's path
_SEAL_PATH_BYTES = 104  # of an open's path kept with its entry
# Devices a read-only open of which changes nothing outside (reading them takes nobody's data).
_SEAL_QUIET_DEVICES = frozenset(("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"))

_seal_state = None
# Built here, in the kernel, once: the child only patches its pid and adds its descriptors.
_static_filter(SEAL_ERRNO)


def sealable():
    """Why this kernel's dry runs cannot be sealed: empty when they can."""
    if not sys.platform.startswith("linux"):
        return [f"no seal on {sys.platform}: only Linux is sealed"]
    machine = os.uname().machine
    if machine != "x86_64":
        return [f"no seal on {machine}: only x86_64 is sealed"]
    try:
        with io.open("/proc/sys/kernel/seccomp/actions_avail") as actions:
            if "trap" not in actions.read().split():
                return ["this Linux has no seccomp trap action"]
    except OSError:
        return ["this Linux has no seccomp"]
    return []


class _SealState:
    def __init__(self, filename):
        self.filename = filename
        self.attempts = []
        self.trapped = 0
        self.page = None
        self.noticed = 0
        self.remapped = 0
        self.unsealed = []
        self.landlock = None
        self.ms = 0.0

    def note(self, what, frame=None):
        if len(self.attempts) >= _SEAL_MAX_ATTEMPTS:
            return
        self.attempts.append({"what": what[:_SEAL_MAX_WHAT_CHARS], "line": self.line(frame)})

    def line(self, frame):
        frame = frame if frame is not None else sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == self.filename:
                return frame.f_lineno
            frame = frame.f_back
        return None


def seal_child(keep_fds, filename):
    """Seal this process (the dry-run child); raise OSError when it cannot be sealed.
    ``keep_fds``, the child's pipes to the parent, must be among the descriptors
    ``privatize_descriptors`` left open for writing."""
    global _seal_state
    import ctypes

    started = time.perf_counter()
    if _descriptors is None or not set(keep_fds) <= set(_descriptors.writable):
        raise OSError("the fork's descriptors were not made its own")
    state = _SealState(filename)
    libc = ctypes.CDLL(None, use_errno=True)
    _seal_remap_shared(libc, state)
    _seal_audit(state)
    _seal_trap_handler(libc, state)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "no_new_privs")
    state.landlock = _seal_landlock(libc)
    _seal_private_semaphores(libc)
    _seal_physical_cores()
    _seal_seccomp(libc)
    state.ms = (time.perf_counter() - started) * 1000.0
    _seal_state = state


def seal_report():
    """What the seal saw, for the child's report."""
    state = _seal_state
    if state is None:
        return {}
    trapped = int.from_bytes(state.page[0:8], "little")
    return {
        "seal": {
            "attempts": state.attempts,
            "trapped": trapped,
            "remapped": state.remapped,
            "unsealed": state.unsealed,
            "landlock_abi": state.landlock,
            "ms": round(state.ms, 3),
        }
    }


# 1. Shared mappings.


def _seal_remap_shared(libc, state):
    import ctypes

    mmap_ = libc.mmap
    mmap_.restype = ctypes.c_void_p
    mmap_.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
    mremap = libc.mremap
    mremap.restype = ctypes.c_void_p
    mremap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p)
    mprotect = libc.mprotect
    mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    failed = ctypes.c_void_p(-1).value
    with io.open("/proc/self/maps") as maps:
        lines = maps.read().splitlines()
    for line in lines:
        fields = line.split(None, 5)
        if len(fields) < 5 or fields[1][3] != "s":
            continue
        start, end = (int(part, 16) for part in fields[0].split("-"))
        length = end - start
        perms = fields[1]
        prot = (1 if perms[0] == "r" else 0) | (2 if perms[1] == "w" else 0) | (4 if perms[2] == "x" else 0)
        offset = int(fields[2], 16)
        path = fields[5] if len(fields) > 5 else ""
        done = False
        if path.startswith("/") and not path.endswith(" (deleted)") and fields[4] != "0":
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                fd = None
            if fd is not None:
                # MAP_PRIVATE | MAP_FIXED: the same bytes, copied on the first write.
                done = mmap_(start, length, prot, 0x02 | 0x10, fd, offset) not in (None, failed)
                os.close(fd)
        if not done:
            copy = mmap_(None, length, 3, 0x02 | 0x20, -1, 0)  # private anonymous, read-write
            if copy in (None, failed):
                state.unsealed.append(line)
                continue
            if not prot & 1:
                mprotect(start, length, 1)
            ctypes.memmove(copy, start, length)
            mprotect(copy, length, prot)
            # MREMAP_MAYMOVE | MREMAP_FIXED: the copy takes the shared mapping's place.
            done = mremap(copy, length, length, 1 | 2, start) not in (None, failed)
        if done:
            state.remapped += 1
        else:
            state.unsealed.append(line)
    if state.unsealed:
        raise OSError(f"shared mappings could not be made private: {state.unsealed[:3]}")


# 2. Landlock.


def _seal_landlock(libc):
    import ctypes

    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    abi = syscall(ctypes.c_long(444), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return None
    handled_fs = 0
    for bit, since in ((1, 1), (4, 1), (5, 1), (6, 1), (7, 1), (8, 1), (9, 1), (10, 1), (11, 1),
                       (12, 1), (13, 2), (14, 3), (15, 5)):
        if abi >= since:
            handled_fs |= 1 << bit
    attr = [handled_fs]
    if abi >= 4:
        attr.append(1 | 2)  # bind and connect TCP
    if abi >= 6:
        attr.append(1 | 2)  # abstract unix sockets and signals outside this process
    raw = (ctypes.c_uint64 * len(attr))(*attr)
    ruleset = syscall(ctypes.c_long(444), ctypes.byref(raw), ctypes.c_size_t(ctypes.sizeof(raw)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        if syscall(ctypes.c_long(446), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return abi


# 3. seccomp.


def _seal_trap_handler(libc, state):
    """A SIGSYS handler in machine code: count the trapped call, keep its number, the trap's
    data (why the filter trapped it), its six arguments and an open's path (a connect's socket
    path) in a ring of the last
    ``_SEAL_RING`` calls, make it fail with EROFS, then hand over to Python's own C signal
    handler for SEAL_SIGNAL, which wakes the Python-level handler below (once for calls
    trapped in a row, hence the ring)."""
    import ctypes
    import mmap

    signal.set_wakeup_fd(-1)  # Python's handler would write to it, a call the seal traps
    signal.signal(SEAL_SIGNAL, lambda signum, frame: _seal_noticed(state, frame))
    action = ctypes.create_string_buffer(152)  # glibc's struct sigaction on x86_64
    if libc.sigaction(SEAL_SIGNAL, None, action) != 0:
        raise OSError(ctypes.get_errno(), "sigaction")
    python_handler = int.from_bytes(action.raw[0:8], "little")
    state.page = mmap.mmap(-1, 8192, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                           prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    base = ctypes.addressof(ctypes.c_char.from_buffer(state.page))
    counters = base + 1024
    # ucontext_t's saved registers of the call's arguments: RDI, RSI, RDX, R10, R8, R9.
    arguments = b"".join(
        b"\x4c\x8b\x8a" + register.to_bytes(4, "little")  # mov r9, [rdx + register]
        + b"\x4d\x89\x48" + (8 + 8 * index).to_bytes(1, "little")  # mov [r8 + 8 + 8 * index], r9
        for index, register in enumerate((104, 112, 136, 56, 40, 48))
    )
    code = b"".join((
        b"\x48\xb8" + counters.to_bytes(8, "little"),  # mov rax, counters
        b"\x41\xb8\x01\x00\x00\x00",  # mov r8d, 1
        b"\xf0\x4c\x0f\xc1\x00",  # lock xadd [rax], r8     r8: this call's place in the count
        b"\x49\x83\xe0" + (_SEAL_RING - 1).to_bytes(1, "little"),  # and r8, RING - 1
        b"\x49\xc1\xe0\x08",  # shl r8, 8                 256 bytes an entry
        b"\x4e\x8d\x44\x00\x20",  # lea r8, [rax + r8 + 32]
        b"\x8b\x4e\x18",  # mov ecx, [rsi+24]       siginfo's si_syscall
        b"\x49\x89\x08",  # mov [r8], rcx
        b"\x44\x8b\x4e\x04",  # mov r9d, [rsi+4]      siginfo's si_errno: the trap's data
        b"\x45\x89\x48\x04",  # mov [r8+4], r9d
        arguments,
        b"\x41\xc6\x40\x38\x00",  # mov byte [r8+56], 0      no path
        # An open's path, or the socket path a connect names, copied now: the caller's buffer
        # is gone when Python reads the ring.
        b"\x4d\x8b\x48\x08",  # mov r9, [r8+8]            open's path: the first argument
        b"\x83\xf9" + _SEAL_OPENS[0].to_bytes(1, "little"),  # cmp ecx, open
        b"\x74\x1c",  # je copy
        b"\x4d\x8b\x48\x10",  # mov r9, [r8+16]           openat's: the second
        b"\x81\xf9" + _SEAL_OPENS[1].to_bytes(4, "little"),  # cmp ecx, openat
        b"\x74\x10",  # je copy
        b"\x83\xf9" + _SEAL_CONNECT.to_bytes(1, "little"),  # cmp ecx, connect
        b"\x75\x2a",  # jne done
        # Only an address of a sockaddr_un's size: the copy stays inside it.
        b"\x49\x83\x78\x18" + _SEAL_SOCKADDR_UN_SIZE.to_bytes(1, "little"),  # cmp qword [r8+24], size
        b"\x75\x23",  # jne done
        b"\x49\x83\xc1\x02",  # add r9, 2                 connect's address: its sun_path
        b"\x45\x31\xdb",  # copy: xor r11d, r11d
        b"\x43\x8a\x0c\x19",  # loop: mov cl, [r9 + r11]
        b"\x43\x88\x4c\x18\x38",  # mov [r8 + r11 + 56], cl
        b"\x84\xc9",  # test cl, cl
        b"\x74\x0f",  # je done
        b"\x49\xff\xc3",  # inc r11
        b"\x49\x83\xfb" + (_SEAL_PATH_BYTES - 1).to_bytes(1, "little"),  # cmp r11, PATH_BYTES - 1
        b"\x72\xea",  # jb loop
        b"\x43\xc6\x44\x18\x38\x00",  # mov byte [r8 + r11 + 56], 0   a longer path, cut
        b"\x48\xc7\x82\x90\x00\x00\x00" + (-SEAL_ERRNO).to_bytes(4, "little", signed=True),  # done: RAX
        b"\xbf" + SEAL_SIGNAL.to_bytes(4, "little"),  # mov edi, SEAL_SIGNAL
        b"\x48\xb8" + python_handler.to_bytes(8, "little"),  # mov rax, Python's handler
        b"\xff\xe0",  # jmp rax
    ))
    if len(code) > 1024:
        raise OSError("the seal's trap handler does not fit its page")
    state.page[0 : len(code)] = code
    state.page = memoryview(state.page)[1024 : 1024 + 32 + _SEAL_ENTRY * _SEAL_RING]
    handler = bytearray(152)
    handler[0:8] = base.to_bytes(8, "little")
    handler[136:140] = (4).to_bytes(4, "little")  # SA_SIGINFO
    raw = ctypes.create_string_buffer(bytes(handler), 152)
    if libc.sigaction(31, raw, None) != 0:  # SIGSYS
        raise OSError(ctypes.get_errno(), "sigaction SIGSYS")


def _seal_noticed(state, frame):
    trapped = int.from_bytes(state.page[0:8], "little")
    first, state.noticed = state.noticed, trapped
    if trapped - first > _SEAL_RING:
        state.note(f"{trapped - first - _SEAL_RING} system calls trapped too fast to be told apart", frame)
        first = trapped - _SEAL_RING
    for index in range(first, trapped):
        at = 32 + _SEAL_ENTRY * (index % _SEAL_RING)
        entry = state.page[at : at + _SEAL_ENTRY]
        number = int.from_bytes(entry[0:4], "little")
        data = int.from_bytes(entry[4:8], "little")
        arguments = [int.from_bytes(entry[8 + 8 * i : 16 + 8 * i], "little") for i in range(6)]
        path = bytes(entry[56 : 56 + _SEAL_PATH_BYTES]).split(b"\0", 1)[0]
        what = _seal_what(number, data, arguments, path)
        if what is not None:
            state.note(what, frame)


def _seal_what(number, data, arguments, path):
    """What a trapped call tried, in words; ``None`` for a call that changes nothing outside."""
    name = SYSCALL_NAMES.get(number, f"system call {number}")
    if data & 0xFF00 == TRAP_DESCRIPTOR:
        fd = _seal_int(arguments[data & 0xFF])
        return f"{name} on descriptor {fd}: {_seal_descriptors().describe(fd)}"
    if name in ("open", "openat") and path:
        if _seal_own_thread_name(path):
            # Naming one of this process's threads (glibc's pthread_setname_np, as native
            # runtimes do for their pools) changes nothing outside; it fails and is ignored.
            return None
        return f"{name} {path.decode(errors='replace')!r}"
    if data & 0xFF00 == TRAP_ARGUMENT:
        return f"{name} {_seal_argument(name, arguments)}"
    if name == "connect" and path in _SEAL_NSCD_SOCKETS and arguments[2] == _SEAL_SOCKADDR_UN_SIZE:
        return None
    target = ""
    if name in ("ftruncate", "fallocate", "connect", "sendto", "sendmsg", "sendmmsg", "bind", "listen", "flock"):
        fd = _seal_int(arguments[0])
        if fd in _seal_descriptors().why:
            return f"{name} on descriptor {fd}: {_seal_descriptors().describe(fd)}"
        try:
            target = " on " + os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = f" on descriptor {fd}"
    return f"{name}{target}"


def _seal_int(value):
    """A 32-bit argument (a descriptor, a process id) as the kernel reads it."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _seal_argument(name, arguments):
    if name == "mmap":
        return f"of a writable shared mapping of descriptor {_seal_int(arguments[4])}"
    if name == "madvise":
        return f"with advice {_seal_int(arguments[2])}, which reaches past the process's own pages"
    if name == "fcntl":
        return f"command {_seal_int(arguments[1])} on {_seal_target(arguments[0])} (a lock, a lease or a signal other processes see)"
    if name == "ioctl":
        return f"request {arguments[1] & 0xFFFFFFFF:#x} on {_seal_target(arguments[0])}, which may change a device or a description"
    if name == "clone":
        return "of a new process (only threads are allowed)"
    if name in ("setpriority", "ioprio_set"):
        return f"of process {_seal_int(arguments[1])} (kind {_seal_int(arguments[0])})"
    return f"on process {_seal_int(arguments[0])}, not this one"


def _seal_target(argument):
    fd = _seal_int(argument)
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return f"descriptor {fd}"


def _seal_descriptors():
    return _descriptors if _descriptors is not None else Descriptors(0, [], [], {})


def _seal_own_thread_name(path):
    """``/proc/self/comm``, ``/proc/thread-self/comm`` or ``/proc/<this pid>/task/<tid>/comm``."""
    parts = path.split(b"/")
    if len(parts) not in (4, 6) or parts[0:2] != [b"", b"proc"] or parts[-1] != b"comm":
        return False
    if parts[2] not in (b"self", b"thread-self", str(os.getpid()).encode()):
        return False
    return len(parts) == 4 or (parts[3] == b"task" and parts[4].isdigit() and parts[2] != b"thread-self")


def _seal_seccomp(libc):
    import ctypes
    import struct

    if _descriptors is None:
        raise OSError("the fork's descriptors were not made its own")
    filters = seal_filter(_descriptors, os.getpid(), SEAL_ERRNO)
    buffer = ctypes.create_string_buffer(filters, len(filters))
    fprog = struct.pack("<HxxxxxxQ", len(filters) // 8, ctypes.addressof(buffer))
    raw = ctypes.create_string_buffer(fprog, len(fprog))
    if libc.prctl(22, 2, raw, 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "seccomp")


# Emulated: what would be trapped though its effect cannot outlive the fork.


class _SealSemLock:
    """``_multiprocessing.SemLock`` in the child: a semaphore that ``multiprocessing`` would
    create under ``/dev/shm`` and unlink at once (``unlink_now``, the fork context's locks, as
    scikit-learn's and joblib's imports make) lives in the child's own memory instead
    (``sem_init``, through ``SemLock._rebuild`` with no name): nothing outside sees either, and
    the open that makes its file would be trapped. A named one, which another process would
    open, is made by the real class (and trapped)."""

    def __init__(self, real, libc):
        self.real = real
        self.libc = libc
        self.kept = []

    def __call__(self, kind, value, maxvalue, name, unlink):
        import ctypes

        if not unlink:
            return self.real(kind, value, maxvalue, name, unlink)
        memory = ctypes.create_string_buffer(64)  # glibc's sem_t is 32 bytes on x86_64
        if self.libc.sem_init(memory, 0, ctypes.c_uint(value)) != 0:
            raise OSError(ctypes.get_errno(), "sem_init")
        self.kept.append(memory)  # lives as long as the child
        return self.real._rebuild(ctypes.addressof(memory), kind, maxvalue, None)

    def __getattr__(self, name):
        return getattr(self.real, name)


def _seal_private_semaphores(libc):
    try:
        import _multiprocessing
    except ImportError:
        return
    real = getattr(_multiprocessing, "SemLock", None)
    if real is not None and hasattr(real, "_rebuild"):
        _multiprocessing.SemLock = _SealSemLock(real, libc)


# loky's modules (joblib's copy, and loky on its own), which cache the machine's physical cores.
_SEAL_LOKY_CONTEXTS = ("joblib.externals.loky.backend.context", "loky.backend.context")


def _seal_physical_cores():
    """Where loky is imported and has not counted the machine's physical cores yet, count them
    as ``lscpu --parse=core`` would (one per distinct set of hardware threads sharing a core,
    over the online CPUs) from ``/sys``, and leave the count in loky's cache: its own count
    runs ``lscpu``, a new process the filter traps, and the dry run would be inconclusive for a
    question whose answer reading a file gives. Nothing is set where ``/sys`` does not answer."""
    contexts = [sys.modules.get(name) for name in _SEAL_LOKY_CONTEXTS]
    contexts = [module for module in contexts
                if module is not None and getattr(module, "physical_cores_cache", 0) is None]
    if not contexts or not sys.platform.startswith("linux"):
        return
    count = _seal_count_physical_cores("/sys/devices/system/cpu")
    if count:
        for module in contexts:
            module.physical_cores_cache = count


def _seal_count_physical_cores(root):
    """The physical cores of the online CPUs under ``root`` (``/sys/devices/system/cpu``),
    or None where it cannot tell."""
    try:
        with io.open(os.path.join(root, "online")) as online:
            ranges = online.read().strip()
        cpus = []
        for part in ranges.split(","):
            first, _, last = part.partition("-")
            cpus.extend(range(int(first), int(last or first) + 1))
        cores = set()
        for cpu in cpus:
            path = os.path.join(root, f"cpu{cpu}", "topology", "thread_siblings_list")
            with io.open(path) as siblings:
                cores.add(siblings.read().strip())
    except (OSError, ValueError):
        return None
    return len(cores) or None


# 4. Audit hooks.


def _seal_exists(args):
    """Whether ``os.mkdir``'s path (relative to the working directory, not to a ``dir_fd``)
    already exists, found by a read."""
    path, dir_fd = (tuple(args) + (None, None, None))[0], (tuple(args) + (None, None, None))[2]
    if dir_fd not in (None, -1):
        return False
    try:
        return os.path.lexists(path)
    except (TypeError, ValueError, OSError):
        return False

def _seal_takes_data(path, flags):
    """Whether opening ``path`` for reading opens a named pipe or a device whose reads take
    data (a terminal, a serial line): what the fork read, another process would not."""
    import stat

    if not isinstance(path, (str, bytes)) or (isinstance(flags, int) and flags & os.O_PATH):
        return False
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    if stat.S_ISFIFO(mode):
        return True
    return stat.S_ISCHR(mode) and os.path.realpath(os.fsdecode(path)) not in _SEAL_QUIET_DEVICES


_SEAL_WRITE_MODES = frozenset("wax+")
_SEAL_PATH_EVENTS = frozenset((
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod", "os.chown",
    "os.link", "os.symlink", "os.utime", "shutil.copyfile", "shutil.copymode", "shutil.copystat",
    "shutil.copytree", "shutil.move", "shutil.rmtree", "shutil.chown", "shutil.make_archive",
))
_SEAL_OUTSIDE_EVENTS = frozenset((
    "socket.connect", "socket.sendto", "socket.bind", "subprocess.Popen", "os.system", "os.exec",
    "os.posix_spawn", "os.spawn", "os.kill", "os.killpg", "pty.spawn", "os.fork", "os.forkpty",
    "webbrowser.open", "urllib.Request", "ftplib.connect", "smtplib.connect", "http.client.connect",
))


_SEAL_PROCESS_EVENTS = frozenset((
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "pty.spawn", "os.fork",
    "os.forkpty",
))


def _seal_audit(state):
    def hook(event, args):
        if event == "os.mkdir" and _seal_exists(args):
            # Nothing outside changes: the call fails as it would unsealed (a library making
            # its cache directory with exist_ok), not with the seal's EROFS.
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), args[0])
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writing = (isinstance(mode, str) and not _SEAL_WRITE_MODES.isdisjoint(mode)) or (
                isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND)
            )
            if writing:
                state.note(f"open {path!r} for writing")
            elif _seal_takes_data(path, flags):
                state.note(f"open {path!r}, a pipe or a device, for reading: a read would take data another process is owed")
                raise OSError(errno.EACCES, "a dry run reads no pipe or device", path)
        elif event in _SEAL_PATH_EVENTS:
            state.note(f"{event} {args[0]!r}" if args else event)
        elif event in ("os.kill", "os.killpg") and args and args[0] in (0, os.getpid()):
            pass  # a signal to the process itself (its group holds only it)
        elif event in _SEAL_OUTSIDE_EVENTS:
            shown = args[1] if event.startswith("socket.") and len(args) > 1 else (args[0] if args else "")
            state.note(f"{event} {shown!r}")
            if event in _SEAL_PROCESS_EVENTS:
                # A new process is trapped anyway, but ``subprocess`` blocks every signal around
                # its ``vfork``, and Linux kills a process whose trapped call finds SIGSYS
                # blocked: failing here keeps the attempt and its line.
                raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    sys.dont_write_bytecode = True  # imports would try to write their caches
    sys.addaudithook(hook)
