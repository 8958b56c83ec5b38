//! Kernel snapshots: an idle copy-on-write fork of the kernel taken before a cell runs, and its
//! takeover, which makes it the kernel (`python/crane_snapshot.py`, a second role on the fork
//! of `fork.rs`, in the dry-run module; the takeover in `python/crane_takeover.py`, the kernel's
//! open files given back in `python/crane_snapshot_files.py`).
//!
//! This module owns the calls into the kernel ([`take`], [`drop_snapshots`]), the command that
//! makes a snapshot the kernel ([`take_over`], through the snapshot's own Unix socket, never
//! through the kernel it replaces) and the judgement of whether a cell can change the kernel's
//! state at all ([`cannot_change_state`]); the proxy owns the list of snapshots, their ages,
//! their memory and the switch of its relay.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crane_analysis::ParsedCell;
use crane_kernel::KernelSession;
use ruff_python_ast::{Expr, Stmt};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::fork::millis;
use crate::module::{ByMessage, KernelModule};
use crate::run_answer::read_abridgeable_run_answer;
use crate::run_module::{self, DRY_RUN_MODULE, DRY_RUN_SOURCE};
use crate::run_report::{DryRunError, DryRunOutcome};

/// The dry-run module (where snapshots are a role) as far as a call message names it: its
/// private name and the digest of its source, as `run_module.rs` injects it.
const SNAPSHOT_MODULE: KernelModule = KernelModule {
    name: DRY_RUN_MODULE,
    source: DRY_RUN_SOURCE,
    digest: &run_module::DRY_RUN_DIGEST,
    filename: "<crane-dryrun-module>",
    key: "crane_dry_run",
};

/// The snapshot protocol version (`SNAPSHOT_PROTOCOL` in the Python module).
const SNAPSHOT_PROTOCOL: u64 = 1;

/// How long the kernel may take to fork (the page tables of a large kernel) and to hear that
/// the snapshot is ready, or to reap.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// What [`take`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Taken {
    /// The snapshot lives as process `pid`, reachable at `socket`.
    Snapshot {
        pid: u32,
        socket: PathBuf,
        /// The `fork()` call in the kernel.
        fork: Duration,
        /// From the fork to the snapshot's report that it is ready.
        ready: Duration,
    },
    /// A fork is unsafe in this kernel: the reasons, one sentence each.
    Refused { reasons: Vec<String> },
}

/// Answer of [`take`]: the snapshot, and the snapshots the kernel ended (asked to drop, or
/// found dead and reaped).
#[derive(Debug, Clone, PartialEq)]
pub struct TakeAnswer {
    pub taken: Taken,
    pub ended: Vec<u32>,
}

#[derive(Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
enum RawTake {
    Taken {
        pid: u32,
        socket: PathBuf,
        fork_ms: f64,
        ready_ms: f64,
        reaped: Vec<u32>,
        dropped: Vec<u32>,
    },
    Refused {
        reasons: Vec<String>,
        reaped: Vec<u32>,
        dropped: Vec<u32>,
    },
}

/// End the snapshots `drop` names, then fork a new one of the kernel as it is now.
pub async fn take(session: &mut KernelSession, drop: &[u32]) -> Result<TakeAnswer, DryRunError> {
    let answer = run_module::call(session, "take", &json!({ "drop": drop }), CALL_TIMEOUT).await?;
    take_answer(answer)
}

/// The message type and content of the request that [`take`] sends, for a caller that sends it
/// on a connection of its own and reads the reply with [`read_take_reply`] when it comes: the
/// kernel handles shell requests in order, so a cell sent right behind it on the same
/// connection runs after the fork. Only for a kernel that already holds this version of the
/// module and serves crane's call message (a [`take`] or [`prepare`] answered there before).
/// The snapshot listens at `socket` ([`take_socket`]): a caller whose kernel dies before the
/// reply arrives finds it there ([`snapshot_at`]).
pub fn take_message(drop: &[u32], socket: &Path) -> (&'static str, Value) {
    (
        TAKE_REQUEST,
        SNAPSHOT_MODULE.call_content("take", &json!({ "drop": drop, "socket": socket })),
    )
}

/// The message type of [`take_message`]'s request (crane's call message): a kernel that
/// serves it can be sent a take unwaited.
pub const TAKE_REQUEST: &str = crate::module::CALL_REQUEST;

/// The snapshot's socket in its private directory (`_listen` in `crane_snapshot.py`).
const SOCKET_FILE: &str = "control";

/// The connection file of the kernel a snapshot becomes, beside its socket
/// (`_rebuild_kernel` in `crane_takeover.py`): it holds the kernel's key.
const CONNECTION_FILE: &str = "kernel.json";

/// A path for the socket of a snapshot asked for with [`take_message`]: in a directory that
/// does not exist yet, which the kernel makes private (0700) and the snapshot removes when it
/// ends. Unique to this process and call; a name that exists after all makes the take refused,
/// never shared.
pub fn take_socket() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static TAKES: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos());
    let name = format!(
        "crane-snapshot-{}-{}-{nanos:09}",
        std::process::id(),
        TAKES.fetch_add(1, Ordering::Relaxed)
    );
    std::env::temp_dir().join(name).join(SOCKET_FILE)
}

/// The process of the snapshot listening at `socket`, asked through the socket (it stays a
/// snapshot): how a caller whose kernel died before the reply to [`take_message`]'s request
/// came learns whether the fork was made. Blocking: the caller runs it off its event loop.
///
/// Only a socket in a directory of this user's that no one else may enter is asked: the kernel
/// made that directory private; one that someone else made (the name taken before the kernel
/// could make it, which the kernel refuses) is not trusted to hold a snapshot.
pub fn snapshot_at(socket: &Path, timeout: Duration) -> Result<u32, TakeoverError> {
    #[derive(Deserialize)]
    struct Answer {
        pid: u32,
    }
    private_directory(socket)?;
    let line = ask(socket, "pid", timeout)?;
    let answer: Answer = serde_json::from_str(&line).map_err(TakeoverError::Malformed)?;
    Ok(answer.pid)
}

/// Whether `socket`'s directory is this user's and closed to everyone else (mode 0700 or less).
fn private_directory(socket: &Path) -> Result<(), TakeoverError> {
    private(socket.parent().unwrap_or(socket))
}

/// Whether `directory` is a directory (not a link to one) of this user's, closed to everyone
/// else (mode 0700 or less).
fn private(directory: &Path) -> Result<(), TakeoverError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let metadata = std::fs::symlink_metadata(directory).map_err(TakeoverError::Unreachable)?;
    let ours = metadata.uid() == rustix::process::geteuid().as_raw();
    if metadata.is_dir() && ours && metadata.permissions().mode() & 0o077 == 0 {
        return Ok(());
    }
    Err(TakeoverError::Failed(format!(
        "{} is not a private directory of this user's",
        directory.display()
    )))
}

/// Send `command` to the snapshot listening at `socket` and read its one-line answer (at most
/// `timeout`); an answer-less end is an error.
fn ask(socket: &Path, command: &str, timeout: Duration) -> Result<String, TakeoverError> {
    let mut stream = UnixStream::connect(socket).map_err(TakeoverError::Unreachable)?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(TakeoverError::Unreachable)?;
    stream
        .write_all(format!("{command}\n").as_bytes())
        .map_err(TakeoverError::Unreachable)?;
    let mut line = String::new();
    BufReader::new(&stream)
        .read_line(&mut line)
        .map_err(TakeoverError::Unreachable)?;
    if line.trim().is_empty() {
        return Err(TakeoverError::Failed(
            "it ended without an answer".to_owned(),
        ));
    }
    Ok(line)
}

/// Remove a snapshot's private directory (the parent of its socket) with what crane puts
/// there: the snapshot's socket and the connection file of the kernel it became. For the
/// process that owns it, or the one that outlives it once it is gone (killed by a signal, it
/// removes nothing itself); never while a snapshot or the kernel it became still uses it.
/// Only a private directory of this user's is touched, and it stays where it holds anything
/// else. Best effort.
pub fn remove_snapshot_directory(directory: &Path) {
    if private(directory).is_err() {
        return;
    }
    for name in [SOCKET_FILE, CONNECTION_FILE] {
        let _ = std::fs::remove_file(directory.join(name));
    }
    let _ = std::fs::remove_dir(directory);
}

/// Whether no process listens at `socket` (nothing is there, or nothing accepts), without
/// disturbing one that does: a snapshot that is asked nothing ends (`_Snapshot.run`), so a
/// connection that succeeds is told `pid`, which leaves it waiting.
pub fn nobody_listens(socket: &Path) -> bool {
    match UnixStream::connect(socket) {
        Ok(mut stream) => {
            let _ = stream.write_all(b"pid\n");
            false
        }
        Err(error) => matches!(
            error.kind(),
            std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
        ),
    }
}

/// Put the snapshot module into the kernel (unless this version is there) and call it once
/// through crane's call message; true when the kernel serves that message, so that even the
/// first [`take_message`] may be sent unwaited, with the cell behind it; the module does then
/// what its first take would do before the fork (`prepare` in `crane_snapshot.py`). The crane
/// kernel does this before it serves the frontend, where the first take would otherwise pay it.
pub async fn prepare(session: &mut KernelSession) -> Result<bool, DryRunError> {
    run_module::call(session, "prepare", &json!({}), CALL_TIMEOUT).await?;
    Ok(session.handles(crate::module::CALL_REQUEST))
}

/// How long the reply of [`take_message`]'s request may take: as long as [`take`] waits.
pub const TAKE_TIMEOUT: Duration = CALL_TIMEOUT;

/// The content of the reply to [`take_message`]'s request.
pub fn read_take_reply(reply: &Value) -> Result<TakeAnswer, DryRunError> {
    let text = match KernelModule::read_call_reply(reply)? {
        ByMessage::Answered(text) => text,
        ByMessage::Missing(_) | ByMessage::Unhandled => return Err(DryRunError::NotInjected),
    };
    let answer: Value = serde_json::from_str(&text).map_err(DryRunError::Malformed)?;
    match answer.get("protocol").and_then(Value::as_u64) {
        Some(SNAPSHOT_PROTOCOL) => take_answer(answer),
        found => Err(DryRunError::Protocol {
            found: found.unwrap_or(0),
        }),
    }
}

fn take_answer(answer: Value) -> Result<TakeAnswer, DryRunError> {
    Ok(
        match serde_json::from_value(answer).map_err(DryRunError::Malformed)? {
            RawTake::Taken {
                pid,
                socket,
                fork_ms,
                ready_ms,
                reaped,
                dropped,
            } => TakeAnswer {
                taken: Taken::Snapshot {
                    pid,
                    socket,
                    fork: millis(fork_ms),
                    ready: millis(ready_ms),
                },
                ended: dropped.into_iter().chain(reaped).collect(),
            },
            RawTake::Refused {
                reasons,
                reaped,
                dropped,
            } => TakeAnswer {
                taken: Taken::Refused { reasons },
                ended: dropped.into_iter().chain(reaped).collect(),
            },
        },
    )
}

/// End and reap the snapshots `pids` names; returns those the kernel ended or had reaped.
pub async fn drop_snapshots(
    session: &mut KernelSession,
    pids: &[u32],
) -> Result<Vec<u32>, DryRunError> {
    #[derive(Deserialize)]
    struct Dropped {
        dropped: Vec<u32>,
        reaped: Vec<u32>,
    }
    let answer = run_module::call(session, "drop", &json!({ "pids": pids }), CALL_TIMEOUT).await?;
    let answer: Dropped = serde_json::from_value(answer).map_err(DryRunError::Malformed)?;
    Ok(answer.dropped.into_iter().chain(answer.reaped).collect())
}

/// A snapshot that became a kernel: its process and its connection file (new ports, the key
/// and signature scheme of the kernel it replaces).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TookOver {
    pub pid: u32,
    pub connection_file: PathBuf,
    /// The shell's execution count: that of the cell the snapshot was taken before.
    pub execution_count: Option<usize>,
    /// What the return cannot give back of the files the kernel holds open, one phrase each:
    /// a file written since the snapshot (what was written stays; its offset goes back to
    /// that of the snapshot before the new kernel's first cell), a pipe read from.
    pub not_given_back: Vec<String>,
}

impl TookOver {
    /// The sentence for a rollback's line; empty when everything was given back.
    pub fn sentence(&self) -> String {
        if self.not_given_back.is_empty() {
            return String::new();
        }
        format!(
            " Of the files the kernel holds open, a rollback cannot give back: {}.",
            self.not_given_back.join("; ")
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TakeoverError {
    #[error("cannot reach the snapshot: {0}")]
    Unreachable(#[source] std::io::Error),
    #[error("the snapshot did not become a kernel: {0}")]
    Failed(String),
    #[error("the snapshot's answer is not valid JSON of the expected shape: {0}")]
    Malformed(#[source] serde_json::Error),
}

/// Tell the snapshot listening at `socket` to become the kernel, and wait (at most `timeout`)
/// until it serves. Blocking: the caller runs it off its event loop.
pub fn take_over(socket: &Path, timeout: Duration) -> Result<TookOver, TakeoverError> {
    #[derive(Deserialize)]
    struct Answer {
        status: String,
        #[serde(default)]
        reason: Option<String>,
        #[serde(default)]
        pid: Option<u32>,
        #[serde(default)]
        connection_file: Option<PathBuf>,
        #[serde(default)]
        execution_count: Option<usize>,
        #[serde(default)]
        not_given_back: Vec<String>,
    }
    let line = ask(socket, "takeover", timeout)?;
    let answer: Answer = serde_json::from_str(&line).map_err(TakeoverError::Malformed)?;
    match (answer.status.as_str(), answer.pid, answer.connection_file) {
        ("serving", Some(pid), Some(connection_file)) => Ok(TookOver {
            pid,
            connection_file,
            execution_count: answer.execution_count,
            not_given_back: answer.not_given_back,
        }),
        _ => Err(TakeoverError::Failed(
            answer.reason.unwrap_or_else(|| answer.status.clone()),
        )),
    }
}

/// A dry run of a cell in a fork of the snapshot taken before it (the kernel's state before the
/// cell), beside the kernel's real run of the cell: sealed, and abridged at once, since the real
/// run is the full one. The snapshot runs the dry-run module's own `run`, as the kernel would,
/// and stays a snapshot.
pub struct BesideRun {
    stream: UnixStream,
}

/// Why a dry run beside the real one could not be had from its snapshot.
#[derive(Debug, thiserror::Error)]
pub enum BesideError {
    #[error("the snapshot could not be reached: {0}")]
    Unreachable(#[source] std::io::Error),
    #[error("the snapshot ended the run without an answer")]
    NoAnswer,
    #[error(transparent)]
    DryRun(#[from] DryRunError),
}

/// The time a dry run beside the real run is given.
#[derive(Debug, Clone, Copy)]
pub struct BesideBudget {
    /// How long the abridged run may go on (a second run has what is left, and at least half).
    pub timeout: Duration,
    /// For how long from its start the fork shares the processor with the kernel at the
    /// kernel's own priority (one thread per native runtime); after it, the fork gets only the
    /// processor time the kernel leaves idle (`SCHED_IDLE`). Zero: idle time from the start.
    pub full_share: Duration,
}

impl BesideRun {
    /// Ask the snapshot listening at `socket` to run `code`, abridged, within `budget`.
    /// Blocking (a connect and a write): the caller runs it off its event loop.
    pub fn start(
        socket: &Path,
        code: &str,
        budget: BesideBudget,
    ) -> Result<BesideRun, BesideError> {
        let request = json!({
            "code": code,
            "timeout_s": budget.timeout.as_secs_f64(),
            "seal": true,
            "abridge": true,
            "beside": true,
            "full_share_s": budget.full_share.as_secs_f64(),
        });
        let mut stream = UnixStream::connect(socket).map_err(BesideError::Unreachable)?;
        let line = format!("dryrun {request}\n");
        stream
            .write_all(line.as_bytes())
            .map_err(BesideError::Unreachable)?;
        Ok(BesideRun { stream })
    }

    /// A handle whose `shutdown` ends the run and its fork, from another thread (the snapshot
    /// sees the hang-up and ends its fork at once).
    pub fn canceller(&self) -> std::io::Result<UnixStream> {
        self.stream.try_clone()
    }

    /// How the run ended, waiting at most `limit`; `None` when the cell has nothing to abridge
    /// (its real run is all a dry run would be). Blocking.
    pub fn wait(self, limit: Duration) -> Result<Option<DryRunOutcome>, BesideError> {
        self.stream
            .set_read_timeout(Some(limit))
            .map_err(BesideError::Unreachable)?;
        let mut line = String::new();
        BufReader::new(&self.stream)
            .read_line(&mut line)
            .map_err(BesideError::Unreachable)?;
        if line.trim().is_empty() {
            return Err(BesideError::NoAnswer);
        }
        let answer: Value = serde_json::from_str(&line).map_err(DryRunError::Malformed)?;
        Ok(read_abridgeable_run_answer(answer)?)
    }
}

/// Functions and methods that only read or show what they are given, whatever object they
/// are called on in the data libraries (pandas, numpy, the builtins).
const READ_ONLY_CALLS: &[&str] = &[
    "print", "display", "len", "repr", "str", "type", "head", "tail", "describe", "info",
];

/// Whether the cell certainly leaves the kernel's state as it is: only expression statements
/// over names, attributes, subscripts, literals and operators, calling nothing but
/// [`READ_ONLY_CALLS`]. Everything else (an assignment, an import, a magic, a definition, any
/// other call) may change it, and gets a snapshot. Displaying the value of the last expression
/// adds it to `Out` and `_`, which a snapshot does not need to take back. An attribute or a
/// subscript may run a property or a `__getitem__` that changes something: over the objects a
/// notebook displays (frames, arrays, builtins) they do not, and a user class whose reads
/// change state is the one case this accepts.
pub fn cannot_change_state(code: &str) -> bool {
    cannot_change_state_parsed(&ParsedCell::parse(code))
}

/// [`cannot_change_state`] of a cell already parsed.
pub fn cannot_change_state_parsed(cell: &ParsedCell) -> bool {
    // IPython's escapes (`%magic`, `!cmd`, `obj?`) are no Python a parser can judge.
    let code = cell.source();
    if code.lines().any(|line| {
        let line = line.trim_start();
        line.starts_with('%') || line.starts_with('!')
    }) || code.contains('?')
    {
        return false;
    }
    let Some(module) = cell.plain_python() else {
        return false;
    };
    module.body.iter().all(|statement| match statement {
        Stmt::Expr(statement) => read_only(&statement.value),
        _ => false,
    })
}

fn read_only(expr: &Expr) -> bool {
    crane_analysis::built_from_reads(expr, &|call| {
        let name = match call.func.as_ref() {
            Expr::Name(name) => Some(name.id.as_str()),
            Expr::Attribute(attribute) => {
                read_only(&attribute.value).then_some(attribute.attr.as_str())
            }
            _ => None,
        };
        name.is_some_and(|name| READ_ONLY_CALLS.contains(&name))
            && call.arguments.args.iter().all(read_only)
            && call
                .arguments
                .keywords
                .iter()
                .all(|keyword| read_only(&keyword.value))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_of_existing_objects_cannot_change_state() {
        for code in [
            "df",
            "df.head()",
            "df.shape, df.dtypes",
            "print(df['a'].iloc[0:3], len(df))",
            "# a comment\ndf.describe()\nx + 1",
            "display(df.tail(3))",
            "# only a comment",
        ] {
            assert!(cannot_change_state(code), "{code:?}");
        }
    }

    #[test]
    fn anything_that_may_change_state_takes_a_snapshot() {
        for code in [
            "x = 1",
            "df['a'] = 0",
            "df.drop(columns=['a'], inplace=True)",
            "items.append(1)",
            "model.fit(X, y)",
            "import numpy",
            "del x",
            "(y := 3)",
            "%matplotlib inline",
            "!ls",
            "df?",
            "[f(x) for x in xs]",
            "f'{g()}'",
            "def f(): pass",
            "print(items.pop())",
            "df[",
        ] {
            assert!(!cannot_change_state(code), "{code:?}");
        }
    }
}
