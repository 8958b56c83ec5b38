//! Findings from the detectors that do not reason over facts themselves: an LLM's judgement
//! (majority of its answers) and a dry run's observed outcome.

use crane_llm::Judgement;
use crane_probe::dry_run::{
    DryRunException, DryRunOutcome, DryRunReport, DryRunResult, MemoryRequest, ProcessEnd,
};
use crane_probe::replica::{Faithfulness, ReplicaReport};

/// The status with which crane's forked child exits when it failed before it could report
/// (`CHILD_FAILED` in `crane_fork.py`): crane's failure, not the cell's.
const CHILD_FAILED: i32 = 70;

use crate::{DetectorKind, Finding, FindingStatus};

/// An LLM's majority verdict as a finding, explained by an answer on the majority's side. Its
/// confidence is the answer's own when given, else the share of answers that agree.
pub fn llm_finding(judgement: &Judgement) -> Finding {
    let representative = judgement.representative();
    let agreeing = judgement
        .answers
        .iter()
        .filter(|answer| answer.detection == judgement.verdict.crash)
        .count();
    let share = agreeing as f32 / judgement.answers.len().max(1) as f32;
    Finding {
        detector: DetectorKind::Llm,
        rule: None,
        crash: judgement.verdict.crash,
        exception: representative.and_then(|a| a.exception.clone()),
        line: representative.and_then(|a| a.line),
        diagnosis: representative
            .map(|a| a.reasoning.clone())
            .unwrap_or_else(|| "The model gave no reasoning.".into()),
        evidence: representative
            .map(|a| a.evidence.clone())
            .unwrap_or_default(),
        confidence: representative
            .and_then(|a| a.confidence)
            .map_or(share, |c| (c as f32).clamp(0.0, 1.0)),
        status: FindingStatus::Predicted,
    }
}

/// What a dry run saw. A run that raised or exited its process is an observed crash; one that
/// passed is an observed success; so is an allocation that failed in the fork when the real
/// run cannot get it either (a foreseen memory exhaustion); a fork killed by a signal, a run
/// the seal blocked, a refused run, a timeout or any other end at the memory limit decide
/// nothing.
pub fn dry_run_finding(outcome: &DryRunOutcome) -> Finding {
    let undecided = |diagnosis: String| {
        dry_run(
            FindingStatus::Unsupported,
            false,
            None,
            None,
            diagnosis,
            Vec::new(),
        )
    };
    let report = match outcome {
        DryRunOutcome::Unsupported { reasons } => {
            let reasons: Vec<String> = reasons.iter().map(ToString::to_string).collect();
            return undecided(reasons.join("; "));
        }
        DryRunOutcome::Ran(report) => report,
    };
    let observed = |crash, exception, line, diagnosis, evidence| {
        dry_run(
            FindingStatus::Observed,
            crash,
            exception,
            line,
            diagnosis,
            evidence,
        )
    };
    if let Some(replica) = &report.replica {
        if let Some(finding) = replica_finding(report, replica) {
            return finding;
        }
    }
    if let Some(abridged) = &report.abridged {
        match &report.result {
            DryRunResult::Passed => {
                return dry_run(
                    FindingStatus::Abridged,
                    false,
                    None,
                    None,
                    format!(
                        "In an abridged run in a forked copy of the kernel ({}), the cell ran to its end.",
                        abridged.summary()
                    ),
                    Vec::new(),
                );
            }
            DryRunResult::Raised(raised) => {
                let certain = abridged.depends_on.is_empty();
                let why = if let Some(confirmed) = abridged.confirmed.as_ref().filter(|_| certain) {
                    confirmed.clone()
                } else if certain {
                    abridged.grounds.clone().unwrap_or_else(|| {
                        "The failing statement reads nothing the abridgement changed.".to_owned()
                    })
                } else {
                    format!(
                        "The failing statement reads {}, which the abridgement changed: the crash may be an artefact of it.",
                        abridged.depends_on.join(", ")
                    )
                };
                return dry_run(
                    if certain {
                        FindingStatus::Abridged
                    } else {
                        FindingStatus::AbridgedUncertain
                    },
                    true,
                    Some(raised.exception.clone()),
                    raised.line,
                    format!(
                        "In an abridged run in a forked copy of the kernel ({}), the cell raised {}: {} {why}",
                        abridged.summary(),
                        raised.exception,
                        raised.message.lines().next().unwrap_or_default()
                    ),
                    last_frames(&raised.traceback),
                );
            }
            _ => {}
        }
    }
    match &report.result {
        DryRunResult::Passed => observed(
            false,
            None,
            None,
            "The cell ran to completion in a forked copy of the kernel.".into(),
            Vec::new(),
        ),
        DryRunResult::Raised(raised) => observed(
            true,
            Some(raised.exception.clone()),
            raised.line,
            format!(
                "In a forked copy of the kernel the cell raised {}: {}",
                raised.exception,
                raised.message.lines().next().unwrap_or_default()
            ),
            last_frames(&raised.traceback),
        ),
        DryRunResult::Died(ProcessEnd::ExitCode(code)) if *code != CHILD_FAILED => observed(
            true,
            None,
            None,
            format!("In a forked copy of the kernel the cell ended the process with status {code}: running it would end the kernel."),
            Vec::new(),
        ),
        // A fork can die where the kernel would not (a native runtime's threads or locks are
        // not in it), and nothing that did not fork has run the cell.
        DryRunResult::Died(end) => Finding {
            status: FindingStatus::Inconclusive,
            ..undecided(format!(
                "The dry run is inconclusive: the forked copy of the kernel {end}, which a fork can do where the kernel would not."
            ))
        },
        DryRunResult::TimedOut { after } => undecided(format!(
            "The dry run was still running after {:.0} s and was stopped.",
            after.as_secs_f64()
        )),
        DryRunResult::Blocked { attempts, .. } => {
            let line = attempts.first().and_then(|attempt| attempt.line);
            let place = line
                .map(|line| format!(" at line {line}"))
                .unwrap_or_default();
            let what = attempts
                .first()
                .map(|attempt| attempt.what.as_str())
                .unwrap_or("reach outside the fork");
            Finding {
                line,
                status: FindingStatus::Inconclusive,
                evidence: attempts.iter().map(|attempt| attempt.what.clone()).collect(),
                ..undecided(format!(
                    "The dry run is inconclusive{place}: the cell tried to {what} and the seal of the fork blocked it."
                ))
            }
        }
        DryRunResult::MemoryLimit {
            request: Some(request),
            exception,
            ..
        } => memory_finding(request, exception.as_ref(), report.memory_limit_bytes),
        DryRunResult::MemoryLimit { .. } => undecided(format!(
            "The dry run needed more than its memory limit ({} MB).",
            report.memory_limit_bytes / 1_000_000
        )),
    }
}

/// An allocation that failed in the fork: a crash when the real run cannot get it either
/// (`MemoryRequest::certain`), else undecided with the same sizes.
fn memory_finding(
    request: &MemoryRequest,
    raised: Option<&DryRunException>,
    limit: u64,
) -> Finding {
    let line = raised.and_then(|raised| raised.line);
    let evidence = raised
        .map(|raised| last_frames(&raised.traceback))
        .unwrap_or_default();
    let needs = request.needs();
    let place = line
        .map(|line| format!(" (line {line})"))
        .unwrap_or_default();
    match &request.certain {
        Some(why) => dry_run(
            FindingStatus::Observed,
            true,
            Some("MemoryError".to_owned()),
            line,
            format!(
                "The cell {needs} in {}: {} could not be allocated in a forked copy of the kernel{place}, and {why}.",
                request.available_in, request.what
            ),
            evidence,
        ),
        None => Finding {
            line,
            evidence,
            ..dry_run(
                FindingStatus::Unsupported,
                false,
                None,
                None,
                format!(
                    "The dry run needed more than its memory limit ({} MB): {} {needs} in {}{place}, which the real run may still get (nothing shows that it writes all of it, or that Linux refuses it).",
                    limit / 1_000_000,
                    request.what,
                    request.available_in
                ),
                Vec::new(),
            )
        },
    }
}

/// What a run in the replica saw, when it ran to its end or raised; `None` for the endings a
/// fork's run shares (timeouts, the seal, the memory limit), judged as a fork's are.
fn replica_finding(report: &DryRunReport, replica: &ReplicaReport) -> Option<Finding> {
    let vessel = match &report.abridged {
        Some(abridged) => format!(
            "In an abridged run in a replica of the kernel ({}; {})",
            replica.summary(),
            abridged.summary()
        ),
        None => format!("In a replica of the kernel ({})", replica.summary()),
    };
    match &report.result {
        DryRunResult::Passed => Some(dry_run(
            FindingStatus::Replicated,
            false,
            None,
            None,
            format!("{vessel}, the cell ran to its end."),
            Vec::new(),
        )),
        DryRunResult::Raised(raised) => {
            let what = format!(
                "{vessel}, the cell raised {}: {}",
                raised.exception,
                raised
                    .message
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches('.')
            );
            let evidence = last_frames(&raised.traceback);
            let exception = Some(raised.exception.clone());
            Some(match replica.faithfulness() {
                Faithfulness::Exact => dry_run(
                    FindingStatus::Replicated,
                    true,
                    exception,
                    raised.line,
                    format!("{what}. The failing statement reads only objects copied exactly from the kernel."),
                    evidence,
                ),
                Faithfulness::Approximate(what_read) => dry_run(
                    FindingStatus::ReplicaApproximate,
                    true,
                    exception,
                    raised.line,
                    format!(
                        "{what}. The failing statement reads {}, not the kernel's own: the crash may be an artefact of that.",
                        what_read.join(", ")
                    ),
                    evidence,
                ),
                Faithfulness::Undecided(missing) => dry_run(
                    FindingStatus::Inconclusive,
                    false,
                    None,
                    raised.line,
                    format!(
                        "The run in a replica of the kernel is inconclusive: the failing statement reads {}, which the replica could not rebuild.",
                        missing.join(", ")
                    ),
                    evidence,
                ),
            })
        }
        _ => None,
    }
}

/// A dry run's finding; how far it can be trusted follows from its status.
fn dry_run(
    status: FindingStatus,
    crash: bool,
    exception: Option<String>,
    line: Option<u32>,
    diagnosis: String,
    evidence: Vec<String>,
) -> Finding {
    Finding {
        detector: DetectorKind::DryRun,
        rule: None,
        crash,
        exception,
        line,
        diagnosis,
        evidence,
        confidence: match status {
            FindingStatus::Observed | FindingStatus::Abridged | FindingStatus::Replicated => 1.0,
            FindingStatus::AbridgedUncertain | FindingStatus::ReplicaApproximate => 0.5,
            _ => 0.0,
        },
        status,
    }
}

/// The innermost three frames of a traceback: where the cell failed.
fn last_frames(traceback: &[String]) -> Vec<String> {
    traceback[traceback.len().saturating_sub(3)..].to_vec()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crane_probe::dry_run::DryRunTimings;

    use super::*;

    fn memory_report(certain: Option<&str>) -> DryRunOutcome {
        DryRunOutcome::Ran(DryRunReport {
            result: DryRunResult::MemoryLimit {
                exception: Some(DryRunException {
                    exception: "MemoryError".into(),
                    message: "Unable to allocate 381. MiB".into(),
                    traceback: vec!["t".into()],
                    line: Some(2),
                }),
                used_bytes: None,
                request: Some(MemoryRequest {
                    bytes: 400_000_000,
                    what: "an array of shape (50000000,) and data type float64".into(),
                    available_bytes: 325_000_000,
                    available_in: "its memory cgroup (0.5 GB limit)".into(),
                    certain: certain.map(str::to_owned),
                }),
            },
            stdout_tail: String::new(),
            timings: DryRunTimings {
                fork: Duration::ZERO,
                run: None,
                teardown: Duration::ZERO,
                full_run: None,
            },
            memory_limit_bytes: 160_000_000,
            child_pid: 1,
            seal: None,
            abridged: None,
            replica: None,
        })
    }

    #[test]
    fn a_foreseen_exhaustion_is_a_crash_with_its_sizes_and_an_unproven_one_is_not() {
        let held = dry_run_finding(&memory_report(Some("numpy.ones writes every byte")));
        assert!(held.crash && held.status.is_certain(), "{held:?}");
        assert_eq!(
            (held.exception.as_deref(), held.line),
            (Some("MemoryError"), Some(2))
        );
        assert!(
            held.diagnosis.starts_with(
                "The cell needs more than 0.4 GB; 0.3 GB available in its memory cgroup"
            ),
            "{}",
            held.diagnosis
        );
        assert!(held.diagnosis.contains("numpy.ones writes every byte"));

        let open = dry_run_finding(&memory_report(None));
        assert!(!open.crash && open.status.is_undecided(), "{open:?}");
        assert!(
            open.diagnosis
                .contains("needs more than 0.4 GB; 0.3 GB available"),
            "{}",
            open.diagnosis
        );
    }
}
