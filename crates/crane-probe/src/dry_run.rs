//! Dry run: execute a cell in a copy-on-write fork of the kernel and report what really
//! happened (the exception and its line, or success), leaving the kernel untouched.
//!
//! The fork itself is owned by `fork.rs` and `python/crane_fork*.py`; `python/crane_dryrun.py`
//! answers crane's calls, and `python/crane_cell_run.py` is the role the child plays (run the
//! cell, report), injected with it like the probe (a private module in the kernel's
//! `sys.modules`). Before forking, [`dry_run`] refuses, with the reasons, when a fork is unsafe
//! ([`Unsupported`]): the kernel's state (CUDA, native runtimes whose threads do not survive a
//! fork, worker pools shared with the kernel), or the cell's side effects on the file system and
//! the outside world, which the fork shares ([`side_effects`], overridable with
//! [`DryRunOptions::allow_side_effects`]).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crane_analysis::effects::{names_to_resolve, side_effects};
pub use crane_analysis::effects::{SideEffect, SideEffectKind};
use crane_analysis::{analyze_cell, AnalysisError, CellAnalysis};
use crane_kernel::{KernelError, KernelSession};

use crate::expression::{fnv1a, EvaluationError};
pub use crate::fork::ProcessEnd;
use crate::fork::{forked_module_source, millis, Forked};
use crate::module::{KernelModule, ModuleError};
use crate::replica::ReplicaReport;
use serde::Deserialize;
use serde_json::{json, Value};

/// The dry-run module's Python source: the fork's part (behind the guard against user code it
/// shares with the probe), what the module's parts share (`python/crane_common.py`), the run of
/// a cell in a fork and its report (`python/crane_cell_run.py`), the dry run's calls
/// (`python/crane_dryrun.py`), the abridged run and the verdict on its crash, the memory
/// argument. Kernel snapshots (`python/crane_snapshot.py`, `crane_takeover.py`,
/// `crane_snapshot_files.py`, [`crate::snapshot`]) are a second role in the same module, and
/// the replica (`python/crane_replica*.py`, [`crate::replica`]) a third: its export runs in the
/// kernel, the rest in the replica's process, which runs a cell as the dry run does through the
/// shared files, not the dry run's own.
pub const DRY_RUN_SOURCE: &str = concat!(
    forked_module_source!(
        "../python/crane_common.py",
        "../python/crane_cell_run.py",
        "../python/crane_dryrun.py"
    ),
    include_str!("../python/crane_abridge.py"),
    include_str!("../python/crane_dependence.py"),
    include_str!("../python/crane_memory.py"),
    include_str!("../python/crane_snapshot.py"),
    include_str!("../python/crane_takeover.py"),
    include_str!("../python/crane_snapshot_files.py"),
    include_str!("../python/crane_replica.py"),
    include_str!("../python/crane_replica_export.py"),
    include_str!("../python/crane_replica_pickle.py"),
    include_str!("../python/crane_replica_standin.py"),
    include_str!("../python/crane_replica_rebuild.py")
);

/// The private name of the dry-run module in the kernel's `sys.modules`.
pub const DRY_RUN_MODULE: &str = "_crane_dryrun";

/// The protocol version both sides speak (`PROTOCOL` in the Python module).
const PROTOCOL: u64 = 1;

const DRY_RUN: KernelModule = KernelModule {
    name: DRY_RUN_MODULE,
    source: DRY_RUN_SOURCE,
    digest: fnv1a(DRY_RUN_SOURCE.as_bytes()),
    filename: "<crane-dryrun-module>",
    key: "crane_dry_run",
};

/// How long the kernel may take to answer the pre-fork inspection.
const INSPECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Time allowed beyond the dry run's own timeout for forking, killing and reaping a large
/// kernel before crane interrupts it.
const KERNEL_GRACE: Duration = Duration::from_secs(15);

/// Limits and permissions of one dry run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DryRunOptions {
    /// The fork is killed when the cell runs longer than this.
    pub timeout: Duration,
    /// A cell still running after `abridge.after` is stopped and run again, abridged (loops
    /// to their first and last iteration, library training loops shortened), within
    /// `abridge.timeout`; `None`: never abridged.
    pub abridge: Option<AbridgeOptions>,
    /// Memory the fork may make its own (new allocations and pages copied on write); `None`
    /// means half of the memory available when the dry run starts.
    pub memory_limit_bytes: Option<u64>,
    /// Run cells that write files, talk to the network or run programs. The fork shares the
    /// file system and the outside world with the kernel: these effects are real.
    pub allow_side_effects: bool,
    /// Refuse ([`Unsupported::Unsealed`]) rather than run a fork that cannot be sealed: for
    /// dry runs nobody asked for by name (`--dry-run auto`).
    pub sealed_only: bool,
}

impl Default for DryRunOptions {
    fn default() -> Self {
        DryRunOptions {
            timeout: Duration::from_secs(30),
            abridge: Some(AbridgeOptions {
                after: Duration::from_secs(3),
                timeout: Duration::from_secs(30),
            }),
            memory_limit_bytes: None,
            allow_side_effects: false,
            sealed_only: false,
        }
    }
}

/// When a long cell's dry run gives way to an abridged one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbridgeOptions {
    /// The full run's time before crane stops it (at most the dry run's `timeout`).
    pub after: Duration,
    /// The abridged run's own timeout.
    pub timeout: Duration,
}

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
            if abridged.entered > 1 {
                format!(
                    "the loop {place} ran {} of {} iterations over {} runs",
                    abridged.ran, abridged.of, abridged.entered
                )
            } else {
                format!(
                    "the loop {place} ran {} of {} iterations",
                    abridged.ran, abridged.of
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

/// Why a sealed dry run of `code` in a fork of the kernel cannot be had now (a native runtime
/// started, CUDA, worker pools, no seal on this platform): empty when it can. One request.
pub async fn fork_refusals(
    session: &mut KernelSession,
    code: &str,
) -> Result<Vec<String>, DryRunError> {
    let inspection = inspect(session, code, &[]).await?;
    Ok(inspection
        .unsupported
        .into_iter()
        .chain(inspection.unsealable)
        .collect())
}

/// Run `code` in a fork of the kernel and report how it ended. The kernel's namespace,
/// outputs, history and execution count stay as they were; the kernel is busy no longer than
/// `options.timeout` plus the time to fork and to reap the fork.
pub async fn dry_run(
    session: &mut KernelSession,
    code: &str,
    options: &DryRunOptions,
) -> Result<DryRunOutcome, DryRunError> {
    dry_run_analysed(session, code, &analyze_cell(code), options).await
}

/// [`dry_run`] of a cell the caller has analysed (`analysis` is `code`'s).
pub async fn dry_run_analysed(
    session: &mut KernelSession,
    code: &str,
    analysis: &Result<CellAnalysis, AnalysisError>,
    options: &DryRunOptions,
) -> Result<DryRunOutcome, DryRunError> {
    let names = match analysis {
        Ok(analysis) => names_to_resolve(analysis),
        Err(_) => Vec::new(),
    };
    let inspection = inspect(session, code, &names).await?;
    let sealed = inspection.unsealable.is_empty() && !options.allow_side_effects;
    let mut reasons: Vec<Unsupported> = inspection
        .unsupported
        .into_iter()
        .map(Unsupported::Kernel)
        .collect();
    if options.sealed_only && !sealed {
        let why = match options.allow_side_effects {
            true => "side effects are allowed".to_owned(),
            false => inspection.unsealable.join("; "),
        };
        reasons.push(Unsupported::Unsealed(why));
    }
    // Where the fork is sealed, what the cell tries outside it is blocked, not refused.
    if !options.allow_side_effects && !sealed && !options.sealed_only {
        match analysis {
            Ok(analysis) => reasons.extend(
                side_effects(analysis, &inspection.origins)
                    .into_iter()
                    .map(Unsupported::SideEffect),
            ),
            // A cell Python cannot compile raises SyntaxError before running anything.
            Err(error) if inspection.compiles => {
                reasons.push(Unsupported::NotAnalyzed(error.to_string()))
            }
            Err(_) => {}
        }
    }
    if !reasons.is_empty() {
        return Ok(DryRunOutcome::Unsupported { reasons });
    }
    let (mut abridging, mut next) = Abridging::start(options);
    loop {
        match next {
            Next::Run { timeout, abridge } => {
                let ran = run_in_fork(session, code, options, sealed, timeout, abridge).await?;
                next = abridging.after(ran)?;
            }
            Next::Done(outcome) => return Ok(*outcome),
        }
    }
}

/// The runs of a cell that may be long (of the kernel's fork or of the replica's): a full run
/// within the first budget, then, if it was still going, an abridged one; a cell with nothing
/// to abridge (its run answers `None`) gets its whole timeout instead, from the start.
pub(crate) struct Abridging<'a> {
    options: &'a DryRunOptions,
    full_timeout: Duration,
    started: std::time::Instant,
    stage: Stage,
}

enum Stage {
    Full,
    Abridged {
        full: Box<DryRunOutcome>,
        full_run: Duration,
    },
    Whole,
}

/// What to do next: run the cell with this timeout (abridged or not), or report.
pub(crate) enum Next {
    Run { timeout: Duration, abridge: bool },
    Done(Box<DryRunOutcome>),
}

impl<'a> Abridging<'a> {
    pub(crate) fn start(options: &'a DryRunOptions) -> (Self, Next) {
        let full_timeout = match options.abridge {
            Some(abridge) => options.timeout.min(abridge.after),
            None => options.timeout,
        };
        let abridging = Abridging {
            options,
            full_timeout,
            started: std::time::Instant::now(),
            stage: Stage::Full,
        };
        let first = Next::Run {
            timeout: full_timeout,
            abridge: false,
        };
        (abridging, first)
    }

    /// The next step after a run that ended with `ran` (`None`: nothing to abridge).
    pub(crate) fn after(&mut self, ran: Option<DryRunOutcome>) -> Result<Next, DryRunError> {
        match std::mem::replace(&mut self.stage, Stage::Whole) {
            Stage::Full => {
                let full = ran.ok_or(DryRunError::NoAnswer)?;
                let timed_out = matches!(
                    &full,
                    DryRunOutcome::Ran(DryRunReport {
                        result: DryRunResult::TimedOut { .. },
                        ..
                    })
                );
                match self.options.abridge {
                    Some(abridge) if timed_out => {
                        let full_run = self.started.elapsed();
                        self.stage = Stage::Abridged {
                            full: Box::new(full),
                            full_run,
                        };
                        Ok(Next::Run {
                            timeout: abridge.timeout,
                            abridge: true,
                        })
                    }
                    _ => Ok(Next::Done(Box::new(full))),
                }
            }
            Stage::Abridged { full, full_run } => match ran {
                Some(mut abridged) => {
                    if let DryRunOutcome::Ran(report) = &mut abridged {
                        report.timings.full_run = Some(full_run);
                    }
                    Ok(Next::Done(Box::new(abridged)))
                }
                None if self.full_timeout >= self.options.timeout => Ok(Next::Done(full)),
                None => Ok(Next::Run {
                    timeout: self.options.timeout,
                    abridge: false,
                }),
            },
            Stage::Whole => ran
                .map(|ran| Next::Done(Box::new(ran)))
                .ok_or(DryRunError::NoAnswer),
        }
    }
}

async fn run_in_fork(
    session: &mut KernelSession,
    code: &str,
    options: &DryRunOptions,
    sealed: bool,
    timeout: Duration,
    abridge: bool,
) -> Result<Option<DryRunOutcome>, DryRunError> {
    let request = json!({
        "code": code,
        "timeout_s": timeout.as_secs_f64(),
        "memory_limit_bytes": options.memory_limit_bytes,
        "seal": sealed,
        "abridge": abridge,
    });
    read_abridgeable_run_answer(call(session, "run", &request, timeout + KERNEL_GRACE).await?)
}

/// An abridged run's answer as its outcome; `None` when the cell had nothing to abridge.
pub(crate) fn read_abridgeable_run_answer(
    answer: Value,
) -> Result<Option<DryRunOutcome>, DryRunError> {
    if answer.get("status").and_then(Value::as_str) == Some("not_abridgeable") {
        return Ok(None);
    }
    read_run_answer(answer).map(Some)
}

/// The kernel's view of a cell before its dry run: why a fork is refused, where the names
/// it calls come from, whether it compiles, whether the fork can be sealed.
async fn inspect(
    session: &mut KernelSession,
    code: &str,
    names: &[String],
) -> Result<Inspection, DryRunError> {
    serde_json::from_value(
        call(
            session,
            "inspect",
            &json!({ "code": code, "names": names }),
            INSPECT_TIMEOUT,
        )
        .await?,
    )
    .map_err(DryRunError::Malformed)
}

/// A run's answer (of the kernel's fork or of the replica's) as its outcome.
pub(crate) fn read_run_answer(answer: Value) -> Result<DryRunOutcome, DryRunError> {
    let answer: RunAnswer = serde_json::from_value(answer).map_err(DryRunError::Malformed)?;
    Ok(answer.into_outcome())
}

#[derive(Deserialize)]
struct Inspection {
    unsupported: Vec<String>,
    origins: BTreeMap<String, String>,
    compiles: bool,
    /// Why the fork cannot be sealed here; empty when it can.
    #[serde(default)]
    unsealable: Vec<String>,
}

#[derive(Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
enum RunAnswer {
    Unsupported {
        reasons: Vec<String>,
    },
    Completed {
        #[serde(flatten)]
        exception: Option<RawException>,
        duration_ms: f64,
        seal: Option<RawSeal>,
        abridged: Option<Box<Abridged>>,
        /// What the failing statement reads that is not the kernel's (a replica's run).
        #[serde(default)]
        depends_on: Vec<String>,
        replica: Option<Box<ReplicaReport>>,
        #[serde(flatten)]
        common: Forked,
    },
    MemoryLimit {
        #[serde(flatten)]
        exception: Option<RawException>,
        used_bytes: Option<u64>,
        request: Option<MemoryRequest>,
        duration_ms: Option<f64>,
        #[serde(flatten)]
        common: Forked,
    },
    TimedOut {
        timeout_ms: f64,
        #[serde(flatten)]
        common: Forked,
    },
    Died {
        signal: Option<i32>,
        exit_code: Option<i32>,
        #[serde(flatten)]
        common: Forked,
    },
}

#[derive(Deserialize)]
struct RawException {
    exception: String,
    message: String,
    traceback: Vec<String>,
    line: Option<u32>,
}

impl From<RawException> for DryRunException {
    fn from(raw: RawException) -> Self {
        DryRunException {
            exception: raw.exception,
            message: raw.message,
            traceback: raw.traceback,
            line: raw.line,
        }
    }
}

#[derive(Deserialize)]
struct RawSeal {
    attempts: Vec<BlockedAttempt>,
    trapped: u64,
    remapped: u32,
    landlock_abi: Option<u32>,
    ms: f64,
}

impl RawSeal {
    fn report(&self) -> SealReport {
        SealReport {
            remapped: self.remapped,
            landlock_abi: self.landlock_abi,
            trapped: self.trapped,
            cost: millis(self.ms),
        }
    }
}

impl RunAnswer {
    fn into_outcome(self) -> DryRunOutcome {
        let mut seal_report = None;
        let mut abridged = None;
        let mut replica = None;
        let (result, run_ms, common) = match self {
            RunAnswer::Unsupported { reasons } => {
                return DryRunOutcome::Unsupported {
                    reasons: reasons.into_iter().map(Unsupported::Kernel).collect(),
                }
            }
            RunAnswer::Completed {
                exception,
                duration_ms,
                seal,
                abridged: shortened,
                depends_on,
                replica: rebuilt,
                common,
            } => {
                abridged = shortened;
                replica = rebuilt.map(|mut rebuilt| {
                    rebuilt.depends_on = match &abridged {
                        Some(abridged) => abridged.depends_on.clone(),
                        None => depends_on,
                    };
                    rebuilt
                });
                seal_report = seal.as_ref().map(|seal| Box::new(seal.report()));
                let mut attempts = seal.map(|seal| seal.attempts).unwrap_or_default();
                // A call trapped in native code is noted when Python next runs a handler; if
                // the cell's frame was unwound by then, the call failed in the statement the
                // exception came out of.
                let raised_at = exception.as_ref().and_then(|raw| raw.line);
                for attempt in &mut attempts {
                    attempt.line = attempt.line.or(raised_at);
                }
                let result = match exception {
                    // Nothing that ran after an attempt is what the cell would do for real.
                    exception if !attempts.is_empty() => DryRunResult::Blocked {
                        attempts,
                        exception: exception.map(Into::into),
                    },
                    Some(raw) => DryRunResult::Raised(raw.into()),
                    None => DryRunResult::Passed,
                };
                (result, Some(duration_ms), common)
            }
            RunAnswer::MemoryLimit {
                exception,
                used_bytes,
                request,
                duration_ms,
                common,
            } => {
                let result = DryRunResult::MemoryLimit {
                    exception: exception.map(Into::into),
                    used_bytes,
                    request,
                };
                (result, duration_ms, common)
            }
            RunAnswer::TimedOut { timeout_ms, common } => {
                let after = Duration::from_secs_f64(timeout_ms / 1000.0);
                (DryRunResult::TimedOut { after }, None, common)
            }
            RunAnswer::Died {
                signal,
                exit_code,
                common,
            } => {
                let end = ProcessEnd::from_status(signal, exit_code);
                (DryRunResult::Died(end), None, common)
            }
        };
        DryRunOutcome::Ran(DryRunReport {
            result,
            timings: DryRunTimings {
                fork: common.fork_time(),
                run: run_ms.map(millis),
                teardown: common.teardown_time(),
                full_run: None,
            },
            stdout_tail: common.stdout_tail,
            memory_limit_bytes: common.memory_limit_bytes,
            child_pid: common.pid,
            seal: seal_report,
            abridged,
            replica,
        })
    }
}

// Talking to the module in the kernel.

/// Call `function(request)` of the dry-run module, injecting it first when the kernel lacks
/// this version.
pub(crate) async fn call(
    session: &mut KernelSession,
    function: &str,
    request: &Value,
    timeout: Duration,
) -> Result<Value, DryRunError> {
    let text = DRY_RUN.call(session, function, request, timeout).await?;
    let answer: Value = serde_json::from_str(&text).map_err(DryRunError::Malformed)?;
    match answer.get("protocol").and_then(Value::as_u64) {
        Some(PROTOCOL) => Ok(answer),
        found => Err(DryRunError::Protocol {
            found: found.unwrap_or(0),
        }),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn answers_of_each_kind_parse() {
        let common = json!({"protocol": 1, "pid": 42, "fork_ms": 1.5, "teardown_ms": 2.0,
                            "stdout_tail": "hi\n", "memory_limit_bytes": 1024});
        let with = |extra: Value| {
            let mut answer = common.clone();
            answer
                .as_object_mut()
                .expect("object")
                .extend(extra.as_object().expect("object").clone());
            serde_json::from_value::<RunAnswer>(answer)
                .expect("parses")
                .into_outcome()
        };
        let DryRunOutcome::Ran(passed) =
            with(json!({"status": "completed", "ok": true, "duration_ms": 3.0}))
        else {
            panic!("not a run")
        };
        assert!(passed.is_ok());
        assert_eq!(passed.timings.run, Some(Duration::from_millis(3)));
        assert_eq!(passed.child_pid, 42);
        let DryRunOutcome::Ran(raised) = with(json!({"status": "completed", "ok": false,
            "exception": "KeyError", "message": "'a'", "traceback": ["t"], "line": 2, "duration_ms": 1.0}))
        else {
            panic!("not a run")
        };
        assert_eq!(
            raised.exception().map(|e| (e.exception.as_str(), e.line)),
            Some(("KeyError", Some(2)))
        );
        let DryRunOutcome::Ran(killed) = with(json!({"status": "died", "signal": 11})) else {
            panic!("not a run")
        };
        assert_eq!(killed.result, DryRunResult::Died(ProcessEnd::Signal(11)));
        let DryRunOutcome::Ran(watched) =
            with(json!({"status": "memory_limit", "limit_bytes": 1024, "used_bytes": 2048}))
        else {
            panic!("not a run")
        };
        assert_eq!(
            watched.result,
            DryRunResult::MemoryLimit {
                exception: None,
                used_bytes: Some(2048),
                request: None,
            }
        );
        let DryRunOutcome::Ran(refused) = with(json!({"status": "memory_limit",
            "exception": "MemoryError", "message": "Unable to allocate", "traceback": [], "line": 1,
            "request": {"bytes": 8_000_000_000_000u64, "what": "an array", "available_bytes": 23_456_789_012u64,
                        "available_in": "the machine", "certain": "refused"}}))
        else {
            panic!("not a run")
        };
        let DryRunResult::MemoryLimit {
            request: Some(request),
            exception: Some(_),
            ..
        } = &refused.result
        else {
            panic!("no request: {refused:?}")
        };
        assert_eq!(request.needs(), "needs more than 8000 GB; 23 GB available");
        assert_eq!(size_words(7_450_000_000), "7.4 GB");
        assert_eq!(size_words(480_000_000), "0.4 GB");
        assert_eq!(size_words(48_000_000), "48 MB");
    }
}
