//! Judge the generated corpus (`bench/generated/corpus.py`) with the rules.
//!
//! ```sh
//! cargo run -p crane-detect --example generated_corpus -- targets DIR   # DIR/targets.json
//! cargo run -p crane-detect --example generated_corpus -- judge DIR     # reads DIR/truth.jsonl
//! ```
//!
//! `targets` writes the expressions crane's probe is asked about for each case's target cell
//! (what the CLI asks a kernel), so `corpus.py truth` can collect the same facts in-process.
//! `judge` runs the rules on each case (executed cells = the setup cells, facts = the probe's)
//! and compares with what execution decided: a proven finding on a case that ran clean, or with
//! another exception class than the one raised, is a false alarm. Exit code 1 when there is one.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;

use crane_detect::rules::{self, CheckContext, ExecutedCells};
use crane_runtime::RuntimeInfo;
use serde_json::Value;

fn read_lines(path: &Path) -> Result<Vec<Value>, String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    std::io::BufReader::new(file)
        .lines()
        .map(|line| {
            let line = line.map_err(|e| e.to_string())?;
            serde_json::from_str(&line).map_err(|e| format!("{}: {e}", path.display()))
        })
        .collect()
}

fn targets(dir: &Path) -> Result<(), String> {
    let mut targets = serde_json::Map::new();
    for case in read_lines(&dir.join("cases.jsonl"))? {
        let target = case["target"].as_str().unwrap_or_default();
        let expressions = match crane_analysis::analyze_cell(target) {
            Ok(analysis) => crane_analysis::targets_for_probe(&analysis),
            Err(_) => Vec::new(),
        };
        targets.insert(
            case["id"].as_str().unwrap_or_default().to_owned(),
            Value::from(expressions),
        );
    }
    let path = dir.join("targets.json");
    std::fs::write(
        &path,
        serde_json::to_vec(&targets).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[derive(Default)]
struct Counts {
    cases: usize,
    crashes: usize,
    proven: usize,
    true_alarms: usize,
    false_alarms: usize,
}

fn judge(dir: &Path) -> Result<bool, String> {
    let mut by_library: BTreeMap<String, Counts> = BTreeMap::new();
    let mut false_alarms = Vec::new();
    let mut silence: BTreeMap<(String, &'static str), usize> = BTreeMap::new();
    for case in read_lines(&dir.join("truth.jsonl"))? {
        if case.get("setup_failed").is_some() {
            continue;
        }
        let target = case["target"].as_str().unwrap_or_default();
        let executed: Vec<String> = case["setup"]
            .as_array()
            .map(|cells| {
                cells
                    .iter()
                    .filter_map(|c| c.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let runtime: RuntimeInfo = serde_json::from_value(case["facts"].clone())
            .map_err(|e| format!("{}: facts: {e}", case["id"]))?;
        let parsed_target = crane_analysis::ParsedCell::parse(target);
        let analysis = crane_analysis::analyze_parsed(&parsed_target);
        let interpretation = rules::interpret(&CheckContext {
            target: &parsed_target,
            analysis: analysis.as_ref(),
            runtime: &runtime,
            executed_cells: &ExecutedCells::new(&executed),
        });
        let findings = &interpretation.findings;
        let counts = by_library
            .entry(case["library"].as_str().unwrap_or("?").to_owned())
            .or_default();
        counts.cases += 1;
        let raised = case["exception"].as_str();
        counts.crashes += usize::from(raised.is_some());
        if raised.is_some() && findings.is_empty() {
            // A crash the rules were silent on: where the interpreter gave up.
            let library = case["library"].as_str().unwrap_or("?").to_owned();
            for reason in crane_detect::silence::reasons(&interpretation.gave_up) {
                *silence.entry((library.clone(), reason)).or_default() += 1;
            }
        }
        if let Some(finding) = findings.first() {
            counts.proven += 1;
            let predicted = finding.exception.as_deref().unwrap_or_default();
            if raised == Some(predicted) {
                counts.true_alarms += 1;
            } else {
                counts.false_alarms += 1;
                false_alarms.push(format!(
                    "{}: {:?} predicted {predicted}, execution raised {raised:?}\n{target}\n{}",
                    case["id"], finding.rule, finding.diagnosis
                ));
            }
        }
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "| library | cases | crashes | proven | true | false | recall |"
    );
    let _ = writeln!(out, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut total = Counts::default();
    for (library, c) in &by_library {
        let recall = c.true_alarms as f64 / c.crashes.max(1) as f64;
        let _ = writeln!(
            out,
            "| {library} | {} | {} | {} | {} | {} | {recall:.3} |",
            c.cases, c.crashes, c.proven, c.true_alarms, c.false_alarms
        );
        total.cases += c.cases;
        total.crashes += c.crashes;
        total.proven += c.proven;
        total.true_alarms += c.true_alarms;
        total.false_alarms += c.false_alarms;
    }
    let _ = writeln!(
        out,
        "| all | {} | {} | {} | {} | {} | {:.3} |",
        total.cases,
        total.crashes,
        total.proven,
        total.true_alarms,
        total.false_alarms,
        total.true_alarms as f64 / total.crashes.max(1) as f64
    );
    let _ = writeln!(
        out,
        "\nSilent crashes, by library and where the interpreter gave up (a case counts once per reason):\n"
    );
    let _ = writeln!(out, "| library | gave up at | crashes |");
    let _ = writeln!(out, "| --- | --- | ---: |");
    for ((library, reason), count) in &silence {
        let _ = writeln!(out, "| {library} | {reason} | {count} |");
    }
    for alarm in &false_alarms {
        let _ = writeln!(out, "\nFALSE ALARM {alarm}");
    }
    Ok(false_alarms.is_empty())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [command, dir] if command == "targets" => targets(Path::new(dir)).map(|()| true),
        [command, dir] if command == "judge" => judge(Path::new(dir)),
        _ => Err("usage: generated_corpus targets DIR | judge DIR".to_owned()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}
