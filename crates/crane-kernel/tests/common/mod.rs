//! Shared helpers: the project interpreter and process checks.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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

/// Writes an executable `script` at `path`. The file is opened for writing only in a child
/// `sh`: a file this process held open for writing could be inherited by a process another
/// test thread forks at that moment, and running the script would then fail with "Text file
/// busy" (ETXTBSY) until that child execs.
pub fn write_executable(path: &Path, script: &str) {
    let mut writer = Command::new("/bin/sh")
        .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(path)
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::piped())
        .spawn()
        .expect("starts sh");
    writer
        .stdin
        .take()
        .expect("a pipe")
        .write_all(script.as_bytes())
        .expect("writes the script");
    assert!(
        writer.wait().expect("sh ends").success(),
        "{}",
        path.display()
    );
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
