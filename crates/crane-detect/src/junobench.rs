//! The detectors on JunoBench cases (offline: the recorded runtime information through the
//! CRANE adapter, and the recorded LLM answers).

use crane_runtime::junobench::Case;

use crate::rules::{self, CheckContext, ExecutedCells};
use crate::{hybrid_in_context, DetectorKind, Finding, FindingStatus, Verdict};

/// The rule findings on a case: its target cell against the adapted recorded runtime facts.
pub fn rule_findings(case: &Case) -> Vec<Finding> {
    let parsed_target = crane_analysis::ParsedCell::parse(&case.target_cell);
    let analysis = crane_analysis::analyze_parsed(&parsed_target);
    let runtime = case.runtime_info();
    let executed = ExecutedCells::new(&case.executed_cells);
    let context = CheckContext {
        target: &parsed_target,
        analysis: analysis.as_ref(),
        runtime: &runtime,
        executed_cells: &executed,
    };
    rules::check(&context)
}

/// The majority of a recorded model's answers (`with_runtime` or `code_only`) as a finding,
/// with the reasoning of the first answer on the majority's side; `None` when the case has no
/// readable answer of that model.
pub fn recorded_llm_finding(case: &Case, model: &str, with_runtime: bool) -> Option<Finding> {
    let outputs = case.recorded_llm_outputs.get(model)?;
    let answers = if with_runtime {
        &outputs.with_runtime
    } else {
        &outputs.code_only
    };
    let verdicts: Vec<_> = answers.iter().filter_map(|a| a.verdict()).collect();
    if verdicts.is_empty() {
        return None;
    }
    let crash_votes = verdicts.iter().filter(|v| v.detection).count();
    let crash = crash_votes * 2 > verdicts.len();
    let agreeing = if crash {
        crash_votes
    } else {
        verdicts.len() - crash_votes
    };
    let representative = verdicts.iter().find(|v| v.detection == crash)?;
    Some(Finding {
        detector: DetectorKind::Llm,
        rule: None,
        crash,
        exception: None,
        line: None,
        diagnosis: representative.reasoning.clone(),
        evidence: Vec::new(),
        confidence: agreeing as f32 / verdicts.len() as f32,
        status: FindingStatus::Predicted,
    })
}

/// The hybrid verdict on a case: rules over the adapted facts joined with a recorded model's
/// majority answer.
pub fn hybrid_verdict(case: &Case, model: &str, with_runtime: bool) -> Option<Verdict> {
    let llm = recorded_llm_finding(case, model, with_runtime)?;
    let parsed_target = crane_analysis::ParsedCell::parse(&case.target_cell);
    let analysis = crane_analysis::analyze_parsed(&parsed_target);
    let runtime = case.runtime_info();
    let executed = ExecutedCells::new(&case.executed_cells);
    let context = CheckContext {
        target: &parsed_target,
        analysis: analysis.as_ref(),
        runtime: &runtime,
        executed_cells: &executed,
    };
    let findings = rules::check(&context);
    Some(hybrid_in_context(&findings, &llm, &context).verdict)
}
