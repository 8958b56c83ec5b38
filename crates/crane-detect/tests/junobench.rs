//! The rule engine on the JunoBench development cases (recorded runtime information through
//! the CRANE adapter): precision must stay at or above 0.95.

use std::collections::BTreeMap;

use crane_detect::junobench::rule_findings;
use crane_runtime::junobench::{default_cases_dir, load_cases, Case};

/// The cases, or `None` (the test is skipped) where the case files are not laid out.
fn cases() -> Option<Vec<Case>> {
    let dir = default_cases_dir();
    if !dir.exists() {
        eprintln!("skipped: {} not found", dir.display());
        return None;
    }
    Some(load_cases(&dir).expect("cases load"))
}

#[test]
fn rules_are_precise_on_junobench() {
    let Some(cases) = cases() else {
        return;
    };
    let (mut tp, mut fp, mut positives) = (0, 0, 0);
    let mut per_rule: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    for case in &cases {
        positives += u32::from(case.crash);
        let findings = rule_findings(case);
        let Some(finding) = findings.first() else {
            continue;
        };
        let rule = finding.rule.map(|r| r.to_string()).unwrap_or_default();
        let entry = per_rule.entry(rule.clone()).or_default();
        if case.crash {
            tp += 1;
            entry.0 += 1;
        } else {
            fp += 1;
            entry.1 += 1;
        }
        println!(
            "{} {:<32} {rule} line {:?}: {}",
            if case.crash { "TP" } else { "FP" },
            case.id,
            finding.line,
            finding.diagnosis
        );
    }
    let precision = if tp + fp == 0 {
        1.0
    } else {
        f64::from(tp) / f64::from(tp + fp)
    };
    let recall = f64::from(tp) / f64::from(positives);
    println!("per rule (TP, FP): {per_rule:?}");
    println!("TP {tp} FP {fp} positives {positives}: precision {precision:.3} recall {recall:.3}");
    assert!(precision >= 0.95, "precision {precision:.3} below 0.95");
}

#[derive(Default)]
struct Counts {
    tp: u32,
    fp: u32,
    fn_: u32,
    tn: u32,
}

impl Counts {
    fn f1(&self) -> f64 {
        let precision = f64::from(self.tp) / f64::from((self.tp + self.fp).max(1));
        let recall = f64::from(self.tp) / f64::from((self.tp + self.fn_).max(1));
        if precision + recall == 0.0 {
            0.0
        } else {
            2.0 * precision * recall / (precision + recall)
        }
    }

    fn add(&mut self, predicted: bool, actual: bool) {
        match (predicted, actual) {
            (true, true) => self.tp += 1,
            (true, false) => self.fp += 1,
            (false, true) => self.fn_ += 1,
            (false, false) => self.tn += 1,
        }
    }
}

#[test]
fn hybrid_beats_each_recorded_model() {
    let Some(cases) = cases() else {
        return;
    };
    for model in ["gpt_5", "gemini_2_5_flash", "Qwen_2_5_32B_Instruct"] {
        let mut alone = Counts::default();
        let mut joined = Counts::default();
        let mut facts_only = Counts::default();
        for case in &cases {
            let llm = crane_detect::junobench::recorded_llm_finding(case, model, true);
            let predicted = llm.as_ref().is_some_and(|f| f.crash);
            let hybrid =
                crane_detect::junobench::hybrid_verdict(case, model, true).is_some_and(|v| v.crash);
            // The same join knowing only the facts, not the cell (`hybrid`).
            let refutation = llm.as_ref().and_then(|llm| {
                crane_detect::hybrid(&rule_findings(case), llm, &case.runtime_info())
                    .findings
                    .iter()
                    .flat_map(|f| f.evidence.iter())
                    .find(|e| e.starts_with("contradicted by"))
                    .cloned()
            });
            let without_cell = llm.is_some_and(|llm| {
                crane_detect::hybrid(&rule_findings(case), &llm, &case.runtime_info())
                    .verdict
                    .crash
            });
            alone.add(predicted, case.crash);
            joined.add(hybrid, case.crash);
            facts_only.add(without_cell, case.crash);
            if predicted != hybrid {
                println!(
                    "{model} {:<32} llm {predicted} -> hybrid {hybrid} (truth {}){}",
                    case.id,
                    case.crash,
                    refutation.map(|r| format!(": {r}")).unwrap_or_default()
                );
            }
        }
        println!(
            "{model}: llm F1 {:.3} (tp {} fp {}), hybrid F1 {:.3} (tp {} fp {}), from the facts alone {:.3}",
            alone.f1(),
            alone.tp,
            alone.fp,
            joined.f1(),
            joined.tp,
            joined.fp,
            facts_only.f1()
        );
        assert!(
            joined.f1() > alone.f1(),
            "{model}: hybrid does not beat the model alone"
        );
        assert!(
            facts_only.f1() > alone.f1(),
            "{model}: hybrid from the facts alone does not beat the model alone"
        );
    }
}

/// Every executed cell of every case ran without crashing after the cells before it: with no
/// runtime facts, the rules (which then rest on the code alone) must stay silent on all of them.
#[test]
fn rules_are_silent_on_cells_that_ran() {
    let Some(cases) = cases() else {
        return;
    };
    let mut checked = 0;
    let mut flagged = Vec::new();
    let runtime = crane_runtime::RuntimeInfo::default();
    for case in &cases {
        for (index, cell) in case.executed_cells.iter().enumerate() {
            let parsed_target = crane_analysis::ParsedCell::parse(cell);
            let analysis = crane_analysis::analyze_parsed(&parsed_target);
            let findings = crane_detect::rules::check(&crane_detect::CheckContext {
                target: &parsed_target,
                analysis: analysis.as_ref(),
                runtime: &runtime,
                executed_cells: &crane_detect::ExecutedCells::new(&case.executed_cells[..index]),
            });
            checked += 1;
            if let Some(finding) = findings.first() {
                flagged.push(format!(
                    "{} cell {index}: {} {}",
                    case.id,
                    finding.rule.map(|r| r.to_string()).unwrap_or_default(),
                    finding.diagnosis
                ));
            }
        }
    }
    println!("{checked} executed cells checked");
    assert!(
        flagged.is_empty(),
        "findings on cells that ran:\n{}",
        flagged.join("\n")
    );
}

/// Recorded facts list a frame's columns as a pprint of a dict lists them: sorted, not in the
/// frame's order. Here the frame is really `['name', 'age']`: position 1 is `age`, whose
/// integers convert; read in the recorded order it would be `name`, whose text does not.
#[test]
fn recorded_column_order_is_not_taken_for_the_frames() {
    let runtime = crane_runtime::from_crane(&serde_json::json!({
        "df": {
            "type": "pandas.core.frame.DataFrame",
            "shape": [3, 2],
            "has_nan": false,
            "per_column": {
                "age": {"type": "continuous", "num_unique": 3, "value_range": [20, 40]},
                "name": {"type": "categorical", "num_unique": 3, "example_values": ["ann", "bob", "cy"]}
            }
        }
    }));
    let check = |cell: &str| {
        let parsed_target = crane_analysis::ParsedCell::parse(cell);
        let analysis = crane_analysis::analyze_parsed(&parsed_target);
        crane_detect::rules::check(&crane_detect::CheckContext {
            target: &parsed_target,
            analysis: analysis.as_ref(),
            runtime: &runtime,
            executed_cells: &crane_detect::ExecutedCells::new(&["import pandas as pd"]),
        })
    };
    for cell in [
        "df[df.columns[1]].astype(int)",
        "df.iloc[:, 1].astype(int)",
        "df.iloc[:, 1:].astype(int)",
        "for column in df.columns:\n    if column == 'age':\n        break\n    df[column].astype(int)",
    ] {
        let findings = check(cell);
        assert!(findings.is_empty(), "{cell}: {findings:#?}");
    }
    // What does not depend on the order is still proven.
    let findings = check("df['name'].astype(int)");
    assert_eq!(
        findings.first().and_then(|f| f.exception.as_deref()),
        Some("ValueError"),
        "{findings:#?}"
    );
    let findings = check("df['height']");
    assert_eq!(
        findings.first().and_then(|f| f.exception.as_deref()),
        Some("KeyError"),
        "{findings:#?}"
    );
}
