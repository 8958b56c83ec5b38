"""crane's seal: the dry-run child can change nothing outside its own process.

Concatenated into the dry-run module; the child calls ``seal_child(keep_fds, filename)`` before
the cell and ``seal_report()`` after it. In order:

1. every shared mapping of ``/proc/self/maps`` (``np.memmap``, shared memory, ``MAP_SHARED``
   files, SysV segments) is replaced in place by a private one with the same bytes (a private
   map of the same file and offset, or a private copy moved over it), so writes stay here;
2. Landlock (when the kernel has it) denies opening for writing, creating, removing, renaming,
   truncating and making files anywhere, and TCP bind/connect; reads stay allowed;
3. a seccomp filter traps the calls that change the outside through what Landlock does not
   see: writes to descriptors other than ``keep_fds``, opens for writing, path changes, socket
   connects and sends, ``execve``, signals to other processes, ``ptrace``, writes to other
   processes' memory, ``io_uring``, writable shared mappings, SysV shared memory, and mounts
   and other administrator calls. A trapped call fails with ``EROFS``; a handler in machine
   code counts it and its system call, then raises a Python-level signal whose handler notes
   the cell's line, so crane knows of every attempt even when the cell swallowed the error;
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

# x86_64 system call numbers.
_SEAL_ALWAYS = {
    "creat": 85, "truncate": 76, "ftruncate": 77, "fallocate": 285, "rename": 82, "renameat": 264,
    "renameat2": 316, "mkdir": 83, "mkdirat": 258, "rmdir": 84, "link": 86, "linkat": 265,
    "unlink": 87, "unlinkat": 263, "symlink": 88, "symlinkat": 266, "mknod": 133, "mknodat": 259,
    "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "chown": 92, "fchown": 93,
    "lchown": 94, "fchownat": 260, "utime": 132, "utimes": 235, "utimensat": 280, "futimesat": 261,
    "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198,
    "fremovexattr": 199, "setxattrat": 463, "removexattrat": 466, "openat2": 437,
    "connect": 42, "sendto": 44, "sendmsg": 46, "sendmmsg": 307, "bind": 49, "listen": 50,
    "execve": 59, "execveat": 322, "ptrace": 101, "process_vm_writev": 311,
    "pidfd_send_signal": 424, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "shmat": 30, "msgsnd": 69, "semop": 65, "semtimedop": 220,
    "mq_timedsend": 242, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
    "swapon": 167, "swapoff": 168, "reboot": 169, "sethostname": 170, "setdomainname": 171,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "kexec_load": 246,
    "kexec_file_load": 320, "settimeofday": 164, "clock_settime": 227, "adjtimex": 159,
    "clock_adjtime": 305, "acct": 163, "quotactl": 179, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "setns": 308, "bpf": 321, "keyctl": 250, "add_key": 248, "request_key": 249,
    "remap_file_pages": 216, "vmsplice": 278, "process_madvise": 440,
}
# Calls that write to a descriptor, with the argument that names it.
_SEAL_FD_WRITES = {
    "write": (1, 0), "pwrite64": (18, 0), "writev": (20, 0), "pwritev": (296, 0),
    "pwritev2": (328, 0), "sendfile": (40, 0), "splice": (275, 2), "tee": (276, 1),
    "copy_file_range": (326, 2),
}
# Calls that signal a process, with the argument that names it.
_SEAL_SIGNALS = {"kill": (62, 0), "tkill": (200, 0), "tgkill": (234, 0), "rt_sigqueueinfo": (129, 0),
                 "rt_tgsigqueueinfo": (297, 0)}
# Opens, with the argument holding the flags.
_SEAL_OPENS = {"open": (2, 1), "openat": (257, 2)}
_SEAL_NAMES = {number: name for table in (_SEAL_FD_WRITES, _SEAL_SIGNALS, _SEAL_OPENS)
               for name, (number, _) in table.items()}
_SEAL_NAMES.update({number: name for name, number in _SEAL_ALWAYS.items()})
_SEAL_MMAP = 9
_SEAL_RING = 16  # a power of two: the trap handler masks the count with RING - 1
_SEAL_PATH_BYTES = 104  # of an open's path kept with its entry (128 bytes an entry)
_SEAL_AUDIT_ARCH_X86_64 = 0xC000003E
_SEAL_X32_BIT = 0x40000000

_seal_state = None


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
    """Seal this process (the dry-run child); raise OSError when it cannot be sealed."""
    global _seal_state
    import ctypes

    started = time.perf_counter()
    state = _SealState(filename)
    libc = ctypes.CDLL(None, use_errno=True)
    _seal_remap_shared(libc, state)
    _seal_audit(state)
    _seal_trap_handler(libc, state)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "no_new_privs")
    state.landlock = _seal_landlock(libc)
    _seal_seccomp(libc, sorted(set(keep_fds)))
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
    """A SIGSYS handler in machine code: count the trapped call, keep its number, first two
    arguments and an open's path in a ring of the last ``_SEAL_RING`` calls, make it fail with
    EROFS, then hand
    over to Python's own C signal handler for SEAL_SIGNAL, which wakes the Python-level handler
    below (once for calls trapped in a row, hence the ring)."""
    import ctypes
    import mmap

    signal.set_wakeup_fd(-1)  # Python's handler would write to it, a call the seal traps
    signal.signal(SEAL_SIGNAL, lambda signum, frame: _seal_noticed(state, frame))
    action = ctypes.create_string_buffer(152)  # glibc's struct sigaction on x86_64
    if libc.sigaction(SEAL_SIGNAL, None, action) != 0:
        raise OSError(ctypes.get_errno(), "sigaction")
    python_handler = int.from_bytes(action.raw[0:8], "little")
    state.page = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                           prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    base = ctypes.addressof(ctypes.c_char.from_buffer(state.page))
    counters = base + 1024
    code = b"".join((
        b"\x48\xb8" + counters.to_bytes(8, "little"),  # mov rax, counters
        b"\x41\xb8\x01\x00\x00\x00",  # mov r8d, 1
        b"\xf0\x4c\x0f\xc1\x00",  # lock xadd [rax], r8     r8: this call's place in the count
        b"\x49\x83\xe0" + (_SEAL_RING - 1).to_bytes(1, "little"),  # and r8, RING - 1
        b"\x49\xc1\xe0\x07",  # shl r8, 7                 128 bytes an entry
        b"\x4e\x8d\x44\x00\x20",  # lea r8, [rax + r8 + 32]
        b"\x8b\x4e\x18",  # mov ecx, [rsi+24]       siginfo's si_syscall
        b"\x49\x89\x08",  # mov [r8], rcx
        b"\x4c\x8b\x8a\x68\x00\x00\x00",  # mov r9, [rdx+104]   ucontext's RDI (first argument)
        b"\x4d\x89\x48\x08",  # mov [r8+8], r9
        b"\x4c\x8b\x92\x70\x00\x00\x00",  # mov r10, [rdx+112]  ucontext's RSI (second argument)
        b"\x4d\x89\x50\x10",  # mov [r8+16], r10
        b"\x41\xc6\x40\x18\x00",  # mov byte [r8+24], 0      no path
        # An open's path, copied now: the caller's buffer is gone when Python reads the ring.
        b"\x83\xf9" + _SEAL_OPENS["open"][0].to_bytes(1, "little"),  # cmp ecx, open
        b"\x74\x0b",  # je copy                   (the path is the first argument)
        b"\x81\xf9" + _SEAL_OPENS["openat"][0].to_bytes(4, "little"),  # cmp ecx, openat
        b"\x75\x22",  # jne done
        b"\x4d\x89\xd1",  # mov r9, r10             (the path is the second argument)
        b"\x45\x31\xdb",  # copy: xor r11d, r11d
        b"\x43\x8a\x0c\x19",  # loop: mov cl, [r9 + r11]
        b"\x43\x88\x4c\x18\x18",  # mov [r8 + r11 + 24], cl
        b"\x84\xc9",  # test cl, cl
        b"\x74\x0f",  # je done
        b"\x49\xff\xc3",  # inc r11
        b"\x49\x83\xfb" + (_SEAL_PATH_BYTES - 1).to_bytes(1, "little"),  # cmp r11, PATH_BYTES - 1
        b"\x72\xea",  # jb loop
        b"\x43\xc6\x44\x18\x18\x00",  # mov byte [r8 + r11 + 24], 0   a longer path, cut
        b"\x48\xc7\x82\x90\x00\x00\x00" + (-SEAL_ERRNO).to_bytes(4, "little", signed=True),  # done: RAX
        b"\xbf" + SEAL_SIGNAL.to_bytes(4, "little"),  # mov edi, SEAL_SIGNAL
        b"\x48\xb8" + python_handler.to_bytes(8, "little"),  # mov rax, Python's handler
        b"\xff\xe0",  # jmp rax
    ))
    if len(code) > 1024:
        raise OSError("the seal's trap handler does not fit its page")
    state.page[0 : len(code)] = code
    state.page = memoryview(state.page)[1024 : 1024 + 32 + 128 * _SEAL_RING]
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
        at = 32 + 128 * (index % _SEAL_RING)
        number = int.from_bytes(state.page[at : at + 8], "little")
        argument = int.from_bytes(state.page[at + 8 : at + 16], "little", signed=True)
        name = _SEAL_NAMES.get(number, f"system call {number}")
        path = bytes(state.page[at + 24 : at + 24 + _SEAL_PATH_BYTES]).split(b"\0", 1)[0]
        if name in ("open", "openat") and path:
            if _seal_own_thread_name(path):
                # Naming one of this process's threads (glibc's pthread_setname_np, as native
                # runtimes do for their pools) changes nothing outside; it fails and is ignored.
                continue
            name = f"{name} {path.decode(errors='replace')!r}"
        target = ""
        if name in _SEAL_FD_WRITES or name in ("ftruncate", "fallocate", "connect", "sendto", "sendmsg", "bind"):
            try:
                target = " to " + os.readlink(f"/proc/self/fd/{argument}")
            except OSError:
                target = f" to descriptor {argument}"
        state.note(f"{name}{target}", frame)


def _seal_own_thread_name(path):
    """``/proc/self/comm``, ``/proc/thread-self/comm`` or ``/proc/<this pid>/task/<tid>/comm``."""
    parts = path.split(b"/")
    if len(parts) not in (4, 6) or parts[0:2] != [b"", b"proc"] or parts[-1] != b"comm":
        return False
    if parts[2] not in (b"self", b"thread-self", str(os.getpid()).encode()):
        return False
    return len(parts) == 4 or (parts[3] == b"task" and parts[4].isdigit() and parts[2] != b"thread-self")


def _seal_seccomp(libc, keep_fds):
    import ctypes
    import struct

    allow, trap, errno_ = 0x7FFF0000, 0x00030000, 0x00050000 | SEAL_ERRNO
    program = []

    def op(code, k=0, jt=0, jf=0):
        program.append((code, jt, jf, k))

    def load(offset):
        op(0x20, offset)  # ld [offset]

    def argument(index):
        load(16 + 8 * index)

    load(4)
    op(0x15, _SEAL_AUDIT_ARCH_X86_64, 1, 0)
    op(0x06, errno_)
    load(0)
    op(0x35, _SEAL_X32_BIT, 0, 1)  # jge: x32 calls
    op(0x06, errno_)
    for number in sorted(_SEAL_ALWAYS.values()):
        op(0x15, number, 0, 1)
        op(0x06, trap)
    pid = os.getpid()
    for number, index in _SEAL_FD_WRITES.values():
        op(0x15, number, 0, 2 + len(keep_fds) + 1)
        argument(index)
        for position, fd in enumerate(keep_fds):
            op(0x15, fd, len(keep_fds) - position, 0)
        op(0x06, trap)
        op(0x06, allow)
    for number, index in _SEAL_SIGNALS.values():
        op(0x15, number, 0, 4)
        argument(index)
        op(0x15, pid, 1, 0)
        op(0x06, trap)
        op(0x06, allow)
    writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    for number, index in _SEAL_OPENS.values():
        op(0x15, number, 0, 4)
        argument(index)
        op(0x45, writing, 0, 1)  # jset
        op(0x06, trap)
        op(0x06, allow)
    op(0x15, _SEAL_MMAP, 0, 6)
    argument(3)
    op(0x45, 0x01, 0, 3)  # MAP_SHARED (and MAP_SHARED_VALIDATE)
    argument(2)
    op(0x45, 0x02, 0, 1)  # PROT_WRITE
    op(0x06, trap)
    op(0x06, allow)
    op(0x06, allow)
    filters = b"".join(struct.pack("<HBBI", *instruction) for instruction in program)
    buffer = ctypes.create_string_buffer(filters, len(filters))
    fprog = struct.pack("<HxxxxxxQ", len(program), ctypes.addressof(buffer))
    raw = ctypes.create_string_buffer(fprog, len(fprog))
    if libc.prctl(22, 2, raw, 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "seccomp")


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

_SEAL_WRITE_MODES = frozenset("wax+")
_SEAL_PATH_EVENTS = frozenset((
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod", "os.chown",
    "os.link", "os.symlink", "os.utime", "shutil.copyfile", "shutil.copymode", "shutil.copystat",
    "shutil.copytree", "shutil.move", "shutil.rmtree", "shutil.chown", "shutil.make_archive",
))
_SEAL_OUTSIDE_EVENTS = frozenset((
    "socket.connect", "socket.sendto", "socket.bind", "subprocess.Popen", "os.system", "os.exec",
    "os.posix_spawn", "os.spawn", "os.kill", "os.killpg", "pty.spawn",
    "webbrowser.open", "urllib.Request", "ftplib.connect", "smtplib.connect", "http.client.connect",
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
        elif event in _SEAL_PATH_EVENTS:
            state.note(f"{event} {args[0]!r}" if args else event)
        elif event in _SEAL_OUTSIDE_EVENTS:
            shown = args[1] if event.startswith("socket.") and len(args) > 1 else (args[0] if args else "")
            state.note(f"{event} {shown!r}")

    sys.dont_write_bytecode = True  # imports would try to write their caches
    sys.addaudithook(hook)
