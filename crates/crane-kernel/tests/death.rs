//! A real kernel killed by real causes, and the words crane finds for each: a segfault through
//! `ctypes`, `abort()`, and a real out-of-memory kill inside a memory cgroup the test makes
//! (cgroup v1 or v2, as the machine has; it needs root, as CI runs).

mod common;

use std::path::{Path, PathBuf};

use crane_kernel::{DeathCause, ExecuteOptions, KernelError, OwnedKernel};

/// The death the cell `code` causes in a fresh kernel.
async fn death_of(kernel: &mut OwnedKernel, code: &str) -> crane_kernel::Death {
    let error = kernel
        .execute(code, &ExecuteOptions::cell())
        .await
        .expect_err("the kernel dies");
    let KernelError::KernelDied {
        cause: DeathCause::Exited(death),
        ..
    } = error
    else {
        panic!("expected a kernel death, got {error}");
    };
    death
}

#[tokio::test]
async fn a_segfault_and_an_abort_are_named() {
    let mut kernel = common::start_kernel().await;
    let death = death_of(&mut kernel, "import ctypes\nctypes.string_at(0)").await;
    assert_eq!(death.signal(), Some(11));
    let text = death.to_string();
    assert!(
        text.contains("SIGSEGV") && text.contains("segmentation fault"),
        "{text}"
    );
    assert!(death.oom.is_none());
    drop(kernel);

    let mut kernel = common::start_kernel().await;
    let death = death_of(&mut kernel, "import os\nos.abort()").await;
    assert_eq!(death.signal(), Some(6));
    assert!(death.to_string().contains("SIGABRT"), "{death}");
}

#[tokio::test]
async fn a_sigkill_without_memory_pressure_is_not_called_an_oom_kill() {
    let mut kernel = common::start_kernel().await;
    let death = death_of(&mut kernel, "import os\nos.kill(os.getpid(), 9)").await;
    assert_eq!(death.signal(), Some(9));
    assert!(death.oom.is_none(), "{death}");
    assert!(death.to_string().contains("killed outright"), "{death}");
}

/// A memory cgroup of the test's own, removed on drop.
struct TestCgroup {
    dir: PathBuf,
    v2: bool,
}

impl TestCgroup {
    /// A cgroup limited to `bytes`, or `None` where this process may not make one.
    fn new(bytes: u64) -> Option<TestCgroup> {
        let name = format!("crane-death-test-{}", std::process::id());
        let candidates = [
            (Path::new("/sys/fs/cgroup/memory"), false),
            (Path::new("/sys/fs/cgroup"), true),
            (Path::new("/sys/fs/cgroup/unified"), true),
        ];
        for (root, v2) in candidates {
            let limit_file = if v2 {
                "memory.max"
            } else {
                "memory.limit_in_bytes"
            };
            if v2 && !root.join("cgroup.controllers").exists() {
                continue;
            }
            if !v2 && !root.join(limit_file).exists() {
                continue;
            }
            let dir = root.join(&name);
            if std::fs::create_dir(&dir).is_err() {
                continue;
            }
            let group = TestCgroup { dir, v2 };
            if std::fs::write(group.dir.join(limit_file), bytes.to_string()).is_ok() {
                if !v2 {
                    // No swap to escape into, where the machine has it.
                    let _ = std::fs::write(
                        group.dir.join("memory.memsw.limit_in_bytes"),
                        bytes.to_string(),
                    );
                }
                return Some(group);
            }
        }
        None
    }

    fn add(&self, pid: u32) {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
            .expect("move the kernel into the test's cgroup");
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // A cgroup can be removed once its processes are gone.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        eprintln!("left {} (v2: {})", self.dir.display(), self.v2);
    }
}

#[tokio::test]
async fn a_real_oom_kill_is_explained_with_memory_against_the_limit() {
    const LIMIT: u64 = 600 << 20;
    let Some(cgroup) = TestCgroup::new(LIMIT) else {
        assert!(
            !rustix::process::geteuid().is_root(),
            "root could not make a memory cgroup"
        );
        eprintln!("skipped: only root can make the memory cgroup this test needs");
        return;
    };
    let mut kernel = common::start_kernel().await;
    // Moved after its start, as a user would: the watch looks for the cgroup as a cell starts.
    cgroup.add(kernel.pid());
    let death = death_of(
        &mut kernel,
        "import time\nchunks = []\nwhile True:\n    chunks.append(bytearray(50 << 20))\n    time.sleep(0.02)",
    )
    .await;
    assert_eq!(death.signal(), Some(9), "{death}");
    let oom = death
        .oom
        .as_ref()
        .unwrap_or_else(|| panic!("not seen as an OOM kill: {death}"));
    let limit = oom.limit.as_ref().expect("the limit that applied");
    assert_eq!(limit.bytes, LIMIT, "{death}");
    assert_eq!(
        limit.cgroup.as_deref(),
        Some(cgroup.dir.as_path()),
        "{death}"
    );
    let peak = oom.peak_bytes.expect("a sampled peak");
    assert!(
        peak > LIMIT / 4 && peak <= LIMIT + (64 << 20),
        "peak {peak}: {death}"
    );
    let text = death.to_string();
    assert!(text.contains("out-of-memory killer"), "{text}");
    assert!(text.contains("600 MB limit of its memory cgroup"), "{text}");
    drop(kernel);
    drop(cgroup);
}
