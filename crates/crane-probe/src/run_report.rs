//! What a cell's run in a fork reports, whoever forked it (the kernel's dry run, or the
//! replica's run): how it ended ([`DryRunOutcome`], [`DryRunResult`]), what an abridged run
//! shortened, the seal, the memory a failed allocation asked for, why a run was refused
//! ([`Unsupported`]) or failed ([`DryRunError`]), how a replica rebuilt what the cell reads
//! ([`ReplicaReport`]), and the readers of the module's answers into those types.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crane_analysis::effects::SideEffect;
use crane_kernel::KernelError;
use serde::Deserialize;

use crate::expression::EvaluationError;
use crate::fork::ProcessEnd;
use crate::module::ModuleError;
use crate::run_module::PROTOCOL;

/// What an abridged run shortened, and whether a crash it saw depends on that.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Abridged {
    /// The loops that skipped iterations.
    pub loops: Vec<AbridgedLoop>,
    /// The library calls that ran less (`Keras fit ran 2 epochs of 50, 1 step per epoch`).
    pub calls: Vec<AbridgedCall>,
    /// After a crash: what the failing statement reads that the abridgement changed (a list
    /// the loop grew, a shortened call's result, a name computed from those). Empty when the
    /// crash does not depend on the abridgement, or when the run passed.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Why a crash the failing statement reached through a changed value is certain all the
    /// same: a second run, abridged otherwise, raised the same error at the same line, and the
    /// error is about structure each iteration makes the same way (`python/crane_dependence.py`,
    /// "Certainty from a second abridgement"). `depends_on` is then empty.
    #[serde(default)]
    pub confirmed: Option<String>,
    /// Why a crash is certain without a second run, where that rests on more than the code
    /// (names the loop read that held at the crash what they held when it was first entered).
    #[serde(default)]
    pub grounds: Option<String>,
}

impl Abridged {
    /// One clause naming what was shortened: "the loop at line 4 ran 2 of 50 iterations; ...".
    pub fn summary(&self) -> String {
        let loops = self.loops.iter().map(|abridged| {
            let place = match (&abridged.function, abridged.in_cell) {
                (Some(function), true) => format!("in `{function}` at line {}", abridged.line),
                (None, _) => format!("at line {}", abridged.line),
                (Some(function), false) => format!("in `{function}` (an earlier cell)"),
            };
            let ran = if abridged.entered > 1 {
                format!(
                    "the loop {place} ran {} of {} iterations over {} runs",
                    abridged.ran, abridged.of, abridged.entered
                )
            } else {
                format!(
                    "the loop {place} ran {} of {} iterations",
                    abridged.ran, abridged.of
                )
            };
            let padded = if abridged.padded.is_empty() {
                ran
            } else {
                format!(
                    "{ran}, keeping the full run's lengths and keys of {} (stand-ins for the skipped iterations' values)",
                    abridged.padded.join(", ")
                )
            };
            let shaped = if abridged.shaped.is_empty() {
                padded
            } else {
                format!(
                    "{padded}, keeping the shape of {} (stored into in place; the skipped iterations' values missing)",
                    abridged.shaped.join(", ")
                )
            };
            if abridged.stepped.is_empty() {
                shaped
            } else {
                format!(
                    "{shaped}, stepping {} as the skipped iterations would",
                    abridged.stepped.join(", ")
                )
            }
        });
        let calls = self.calls.iter().map(|call| {
            if call.in_cell {
                format!("{} (line {})", call.what, call.line)
            } else {
                call.what.clone()
            }
        });
        loops.chain(calls).collect::<Vec<_>>().join("; ")
    }
}

/// A loop of an abridged run that skipped iterations.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AbridgedLoop {
    /// The `for` statement's line: in the cell, or in the earlier cell defining `function`.
    pub line: u32,
    /// The function the loop is in, if any.
    pub function: Option<String>,
    /// The loop is in the checked cell (else in a function of an earlier cell).
    pub in_cell: bool,
    /// Iterations run, and those the loop would have run (over all its runs).
    pub ran: u64,
    pub of: u64,
    /// How many times the loop statement ran.
    pub entered: u64,
    /// The lists and dictionaries the skipped iterations' growth was padded in, with stand-in
    /// values (`python/crane_padding.py`): their lengths and keys are the full run's.
    #[serde(default)]
    pub padded: Vec<String>,
    /// The arrays and tensors the loop stores into in place: their shapes and dtypes are the
    /// full run's, the values the skipped iterations would have stored are missing.
    #[serde(default)]
    pub shaped: Vec<String>,
    /// The learning-rate schedulers (by class) the skipped iterations' steps were counted for
    /// (`python/crane_steps.py`).
    #[serde(default)]
    pub stepped: Vec<String>,
}

/// A library call an abridged run shortened.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AbridgedCall {
    pub what: String,
    pub line: u32,
    pub in_cell: bool,
}

/// What a dry run found.
#[derive(Debug, Clone, PartialEq)]
// One outcome per dry run, moved a few times: boxing the report would save nothing that matters.
#[allow(clippy::large_enum_variant)]
pub enum DryRunOutcome {
    /// The cell ran in a fork.
    Ran(DryRunReport),
    /// The fork was not made; see the reasons.
    Unsupported { reasons: Vec<Unsupported> },
}

impl DryRunOutcome {
    /// The fork has no frontend to answer `input()`, so it reads end-of-file where the kernel
    /// would ask the user: an `EOFError` there says nothing about the real run.
    pub fn reads_closed_stdin(&self) -> bool {
        match self {
            DryRunOutcome::Ran(report) => report
                .exception()
                .is_some_and(|raised| raised.exception == "EOFError"),
            DryRunOutcome::Unsupported { .. } => false,
        }
    }
}

/// A run in a fork: how it ended, what it printed, and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct DryRunReport {
    pub result: DryRunResult,
    /// The end of everything the cell wrote to stdout and stderr (Python and native code),
    /// with the `text/plain` of what it displayed, in order.
    pub stdout_tail: String,
    pub timings: DryRunTimings,
    /// The memory the fork was allowed to make its own.
    pub memory_limit_bytes: u64,
    /// Process id of the fork (gone when the report is returned).
    pub child_pid: u32,
    /// How the fork was sealed; `None` when it ran unsealed (side effects allowed).
    pub seal: Option<Box<SealReport>>,
    /// The run was abridged (the full run had not ended by the time it was given), and this
    /// is what it shortened; `None` for a full run.
    pub abridged: Option<Box<Abridged>>,
    /// The run was in the replica (the kernel could not be forked), on objects rebuilt from
    /// the kernel's: what was copied and how faithfully; `None` for a fork of the kernel.
    pub replica: Option<Box<ReplicaReport>>,
}

impl DryRunReport {
    /// The cell ran to its end without an exception.
    pub fn is_ok(&self) -> bool {
        matches!(self.result, DryRunResult::Passed)
    }

    /// The exception the cell raised, if it raised one.
    pub fn exception(&self) -> Option<&DryRunException> {
        match &self.result {
            DryRunResult::Raised(exception) => Some(exception),
            _ => None,
        }
    }
}

/// How the cell's run in the fork ended.
#[derive(Debug, Clone, PartialEq)]
pub enum DryRunResult {
    Passed,
    /// The cell raised (including `SyntaxError` and `SystemExit`).
    Raised(DryRunException),
    /// Still running at the timeout: the fork and all it started were killed.
    TimedOut {
        after: Duration,
    },
    /// The fork reached its memory limit: a `MemoryError` in the cell (`exception` is set) or
    /// killed by crane's watch of the memory it made its own.
    MemoryLimit {
        exception: Option<DryRunException>,
        /// Memory the fork had made its own when it was killed.
        used_bytes: Option<u64>,
        /// The allocation the `MemoryError` named, judged against what could still be given
        /// (`python/crane_memory.py`); `None` when it named no size, or the run was abridged.
        request: Option<MemoryRequest>,
    },
    /// The fork's process ended without reporting: the kernel itself would die (a crash in
    /// native code, `os._exit`).
    Died(ProcessEnd),
    /// The seal blocked what the cell tried to do outside the fork (write a file, connect,
    /// start a program...): the run says nothing from the first attempt on. `exception` is what
    /// the cell raised afterwards, often because of the block.
    Blocked {
        attempts: Vec<BlockedAttempt>,
        exception: Option<DryRunException>,
    },
}

/// One allocation that failed in the fork, and whether the real run fails for it too.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MemoryRequest {
    /// Its size in bytes.
    pub bytes: u64,
    /// What it was for, e.g. `an array of shape (100000, 100000) and data type float64`.
    pub what: String,
    /// What the machine, or the kernel's memory cgroup, could still give before the run: free
    /// memory, reclaimable page cache and slab, and free swap (an upper bound).
    pub available_bytes: u64,
    /// Which of them that was: `the machine`, or `its memory cgroup (0.4 GB limit)`.
    pub available_in: String,
    /// Why the real run cannot get it either (the overcommit policy refuses it, or the
    /// operation writes every byte of it); `None` when it might.
    pub certain: Option<String>,
}

impl MemoryRequest {
    /// "needs more than N GB; M GB available" (GB with one decimal under 10 GB).
    pub fn needs(&self) -> String {
        format!(
            "needs more than {}; {} available",
            size_words(self.bytes),
            size_words(self.available_bytes)
        )
    }
}

/// Bytes in words: GB with one decimal under 10 GB (rounded down), MB under 0.1 GB.
fn size_words(bytes: u64) -> String {
    if bytes < 100_000_000 {
        format!("{} MB", bytes / 1_000_000)
    } else if bytes < 10_000_000_000 {
        format!("{}.{} GB", bytes / 1_000_000_000, bytes / 100_000_000 % 10)
    } else {
        format!("{} GB", bytes / 1_000_000_000)
    }
}

/// Something the cell tried that the seal blocked, and where.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct BlockedAttempt {
    /// What was tried, e.g. `open '/data/out.csv' for writing` or `write to /tmp/run.log`.
    pub what: String,
    /// The cell's line running when it was tried.
    pub line: Option<u32>,
}

/// How the fork was sealed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SealReport {
    /// Shared mappings made private.
    pub remapped: u32,
    /// The Landlock ABI applied, if the kernel has Landlock.
    pub landlock_abi: Option<u32>,
    /// System calls the seccomp filter trapped.
    pub trapped: u64,
    /// Time to seal the fork.
    pub cost: Duration,
}

/// The exception a cell raised in the fork.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DryRunException {
    /// The exception class's name, as Jupyter's `ename` (`KeyError`).
    pub exception: String,
    /// `str()` of the exception, as Jupyter's `evalue`.
    pub message: String,
    /// Python's traceback, from the cell's outermost frame, one text line per entry.
    pub traceback: Vec<String>,
    /// The 1-based line of the cell (as written) in the outermost frame: the statement that
    /// raised, directly or through the calls it made.
    pub line: Option<u32>,
}

/// Where the time went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DryRunTimings {
    /// The `fork()` call in the kernel.
    pub fork: Duration,
    /// The cell in the fork, when it reported.
    pub run: Option<Duration>,
    /// Killing the fork's process group and reaping the fork.
    pub teardown: Duration,
    /// The full run stopped before this abridged one, when there was one.
    pub full_run: Option<Duration>,
}

/// Why a dry run was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsupported {
    /// The kernel's state makes a fork unsafe or useless (CUDA, started native runtimes,
    /// worker pools, no fork on this platform).
    Kernel(String),
    /// The cell has effects outside the process.
    SideEffect(SideEffect),
    /// Crane's parser could not read the cell, so its side effects are unknown, though Python
    /// can run it.
    NotAnalyzed(String),
    /// The kernel could not be forked and the replica could not run the cell either.
    Replica(String),
    /// The fork cannot be sealed here (why), and only a sealed one was asked for.
    Unsealed(String),
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dry run unsupported: ")?;
        match self {
            Unsupported::Kernel(reason) => f.write_str(reason),
            Unsupported::SideEffect(effect) => {
                write!(f, "{effect} (allow with --allow-side-effects)")
            }
            Unsupported::NotAnalyzed(error) => {
                write!(f, "the cell's side effects cannot be analyzed ({error})")
            }
            Unsupported::Replica(error) => write!(f, "no run in a replica either: {error}"),
            Unsupported::Unsealed(why) => write!(
                f,
                "the fork cannot be sealed here ({why}), and only a sealed dry run was asked for"
            ),
        }
    }
}

/// Why a dry run failed (as opposed to the cell failing, which is a [`DryRunResult`]).
#[derive(Debug, thiserror::Error)]
pub enum DryRunError {
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error("the kernel did not answer the dry run within {0:?}")]
    TimedOut(Duration),
    #[error("the kernel was busy with another client's cell for {0:?}; crane did not interrupt it and ran no dry run")]
    Busy(Duration),
    #[error("the dry-run module raised {ename} in the kernel: {evalue}")]
    Raised { ename: String, evalue: String },
    #[error("the kernel's reply to the dry run had no text answer")]
    NoAnswer,
    #[error("the dry run's answer is not valid JSON of the expected shape: {0}")]
    Malformed(#[source] serde_json::Error),
    #[error("the kernel speaks dry-run protocol {found}, crane speaks {PROTOCOL}")]
    Protocol { found: u64 },
    #[error("the kernel still lacks the dry-run module after injecting it")]
    NotInjected,
    /// The user replaced builtins crane needs: crane refused, and the kernel is as it was.
    #[error("{0}")]
    BuiltinsReplaced(crate::ReplacedBuiltins),
}

impl From<ModuleError> for DryRunError {
    fn from(error: ModuleError) -> Self {
        match error {
            ModuleError::Evaluation(error) => error.into(),
            ModuleError::NotInjected => DryRunError::NotInjected,
            ModuleError::BuiltinsReplaced(names) => DryRunError::BuiltinsReplaced(names),
        }
    }
}

impl From<EvaluationError> for DryRunError {
    fn from(error: EvaluationError) -> Self {
        match error {
            EvaluationError::Kernel(error) => DryRunError::Kernel(error),
            EvaluationError::TimedOut(after) => DryRunError::TimedOut(after),
            EvaluationError::Busy(after) => DryRunError::Busy(after),
            EvaluationError::Raised { ename, evalue } => DryRunError::Raised { ename, evalue },
            EvaluationError::NoAnswer => DryRunError::NoAnswer,
        }
    }
}

/// How a replica rebuilt the kernel's objects for a run, and whether a crash it saw reads
/// what it could not copy.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct ReplicaReport {
    /// Names rebuilt exactly: values copied, modules, the notebook's definitions.
    pub exact: Vec<String>,
    /// Names rebuilt as stand-ins, with what each keeps of the original.
    pub approximated: BTreeMap<String, String>,
    /// Names the replica could not rebuild, and why.
    pub declined: BTreeMap<String, String>,
    /// After a crash: what the failing statement reads that is not the kernel's (a stand-in,
    /// a name not rebuilt, what an abridged loop changed, or what was computed from those).
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Why the kernel itself was not forked.
    #[serde(default)]
    pub fork_refused: Vec<String>,
    #[serde(skip)]
    pub export: Duration,
    #[serde(
        default,
        rename = "rebuild_ms",
        deserialize_with = "crate::fork::millis_field"
    )]
    pub rebuild: Duration,
}

/// How far a crash seen in the replica can be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Faithfulness {
    /// The failing statement reads only what was copied exactly.
    Exact,
    /// It reads stand-ins (or values an abridged loop changed): these, described.
    Approximate(Vec<String>),
    /// It reads names the replica could not rebuild: these, with why.
    Undecided(Vec<String>),
}

impl ReplicaReport {
    pub fn faithfulness(&self) -> Faithfulness {
        let undecided: Vec<String> = self
            .depends_on
            .iter()
            .filter_map(|name| self.declined.get(name).map(|why| format!("{name} ({why})")))
            .collect();
        if !undecided.is_empty() {
            return Faithfulness::Undecided(undecided);
        }
        if self.depends_on.is_empty() {
            return Faithfulness::Exact;
        }
        Faithfulness::Approximate(
            self.depends_on
                .iter()
                .map(|name| match self.approximated.get(name) {
                    Some(what) => format!("{name} ({what})"),
                    None => name.clone(),
                })
                .collect(),
        )
    }

    /// `3 copied exactly, 1 stand-in (X_train), 1 not rebuilt (loader)`.
    pub fn summary(&self) -> String {
        let mut parts = vec![format!("{} copied exactly", self.exact.len())];
        if !self.approximated.is_empty() {
            let names: Vec<&str> = self.approximated.keys().map(String::as_str).collect();
            parts.push(format!(
                "{} stand-in{} ({})",
                names.len(),
                if names.len() == 1 { "" } else { "s" },
                names.join(", ")
            ));
        }
        if !self.declined.is_empty() {
            let names: Vec<&str> = self.declined.keys().map(String::as_str).collect();
            parts.push(format!(
                "{} not rebuilt ({})",
                names.len(),
                names.join(", ")
            ));
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crane_analysis::effects::SideEffectKind;

    #[test]
    fn reasons_read_as_one_sentence() {
        let reason = Unsupported::SideEffect(SideEffect {
            kind: SideEffectKind::WritesFiles,
            line: 3,
            what: "df.to_csv(...)".into(),
        });
        assert_eq!(
            reason.to_string(),
            "dry run unsupported: line 3: `df.to_csv(...)` writes or removes files \
             (allow with --allow-side-effects)"
        );
    }

    #[test]
    fn sizes_read_in_words() {
        assert_eq!(size_words(7_450_000_000), "7.4 GB");
        assert_eq!(size_words(480_000_000), "0.4 GB");
        assert_eq!(size_words(48_000_000), "48 MB");
    }
}
