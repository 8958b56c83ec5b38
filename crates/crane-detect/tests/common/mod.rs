//! What the rule tests share: the rules run on a cell with runtime facts written as JSON.

use crane_detect::rules::{self, CheckContext, ExecutedCells};
use crane_detect::Finding;
use crane_runtime::RuntimeInfo;
use serde_json::Value;

/// The rules' findings on `cell`, given `facts` (a runtime-facts document) and the cells
/// executed before it.
pub fn check(cell: &str, facts: Value, executed: &[&str]) -> Vec<Finding> {
    let runtime: RuntimeInfo = serde_json::from_value(facts).expect("facts parse");
    let parsed_target = crane_analysis::ParsedCell::parse(cell);
    let analysis = crane_analysis::analyze_parsed(&parsed_target);
    rules::check(&CheckContext {
        target: &parsed_target,
        analysis: analysis.as_ref(),
        runtime: &runtime,
        executed_cells: &ExecutedCells::new(executed),
    })
}

/// Insists that the rules find nothing on `cell`.
#[track_caller]
pub fn assert_silent(cell: &str, facts: Value, executed: &[&str]) {
    let findings = check(cell, facts, executed);
    assert!(
        findings.is_empty(),
        "unexpected finding on:\n{cell}\n{findings:#?}"
    );
}
