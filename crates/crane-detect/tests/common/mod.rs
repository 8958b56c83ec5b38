//! What the rule tests share: the rules run on a cell with runtime facts written as JSON.

use crane_detect::rules::{self, CheckContext, ExecutedCells};
use crane_detect::Finding;
use crane_runtime::RuntimeInfo;
use serde_json::{json, Value};

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

/// The facts of a pandas frame with these columns (name, dtype) and rows.
#[allow(dead_code)] // not every test file builds frames
pub fn frame(columns: &[(&str, &str)], rows: u64) -> Value {
    let names: Vec<Value> = columns
        .iter()
        .map(|(name, dtype)| json!({"name": name, "dtype": dtype}))
        .collect();
    json!({
        "type": "pandas.core.frame.DataFrame",
        "kind": "dataframe",
        "S": {"shape": [rows, columns.len()]},
        "R": {"columns": names, "index": {"type": "RangeIndex", "name": null, "nlevels": 1}},
        "V": {"has_nan": false}
    })
}

/// The facts of a numpy array of this shape and dtype.
#[allow(dead_code)] // not every test file builds arrays
pub fn array(shape: &[u64], dtype: &str) -> Value {
    json!({"type": "numpy.ndarray", "kind": "ndarray", "S": {"shape": shape}, "R": {"dtype": dtype}, "V": {}})
}
