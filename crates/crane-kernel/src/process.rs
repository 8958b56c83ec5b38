//! The kernel process crane starts: spawned in its own process group (so a Ctrl-C in the
//! terminal reaches crane, not the kernel), stderr kept as a bounded tail for error messages,
//! and the whole group killed synchronously on drop so no kernel outlives its session.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::process::Signal;
use tokio::io::AsyncReadExt;
use tokio::task::JoinHandle;

use crate::channels::signal_group;
use crate::death::{Death, MemoryWatch};
use crate::error::KernelError;
use crate::resolve::KernelLaunch;

/// Bytes of kernel stderr kept for error messages.
const STDERR_TAIL_BYTES: usize = 8 * 1024;

/// How long to wait for the last stderr output after the kernel exited.
const STDERR_DRAIN_WAIT: Duration = Duration::from_millis(200);

/// How often the kernel's peak memory is read while it lives (one small `/proc` read).
const MEMORY_SAMPLE_INTERVAL: Duration = Duration::from_millis(250);

/// How long drop waits for the killed kernel to be reaped, so its pid is gone, not a zombie.
const REAP_WAIT: Duration = Duration::from_millis(500);

pub(crate) struct KernelProcess {
    child: tokio::process::Child,
    pid: i32,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_reader: JoinHandle<()>,
    exit_status: Option<ExitStatus>,
    group_killed: bool,
    /// Its memory, watched from outside to explain a death.
    memory: MemoryWatch,
    memory_sampler: JoinHandle<()>,
}

impl KernelProcess {
    pub(crate) fn spawn(
        launch: &KernelLaunch,
        connection_file: &Path,
        working_dir: Option<&Path>,
        extra_env: &[(OsString, OsString)],
    ) -> Result<KernelProcess, KernelError> {
        let argv: Vec<OsString> = launch
            .argv
            .iter()
            .map(|arg| substitute(arg, connection_file, launch.resource_dir()))
            .collect();
        let program = argv[0].to_string_lossy().into_owned();
        let mut command = tokio::process::Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .envs(&launch.env)
            .envs(extra_env.iter().map(|(k, v)| (k, v)))
            // ipykernel exits on its own when this process disappears, even after SIGKILL.
            .env("JPY_PARENT_PID", std::process::id().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(dir) = working_dir {
            command.current_dir(dir);
        }
        let mut child = command
            .spawn()
            .map_err(|source| KernelError::Spawn { program, source })?;
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .ok_or_else(|| KernelError::Io {
                context: "the kernel process has no pid".into(),
                source: std::io::Error::other("exited before it could be observed"),
            })?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let stderr_reader = match child.stderr.take() {
            Some(mut pipe) => {
                let tail = Arc::clone(&stderr);
                tokio::spawn(async move {
                    let mut buffer = vec![0u8; 8192];
                    while let Ok(read @ 1..) = pipe.read(&mut buffer).await {
                        let Ok(mut tail) = tail.lock() else { return };
                        tail.extend_from_slice(&buffer[..read]);
                        let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
                        tail.drain(..excess);
                    }
                })
            }
            None => tokio::spawn(async {}),
        };
        let memory = MemoryWatch::new(pid.unsigned_abs());
        let memory_sampler = {
            let memory = memory.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(MEMORY_SAMPLE_INTERVAL);
                loop {
                    tick.tick().await;
                    memory.sample();
                }
            })
        };
        Ok(KernelProcess {
            child,
            pid,
            stderr,
            stderr_reader,
            exit_status: None,
            group_killed: false,
            memory,
            memory_sampler,
        })
    }

    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// The watch of its memory: mark it as a cell starts; it explains a death.
    pub(crate) fn memory(&mut self) -> &mut MemoryWatch {
        &mut self.memory
    }

    /// Its death, once it exited with `status`.
    pub(crate) fn death(&self, status: ExitStatus) -> Death {
        self.memory.death(status)
    }

    /// Wait until the process exits; cancel-safe.
    pub(crate) async fn wait_exit(&mut self) -> ExitStatus {
        if let Some(status) = self.exit_status {
            return status;
        }
        let status = match self.child.wait().await {
            Ok(status) => status,
            Err(_) => std::future::pending().await,
        };
        self.exit_status = Some(status);
        self.memory_sampler.abort();
        // Let the reader take in what the process wrote last before anyone reads the tail
        // (bounded: a process the kernel started may still hold the pipe open).
        if !self.stderr_reader.is_finished() {
            let _ = tokio::time::timeout(STDERR_DRAIN_WAIT, &mut self.stderr_reader).await;
        }
        status
    }

    /// The exit status if the process has exited, without waiting.
    pub(crate) fn try_exit_status(&mut self) -> Option<ExitStatus> {
        if self.exit_status.is_none() {
            self.exit_status = self.child.try_wait().ok().flatten();
        }
        self.exit_status
    }

    /// The last lines the kernel wrote to stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        let tail = match self.stderr.lock() {
            Ok(tail) => tail.clone(),
            Err(_) => return String::new(),
        };
        let text = String::from_utf8_lossy(&tail);
        let text = if tail.len() >= STDERR_TAIL_BYTES {
            text.split_once('\n').map_or(&*text, |(_, rest)| rest)
        } else {
            &text
        };
        text.to_string()
    }

    /// SIGKILL the whole process group and reap the kernel.
    pub(crate) async fn kill(&mut self) {
        let _ = signal_group(self.pid, Signal::KILL);
        self.group_killed = true;
        let _ = tokio::time::timeout(REAP_WAIT, self.wait_exit()).await;
    }

    /// Wait up to `grace` for the kernel to exit on its own, then kill what is left of its
    /// process group (the kernel if it hangs, and anything it started).
    pub(crate) async fn wait_or_kill(&mut self, grace: Duration) {
        let _ = tokio::time::timeout(grace, self.wait_exit()).await;
        self.kill().await;
    }
}

impl Drop for KernelProcess {
    fn drop(&mut self) {
        self.stderr_reader.abort();
        self.memory_sampler.abort();
        if !self.group_killed {
            // Even when the kernel itself is gone, processes it started may remain in its
            // group (Linux does not reuse a pid while its process group exists).
            let _ = signal_group(self.pid, Signal::KILL);
        }
        if self.exit_status.is_some() {
            return;
        }
        let deadline = std::time::Instant::now() + REAP_WAIT;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn substitute(arg: &str, connection_file: &Path, resource_dir: Option<&Path>) -> OsString {
    if arg == "{connection_file}" {
        return connection_file.as_os_str().to_owned();
    }
    let mut text = arg.replace("{connection_file}", &connection_file.to_string_lossy());
    if let Some(dir) = resource_dir {
        text = text.replace("{resource_dir}", &dir.to_string_lossy());
    }
    PathBuf::from(text).into_os_string()
}
