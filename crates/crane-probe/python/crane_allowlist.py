"""crane's seal, its system call filter: the calls a sealed child may make, and nothing else.

The filter allows only system calls that cannot change anything outside the process, in the
classes below, each argued where it is defined; every other call, including every number this
table does not know (a call newer than it), is trapped: it fails with ``EROFS``, the attempt is
recorded with the cell's line, and the dry run is inconclusive (``crane_seal.py`` owns the trap).
Where a call is harmless with some arguments and not with others, the filter compares them:
the descriptor it names (``crane_fds.py`` left the fork only descriptors of its own below
``Descriptors.threshold``, and every descriptor above it is one the child opened itself), the
process it names (only the child itself), the flags of an open, a mapping or a clone.

The table is x86_64's: ``seal_filter`` refuses (``OSError``) to build a filter for any other
architecture, so a dry run there is refused as unsealable rather than run unsealed.
"""

# x86_64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl): names from 0 up, a gap
# the 64-bit ABI does not use, then names from 424 up. Linux runs ``uretprobe`` and ``uprobe``
# past every seccomp filter (they act only on the process's own probes); they stay trapped here.
_X86_64_LOW = """
read write open close stat fstat lstat poll lseek mmap mprotect munmap brk rt_sigaction
rt_sigprocmask rt_sigreturn ioctl pread64 pwrite64 readv writev access pipe select sched_yield
mremap msync mincore madvise shmget shmat shmctl dup dup2 pause nanosleep getitimer alarm
setitimer getpid sendfile socket connect accept sendto recvfrom sendmsg recvmsg shutdown bind
listen getsockname getpeername socketpair setsockopt getsockopt clone fork vfork execve exit
wait4 kill uname semget semop semctl shmdt msgget msgsnd msgrcv msgctl fcntl flock fsync
fdatasync truncate ftruncate getdents getcwd chdir fchdir rename mkdir rmdir creat link unlink
symlink readlink chmod fchmod chown fchown lchown umask gettimeofday getrlimit getrusage sysinfo
times ptrace getuid syslog getgid setuid setgid geteuid getegid setpgid getppid getpgrp setsid
setreuid setregid getgroups setgroups setresuid getresuid setresgid getresgid getpgid setfsuid
setfsgid getsid capget capset rt_sigpending rt_sigtimedwait rt_sigqueueinfo rt_sigsuspend
sigaltstack utime mknod uselib personality ustat statfs fstatfs sysfs getpriority setpriority
sched_setparam sched_getparam sched_setscheduler sched_getscheduler sched_get_priority_max
sched_get_priority_min sched_rr_get_interval mlock munlock mlockall munlockall vhangup
modify_ldt pivot_root _sysctl prctl arch_prctl adjtimex setrlimit chroot sync acct settimeofday
mount umount2 swapon swapoff reboot sethostname setdomainname iopl ioperm create_module
init_module delete_module get_kernel_syms query_module quotactl nfsservctl getpmsg putpmsg
afs_syscall tuxcall security gettid readahead setxattr lsetxattr fsetxattr getxattr lgetxattr
fgetxattr listxattr llistxattr flistxattr removexattr lremovexattr fremovexattr tkill time futex
sched_setaffinity sched_getaffinity set_thread_area io_setup io_destroy io_getevents io_submit
io_cancel get_thread_area lookup_dcookie epoll_create epoll_ctl_old epoll_wait_old
remap_file_pages getdents64 set_tid_address restart_syscall semtimedop fadvise64 timer_create
timer_settime timer_gettime timer_getoverrun timer_delete clock_settime clock_gettime
clock_getres clock_nanosleep exit_group epoll_wait epoll_ctl tgkill utimes vserver mbind
set_mempolicy get_mempolicy mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify
mq_getsetattr kexec_load waitid add_key request_key keyctl ioprio_set ioprio_get inotify_init
inotify_add_watch inotify_rm_watch migrate_pages openat mkdirat mknodat fchownat futimesat
newfstatat unlinkat renameat linkat symlinkat readlinkat fchmodat faccessat pselect6 ppoll
unshare set_robust_list get_robust_list splice tee sync_file_range vmsplice move_pages utimensat
epoll_pwait signalfd timerfd_create eventfd fallocate timerfd_settime timerfd_gettime accept4
signalfd4 eventfd2 epoll_create1 dup3 pipe2 inotify_init1 preadv pwritev rt_tgsigqueueinfo
perf_event_open recvmmsg fanotify_init fanotify_mark prlimit64 name_to_handle_at
open_by_handle_at clock_adjtime syncfs sendmmsg setns getcpu process_vm_readv process_vm_writev
kcmp finit_module sched_setattr sched_getattr renameat2 seccomp getrandom memfd_create
kexec_file_load bpf execveat userfaultfd membarrier mlock2 copy_file_range preadv2 pwritev2
pkey_mprotect pkey_alloc pkey_free statx io_pgetevents rseq uretprobe uprobe
"""
_X86_64_HIGH_FROM = 424
_X86_64_HIGH = """
pidfd_send_signal io_uring_setup io_uring_enter io_uring_register open_tree move_mount fsopen
fsconfig fsmount fspick pidfd_open clone3 close_range openat2 pidfd_getfd faccessat2
process_madvise epoll_pwait2 mount_setattr quotactl_fd landlock_create_ruleset landlock_add_rule
landlock_restrict_self memfd_secret process_mrelease futex_waitv set_mempolicy_home_node
cachestat fchmodat2 map_shadow_stack futex_wake futex_wait futex_requeue statmount listmount
lsm_get_self_attr lsm_set_self_attr lsm_list_modules mseal setxattrat getxattrat listxattrat
removexattrat open_tree_attr file_getattr file_setattr
"""
SYSCALL_NAMES = dict(enumerate(_X86_64_LOW.split()))
SYSCALL_NAMES.update(enumerate(_X86_64_HIGH.split(), _X86_64_HIGH_FROM))
SYSCALL_NUMBERS = {name: number for number, name in SYSCALL_NAMES.items()}

# What the filter does with each call it allows. A call named in no class is trapped.
ALLOW = "allow"


def _fds(*indices, writes=()):
    """Allowed when each descriptor argument (by index) is the fork's own; ``writes``: those a
    call writes through, which must also be open for writing in the fork (its pipes)."""
    return ("fds", tuple((index, index in writes) for index in indices))


_RULES = {}


def _allow(rule, names):
    for name in names.split():
        _RULES[name] = rule


# Private memory. Every shared mapping the fork inherited is private (``crane_seal.py``, step 1)
# and a file the fork opens is open for reading only (below), so no mapping it has or makes can
# write a file: Linux clears a shared mapping's right to become writable when its file is not
# open for writing (``mprotect`` towards ``PROT_WRITE`` fails with ``EACCES``). ``mmap`` itself
# is checked (its descriptor must be the fork's; a shared writable mapping of a descriptor is
# trapped). ``madvise`` is allowed for the advice that concerns the process's own pages
# (``MADV_REMOVE``, which frees a file's blocks, and the administrator's page poisoning are not).
_allow(ALLOW, "munmap brk mprotect pkey_mprotect mremap msync mincore pkey_alloc pkey_free")
_allow(ALLOW, "mbind set_mempolicy get_mempolicy set_mempolicy_home_node membarrier")
_allow(ALLOW, "memfd_create memfd_secret map_shadow_stack mseal shmdt")
_RULES["mmap"] = ("mmap",)
_RULES["madvise"] = ("madvise",)

# Descriptors the fork owns: reading, seeking, asking about them, waiting on them, making new
# private ones (pipes, event, timer and signal descriptors, epoll and inotify instances, sockets
# that cannot reach anyone: ``connect``, ``bind``, ``listen`` and sending are trapped). A
# descriptor argument the kernel shared is trapped (``crane_fds.py`` replaced it, and the
# filter says which). Writes go only to descriptors open for writing in the fork: its pipes to
# the parent, and what it made itself (a private pipe).
_allow(_fds(0), "read pread64 readv preadv preadv2 lseek fstat fstatfs fsync fdatasync readahead")
_allow(_fds(0), "fadvise64 getdents getdents64 fchdir fgetxattr flistxattr dup")
_allow(_fds(0), "epoll_wait epoll_pwait epoll_pwait2 timerfd_settime timerfd_gettime signalfd signalfd4")
_allow(_fds(0), "inotify_add_watch inotify_rm_watch recvfrom recvmsg recvmmsg shutdown accept accept4")
_allow(_fds(0), "getsockname getpeername getsockopt setsockopt newfstatat statx readlinkat")
_allow(_fds(0), "faccessat faccessat2 getxattrat listxattrat")
_allow(_fds(0, 1), "dup2 dup3")
_allow(_fds(0, 2), "epoll_ctl")
_allow(_fds(0, writes=(0,)), "write pwrite64 writev pwritev pwritev2 vmsplice")
_allow(_fds(0, 1, writes=(0,)), "sendfile")
_allow(_fds(0, 1, writes=(1,)), "tee")
_allow(_fds(0, 2, writes=(2,)), "splice copy_file_range")
_allow(ALLOW, "poll ppoll select pselect6 pipe pipe2 eventfd eventfd2 timerfd_create")
_allow(ALLOW, "epoll_create epoll_create1 inotify_init inotify_init1 socket socketpair")
_RULES["fcntl"] = ("fcntl",)
_RULES["ioctl"] = ("ioctl",)
_RULES["close_range"] = ("close_range",)
# Closing a descriptor the kernel shared succeeds without closing it: the object that held it
# (a file, a socket) is closed for the cell, and its number stays taken, so that no descriptor
# the cell opens later is numbered as one of the kernel's.
_RULES["close"] = ("close",)

# Paths, read only: opening for reading (Landlock restricts the paths; a flag that writes,
# creates or truncates is trapped) and asking about files.
_allow(ALLOW, "stat lstat access readlink getcwd chdir statfs getxattr lgetxattr listxattr llistxattr")
_RULES["open"] = ("open", 1)
_RULES["openat"] = ("open", 2)

# Clocks, timers and sleeps of the process itself.
_allow(ALLOW, "clock_gettime clock_getres gettimeofday time nanosleep clock_nanosleep times")
_allow(ALLOW, "getitimer setitimer alarm timer_create timer_settime timer_gettime timer_getoverrun")
_allow(ALLOW, "timer_delete pause")

# Threads, futexes and scheduling inside the process. ``clone`` makes a thread (``CLONE_THREAD``)
# and nothing else: a new process is trapped. ``clone3`` keeps its flags in memory the filter
# cannot read: it fails with ``ENOSYS``, and glibc's thread creation falls back to ``clone``.
_allow(ALLOW, "futex futex_waitv futex_wake futex_wait futex_requeue set_robust_list set_tid_address")
_allow(ALLOW, "gettid sched_yield rseq arch_prctl set_thread_area get_thread_area getcpu")
_allow(ALLOW, "sched_getaffinity sched_getparam sched_getscheduler sched_get_priority_max")
_allow(ALLOW, "sched_get_priority_min sched_rr_get_interval sched_getattr getpriority ioprio_get")
_allow(ALLOW, "exit exit_group wait4 waitid restart_syscall")
_RULES["clone"] = ("clone",)
_RULES["clone3"] = ("enosys",)

# The process's own settings: a setting of another process (its priority, its CPUs, its
# limits, ``prlimit(getppid(), ...)``) is trapped; 0 names the caller.
for _name, _index in (("sched_setaffinity", 0), ("sched_setparam", 0), ("sched_setscheduler", 0),
                      ("sched_setattr", 0), ("prlimit64", 0)):
    _RULES[_name] = ("self", _index)
_RULES["setpriority"] = ("self_which", 0, 1)  # PRIO_PROCESS (0) only
_RULES["ioprio_set"] = ("self_which", 1, 1)  # IOPRIO_WHO_PROCESS (1) only
_allow(ALLOW, "getrlimit setrlimit getrusage prctl personality umask seccomp setpgid")
_allow(ALLOW, "landlock_create_ruleset landlock_add_rule landlock_restrict_self")

# Identity and the machine, read only.
_allow(ALLOW, "getpid getppid getpgrp getpgid getsid getuid geteuid getgid getegid getresuid")
_allow(ALLOW, "getresgid getgroups capget uname sysinfo getrandom lsm_get_self_attr lsm_list_modules")

# Signals to the process itself (``abort``, ``raise``, a thread's own signal): a signal to another
# process or process group is trapped. 0 is the child's own process group, which holds only it.
_allow(ALLOW, "rt_sigaction rt_sigprocmask rt_sigreturn rt_sigpending rt_sigtimedwait")
_allow(ALLOW, "rt_sigsuspend sigaltstack")
for _name in ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
    _RULES[_name] = ("self", 0)

unknown = sorted(set(_RULES) - set(SYSCALL_NUMBERS))
if unknown:
    raise ImportError(f"crane's allowlist names calls x86_64 does not have: {unknown}")

# Arguments compared.
_O_WRITING = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000  # O_WRONLY O_RDWR O_CREAT O_TRUNC O_APPEND
_MAP_SHARED, _MAP_ANONYMOUS, _PROT_WRITE, _CLONE_THREAD = 0x01, 0x20, 0x02, 0x10000
_MADV_REMOVE, _MADV_LAST_OWN = 9, 25
# fcntl commands on the fork's own descriptors: duplicating, descriptor and status flags,
# reading locks, leases, seals and pipe sizes, sealing its own memfd and sizing its own pipe.
# Taking a lock (F_SETLK, F_SETLKW, F_OFD_SETLK...) is trapped: other processes would see it.
_FCNTL_OWN = (0, 1, 2, 3, 4, 5, 9, 11, 16, 36, 1025, 1030, 1031, 1032, 1033, 1034)
# ioctl requests that only read or set the fork's own description: TCGETS (isatty), TIOCGPGRP,
# TIOCGWINSZ, FIONREAD, FIONBIO, FIONCLEX, FIOCLEX.
_IOCTL_OWN = (0x5401, 0x540F, 0x5413, 0x541B, 0x5421, 0x5450, 0x5451)
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_BIT = 0x40000000
ENOSYS = 38

# What a trap's data (``si_errno`` in the handler) says: the call is not allowed, a descriptor
# argument (its index in the low bits) is not the fork's, or another argument is not allowed.
TRAP_CALL, TRAP_DESCRIPTOR, TRAP_ARGUMENT = 0, 0x100, 0x200

_RET_ALLOW, _RET_TRAP, _RET_ERRNO = 0x7FFF0000, 0x00030000, 0x00050000
_LD, _JA, _JEQ, _JGT, _JGE, _JSET, _RET = 0x20, 0x05, 0x15, 0x25, 0x35, 0x45, 0x06
_MAX_INSTRUCTIONS = 4096


def trapped_numbers():
    """Every call number up to the table's last that the filter traps whatever its arguments
    (the numbers the 64-bit ABI does not use among them); every number above is trapped too."""
    return [number for number in range(max(SYSCALL_NAMES) + 1) if SYSCALL_NAMES.get(number) not in _RULES]


def seal_filter(descriptors, pid, errno):
    """The filter's classic BPF program (bytes) for this child: its own process id, and the
    descriptors ``crane_fds.py`` left it; trapped calls fail with ``errno``. Everything but the
    descriptor checks at its end is the same for every child: it is built once, in the kernel
    (``_static_filter``), and only patched here."""
    import struct

    if os.uname().machine != "x86_64":
        raise OSError(f"crane has no system call table for {os.uname().machine}")
    code, pid_slots, check_slots = _static_filter(errno)
    out = bytearray(code)
    for at in pid_slots:
        struct.pack_into("<I", out, 8 * at + 4, pid & 0xFFFFFFFF)
    position, starts, blocks = len(code) // 8, {}, []
    for key in sorted({key for _, key in check_slots}, key=repr):
        block = _Program()
        _emit_descriptor_check(block, key, descriptors)
        assembled = block.assemble()[0]
        starts[key] = position
        position += len(assembled) // 8
        blocks.append(assembled)
    for at, key in check_slots:
        struct.pack_into("<I", out, 8 * at + 4, starts[key] - at - 1)
    if position > _MAX_INSTRUCTIONS:
        raise OSError(f"the seal's filter has {position} instructions, more than the kernel takes")
    return bytes(out) + b"".join(blocks)


_static_filters = {}


def _static_filter(errno):
    """The filter up to its descriptor checks: the architecture, a binary search over the call
    number, each rule's argument checks (the child's pid left as 0, at ``pid_slots``) and the
    returns; ``check_slots``: the jumps to each descriptor check, by its key."""
    found = _static_filters.get(errno)
    if found is not None:
        return found
    program = _Program()
    program.load(4)
    program.jump(_JEQ, _AUDIT_ARCH_X86_64, None, "foreign")
    program.load(0)
    program.jump(_JGE, _X32_BIT, "foreign", None)
    last = max(SYSCALL_NAMES)
    program.jump(_JGT, last, "trap", None)
    intervals = []
    for number in range(last + 1):
        rule = _RULES.get(SYSCALL_NAMES.get(number, ""))
        label = "trap" if rule is None else "allow" if rule == ALLOW else f"call {number}"
        if intervals and intervals[-1][1] == label:
            continue
        intervals.append((number, label))
    program.search(intervals)
    for number in sorted(SYSCALL_NAMES):
        rule = _RULES.get(SYSCALL_NAMES[number])
        if rule is not None and rule != ALLOW:
            program.label(f"call {number}")
            _emit_rule(program, rule)
    program.label("allow")
    program.ret(_RET_ALLOW)
    program.label("trap")
    program.ret(_RET_TRAP | TRAP_CALL)
    program.label("argument")
    program.ret(_RET_TRAP | TRAP_ARGUMENT)
    program.label("enosys")
    program.ret(_RET_ERRNO | ENOSYS)
    program.label("foreign")
    program.ret(_RET_ERRNO | errno)
    found = _static_filters[errno] = program.assemble()
    return found


# Where the child's own pid goes in the static filter.
_PID = object()


def _emit_rule(program, rule):
    kind = rule[0]
    if kind == "fds":
        program.ja(program.checks(rule[1]))
    elif kind == "open":
        program.load_argument(rule[1])
        program.jump(_JSET, _O_WRITING, "trap", None)
        program.ja(program.checks(((0, False),)) if rule[1] == 2 else "allow")
    elif kind == "mmap":
        checked = program.checks(((4, False),))
        program.load_argument(3)
        program.jump(_JSET, _MAP_SHARED, None, checked)
        program.jump(_JSET, _MAP_ANONYMOUS, checked, None)
        program.load_argument(2)
        program.jump(_JSET, _PROT_WRITE, "argument", checked)
    elif kind == "madvise":
        program.load_argument(2)
        program.jump(_JEQ, _MADV_REMOVE, "argument", None)
        program.jump(_JGT, _MADV_LAST_OWN, "argument", "allow")
    elif kind in ("fcntl", "ioctl"):
        program.load_argument(1)
        checked = program.checks(((0, False),))
        for value in _FCNTL_OWN if kind == "fcntl" else _IOCTL_OWN:
            program.jump(_JEQ, value, checked, None)
        program.ja("argument")
    elif kind in ("close", "close_range"):
        program.ja(program.checks(kind))
    elif kind == "clone":
        program.load_argument(0)
        program.jump(_JSET, _CLONE_THREAD, "allow", "argument")
    elif kind == "enosys":
        program.ja("enosys")
    elif kind == "self":
        program.load_argument(rule[1])
        program.jump(_JEQ, 0, "allow", None)
        program.jump(_JEQ, _PID, "allow", "argument")
    elif kind == "self_which":
        program.load_argument(0)
        program.jump(_JEQ, rule[1], None, "argument")
        program.load_argument(rule[2])
        program.jump(_JEQ, 0, "allow", None)
        program.jump(_JEQ, _PID, "allow", "argument")
    else:
        raise OSError(f"crane's allowlist has an unknown rule {rule!r}")


def _emit_descriptor_check(program, key, descriptors):
    """A block that ends the filter's run: each descriptor argument of ``key`` is at or above
    the threshold (the fork opened it) or one of the fork's own below it, else the call is
    trapped with the argument's index. ``close`` of one of the kernel's succeeds without
    closing it; ``close_range`` from below the threshold is trapped."""
    if key in ("close", "close_range"):
        program.load_argument(0)
        program.jump(_JGE, descriptors.threshold, "ok", None)
        if key == "close":
            for fd in descriptors.readable:
                program.jump(_JEQ, fd, "ok", None)
            program.ret(_RET_ERRNO | 0)
        else:
            program.ret(_RET_TRAP | TRAP_DESCRIPTOR)
        program.label("ok")
        program.ret(_RET_ALLOW)
        return
    for index, writes in key:
        program.load_argument(index)
        passed = program.fresh()
        program.jump(_JGE, descriptors.threshold, passed, None)
        for fd in descriptors.writable if writes else descriptors.readable:
            program.jump(_JEQ, fd, passed, None)
        program.ret(_RET_TRAP | TRAP_DESCRIPTOR | index)
        program.label(passed)
    program.ret(_RET_ALLOW)


class _Program:
    """Classic BPF with forward labels. A conditional jump is emitted as the condition and one
    or two unconditional jumps (32-bit offsets), so no target is ever out of reach."""

    def __init__(self):
        self.code = []  # [code, jt, jf, k or label]
        self.labels = {}
        self.counter = 0

    def fresh(self):
        self.counter += 1
        return f"local {self.counter}"

    def checks(self, key):
        return ("fds", key)

    def label(self, name):
        if name in self.labels:
            raise OSError(f"label {name} twice")
        self.labels[name] = len(self.code)

    def load(self, offset):
        self.code.append([_LD, 0, 0, offset])

    def load_argument(self, index):
        self.load(16 + 8 * index)  # the low 32 bits: descriptors, process ids and flags

    def ret(self, value):
        self.code.append([_RET, 0, 0, value])

    def ja(self, label):
        self.code.append([_JA, 0, 0, label])

    def jump(self, op, k, true, false):
        if true is None and false is None:
            return
        if true is None:
            self.code.append([op, 1, 0, k])
            self.ja(false)
        elif false is None:
            self.code.append([op, 0, 1, k])
            self.ja(true)
        else:
            self.code.append([op, 0, 1, k])
            self.ja(true)
            self.ja(false)

    def search(self, intervals):
        """Jump to the label of the interval holding the call number (a binary search)."""
        if len(intervals) == 1:
            self.ja(intervals[0][1])
            return
        middle = len(intervals) // 2
        upper = self.fresh()
        self.jump(_JGE, intervals[middle][0], upper, None)
        self.search(intervals[:middle])
        self.label(upper)
        self.search(intervals[middle:])

    def assemble(self):
        """The program's bytes, the places of the child's pid (``_PID``) and of the jumps to
        descriptor checks, with their keys (both left 0)."""
        import struct

        if len(self.code) > _MAX_INSTRUCTIONS:
            raise OSError(f"the seal's filter has {len(self.code)} instructions, more than the kernel takes")
        out, pid_slots, check_slots = [], [], []
        for at, (code, jt, jf, k) in enumerate(self.code):
            if k is _PID:
                pid_slots.append(at)
                k = 0
            elif code == _JA and type(k) is tuple:
                check_slots.append((at, k[1]))
                k = 0
            elif code == _JA:
                target = self.labels[k]
                if target <= at:
                    raise OSError("the seal's filter jumps backwards")
                k = target - at - 1
            out.append(struct.pack("<HBBI", code, jt, jf, k))
        return b"".join(out), pid_slots, check_slots
