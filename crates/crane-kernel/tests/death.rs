//! A real kernel killed by real causes, and the words crane finds for each: a segfault through
//! `ctypes`, `abort()`, and a real out-of-memory kill inside a memory cgroup the test makes
//! (cgroup v1 or v2, as the machine has; it needs root, as CI runs).

mod common;
mod support {
    pub mod cgroup;
}

use crane_kernel::{DeathCause, ExecuteOptions, KernelError, OwnedKernel};
use support::cgroup::TestCgroup;

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

/// Held by the tests that kill a kernel with SIGKILL: an OOM kill is told from another SIGKILL
/// by the machine's OOM kill counter (where the kernel's cgroup has none), which an OOM kill
/// this binary makes at the same moment would move.
static SIGKILLS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn a_sigkill_without_memory_pressure_is_not_called_an_oom_kill() {
    let _alone = SIGKILLS.lock().await;
    let mut kernel = common::start_kernel().await;
    let death = death_of(&mut kernel, "import os\nos.kill(os.getpid(), 9)").await;
    assert_eq!(death.signal(), Some(9));
    assert!(death.oom.is_none(), "{death}");
    assert!(death.to_string().contains("killed outright"), "{death}");
}

#[tokio::test]
async fn a_real_oom_kill_is_explained_with_memory_against_the_limit() {
    let _alone = SIGKILLS.lock().await;
    const LIMIT: u64 = 600 << 20;
    let Some(cgroup) = TestCgroup::new("death", LIMIT) else {
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
