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
//!
//! What the dry run shares with the replica, which runs a cell the same way in its own fork,
//! lives beside both: the run's options and stages (`cell_run.rs`), its report (`run_report.rs`)
//! and the readers of the module's answers (`run_answer.rs`), the module itself and calls into
//! it (`run_module.rs`); `ahead.rs` joins the two (a dry run, else the replica). The dry run
//! re-exports the report's types, by which the other crates name them.

use std::collections::BTreeMap;
use std::time::Duration;

use crane_analysis::effects::{names_to_resolve, side_effects};
pub use crane_analysis::effects::{SideEffect, SideEffectKind};
use crane_analysis::{analyze_cell, AnalysisError, CellAnalysis};
use crane_kernel::KernelSession;
use serde::Deserialize;
use serde_json::json;

pub use crate::cell_run::{AbridgeOptions, DryRunOptions};
use crate::cell_run::{Abridging, Next};
pub use crate::fork::ProcessEnd;
use crate::run_answer::read_abridgeable_run_answer;
use crate::run_module::call;
pub use crate::run_module::{DRY_RUN_MODULE, DRY_RUN_SOURCE};
pub use crate::run_report::{
    Abridged, AbridgedCall, AbridgedLoop, BlockedAttempt, DryRunError, DryRunException,
    DryRunOutcome, DryRunReport, DryRunResult, DryRunTimings, MemoryRequest, SealReport,
    Unsupported,
};

/// How long the kernel may take to answer the pre-fork inspection.
const INSPECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Time allowed beyond the dry run's own timeout for forking, killing and reaping a large
/// kernel before crane interrupts it.
const KERNEL_GRACE: Duration = Duration::from_secs(15);

/// How long an abridged run of budget `timeout` may take in all: its own run, then a second
/// run abridged otherwise in what is left of the budget and at least half of it (the dry-run
/// module's `run`), so that a first run slowed by a busy machine leaves the second time.
pub fn abridged_run_limit(timeout: Duration) -> Duration {
    timeout + timeout / 2
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
    let limit = if abridge {
        abridged_run_limit(timeout)
    } else {
        timeout
    };
    read_abridgeable_run_answer(call(session, "run", &request, limit + KERNEL_GRACE).await?)
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

#[derive(Deserialize)]
struct Inspection {
    unsupported: Vec<String>,
    origins: BTreeMap<String, String>,
    compiles: bool,
    /// Why the fork cannot be sealed here; empty when it can.
    #[serde(default)]
    unsealable: Vec<String>,
}
