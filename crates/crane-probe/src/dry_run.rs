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

use crane_analysis::{analyze_cell, BindingKind, Call, CellAnalysis, Constant, MagicKind, Operand};
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

/// An effect of the cell outside its own process, found in its syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideEffect {
    pub kind: SideEffectKind,
    /// 1-based line in the cell.
    pub line: u32,
    /// What does it, as written (`df.to_csv(...)`, `!pip install x`).
    pub what: String,
}

impl fmt::Display for SideEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: `{}` {}", self.line, self.what, self.kind)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SideEffectKind {
    WritesFiles,
    Network,
    RunsPrograms,
    /// Runs code crane does not see (`%run script.py`).
    UnanalyzedCode,
}

impl fmt::Display for SideEffectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SideEffectKind::WritesFiles => "writes or removes files",
            SideEffectKind::Network => "talks to the network",
            SideEffectKind::RunsPrograms => "runs or signals other programs",
            SideEffectKind::UnanalyzedCode => "runs code crane cannot analyze",
        })
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
    let analysis = analyze_cell(code);
    let names = match &analysis {
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
        match &analysis {
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

// Side effects.

/// Root names of the callees (and of `print(file=...)` targets) whose binding in the kernel
/// tells what a call really is (`rq.get` with `import requests as rq` in an earlier cell).
fn names_to_resolve(analysis: &CellAnalysis) -> Vec<String> {
    let mut names: Vec<String> = analysis
        .calls
        .iter()
        .map(|call| root_name(&call.callee).to_owned())
        .chain(
            analysis
                .calls
                .iter()
                .filter_map(|call| keyword(call, "file"))
                .filter_map(|operand| operand.expr.as_deref())
                .map(|expr| root_name(expr).to_owned()),
        )
        .filter(|name| !name.is_empty())
        .collect();
    names.sort();
    names.dedup();
    names
}

fn root_name(expr: &str) -> &str {
    let end = expr
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(expr.len());
    &expr[..end]
}

/// The effects of a cell outside its own process (files, network, other programs), found in
/// its calls and IPython escapes. `origins` maps root names to what the kernel binds them to
/// (`{"rq": "requests", "df": "pandas.DataFrame", "open": "io.open"}`), so that aliases and
/// names imported in earlier cells are recognized; names absent from it are taken as written.
///
/// Only code the cell runs is seen: the bodies of functions defined in earlier cells, and
/// callbacks created in earlier cells, are not.
pub fn side_effects(
    analysis: &CellAnalysis,
    origins: &BTreeMap<String, String>,
) -> Vec<SideEffect> {
    let mut effects = Vec::new();
    for magic in &analysis.magics {
        if let Some(kind) = magic_effect(magic.kind, &magic.name) {
            let what = match magic.kind {
                MagicKind::Shell => format!("!{} {}", magic.name, magic.args),
                MagicKind::CellMagic => format!("%%{} {}", magic.name, magic.args),
                _ => format!("%{} {}", magic.name, magic.args),
            };
            effects.push(SideEffect {
                kind,
                line: magic.line,
                what: what.trim_end().to_owned(),
            });
        }
    }
    let defined_in_cell: Vec<&str> = analysis
        .bindings
        .iter()
        .filter(|binding| {
            matches!(
                binding.kind,
                BindingKind::FunctionDef | BindingKind::ClassDef
            )
        })
        .map(|binding| binding.name.as_str())
        .collect();
    // The bodies of the cell's own functions and classes are analyzed where they are called.
    for call in analysis
        .calls
        .iter()
        .filter(|call| !defined_in_cell.contains(&call.callee.as_str()))
    {
        let qualified = qualify(&call.callee, origins);
        if let Some(kind) = call_effect(call, &qualified, origins) {
            effects.push(SideEffect {
                kind,
                line: call.line,
                what: format!("{}(...)", call.callee),
            });
        }
    }
    effects.sort_by_key(|effect| effect.line);
    effects.dedup();
    effects
}

const SHELL_CELL_MAGICS: &[&str] = &[
    "bash", "sh", "script", "system", "sx", "perl", "ruby", "python", "python2", "python3", "pypy",
];
const FILE_CELL_MAGICS: &[&str] = &["writefile", "file"];
const PROGRAM_LINE_MAGICS: &[&str] = &[
    "system",
    "sx",
    "pip",
    "conda",
    "mamba",
    "micromamba",
    "uv",
    "sc",
];
const FILE_LINE_MAGICS: &[&str] = &[
    "save",
    "store",
    "logstart",
    "bookmark",
    "rm",
    "rmdir",
    "mv",
    "cp",
    "mkdir",
    "touch",
    "writefile",
];

fn magic_effect(kind: MagicKind, name: &str) -> Option<SideEffectKind> {
    match kind {
        MagicKind::Shell => Some(SideEffectKind::RunsPrograms),
        MagicKind::CellMagic if SHELL_CELL_MAGICS.contains(&name) => {
            Some(SideEffectKind::RunsPrograms)
        }
        MagicKind::CellMagic if FILE_CELL_MAGICS.contains(&name) => {
            Some(SideEffectKind::WritesFiles)
        }
        MagicKind::LineMagic if PROGRAM_LINE_MAGICS.contains(&name) => {
            Some(SideEffectKind::RunsPrograms)
        }
        MagicKind::LineMagic if FILE_LINE_MAGICS.contains(&name) => {
            Some(SideEffectKind::WritesFiles)
        }
        MagicKind::LineMagic if name == "run" => Some(SideEffectKind::UnanalyzedCode),
        _ => None,
    }
}

/// The callee with its root name replaced by what the kernel binds it to, and the platform
/// modules of `os` functions (`posix.remove`) spelled as `os`.
fn qualify(callee: &str, origins: &BTreeMap<String, String>) -> String {
    let root = root_name(callee);
    let qualified = match origins.get(root) {
        Some(origin) => format!("{origin}{}", &callee[root.len()..]),
        None => callee.to_owned(),
    };
    match qualified.split_once('.') {
        Some(("posix" | "nt", rest)) => format!("os.{rest}"),
        _ => qualified,
    }
}

/// Modules whose every call talks to the network.
const NETWORK_MODULES: &[&str] = &[
    "requests",
    "urllib.request",
    "urllib3",
    "http.client",
    "httpx",
    "aiohttp",
    "socket",
    "ftplib",
    "smtplib",
    "poplib",
    "imaplib",
    "telnetlib",
    "paramiko",
    "boto3",
    "botocore",
    "wget",
    "gdown",
    "kaggle",
    "kagglehub",
    "huggingface_hub",
    "webbrowser",
    "tensorflow_datasets",
];
/// Functions that download (or may, when nothing is cached yet).
const DOWNLOADERS: &[&str] = &[
    "download",
    "get_file",
    "from_pretrained",
    "load_dataset",
    "urlopen",
    "urlretrieve",
];
const URL_SCHEMES: &[&str] = &["http://", "https://", "ftp://", "s3://", "gs://", "hf://"];

const PROGRAM_MODULES: &[&str] = &["subprocess", "pty", "multiprocessing.connection"];
const PROGRAM_FUNCTIONS: &[&str] = &[
    "os.system",
    "os.popen",
    "os.kill",
    "os.killpg",
    "os.startfile",
    "os.posix_spawn",
    "os.posix_spawnp",
];
const PROGRAM_FUNCTION_PREFIXES: &[&str] = &["os.spawn", "os.exec"];

const FILE_FUNCTIONS: &[&str] = &[
    "os.remove",
    "os.unlink",
    "os.rmdir",
    "os.removedirs",
    "os.mkdir",
    "os.makedirs",
    "os.rename",
    "os.renames",
    "os.replace",
    "os.chmod",
    "os.chown",
    "os.lchown",
    "os.link",
    "os.symlink",
    "os.truncate",
    "os.utime",
    "os.mkfifo",
    "os.mknod",
    "os.open",
    "sqlite3.connect",
];
/// `shutil` functions that only read.
const SHUTIL_READERS: &[&str] = &[
    "which",
    "disk_usage",
    "get_terminal_size",
    "get_archive_formats",
    "get_unpack_formats",
];
/// `pathlib` methods that change the file system.
const PATH_WRITERS: &[&str] = &[
    "write_text",
    "write_bytes",
    "mkdir",
    "touch",
    "unlink",
    "rmdir",
    "rename",
    "replace",
    "symlink_to",
    "hardlink_to",
    "chmod",
    "lchmod",
];
/// Methods that write whatever they are called on.
const WRITER_METHODS: &[&str] = &[
    "to_excel",
    "to_pickle",
    "to_hdf",
    "to_feather",
    "to_stata",
    "to_sql",
    "to_netcdf",
    "to_zarr",
    "to_file",
    "savefig",
    "imsave",
    "imwrite",
    "save",
    "save_model",
    "save_weights",
    "save_pretrained",
    "savetxt",
    "savez",
    "savez_compressed",
    "tofile",
    "write_text",
    "write_bytes",
    "write_image",
    "write_html",
    "ModelCheckpoint",
    "TensorBoard",
    "CSVLogger",
    "BackupAndRestore",
    "SummaryWriter",
    "create_file_writer",
];
/// Methods that write when given a destination, and return text or bytes otherwise.
const DESTINATION_WRITERS: &[&str] = &[
    "to_csv",
    "to_json",
    "to_html",
    "to_latex",
    "to_markdown",
    "to_string",
    "to_xml",
    "to_parquet",
    "to_orc",
];
const DESTINATION_KEYWORDS: &[&str] = &["path_or_buf", "buf", "path", "fname", "excel_writer"];
/// `dump(obj, file)` of pickle, json, joblib, yaml, marshal.
const DUMP_KEYWORDS: &[&str] = &["file", "fp", "filename", "stream"];
/// Functions that open files, with the position of their mode argument.
const OPENERS: &[(&str, usize)] = &[
    ("open", 1),
    ("io.open", 1),
    ("codecs.open", 1),
    ("gzip.open", 1),
    ("bz2.open", 1),
    ("lzma.open", 1),
    ("tarfile.open", 1),
    ("zipfile.ZipFile", 1),
    ("h5py.File", 1),
    ("shelve.open", 1),
    ("dbm.open", 1),
];
/// Openers whose default mode creates the file.
const CREATING_OPENERS: &[&str] = &["shelve.open", "dbm.open"];
const STANDARD_STREAMS: &[&str] = &[
    "sys.stdout",
    "sys.stderr",
    "sys.__stdout__",
    "sys.__stderr__",
];

fn call_effect(
    call: &Call,
    qualified: &str,
    origins: &BTreeMap<String, String>,
) -> Option<SideEffectKind> {
    let method = call
        .method
        .as_deref()
        .unwrap_or_else(|| qualified.rsplit('.').next().unwrap_or(qualified));
    let module_is = |module: &str| {
        qualified == module
            || qualified
                .strip_prefix(module)
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('('))
    };

    if NETWORK_MODULES.iter().any(|module| module_is(module))
        || DOWNLOADERS.contains(&method)
        || method.starts_with("fetch_") && qualified.contains("sklearn")
        || method == "load_data" && qualified.contains(".datasets")
        || is_true(keyword(call, "download"))
        || arguments(call).any(is_url)
    {
        return Some(SideEffectKind::Network);
    }
    if PROGRAM_MODULES.iter().any(|module| module_is(module))
        || PROGRAM_FUNCTIONS.contains(&qualified)
        || PROGRAM_FUNCTION_PREFIXES
            .iter()
            .any(|prefix| qualified.starts_with(prefix))
    {
        return Some(SideEffectKind::RunsPrograms);
    }
    if FILE_FUNCTIONS.contains(&qualified) && !is_in_memory_database(call, qualified)
        || module_is("shutil") && !SHUTIL_READERS.contains(&method)
        || module_is("pathlib") && PATH_WRITERS.contains(&method)
        || qualified == "os.write" && !writes_standard_stream(call)
        || opens_for_writing(call, qualified)
        || WRITER_METHODS.contains(&method)
        || DESTINATION_WRITERS.contains(&method) && has_destination(call)
        || method == "dump" && (call.args.len() >= 2 || has_keyword(call, DUMP_KEYWORDS))
        || matches!(method, "write" | "writelines")
            && !qualified.starts_with("os.")
            && !call
                .receiver
                .as_deref()
                .is_some_and(|receiver| is_standard_stream(&qualify(receiver, origins)))
        || method == "print"
            && keyword(call, "file").is_some_and(|file| !is_standard_stream_operand(file, origins))
    {
        return Some(SideEffectKind::WritesFiles);
    }
    None
}

fn arguments(call: &Call) -> impl Iterator<Item = &Operand> {
    call.args
        .iter()
        .chain(call.keywords.iter().map(|keyword| &keyword.value))
}

fn keyword<'c>(call: &'c Call, name: &str) -> Option<&'c Operand> {
    call.keywords
        .iter()
        .find(|keyword| keyword.name.as_deref() == Some(name))
        .map(|keyword| &keyword.value)
}

fn has_keyword(call: &Call, names: &[&str]) -> bool {
    names.iter().any(|name| keyword(call, name).is_some())
}

fn string_constant(operand: &Operand) -> Option<&str> {
    match &operand.constant {
        Some(Constant::Str(text)) => Some(text),
        _ => None,
    }
}

fn is_true(operand: Option<&Operand>) -> bool {
    operand.is_some_and(|operand| {
        operand.constant != Some(Constant::Bool(false)) && operand.constant != Some(Constant::None)
    })
}

fn is_url(operand: &Operand) -> bool {
    string_constant(operand).is_some_and(|text| {
        let text = text.trim_start().to_ascii_lowercase();
        URL_SCHEMES.iter().any(|scheme| text.starts_with(scheme))
    })
}

fn is_in_memory_database(call: &Call, qualified: &str) -> bool {
    qualified == "sqlite3.connect"
        && call
            .args
            .first()
            .and_then(string_constant)
            .is_some_and(|target| target == ":memory:")
}

fn writes_standard_stream(call: &Call) -> bool {
    matches!(
        call.args.first().and_then(|fd| fd.constant.as_ref()),
        Some(Constant::Int(1 | 2))
    )
}

fn is_standard_stream(qualified: &str) -> bool {
    STANDARD_STREAMS.contains(&qualified)
}

fn is_standard_stream_operand(operand: &Operand, origins: &BTreeMap<String, String>) -> bool {
    operand.constant == Some(Constant::None)
        || operand
            .expr
            .as_deref()
            .is_some_and(|expr| is_standard_stream(&qualify(expr, origins)))
}

fn has_destination(call: &Call) -> bool {
    call.args
        .first()
        .is_some_and(|first| first.constant != Some(Constant::None))
        || DESTINATION_KEYWORDS.iter().any(|name| {
            keyword(call, name).is_some_and(|value| value.constant != Some(Constant::None))
        })
}

/// An opener called with a mode that writes, creates or appends, or with a mode crane cannot
/// read from the syntax.
fn opens_for_writing(call: &Call, qualified: &str) -> bool {
    let path_open = qualified.starts_with("pathlib.") && qualified.ends_with(".open");
    let position = if path_open {
        0
    } else {
        match OPENERS.iter().find(|(name, _)| *name == qualified) {
            Some((_, position)) => *position,
            None => return false,
        }
    };
    let mode = keyword(call, "mode").or_else(|| call.args.get(position));
    match mode {
        None => CREATING_OPENERS.contains(&qualified),
        Some(mode) => match string_constant(mode) {
            Some(mode) => mode.contains(['w', 'a', 'x', '+', 'c', 'n']),
            None => true,
        },
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

    fn effects(code: &str, origins: &[(&str, &str)]) -> Vec<(u32, SideEffectKind)> {
        let analysis = analyze_cell(code).expect("parses");
        let origins = origins
            .iter()
            .map(|(name, origin)| (name.to_string(), origin.to_string()))
            .collect();
        side_effects(&analysis, &origins)
            .into_iter()
            .map(|effect| (effect.line, effect.kind))
            .collect()
    }

    use SideEffectKind::*;

    #[test]
    fn file_writes_are_found_by_mode_method_and_module() {
        let code = "with open('out.txt', 'w') as f:\n    f.write('x')\n\
                    df.to_csv('out.csv')\nplt.savefig('p.png')\nos.remove('a')\n\
                    shutil.rmtree('d')\nnp.save('a.npy', a)\npickle.dump(m, fh)\n\
                    Path('x').write_text('y')\nmodel.save('m.keras')";
        assert_eq!(
            effects(code, &[("Path", "pathlib.Path"), ("os", "os")]),
            (1..=10).map(|line| (line, WritesFiles)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn reading_and_returning_text_are_not_side_effects() {
        let code = "with open('in.txt') as f:\n    text = f.read()\n\
                    s = df.to_csv()\nj = df.to_json()\nd = json.dumps(x)\n\
                    print('hi')\nsys.stdout.write('x')\nprint('e', file=sys.stderr)\n\
                    df2 = df.rename(columns={'a': 'b'}).replace(0, 1)\n\
                    shutil.which('ls')\nopen('in.txt', mode='rb')\nos.path.exists('x')\n\
                    con = sqlite3.connect(':memory:')";
        assert_eq!(effects(code, &[("sys", "sys")]), vec![]);
    }

    #[test]
    fn network_and_programs_are_found_through_aliases_in_earlier_cells() {
        let code = "r = rq.get(url)\nurlretrieve(u, 'f')\ndata = pd.read_csv('https://x/y.csv')\n\
                    run(['ls'])\nsock = socket.socket()\nX = fetch_openml('mnist')\n\
                    ds = MNIST('.', download=True)\nos.system('ls')\n(x, y), _ = mnist.load_data()";
        let origins = [
            ("rq", "requests"),
            ("urlretrieve", "urllib.request.urlretrieve"),
            ("run", "subprocess.run"),
            ("fetch_openml", "sklearn.datasets._openml.fetch_openml"),
            ("mnist", "keras.api.datasets.mnist"),
            ("os", "os"),
        ];
        assert_eq!(
            effects(code, &origins),
            vec![
                (1, Network),
                (2, Network),
                (3, Network),
                (4, RunsPrograms),
                (5, Network),
                (6, Network),
                (7, Network),
                (8, RunsPrograms),
                (9, Network)
            ]
        );
    }

    #[test]
    fn os_functions_imported_by_name_resolve_through_posix() {
        assert_eq!(
            effects(
                "remove('x')\ngetcwd()",
                &[("remove", "posix.remove"), ("getcwd", "posix.getcwd")]
            ),
            vec![(1, WritesFiles)]
        );
    }

    #[test]
    fn writing_through_a_file_object_from_an_earlier_cell_is_found() {
        assert_eq!(
            effects(
                "log.write('x')\nprint('y', file=log)",
                &[("log", "_io.TextIOWrapper")]
            ),
            vec![(1, WritesFiles), (2, WritesFiles)]
        );
    }

    #[test]
    fn unknown_open_modes_count_as_writes() {
        assert_eq!(effects("open(p, mode)", &[]), vec![(1, WritesFiles)]);
        assert_eq!(effects("open(p, 'a+')", &[]), vec![(1, WritesFiles)]);
        assert_eq!(effects("open(p, 'r')", &[]), vec![]);
    }

    #[test]
    fn shell_escapes_and_magics_are_side_effects() {
        let code = "!pip install x\n%pip install y\n%run other.py\n%time df.to_parquet('a.pq')\n%matplotlib inline";
        assert_eq!(
            effects(code, &[]),
            vec![
                (1, RunsPrograms),
                (2, RunsPrograms),
                (3, UnanalyzedCode),
                (4, WritesFiles)
            ]
        );
        assert_eq!(effects("%%bash\nrm -rf x", &[]), vec![(1, RunsPrograms)]);
        assert_eq!(
            effects("%%writefile a.py\nx = 1", &[]),
            vec![(1, WritesFiles)]
        );
    }

    #[test]
    fn calls_inside_functions_the_cell_calls_count() {
        let code =
            "def save(d):\n    d.to_csv('x.csv')\n\ndef unused():\n    os.remove('y')\n\nsave(df)";
        assert_eq!(effects(code, &[]), vec![(2, WritesFiles)]);
    }

    #[test]
    fn names_to_resolve_are_callee_roots_and_print_files() {
        let analysis = analyze_cell("rq.get(u).json()\nprint(1, file=log)\nf(x)").expect("parses");
        assert_eq!(names_to_resolve(&analysis), vec!["f", "log", "print", "rq"]);
    }

    #[test]
    fn reasons_read_as_one_sentence() {
        let reason = Unsupported::SideEffect(SideEffect {
            kind: WritesFiles,
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
