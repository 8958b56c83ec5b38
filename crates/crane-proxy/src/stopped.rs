//! A cell crane stopped because its dry run beside it crashed first: to the frontend it ends as
//! a held cell does, with crane's predicted crash (`CranePredictedCrash`) as its error output
//! and in its `execute_reply`, not with the `KeyboardInterrupt` the kernel raised when crane
//! interrupted it, which was crane's means and not the cell's outcome.

use std::time::Duration;

use crane_detect::Finding;
use serde_json::Value;

use crate::check::{CraneError, HELD_ENAME};

/// The error of a cell stopped `after` it began, for the crash `finding` its dry run beside it
/// saw; `rolled_back`: its snapshot is there to roll the kernel back to.
pub fn stopped_error(
    finding: &Finding,
    code: &str,
    after: Duration,
    rolled_back: bool,
) -> CraneError {
    let (exception, at, diagnosis) = predicted(finding);
    let state = match rolled_back {
        true => "the kernel is rolled back to the state before the cell",
        false => "its snapshot is gone, so the kernel keeps what the cell did until then",
    };
    let mut traceback = vec![format!(
        "\u{1b}[0;31m{HELD_ENAME}\u{1b}[0m: crane stopped this cell after {:.1} s: its dry run beside it, in a fork of the state before it with its loops cut short, crashed first; {state}.",
        after.as_secs_f64()
    )];
    if let Some(text) = finding
        .line
        .and_then(|line| code.lines().nth(line.saturating_sub(1) as usize))
    {
        traceback.push(format!(
            "  line {}: {}",
            finding.line.unwrap_or_default(),
            text.trim()
        ));
    }
    traceback.push(format!("  {exception}: {}", finding.diagnosis));
    traceback.extend(
        finding
            .evidence
            .iter()
            .map(|evidence| format!("  evidence: {evidence}")),
    );
    CraneError {
        ename: HELD_ENAME.to_owned(),
        evalue: format!("{exception} predicted{at}: {diagnosis}"),
        traceback,
    }
}

/// The line under a running cell whose dry run beside it crashed `after` it began, when the
/// crash may come from the cutting (or the policy only warns): what it will likely raise and
/// where, and what an interrupt now keeps, so the user decides in seconds, not at the crash.
pub fn likely_crash_warning(finding: &Finding, after: Duration) -> String {
    let (exception, at, diagnosis) = predicted(finding);
    format!(
        "crane warning: this cell will likely raise {exception}{at}: its dry run beside it, in a fork of the state before it with its loops cut short, raised it after {:.1} s; the cell goes on. Interrupt it now and the state before it is kept (`%crane rollback` returns to it). {diagnosis}",
        after.as_secs_f64()
    )
}

/// The predicted exception, " at line N" (or nothing) and the diagnosis's first line.
fn predicted(finding: &Finding) -> (&str, String, &str) {
    let exception = finding.exception.as_deref().unwrap_or("an exception");
    let at = finding
        .line
        .map(|line| format!(" at line {line}"))
        .unwrap_or_default();
    (
        exception,
        at,
        finding.diagnosis.lines().next().unwrap_or_default(),
    )
}

/// A stderr stream the kernel printed about the interrupt (`KeyboardInterrupt`).
pub fn is_interrupt_stream(content: &[u8]) -> bool {
    serde_json::from_slice::<Value>(content).is_ok_and(|content| {
        content["name"] == "stderr"
            && content["text"]
                .as_str()
                .is_some_and(|text| text.contains("KeyboardInterrupt"))
    })
}

/// The content of the kernel's `error` output or `execute_reply` for the interrupt, with
/// crane's error in its place (every other field kept); `None` when it is not about a
/// `KeyboardInterrupt` (the cell raised something of its own first: that stands).
pub fn replaced(content: &[u8], error: &CraneError) -> Option<Vec<u8>> {
    let Ok(Value::Object(mut content)) = serde_json::from_slice::<Value>(content) else {
        return None;
    };
    if content.get("ename").and_then(Value::as_str) != Some("KeyboardInterrupt") {
        return None;
    }
    content.insert("ename".into(), Value::String(error.ename.clone()));
    content.insert("evalue".into(), Value::String(error.evalue.clone()));
    content.insert(
        "traceback".into(),
        Value::Array(error.traceback.iter().cloned().map(Value::String).collect()),
    );
    serde_json::to_vec(&content).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding() -> Finding {
        Finding {
            detector: crane_detect::DetectorKind::DryRun,
            rule: None,
            crash: true,
            exception: Some("RuntimeError".into()),
            line: Some(3),
            diagnosis: "cannot settle 59".into(),
            evidence: vec!["ran 2 of 60 iterations".into()],
            confidence: 1.0,
            status: crane_detect::FindingStatus::Abridged,
        }
    }

    #[test]
    fn the_stopped_cell_error_names_the_prediction_line_evidence_and_rollback() {
        let code = "for n in range(60):\n    time.sleep(0.5)\n    settle(n, 59)";
        let error = stopped_error(&finding(), code, Duration::from_millis(1100), true);
        assert_eq!(error.ename, "CranePredictedCrash");
        assert_eq!(
            error.evalue,
            "RuntimeError predicted at line 3: cannot settle 59"
        );
        let text = error.traceback.join("\n");
        assert!(text.contains("after 1.1 s"), "{text}");
        assert!(
            text.contains("rolled back to the state before the cell"),
            "{text}"
        );
        assert!(text.contains("line 3: settle(n, 59)"), "{text}");
        assert!(text.contains("evidence: ran 2 of 60 iterations"), "{text}");
    }

    #[test]
    fn an_uncertain_crash_says_what_and_where_and_what_an_interrupt_keeps() {
        let text = likely_crash_warning(&finding(), Duration::from_millis(3400));
        assert!(
            text.starts_with("crane warning: this cell will likely raise RuntimeError at line 3: its dry run beside it, in a fork of the state before it with its loops cut short, raised it after 3.4 s; the cell goes on. Interrupt it now and the state before it is kept (`%crane rollback` returns to it). cannot settle 59"),
            "{text}"
        );
    }

    #[test]
    fn only_the_interrupt_is_replaced() {
        let error = stopped_error(&finding(), "x", Duration::ZERO, true);
        let reply = br#"{"status": "error", "execution_count": 4, "ename": "KeyboardInterrupt", "evalue": "", "traceback": ["KeyboardInterrupt"], "user_expressions": {}}"#;
        let reply: Value = serde_json::from_slice(&replaced(reply, &error).unwrap()).unwrap();
        assert_eq!(reply["status"], "error");
        assert_eq!(reply["execution_count"], 4);
        assert_eq!(reply["ename"], "CranePredictedCrash");
        assert_eq!(reply["evalue"], error.evalue.as_str());
        let own = br#"{"status": "error", "ename": "ValueError", "evalue": "x", "traceback": []}"#;
        assert_eq!(replaced(own, &error), None);
        assert!(is_interrupt_stream(
            br#"{"name": "stderr", "text": "KeyboardInterrupt\n"}"#
        ));
        assert!(!is_interrupt_stream(
            br#"{"name": "stdout", "text": "KeyboardInterrupt\n"}"#
        ));
        assert!(!is_interrupt_stream(
            br#"{"name": "stderr", "text": "a warning\n"}"#
        ));
    }
}
