//! The check of one cell as the proxy sees it: the [`Checker`] that judges it against the live
//! kernel (crane-check's [`KernelChecker`], given the cell with the `%crane` settings), the
//! [`Decision`] the policy takes from its verdict, the cell's one parse the check hands on
//! ([`parse_of`]), and the outputs that tell the notebook about it. [`decide`] is the first of
//! the places a cell is held; crane-check's crate doc, "Where a cell is held", names them all
//! and why.

use std::future::Future;
use std::sync::Arc;

use crane_analysis::{ParsedCell, Prior};
use crane_check::{CellRequest, DryRunWhen, KernelChecker};
pub use crane_check::{Checked, KernelEvent, Timings};
use crane_detect::{DetectorKind, Finding, FindingStatus};
use crane_kernel::KernelSession;

use crate::settings::{DryRunMode, Policy, Settings};

/// The exception name of a held cell's error output.
pub const HELD_ENAME: &str = "CranePredictedCrash";

/// crane's error output for a cell it held, stopped, or held after its first statements ran.
#[derive(Debug, Clone, PartialEq)]
pub struct CraneError {
    pub ename: String,
    pub evalue: String,
    pub traceback: Vec<String>,
}

/// A cell to check.
#[derive(Debug, Clone)]
pub struct CheckRequest {
    pub code: String,
    pub settings: Settings,
}

/// Judges a cell against the real kernel's current state. It must not interrupt or signal the
/// kernel: the proxy abandons a check that takes too long and runs the cell.
pub trait Checker: 'static {
    /// Ready what every check needs (crane's module in the kernel, data the rules load on first
    /// use) once the kernel is up, before the frontend's first request is served, so that the
    /// first cell does not pay for it. A failure only means the first check does it instead.
    fn prepare(&mut self, session: &mut KernelSession) -> impl Future<Output = Result<(), String>>;

    /// What happened to the kernel's state since the last check (all of it before the
    /// first), in order, given just before the next check begins: the cells it ran and the
    /// returns to a snapshot that took cells back. The proxy keeps no cell: what the checks
    /// need of the kernel's history (bindings, LLM prompts) the checker keeps.
    fn executed(&mut self, events: Vec<KernelEvent>);

    /// What the cells the kernel ran say of `name`, for a failed cell's part that ran
    /// ([`crane_analysis::failed_prefix`]); the events given so far all count. Without a
    /// history, nothing is known ([`Prior::Bound`]: the failed cell is rolled back).
    fn prior(&mut self, _name: &str) -> Prior {
        Prior::Bound
    }

    fn check(
        &mut self,
        session: &mut KernelSession,
        request: &CheckRequest,
    ) -> impl Future<Output = Result<Checked, String>>;

    /// Lines for `%crane status` about what the checker keeps beside the kernel (its replica).
    fn status(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// The engine's checker, given each cell with the settings that apply to it.
impl Checker for KernelChecker {
    async fn prepare(&mut self, session: &mut KernelSession) -> Result<(), String> {
        KernelChecker::prepare(self, session).await
    }

    fn executed(&mut self, events: Vec<KernelEvent>) {
        KernelChecker::executed(self, events)
    }

    fn prior(&mut self, name: &str) -> Prior {
        KernelChecker::prior(self, name)
    }

    async fn check(
        &mut self,
        session: &mut KernelSession,
        request: &CheckRequest,
    ) -> Result<Checked, String> {
        let settings = &request.settings;
        let cell = CellRequest {
            code: &request.code,
            llm: settings.llm.as_deref(),
            ignore: &settings.ignore,
            dry_run: match settings.dry_run {
                DryRunMode::Auto => DryRunWhen::Auto,
                DryRunMode::On => DryRunWhen::On,
                DryRunMode::Off => DryRunWhen::Off,
            },
            dry_run_budget: settings.dry_run_budget,
            snapshots: settings.snapshot_keep > 0,
        };
        KernelChecker::check(self, session, &cell).await
    }

    fn status(&mut self) -> Vec<String> {
        KernelChecker::status(self)
    }
}

/// The one parse of `code`, the code the relay sends to the kernel, which every later reading
/// of it takes: the check's ([`Checked::cell`]) when `checked` read this code, else `code`
/// parsed now (code no check read: policy off, a check abandoned, a cell crane rewrote).
pub fn parse_of(code: &str, checked: Option<&Checked>) -> Arc<ParsedCell> {
    match checked {
        Some(checked) if checked.cell.source() == code => Arc::clone(&checked.cell),
        _ => Arc::new(ParsedCell::parse(code)),
    }
}

/// What the proxy does with a checked cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Run,
    /// Show the prediction, then run the cell.
    Warn,
    /// Do not send the cell to the kernel; answer with [`HELD_ENAME`].
    Hold,
}

/// The finding behind a crash verdict: an observed crash first, then a proven one, then a
/// prediction (the authority order of [`crane_detect::combine`]).
pub fn deciding(checked: &Checked) -> Option<&Finding> {
    if !checked.verdict.crash {
        return None;
    }
    [
        FindingStatus::Observed,
        FindingStatus::Abridged,
        FindingStatus::Replicated,
        FindingStatus::Proven,
        FindingStatus::AbridgedUncertain,
        FindingStatus::ReplicaApproximate,
        FindingStatus::Predicted,
    ]
    .into_iter()
    .find_map(|status| {
        checked
            .findings
            .iter()
            .filter(|finding| finding.crash && finding.status == status)
            .max_by(|a, b| a.confidence.total_cmp(&b.confidence))
    })
}

/// Whether the crash is certain: a rule proved it or a dry run saw it.
pub fn is_certain(checked: &Checked) -> bool {
    deciding(checked).is_some_and(|finding| finding.status.is_certain())
}

pub fn decide(checked: &Checked, policy: Policy) -> Decision {
    if !checked.verdict.crash {
        return Decision::Run;
    }
    match policy {
        Policy::Off => Decision::Run,
        Policy::Stop if is_certain(checked) => Decision::Hold,
        Policy::Stop | Policy::Warn => Decision::Warn,
    }
}

fn exception(checked: &Checked) -> &str {
    checked
        .verdict
        .exception
        .as_deref()
        .unwrap_or("an exception")
}

fn source(finding: &Finding) -> String {
    let detector = match finding.detector {
        DetectorKind::Rules => "rules",
        DetectorKind::Llm => "LLM",
        DetectorKind::Hybrid => "rules and LLM",
        DetectorKind::DryRun
            if matches!(
                finding.status,
                FindingStatus::Replicated | FindingStatus::ReplicaApproximate
            ) =>
        {
            "dry run in a replica of the kernel"
        }
        DetectorKind::DryRun => "dry run in a fork of the kernel",
    };
    let how = match finding.status {
        FindingStatus::Proven => "proven",
        FindingStatus::Observed => "observed",
        FindingStatus::Predicted => "predicted",
        FindingStatus::Refuted => "refuted",
        FindingStatus::Unsupported => "undecided",
        FindingStatus::Inconclusive => "inconclusive",
        FindingStatus::Abridged => "observed in an abridged run",
        FindingStatus::AbridgedUncertain => "seen in an abridged run, maybe an artefact of it",
        FindingStatus::Replicated => "observed in a replica of the kernel's objects",
        FindingStatus::ReplicaApproximate => {
            "seen in a replica on stand-ins of the kernel's data, maybe an artefact of them"
        }
    };
    match &finding.rule {
        Some(rule) => format!("rule {rule} ({detector}, {how})"),
        None => format!("{detector}, {how}"),
    }
}

/// `evalue` of a held cell: the predicted exception and the one-line diagnosis.
pub fn held_evalue(checked: &Checked) -> String {
    let diagnosis = checked.verdict.diagnosis.lines().next().unwrap_or_default();
    format!("{} predicted: {diagnosis}", exception(checked))
}

/// The first line of every held cell's traceback.
pub fn held_first_line() -> String {
    format!(
        "\u{1b}[0;31m{HELD_ENAME}\u{1b}[0m: crane held this cell before it ran; the kernel's state and execution count are unchanged."
    )
}

/// The traceback-style body of a held cell: the line, the evidence and the rule.
pub fn held_traceback(checked: &Checked, code: &str) -> Vec<String> {
    let mut lines = vec![held_first_line()];
    lines.extend(body(checked, code));
    lines.push("Run it anyway: put %%crane run on its first line. Why: %crane explain.".to_owned());
    lines
}

fn body(checked: &Checked, code: &str) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(line) = checked.verdict.line {
        if let Some(text) = code.lines().nth(line.saturating_sub(1) as usize) {
            lines.push(format!("  line {line}: {}", text.trim()));
        }
    }
    lines.push(format!(
        "  {}: {}",
        exception(checked),
        checked.verdict.diagnosis
    ));
    if let Some(finding) = deciding(checked) {
        lines.push(format!("  by {}", source(finding)));
        for evidence in &finding.evidence {
            lines.push(format!("  evidence: {evidence}"));
        }
    }
    lines
}

/// The output of a cell crane warns about and then runs. A cell checked in the replica runs
/// in a kernel that cannot be forked now, so no snapshot will be kept before it: the warning
/// says that a rollback cannot undo it.
pub fn warning_text(checked: &Checked, code: &str) -> String {
    let mut lines = vec![format!(
        "crane warning: this cell may raise {}; it runs anyway.",
        exception(checked)
    )];
    lines.extend(body(checked, code));
    let in_replica = checked.findings.iter().any(|finding| {
        matches!(
            finding.status,
            FindingStatus::Replicated | FindingStatus::ReplicaApproximate
        )
    });
    if in_replica {
        lines.push(
            "  No snapshot: this kernel cannot be forked now (its checks run in a replica), so crane keeps no state from before this cell and no rollback undoes what it changes. Interrupting it at once is the only way to keep that state as it is."
                .to_owned(),
        );
    }
    lines.join("\n")
}

/// `%crane explain` for the last cell crane spoke about.
pub fn explanation(checked: &Checked, code: &str, decision: &Decision) -> String {
    let what = match decision {
        Decision::Hold => "held",
        Decision::Warn => "warned about, then ran",
        Decision::Run => "ran",
    };
    let first = code
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default();
    let mut lines = vec![format!(
        "crane {what} the cell `{}` (checked in {} ms).",
        first.trim(),
        checked.elapsed.as_millis()
    )];
    lines.extend(body(checked, code));
    for finding in &checked.findings {
        lines.push(format!(
            "  finding: {} -> {} ({}; confidence {:.2})",
            source(finding),
            if finding.crash { "crash" } else { "no crash" },
            finding.diagnosis.lines().next().unwrap_or_default(),
            finding.confidence
        ));
    }
    for note in &checked.notes {
        lines.push(format!("  note: {note}"));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn finding(detector: DetectorKind, status: FindingStatus) -> Finding {
        Finding {
            detector,
            rule: None,
            crash: true,
            exception: Some("KeyError".into()),
            line: Some(2),
            diagnosis: "df has no column 'prize'.".into(),
            evidence: vec!["df columns: [price]".into()],
            confidence: 1.0,
            status,
        }
    }

    #[test]
    fn a_warning_from_the_replica_says_that_no_snapshot_keeps_the_state() {
        let forked = checked(vec![finding(
            DetectorKind::DryRun,
            FindingStatus::AbridgedUncertain,
        )]);
        let text = warning_text(&forked, "df = load()\ndf['prize'].mean()");
        assert!(
            text.starts_with("crane warning: this cell may raise KeyError"),
            "{text}"
        );
        assert!(!text.contains("No snapshot"), "{text}");
        let replica = checked(vec![finding(
            DetectorKind::DryRun,
            FindingStatus::ReplicaApproximate,
        )]);
        let text = warning_text(&replica, "df = load()\ndf['prize'].mean()");
        assert!(
            text.ends_with("Interrupting it at once is the only way to keep that state as it is."),
            "{text}"
        );
    }

    fn checked(findings: Vec<Finding>) -> Checked {
        let verdict = crane_detect::combine(&findings);
        Checked {
            findings,
            verdict,
            notes: Vec::new(),
            outside_effects: Vec::new(),
            elapsed: Duration::from_millis(3),
            timings: Timings::default(),
            beside: false,
            cell: Arc::new(ParsedCell::parse("df['prize'].mean()")),
        }
    }

    #[test]
    fn the_relayed_code_takes_the_checks_parse_when_it_read_that_code() {
        let checked = checked(Vec::new());
        let same = parse_of("df['prize'].mean()", Some(&checked));
        assert!(Arc::ptr_eq(&same, &checked.cell));
        let other = parse_of("df['price'].mean()", Some(&checked));
        assert_eq!(other.source(), "df['price'].mean()");
        assert!(!Arc::ptr_eq(&other, &checked.cell));
        assert_eq!(parse_of("x = 1", None).source(), "x = 1");
    }

    #[test]
    fn certain_crashes_hold_and_llm_claims_warn() {
        let proven = checked(vec![finding(DetectorKind::Rules, FindingStatus::Proven)]);
        let observed = checked(vec![finding(DetectorKind::DryRun, FindingStatus::Observed)]);
        let predicted = checked(vec![finding(DetectorKind::Llm, FindingStatus::Predicted)]);
        assert_eq!(decide(&proven, Policy::Stop), Decision::Hold);
        assert_eq!(decide(&observed, Policy::Stop), Decision::Hold);
        assert_eq!(decide(&predicted, Policy::Stop), Decision::Warn);
        assert_eq!(decide(&proven, Policy::Warn), Decision::Warn);
        assert_eq!(decide(&proven, Policy::Off), Decision::Run);
        assert_eq!(decide(&checked(Vec::new()), Policy::Stop), Decision::Run);
    }

    #[test]
    fn a_held_cell_names_the_exception_line_and_evidence() {
        let proven = checked(vec![finding(DetectorKind::Rules, FindingStatus::Proven)]);
        let code = "import pandas as pd\ndf['prize'].mean()";
        assert_eq!(
            held_evalue(&proven),
            "KeyError predicted: df has no column 'prize'."
        );
        let traceback = held_traceback(&proven, code).join("\n");
        assert!(
            traceback.contains("line 2: df['prize'].mean()"),
            "{traceback}"
        );
        assert!(
            traceback.contains("evidence: df columns: [price]"),
            "{traceback}"
        );
        assert!(traceback.contains("rules, proven"), "{traceback}");
    }
}
