//! A cell judged by execution before it runs: a dry run in a fork of the kernel, else, where the
//! kernel's state refuses a fork, a run in the replica. The one place that joins the two, so that
//! neither the dry run nor the replica reads the other.

use crane_analysis::{AnalysisError, CellAnalysis};
use crane_kernel::KernelSession;

use crate::cell_run::DryRunOptions;
use crate::dry_run;
use crate::replica::{Replica, ReplicaError};
use crate::run_report::{DryRunError, DryRunOutcome, Unsupported};

/// Judge `code` by execution: a dry run in a fork of the kernel, or, when the kernel's state
/// refuses a fork and a replica is given, a run in the replica. A replica that fails adds its
/// reason to the refusal's.
pub async fn execute_ahead(
    session: &mut KernelSession,
    replica: Option<&mut Replica>,
    code: &str,
    options: &DryRunOptions,
) -> Result<DryRunOutcome, DryRunError> {
    let analysis = crane_analysis::analyze_cell(code);
    execute_ahead_analysed(session, replica, code, &analysis, options).await
}

/// [`execute_ahead`] of a cell the caller has analysed (`analysis` is `code`'s).
pub async fn execute_ahead_analysed(
    session: &mut KernelSession,
    replica: Option<&mut Replica>,
    code: &str,
    analysis: &Result<CellAnalysis, AnalysisError>,
    options: &DryRunOptions,
) -> Result<DryRunOutcome, DryRunError> {
    let outcome = dry_run::dry_run_analysed(session, code, analysis, options).await?;
    let DryRunOutcome::Unsupported { reasons } = &outcome else {
        return Ok(outcome);
    };
    let Some(replica) = replica else {
        return Ok(outcome);
    };
    // Only the kernel's state sends a cell to the replica: a cell refused for itself (its
    // side effects where nothing seals them) is refused there too.
    let fork_refused: Vec<String> = reasons
        .iter()
        .map(|reason| match reason {
            Unsupported::Kernel(reason) => Some(reason.clone()),
            _ => None,
        })
        .collect::<Option<_>>()
        .unwrap_or_default();
    if fork_refused.is_empty() {
        return Ok(outcome);
    }
    match replica.run(session, code, options, fork_refused).await {
        Ok(ran) => Ok(ran),
        Err(ReplicaError::DryRun(DryRunError::Kernel(error))) => Err(DryRunError::Kernel(error)),
        Err(error) => {
            let DryRunOutcome::Unsupported { mut reasons } = outcome else {
                return Ok(outcome);
            };
            reasons.push(Unsupported::Replica(error.to_string()));
            Ok(DryRunOutcome::Unsupported { reasons })
        }
    }
}
