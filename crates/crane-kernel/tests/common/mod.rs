//! Shared helpers: the project interpreter and process checks.

#![allow(dead_code)]

use std::path::PathBuf;

use crane_kernel::{KernelLaunch, KernelOrigin, OwnedKernel, StartOptions};

/// The project's Python with ipykernel: `$CRANE_PYTHON`, else `<repo>/.venv/bin/python`.
pub fn project_python() -> PathBuf {
    if let Some(python) = std::env::var_os("CRANE_PYTHON").filter(|v| !v.is_empty()) {
        return PathBuf::from(python);
    }
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = repo.join(".venv/bin/python");
    assert!(
        python.exists(),
        "no project Python at {}; run `bash scripts/setup-python.sh` or set CRANE_PYTHON",
        python.display()
    );
    python
}

pub fn python_launch() -> KernelLaunch {
    KernelLaunch::python(project_python(), KernelOrigin::PythonFlag)
}

pub async fn start_kernel() -> OwnedKernel {
    OwnedKernel::start(&python_launch(), &StartOptions::default())
        .await
        .expect("kernel starts")
}

/// True while a process with this pid exists and is not a zombie.
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            state != Some("Z") && state != Some("X")
        }
        Err(_) => false,
    }
}

/// Wait up to two seconds for a process to be gone.
pub fn wait_gone(pid: u32) -> bool {
    for _ in 0..200 {
        if !process_alive(pid) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    false
}
