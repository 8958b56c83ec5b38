//! The rules on JunoBench cases: `cargo run -p crane-detect --example junobench_rules [CASE_ID]`
//! prints, per case, the first proven crash and whether the case crashes; with a case id, also
//! the adapted runtime facts of that case.

use crane_detect::junobench::rule_findings;
use crane_runtime::junobench::{default_cases_dir, load_cases};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let only = std::env::args().nth(1);
    for case in load_cases(&default_cases_dir())? {
        if only.as_ref().is_some_and(|id| *id != case.id) {
            continue;
        }
        if only.is_some() {
            println!("{}", serde_json::to_string_pretty(&case.runtime_info())?);
            println!("--- target cell\n{}", case.target_cell);
        }
        let findings = rule_findings(&case);
        let verdict = match (findings.first(), case.crash) {
            (Some(_), true) => "TP",
            (Some(_), false) => "FP",
            (None, true) => "FN",
            (None, false) => "TN",
        };
        match findings.first() {
            Some(finding) => println!(
                "{verdict} {:<32} {} line {}: {}",
                case.id,
                finding.rule.map(|r| r.to_string()).unwrap_or_default(),
                finding.line.unwrap_or(0),
                finding.diagnosis
            ),
            None => println!("{verdict} {}", case.id),
        }
    }
    Ok(())
}
