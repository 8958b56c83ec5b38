//! Findings, verdicts, and the policy that combines findings into a verdict.

use serde::{Deserialize, Serialize};

use crate::rules::RuleCode;

/// Which detector produced a finding or decided a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetectorKind {
    Rules,
    Llm,
    Hybrid,
    DryRun,
}

impl DetectorKind {
    /// The name `--detector` and the JSON output use.
    pub fn label(self) -> &'static str {
        match self {
            DetectorKind::Rules => "rules",
            DetectorKind::Llm => "llm",
            DetectorKind::Hybrid => "hybrid",
            DetectorKind::DryRun => "dry_run",
        }
    }
}

/// How much a finding is worth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingStatus {
    /// A rule proved it from the code and exact runtime facts.
    Proven,
    /// A model predicted it; nothing contradicts it.
    Predicted,
    /// A model claimed it, but the runtime facts contradict what the claim rests on.
    Refuted,
    /// A dry run executed the cell and saw it happen (or not happen).
    Observed,
    /// The detector could not judge this cell (no facts, unsafe to fork, no model configured).
    Unsupported,
    /// A dry run ran the cell until it tried to reach outside its sealed fork (`line`):
    /// nothing is decided from there on.
    Inconclusive,
    /// An abridged dry run (loops cut to their first and last iteration) saw the crash, and the
    /// failing statement reads nothing the abridgement changed; or it ran to its end.
    Abridged,
    /// An abridged dry run saw a crash whose statement reads a value the abridgement changed:
    /// it may be an artefact of abridging, so it warns and never holds.
    AbridgedUncertain,
    /// A run in the replica (the kernel could not be forked) saw the crash, and the failing
    /// statement reads only objects copied exactly from the kernel; or it ran to its end.
    Replicated,
    /// A run in the replica saw a crash whose statement reads a stand-in of the kernel's data
    /// (or a value an abridged loop changed): it may be an artefact, so it warns and never
    /// holds.
    ReplicaApproximate,
}

impl FindingStatus {
    /// The detector could not judge the cell (a dry run refused, or blocked by its seal).
    pub fn is_undecided(self) -> bool {
        matches!(
            self,
            FindingStatus::Unsupported | FindingStatus::Inconclusive
        )
    }

    /// A crash of this status is seen by execution but may be an artefact of how the cell was
    /// run (abridged, on stand-ins): it warns and never holds a cell.
    pub fn may_be_artefact(self) -> bool {
        matches!(
            self,
            FindingStatus::AbridgedUncertain | FindingStatus::ReplicaApproximate
        )
    }

    /// A crash of this status is certain enough to hold a cell: proven by a rule, or seen by
    /// execution that reads nothing approximated.
    pub fn is_certain(self) -> bool {
        matches!(
            self,
            FindingStatus::Proven
                | FindingStatus::Observed
                | FindingStatus::Abridged
                | FindingStatus::Replicated
        )
    }
}

/// One detector's statement about the target cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub detector: DetectorKind,
    /// The rule that fired (rule findings only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleCode>,
    /// The cell crashes (`false`: the detector judged that it does not).
    pub crash: bool,
    /// Predicted (or observed) exception class, e.g. `KeyError`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
    /// 1-based line in the target cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// One sentence naming the objects and facts involved.
    pub diagnosis: String,
    /// The runtime facts relied on, human-readable (`df columns: [a, b, c]`).
    #[serde(default)]
    pub evidence: Vec<String>,
    /// In `[0, 1]`: how sure the detector is of `crash`.
    pub confidence: f32,
    pub status: FindingStatus,
}

/// The combined judgement on the target cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub crash: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub diagnosis: String,
    /// In `[0, 1]`: how sure crane is of `crash`.
    pub confidence: f32,
    /// The detector whose finding decided the verdict.
    pub detector: DetectorKind,
    /// Findings that said otherwise and gave way to the deciding one, each with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overridden: Vec<Overridden>,
}

/// A finding that contradicted the deciding one and was set aside.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overridden {
    pub detector: DetectorKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleCode>,
    pub crash: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Why it gave way, e.g. "the dry run ran the cell to its end".
    pub reason: String,
}

/// Confidence of "no crash" when no detector said anything: rules are silent unless they can
/// prove a crash, so their silence is weak evidence.
const SILENCE_CONFIDENCE: f32 = 0.5;

/// Combine findings into one verdict. In order of authority:
///
/// 1. an observed outcome (dry run) is the truth;
/// 2. a proven crash (rule) stands whatever any model says;
/// 3. otherwise the model's prediction, unless it was refuted;
/// 4. a refuted crash claim alone becomes "no crash", as sure as the claim was unsure;
/// 5. no findings at all: no crash, with low confidence.
///
/// Unsupported findings are ignored. Among findings of equal authority, crash claims win over
/// no-crash claims and then the most confident one decides.
pub fn combine(findings: &[Finding]) -> Verdict {
    let best = |status: FindingStatus| {
        findings
            .iter()
            .filter(|f| f.status == status)
            .max_by(|a, b| {
                a.crash
                    .cmp(&b.crash)
                    .then(a.confidence.total_cmp(&b.confidence))
            })
    };
    let proven_crash = || best(FindingStatus::Proven).filter(|f| f.crash);
    // A pass of an abridged run or of the replica says less than a rule's proof: only a crash
    // they saw is authoritative.
    let executed_crash = || {
        best(FindingStatus::Abridged)
            .or_else(|| best(FindingStatus::Replicated))
            .filter(|f| f.crash)
    };
    if let Some(observed) = best(FindingStatus::Observed).or_else(executed_crash) {
        let reason = match (&observed.exception, observed.line) {
            _ if !observed.crash => "the dry run ran the cell to its end".to_owned(),
            (Some(exception), Some(line)) if observed.status == FindingStatus::Replicated => {
                format!("a run in the replica saw {exception} at line {line}")
            }
            (Some(exception), Some(line)) => format!("the dry run saw {exception} at line {line}"),
            (Some(exception), None) => format!("the dry run saw {exception}"),
            (None, _) => "the dry run saw the cell crash".to_owned(),
        };
        let overridden = findings
            .iter()
            .filter(|f| matches!(f.status, FindingStatus::Proven | FindingStatus::Predicted))
            .filter(|f| {
                f.crash != observed.crash
                    || (f.crash && (f.exception != observed.exception || f.line != observed.line))
            })
            .map(|f| Overridden::by(f, &reason))
            .collect();
        return Verdict {
            overridden,
            ..Verdict::from_finding(observed)
        };
    }
    if let Some(proven) = proven_crash() {
        let overridden = findings
            .iter()
            .filter(|f| f.status == FindingStatus::Predicted && !f.crash)
            .map(|f| Overridden::by(f, "a rule proved the crash from the runtime facts"))
            .collect();
        return Verdict {
            overridden,
            ..Verdict::from_finding(proven)
        };
    }
    if let Some(uncertain) =
        best(FindingStatus::AbridgedUncertain).or_else(|| best(FindingStatus::ReplicaApproximate))
    {
        return Verdict::from_finding(uncertain);
    }
    if let Some(predicted) = best(FindingStatus::Predicted) {
        return Verdict::from_finding(predicted);
    }
    if let Some(refuted) = best(FindingStatus::Refuted) {
        return Verdict {
            crash: false,
            exception: None,
            line: None,
            diagnosis: format!(
                "No crash expected: the claim \"{}\" is contradicted by the runtime facts.",
                refuted.diagnosis
            ),
            confidence: 1.0 - refuted.confidence,
            detector: refuted.detector,
            overridden: Vec::new(),
        };
    }
    Verdict {
        crash: false,
        exception: None,
        line: None,
        diagnosis: "No detector found a reason for this cell to crash.".to_owned(),
        confidence: SILENCE_CONFIDENCE,
        detector: findings.first().map_or(DetectorKind::Rules, |f| f.detector),
        overridden: Vec::new(),
    }
}

impl Overridden {
    fn by(finding: &Finding, reason: &str) -> Overridden {
        Overridden {
            detector: finding.detector,
            rule: finding.rule,
            crash: finding.crash,
            exception: finding.exception.clone(),
            line: finding.line,
            reason: reason.to_owned(),
        }
    }
}

impl Verdict {
    fn from_finding(finding: &Finding) -> Verdict {
        Verdict {
            crash: finding.crash,
            exception: finding.exception.clone(),
            line: finding.line,
            diagnosis: finding.diagnosis.clone(),
            confidence: finding.confidence,
            detector: finding.detector,
            overridden: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(detector: DetectorKind, status: FindingStatus, crash: bool) -> Finding {
        Finding {
            detector,
            rule: None,
            crash,
            exception: crash.then(|| "KeyError".to_owned()),
            line: crash.then_some(2),
            diagnosis: String::new(),
            evidence: Vec::new(),
            confidence: 0.95,
            status,
        }
    }

    #[test]
    fn a_dry_run_that_passes_names_the_proven_crash_it_overrides() {
        let proven = finding(DetectorKind::Rules, FindingStatus::Proven, true);
        let observed = finding(DetectorKind::DryRun, FindingStatus::Observed, false);
        let verdict = combine(&[proven, observed]);
        assert!(!verdict.crash);
        assert_eq!(verdict.detector, DetectorKind::DryRun);
        assert_eq!(verdict.overridden.len(), 1);
        let overridden = &verdict.overridden[0];
        assert_eq!(overridden.detector, DetectorKind::Rules);
        assert!(overridden.crash);
        assert_eq!(overridden.reason, "the dry run ran the cell to its end");
    }

    #[test]
    fn findings_that_agree_with_the_deciding_one_are_not_overridden() {
        let proven = finding(DetectorKind::Rules, FindingStatus::Proven, true);
        let observed = finding(DetectorKind::DryRun, FindingStatus::Observed, true);
        assert!(combine(&[proven.clone(), observed]).overridden.is_empty());
        assert!(combine(&[proven]).overridden.is_empty());
    }
}
