//! Error types: what went wrong while choosing, starting, attaching to or talking to a kernel.
//!
//! Every message names the file, interpreter or kernel involved and, where one command fixes
//! the problem, that command.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use crate::death::Death;

/// Why no kernel could be chosen from the CLI inputs.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// An interpreter named explicitly (or the active environment's) does not exist or cannot run.
    #[error("{origin} {} cannot be run: {reason}", python.display())]
    PythonUnusable {
        python: PathBuf,
        origin: crate::KernelOrigin,
        reason: String,
    },
    /// The interpreter runs but cannot import ipykernel.
    #[error(
        "{origin} {} cannot import ipykernel; fix: `{fix}`",
        python.display()
    )]
    IpykernelMissing {
        python: PathBuf,
        origin: crate::KernelOrigin,
        fix: String,
    },
    /// `--kernel NAME` names no kernelspec in the Jupyter data directories.
    #[error(
        "no kernelspec named `{name}` (available: {}); searched {}; list them with `jupyter kernelspec list`",
        if available.is_empty() { "none".to_string() } else { available.join(", ") },
        display_paths(searched)
    )]
    KernelspecNotFound {
        name: String,
        available: Vec<String>,
        searched: Vec<PathBuf>,
    },
    /// A kernelspec exists but its kernel.json cannot be used.
    #[error("kernelspec {} is unusable: {reason}", path.display())]
    KernelspecInvalid { path: PathBuf, reason: String },
    /// Nothing in the priority list gave a usable kernel.
    #[error(
        "no Python with ipykernel found (tried: {}); fix: `{fix}`, or pass --python PATH",
        tried.join("; ")
    )]
    NothingFound { tried: Vec<String>, fix: String },
}

/// Why a `--existing` connection file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionFileError {
    /// Neither a path nor a name in the Jupyter runtime directory.
    #[error(
        "no connection file `{existing}`: not a file, and not found in the Jupyter runtime directory {} (set JUPYTER_RUNTIME_DIR to look elsewhere)",
        runtime_dir.display()
    )]
    NotFound {
        existing: String,
        runtime_dir: PathBuf,
    },
    /// The file exists but cannot be read.
    #[error("cannot read connection file {}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid Jupyter connection file.
    #[error("connection file {} is not valid Jupyter connection JSON: {source}", path.display())]
    Malformed {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// The file is valid JSON but asks for something crane does not speak.
    #[error("connection file {} is not supported: {reason}", path.display())]
    Unsupported { path: PathBuf, reason: String },
}

/// How a kernel died.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeathCause {
    /// The kernel process crane started exited.
    Exited(Death),
    /// An attached kernel stopped answering heartbeats for this long.
    HeartbeatLost(Duration),
}

impl std::fmt::Display for DeathCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeathCause::Exited(death) => death.fmt(f),
            DeathCause::HeartbeatLost(silence) => write!(
                f,
                "the kernel stopped answering heartbeats for {:.1} s",
                silence.as_secs_f64()
            ),
        }
    }
}

/// Errors of a kernel session.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error(transparent)]
    ConnectionFile(#[from] ConnectionFileError),
    /// The kernel command could not be spawned at all.
    #[error("cannot start kernel command `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// The kernel process exited before it answered `kernel_info_request`.
    #[error(
        "the kernel exited during start ({status}){}{}",
        hint.as_deref().map(|h| format!("; fix: `{h}`")).unwrap_or_default(),
        stderr_section(stderr_tail)
    )]
    StartExited {
        status: ExitStatus,
        stderr_tail: String,
        hint: Option<String>,
    },
    /// The kernel process is running but did not answer in time.
    #[error(
        "the kernel did not answer kernel_info_request within {:.1} s{}",
        after.as_secs_f64(),
        stderr_section(stderr_tail)
    )]
    StartTimeout {
        after: Duration,
        stderr_tail: String,
    },
    /// Nothing listens on the ports of an existing kernel's connection file.
    #[error(
        "no kernel is listening at {address} (from {}); the connection file is probably stale",
        path.display()
    )]
    NotListening { path: PathBuf, address: String },
    /// An existing kernel accepted connections but did not answer.
    #[error(
        "the kernel of {} did not answer kernel_info_request within {:.1} s",
        path.display(),
        after.as_secs_f64()
    )]
    AttachTimeout { path: PathBuf, after: Duration },
    /// The kernel died (while executing, or before the request was sent).
    #[error("kernel died: {cause}{}", stderr_section(stderr_tail))]
    KernelDied {
        cause: DeathCause,
        stderr_tail: String,
    },
    /// A ZeroMQ socket or message failed.
    #[error("{channel} channel: {source}")]
    Channel {
        channel: &'static str,
        #[source]
        source: jupyter_zmq_client::RuntimeError,
    },
    /// The kernel sent something that breaks the protocol.
    #[error("{channel} channel: malformed `{msg_type}` message: {reason}")]
    Protocol {
        channel: &'static str,
        msg_type: String,
        reason: String,
    },
    /// A local file or process operation failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl KernelError {
    /// True when the error means the kernel is gone and the session cannot be used again.
    pub fn is_kernel_death(&self) -> bool {
        matches!(self, KernelError::KernelDied { .. })
    }
}

fn stderr_section(tail: &str) -> String {
    let tail = tail.trim_end();
    if tail.is_empty() {
        String::new()
    } else {
        format!("\nkernel stderr (last lines):\n{tail}")
    }
}

fn display_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "no directories".to_string();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
