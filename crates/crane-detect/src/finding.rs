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
    if let Some(observed) = best(FindingStatus::Observed) {
        return Verdict::from_finding(observed);
    }
    if let Some(proven) = proven_crash() {
        return Verdict::from_finding(proven);
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
        };
    }
    Verdict {
        crash: false,
        exception: None,
        line: None,
        diagnosis: "No detector found a reason for this cell to crash.".to_owned(),
        confidence: SILENCE_CONFIDENCE,
        detector: findings.first().map_or(DetectorKind::Rules, |f| f.detector),
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
        }
    }
}
