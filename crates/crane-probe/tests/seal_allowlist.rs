//! The seal as an allowlist, against a real ipykernel: every x86_64 system call is either in an
//! allowed class or trapped and recorded; a fork reads files of its own and cannot use the
//! kernel's pipes, sockets, locks or limits; no at-fork hook runs in crane's forks. Each case
//! checks the kernel and the outside afterwards, and that no trapped call became a crash.

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

use common::{eval_silent, project_python, ran_within, run_cell, start_with_pid};

use crane_kernel::KernelSession;
use crane_probe::dry_run::{DryRunReport, DryRunResult};

struct Kernel {
    session: KernelSession,
}

impl Kernel {
    async fn start() -> Kernel {
        Kernel {
            session: start_with_pid().await.0,
        }
    }

    async fn cell(&mut self, code: &str) {
        run_cell(&mut self.session, code).await;
    }

    async fn eval(&mut self, expression: &str) -> String {
        eval_silent(&mut self.session, expression).await.0
    }

    async fn ran(&mut self, code: &str) -> DryRunReport {
        ran_within(&mut self.session, code, 60).await
    }

    /// A dry run the seal stopped: inconclusive, never a crash; what it names, joined.
    async fn blocked(&mut self, code: &str) -> String {
        let report = self.ran(code).await;
        let DryRunResult::Blocked { attempts, .. } = &report.result else {
            panic!("{code}: not blocked: {report:?}");
        };
        assert!(
            attempts.iter().all(|attempt| attempt.line.is_some()),
            "{code}: {attempts:?}"
        );
        attempts
            .iter()
            .map(|attempt| attempt.what.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    }

    async fn passed(&mut self, code: &str) -> String {
        let report = self.ran(code).await;
        assert!(report.is_ok(), "{code}: {report:?}");
        report.stdout_tail
    }

    async fn close(self) {
        self.session.close().await.expect("shutdown");
    }
}

/// Whether another process can take an exclusive lock on `path` now (`flock` or `lockf`).
fn lockable(path: &std::path::Path, call: &str) -> bool {
    let script = format!(
        "import fcntl, sys\nf = open(sys.argv[1], 'a')\ntry:\n    fcntl.{call}(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept OSError:\n    sys.exit(3)"
    );
    let status = Command::new(project_python())
        .args(["-c", &script, path.to_str().expect("utf-8")])
        .status()
        .expect("python runs");
    match status.code() {
        Some(0) => true,
        Some(3) => false,
        other => panic!("lock probe ended with {other:?}"),
    }
}

#[tokio::test]
async fn every_x86_64_call_outside_the_allowed_classes_is_trapped_and_recorded() {
    let mut kernel = Kernel::start().await;
    // Not called: fork and vfork (were the filter to let them through, the first would
    // duplicate the sealed child, two processes writing one report, and the second would run a
    // copy on the child's own stack, returning into ctypes twice), and uretprobe and uprobe,
    // which Linux passes through every seccomp filter (they act on the process's own probes
    // only) and answers, outside its uprobe trampoline, with SIGILL (uretprobe) or ENXIO.
    // Everything else trapped is called with zero arguments: the filter decides on the number
    // alone.
    let code = "import ctypes, sys\n\
                crane = sys.modules['_crane_dryrun']\n\
                libc = ctypes.CDLL(None, use_errno=True)\n\
                libc.syscall.restype = ctypes.c_long\n\
                skipped = {crane.SYSCALL_NUMBERS[name] for name in ('fork', 'vfork', 'uretprobe', 'uprobe')}\n\
                numbers = [n for n in crane.trapped_numbers() if n not in skipped] + [max(crane.SYSCALL_NAMES) + 1, 511, 1000]\n\
                wrong = []\n\
                for number in numbers:\n    \
                    ctypes.set_errno(0)\n    \
                    result = libc.syscall(ctypes.c_long(number), 0, 0, 0, 0, 0, 0)\n    \
                    if result != -1 or ctypes.get_errno() != 30:\n        \
                        wrong.append((number, result, ctypes.get_errno()))\n\
                ctypes.set_errno(0)\n\
                x32 = libc.syscall(ctypes.c_long(0x40000000 | 39))\n\
                classified = len(crane.trapped_numbers()) + sum(1 for n in range(max(crane.SYSCALL_NAMES) + 1) if n not in crane.trapped_numbers())\n\
                print(len(numbers), wrong, x32, ctypes.get_errno(), classified == max(crane.SYSCALL_NAMES) + 1)";
    let report = kernel.ran(code).await;
    let DryRunResult::Blocked { attempts, .. } = &report.result else {
        panic!("{report:?}");
    };
    let printed: Vec<&str> = report.stdout_tail.split_whitespace().collect();
    let called: u64 = printed[0].parse().expect("count");
    // Every denied call failed with the seal's EROFS; an x32 call is refused with it untrapped.
    assert_eq!(
        printed[1..].join(" "),
        "[] -1 30 True",
        "{}",
        report.stdout_tail
    );
    assert!(called > 150, "{called}");
    // Each was trapped, none ran: the seal's count is exactly the calls made.
    assert_eq!(report.seal.as_ref().expect("sealed").trapped, called);
    assert_eq!(attempts[0].line, Some(10), "{attempts:?}");
    kernel.close().await;
}

#[tokio::test]
async fn allowed_calls_with_arguments_that_reach_outside_are_trapped() {
    let mut kernel = Kernel::start().await;
    kernel
        .cell("import ctypes, os, resource, fcntl, termios\nlimits = resource.getrlimit(resource.RLIMIT_NOFILE)\nnice = os.getpriority(os.PRIO_PROCESS, 0)\ncpus = os.sched_getaffinity(0)")
        .await;
    let libc = "libc = ctypes.CDLL(None, use_errno=True)\n";
    for (code, named) in [
        ("os.kill(os.getppid(), 0)", "os.kill"),
        (
            &*format!("{libc}libc.syscall(234, os.getppid(), os.getppid(), 0)"),
            "tgkill on process",
        ),
        (
            "resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (40, 40))",
            "prlimit64 on process",
        ),
        (
            "os.sched_setaffinity(os.getppid(), {0})",
            "sched_setaffinity on process",
        ),
        (
            "os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)",
            "setpriority of process",
        ),
        (
            &*format!("{libc}libc.syscall(56, 17, 0, 0, 0, 0)"),
            "clone of a new process",
        ),
        (
            &*format!("{libc}libc.syscall(28, 0, 4096, 9)"),
            "madvise with advice 9",
        ),
        (
            "fcntl.ioctl(0, termios.TIOCSTI, b'x')",
            "ioctl request 0x5412",
        ),
    ] {
        let what = kernel.blocked(code).await;
        assert!(what.contains(named), "{code}: {what}");
    }
    // The calls themselves stay allowed on the process itself.
    let own = "resource.setrlimit(resource.RLIMIT_NOFILE, (64, limits[1]))\nos.setpriority(os.PRIO_PROCESS, 0, nice + 1)\n\
               os.sched_setaffinity(0, cpus)\nimport signal\nsignal.signal(signal.SIGUSR1, lambda *a: print('signalled'))\n\
               os.kill(os.getpid(), signal.SIGUSR1)\nimport threading\nt = threading.Thread(target=lambda: print('thread'))\nt.start(); t.join()";
    assert_eq!(kernel.passed(own).await, "signalled\nthread\n");
    assert_eq!(
        kernel
            .eval("(resource.getrlimit(resource.RLIMIT_NOFILE) == limits, os.getpriority(os.PRIO_PROCESS, 0) == nice, os.sched_getaffinity(0) == cpus)")
            .await,
        "(True, True, True)"
    );
    kernel.close().await;
}

#[tokio::test]
async fn a_fork_reads_its_own_files_and_never_the_kernels_pipes_sockets_or_locks() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("address").port();
    let mut kernel = Kernel::start().await;
    let setup = format!(
        r#"
import os, socket, fcntl, subprocess, sqlite3, logging
import numpy as np
DIR = {dir:?}
with open(DIR + '/rows.txt', 'w') as _out:
    _out.write('header\n' + ''.join(f'{{i}}\n' for i in range(1000)))
f = open(DIR + '/rows.txt')
header = f.readline()
rw = open(DIR + '/rw.bin', 'w+b')
rw.write(b'kernel bytes')
rw.flush()
rw.seek(0)
p = subprocess.Popen(['seq', '1', '1000'], stdout=subprocess.PIPE, text=True)
p.wait()
a, b = socket.socketpair()
b.sendall(b'pending')
conn = socket.create_connection(('127.0.0.1', {port}))
lockf = open(DIR + '/flock', 'w')
fcntl.flock(lockf, fcntl.LOCK_EX)
plock = open(DIR + '/lockf', 'w')
fcntl.lockf(plock, fcntl.LOCK_EX)
db = sqlite3.connect(DIR + '/rows.db')
db.execute('create table t (x)')
db.execute('insert into t values (1)')
db.commit()
log = logging.getLogger('sealed')
log.addHandler(logging.FileHandler(DIR + '/run.log'))
log.warning('first')
mm = np.memmap(DIR + '/mm.bin', dtype='uint8', mode='w+', shape=(4096,))
mm[:] = 7
mm.flush()
def files():
    # Not the lockf file: closing any descriptor of it would drop the kernel's POSIX lock.
    return sorted((name, open(os.path.join(DIR, name), 'rb').read()) for name in os.listdir(DIR) if name != 'lockf')
before = files()
def ipc():
    return (open('/proc/sysvipc/shm').read(), open('/proc/sysvipc/msg').read(), open('/proc/sysvipc/sem').read(), sorted(os.listdir('/dev/shm')))
ipc_before = ipc()
"#,
        dir = dir.path().to_str().expect("utf-8"),
    );
    kernel.cell(&setup).await;
    let (mut peer, _) = listener.accept().expect("the kernel connects");

    // Regular files: the fork reads through a description of its own, from the kernel's offset.
    assert_eq!(
        kernel
            .passed("n = 0\nfor line in f:\n    n += 1\nprint(n, header.strip())")
            .await,
        "1000 header\n"
    );
    assert_eq!(
        kernel
            .passed("fcntl.fcntl(f, fcntl.F_SETFL, os.O_NONBLOCK)\nprint(rw.read(6))")
            .await,
        "b'kernel'\n"
    );
    // A file open for reading and writing in the kernel is the fork's for reading only, and a
    // shared mapping of it cannot be made writable.
    let what = kernel.blocked("rw.write(b'fork')\nrw.flush()").await;
    assert!(
        what.contains("rw.bin") && what.contains("reading only"),
        "{what}"
    );
    let mprotect = "import ctypes, mmap\nlibc = ctypes.CDLL(None, use_errno=True)\n\
                    libc.mmap.restype = ctypes.c_void_p\n\
                    libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)\n\
                    address = libc.mmap(None, 4096, mmap.PROT_READ, mmap.MAP_SHARED, rw.fileno(), 0)\n\
                    print(libc.mprotect(ctypes.c_void_p(address), 4096, mmap.PROT_READ | mmap.PROT_WRITE), ctypes.get_errno())";
    assert_eq!(kernel.passed(mprotect).await, "-1 13\n");
    assert_eq!(
        kernel.passed("mm[:] = 1\nprint(int(mm.sum()))").await,
        "4096\n"
    );

    // A semaphore multiprocessing would make under /dev/shm and unlink at once lives in the
    // fork's memory: emulated, not an attempt (the /dev/shm listing is checked below).
    assert_eq!(
        kernel
            .passed("import multiprocessing\nwith multiprocessing.Lock():\n    print('locked')")
            .await,
        "locked\n"
    );

    // Everything else the kernel has open is not the fork's: each use is an attempt, named.
    for (code, named) in [
        ("total = 0\nfor line in p.stdout:\n    total += int(line)", "pipe"),
        ("os.set_blocking(p.stdout.fileno(), False)", "pipe"),
        ("reply = a.recv(100)", "socket"),
        ("a.settimeout(5)", "socket"),
        ("conn.shutdown(socket.SHUT_RDWR)", "socket"),
        (
            "conn.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)",
            "socket",
        ),
        ("fcntl.flock(lockf, fcntl.LOCK_UN)", "flock"),
        ("fcntl.lockf(plock, fcntl.LOCK_UN)", "fcntl"),
        ("log.warning('second')", "run.log"),
        (
            "db.execute('insert into t values (2)')\ndb.commit()",
            "rows.db",
        ),
        (
            "import ctypes\nlibc = ctypes.CDLL(None)\nlibc.syscall.restype = ctypes.c_long\nsid = libc.syscall(29, 0, 1 << 20, 0o1000 | 0o600)",
            "shmget",
        ),
        (
            "import ctypes\nlibc = ctypes.CDLL(None)\nlibc.syscall.restype = ctypes.c_long\nq = libc.syscall(68, 0, 0o1000 | 0o600)",
            "msgget",
        ),
        (
            "from multiprocessing import shared_memory\nshared_memory.SharedMemory(create=True, size=4096)",
            "/dev/shm",
        ),
        (
            "import ctypes\nlibc = ctypes.CDLL(None)\nctx = ctypes.c_ulong(0)\nlibc.syscall(206, 8, ctypes.byref(ctx))",
            "io_setup",
        ),
        (
            "import ctypes\nparams = ctypes.create_string_buffer(120)\nctypes.CDLL(None).syscall(425, 8, params)",
            "io_uring_setup",
        ),
    ] {
        let what = kernel.blocked(code).await;
        assert!(what.contains(named), "{code}: {what}");
    }

    // The kernel's state is as it was: offsets, flags, pending data, connection, locks, rows.
    assert_eq!(
        kernel
            .eval("(f.tell() == len(header), fcntl.fcntl(f, fcntl.F_GETFL) & os.O_NONBLOCK, rw.tell(), os.get_blocking(a.fileno()), conn.gettimeout(), conn.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE), os.get_blocking(p.stdout.fileno()))")
            .await,
        "(True, 0, 0, True, None, 0, True)"
    );
    assert_eq!(
        kernel
            .eval("(sum(int(line) for line in p.stdout), a.recv(100), db.execute('select count(*) from t').fetchone()[0], files() == before, ipc() == ipc_before, int(mm.sum()))")
            .await,
        format!("(500500, b'pending', 1, True, True, {})", 7 * 4096)
    );
    peer.set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let mut buffer = [0u8; 8];
    let read = peer.read(&mut buffer);
    assert!(
        read.as_ref().is_err(),
        "the kernel's connection was shut down or written to: {read:?}"
    );
    assert!(!lockable(&dir.path().join("flock"), "flock"));
    assert!(!lockable(&dir.path().join("lockf"), "lockf"));
    kernel.close().await;
}

#[tokio::test]
async fn no_at_fork_hook_runs_in_crane_forks_and_randoms_stream_is_the_kernels() {
    let mut kernel = Kernel::start().await;
    kernel
        .cell(
            "import os, random, logging, threading\nrandom.seed(0)\nran_in_child = []\n\
             os.register_at_fork(after_in_child=lambda: ran_in_child.append(1))\n\
             logging.basicConfig()\nworker = threading.Thread(target=lambda: None)\nworker.start(); worker.join()",
        )
        .await;
    // The fork draws what the kernel would draw next, no user hook ran there, and threading and
    // logging work as after the standard library's own hooks.
    let code = "print(random.random(), ran_in_child)\nt = threading.Thread(target=lambda: print('thread'))\n\
                t.start(); t.join()\nprint(threading.main_thread() is threading.current_thread(), len(threading.enumerate()))\n\
                logging.getLogger('x').warning('logged')";
    let tail = kernel.passed(code).await;
    assert_eq!(
        tail,
        "0.8444218515250481 []\nthread\nTrue 1\nWARNING:x:logged\n"
    );
    assert_eq!(
        kernel.eval("(random.random(), ran_in_child)").await,
        "(0.8444218515250481, [])"
    );
    // The kernel's own forks still run every hook.
    kernel
        .cell("child = os.fork()\nif child == 0:\n    os._exit(0 if ran_in_child else 1)\nassert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0")
        .await;
    kernel.close().await;
}

/// joblib's count of physical cores (which scikit-learn asks for its threads) runs `lscpu`, a
/// new process the seal traps: a sealed fork gets the count from `/sys` instead, the same
/// number, and the kernel's own cache stays as it was.
#[tokio::test]
async fn a_fork_counts_physical_cores_without_running_a_program() {
    let lscpu = Command::new("lscpu").arg("--parse=core").output().ok();
    let Some(lscpu) = lscpu.filter(|output| output.status.success()) else {
        eprintln!("skipped: no lscpu on this machine");
        return;
    };
    let expected: std::collections::HashSet<String> = String::from_utf8_lossy(&lscpu.stdout)
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(str::to_owned)
        .collect();
    let mut kernel = Kernel::start().await;
    kernel
        .cell("import joblib\nfrom joblib.externals.loky.backend import context")
        .await;
    let tail = kernel
        .passed("print(joblib.cpu_count(only_physical_cores=True))")
        .await;
    assert_eq!(tail, format!("{}\n", expected.len()));
    assert_eq!(kernel.eval("context.physical_cores_cache").await, "None");
    kernel.close().await;
}

/// A lookup of a user or a host through glibc tries its name service cache daemon's socket
/// first: the fork's connect there fails and the lookup reads the files, with no attempt
/// recorded. The cell's own connect to that socket, or to another, is still one.
#[tokio::test]
async fn name_lookups_read_the_files_and_the_cells_own_connects_are_attempts() {
    let mut kernel = Kernel::start().await;
    kernel.cell("import os, pwd, getpass, socket").await;
    let user = kernel.eval("pwd.getpwuid(os.getuid()).pw_name").await;
    let tail = kernel
        .passed("print(repr(pwd.getpwuid(os.getuid()).pw_name), getpass.getuser() != '', socket.gethostbyname('localhost'))")
        .await;
    assert_eq!(tail, format!("{user} True 127.0.0.1\n"));
    for path in ["/var/run/nscd/socket", "/tmp/other.sock"] {
        let code = format!(
            "s = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect({path:?})\nexcept OSError as e:\n    print(e.errno)"
        );
        let what = kernel.blocked(&code).await;
        assert!(what.contains(&format!("socket.connect '{path}'")), "{what}");
    }
    kernel.close().await;
}
