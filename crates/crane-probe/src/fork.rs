//! The fork of the kernel, seen from crane: the Python part that owns it, one file per job
//! (`python/crane_fork.py`: the only `os.fork` in crane, the parent's wait, reaping and the
//! `Role` a child plays once isolated; `python/crane_atfork.py`: the fork run with none of the
//! interpreter's at-fork hooks; `python/crane_fork_refusals.py`: why a kernel is not forked;
//! `python/crane_fork_child.py`: the child's isolation from the kernel's messaging, its process
//! group, death with the parent, per-runtime thread resets, limits; `python/crane_proc.py`: the
//! system's figures it reads; `python/crane_fds.py`: the descriptors of a fork that runs a cell
//! made its own; `python/crane_allowlist.py` and `python/crane_seal.py`: the seal) and what
//! every module built on it shares here: its source behind the guard and the call channel
//! ([`forked_module_source!`]), what the parent says of every fork ([`Forked`]) and how a
//! child process ended ([`ProcessEnd`]).
//!
//! It lives inside crane-probe rather than in a crate of its own because a module that forks is
//! injected and called like the probe (`module.rs`, crate-private): a crate of its own would
//! have to make that injection public for one caller. The dry run (`dry_run.rs`) is the first
//! role built on it.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;

/// The source of a kernel module whose roles run in a fork: the guard against user code, the
/// call channel, the fork, its descriptors and its seal, then the module's own parts in order
/// (paths relative to `src/`).
macro_rules! forked_module_source {
    ($($part:literal),+ $(,)?) => {
        concat!(
            include_str!("../python/crane_guard.py"),
            include_str!("../python/crane_channel.py"),
            include_str!("../python/crane_atfork.py"),
            include_str!("../python/crane_fork.py"),
            include_str!("../python/crane_fork_refusals.py"),
            include_str!("../python/crane_fork_child.py"),
            include_str!("../python/crane_proc.py"),
            include_str!("../python/crane_fds.py"),
            include_str!("../python/crane_allowlist.py"),
            include_str!("../python/crane_seal.py"),
            $(include_str!($part)),+
        )
    };
}
pub(crate) use forked_module_source;

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessEnd {
    Signal(i32),
    ExitCode(i32),
    Unknown,
}

impl ProcessEnd {
    pub(crate) fn from_status(signal: Option<i32>, exit_code: Option<i32>) -> Self {
        match (signal, exit_code) {
            (Some(signal), _) => ProcessEnd::Signal(signal),
            (None, Some(code)) => ProcessEnd::ExitCode(code),
            (None, None) => ProcessEnd::Unknown,
        }
    }
}

impl fmt::Display for ProcessEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcessEnd::Signal(signal) => write!(f, "killed by signal {signal}"),
            ProcessEnd::ExitCode(code) => write!(f, "exited with status {code}"),
            ProcessEnd::Unknown => f.write_str("ended"),
        }
    }
}

/// What the parent says of every fork, whatever the child's role: the fields of
/// `crane_fork.py`'s `Forked` a role's answer carries.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Forked {
    pub(crate) pid: u32,
    pub(crate) fork_ms: f64,
    pub(crate) teardown_ms: f64,
    pub(crate) stdout_tail: String,
    pub(crate) memory_limit_bytes: u64,
}

impl Forked {
    pub(crate) fn fork_time(&self) -> Duration {
        millis(self.fork_ms)
    }

    pub(crate) fn teardown_time(&self) -> Duration {
        millis(self.teardown_ms)
    }
}

pub(crate) fn millis(ms: f64) -> Duration {
    Duration::from_secs_f64(ms.max(0.0) / 1000.0)
}

/// A duration given in milliseconds, as the Python side writes them.
pub(crate) fn millis_field<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Duration, D::Error> {
    f64::deserialize(deserializer).map(millis)
}
