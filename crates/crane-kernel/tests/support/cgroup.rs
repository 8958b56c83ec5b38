//! A memory cgroup a test makes for a kernel it starts (v1 or v2, as the machine has; root
//! only), removed on drop. Shared by the tests that need a real out-of-memory limit: this
//! crate's `death.rs` and crane-probe's `memory_exhaustion.rs` (through `#[path]`).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// A memory cgroup of the test's own, removed on drop.
pub struct TestCgroup {
    pub dir: PathBuf,
}

impl TestCgroup {
    /// A cgroup named after `purpose` and this process, limited to `bytes` with no swap to
    /// escape into, or `None` where this process may not make one.
    pub fn new(purpose: &str, bytes: u64) -> Option<TestCgroup> {
        let name = format!("crane-{purpose}-test-{}", std::process::id());
        for (root, v2) in [
            (Path::new("/sys/fs/cgroup/memory"), false),
            (Path::new("/sys/fs/cgroup"), true),
            (Path::new("/sys/fs/cgroup/unified"), true),
        ] {
            let limit = if v2 {
                "memory.max"
            } else {
                "memory.limit_in_bytes"
            };
            let present = if v2 {
                root.join("cgroup.controllers").exists()
            } else {
                root.join(limit).exists()
            };
            if !present || std::fs::create_dir(root.join(&name)).is_err() {
                continue;
            }
            let group = TestCgroup {
                dir: root.join(&name),
            };
            if std::fs::write(group.dir.join(limit), bytes.to_string()).is_ok() {
                let swap = if v2 {
                    ("memory.swap.max", "0".to_owned())
                } else {
                    ("memory.memsw.limit_in_bytes", bytes.to_string())
                };
                let _ = std::fs::write(group.dir.join(swap.0), swap.1);
                return Some(group);
            }
        }
        None
    }

    /// Move process `pid` into the cgroup.
    pub fn add(&self, pid: u32) {
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
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("left {}", self.dir.display());
    }
}
