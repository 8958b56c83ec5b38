//! A bounded sample of the generated corpus (`bench/generated/corpus.py`): small notebooks of
//! real API calls with mutated arguments, run for their truth in CPython with crane's probe
//! collecting the facts in-process; every finding the rules prove must be a crash execution
//! raised, with that exception class. The full corpus runs with `bench/generated/run.sh`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crane_detect::rules::{self, CheckContext, ExecutedCells};
use crane_runtime::RuntimeInfo;
use serde_json::Value;

fn python() -> String {
    std::env::var("CRANE_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

fn corpus_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/generated/corpus.py")
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

#[test]
fn proven_findings_on_generated_notebooks_are_real_crashes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let run = |args: &[&str]| {
        let status = Command::new(python())
            .arg(corpus_script())
            .args(args)
            .env("MPLBACKEND", "Agg")
            .stdout(std::process::Stdio::null())
            .status()
            .expect("python runs");
        assert!(status.success(), "corpus.py {args:?} failed");
    };
    let out = dir.path().to_str().unwrap();
    run(&["generate", "--out", out, "--count", "60", "--seed", "7"]);
    // The expressions crane would ask a kernel's probe about.
    let mut targets = serde_json::Map::new();
    for case in lines(&dir.path().join("cases.jsonl")) {
        let target = case["target"].as_str().unwrap();
        let expressions = crane_analysis::analyze_cell(target)
            .map(|analysis| crane_analysis::targets_for_probe(&analysis))
            .unwrap_or_default();
        targets.insert(case["id"].as_str().unwrap().to_owned(), expressions.into());
    }
    std::fs::write(
        dir.path().join("targets.json"),
        serde_json::to_vec(&targets).unwrap(),
    )
    .unwrap();
    run(&["truth", out]);
    let (mut judged, mut proven, mut wrong) = (0, 0, Vec::new());
    for case in lines(&dir.path().join("truth.jsonl")) {
        if case.get("setup_failed").is_some() {
            continue;
        }
        judged += 1;
        let target = case["target"].as_str().unwrap();
        let executed: Vec<String> = case["setup"]
            .as_array()
            .unwrap()
            .iter()
            .map(|cell| cell.as_str().unwrap().to_owned())
            .collect();
        let runtime: RuntimeInfo = serde_json::from_value(case["facts"].clone()).expect("facts");
        let parsed_target = crane_analysis::ParsedCell::parse(target);
        let analysis = crane_analysis::analyze_parsed(&parsed_target);
        let findings = rules::check(&CheckContext {
            target: &parsed_target,
            analysis: analysis.as_ref(),
            runtime: &runtime,
            executed_cells: &ExecutedCells::new(&executed),
        });
        if let Some(finding) = findings.first() {
            proven += 1;
            if case["exception"].as_str() != finding.exception.as_deref() {
                wrong.push(format!("{}:\n{target}\n{finding:#?}", case["id"]));
            }
        }
    }
    assert!(wrong.is_empty(), "false alarms:\n{}", wrong.join("\n\n"));
    assert!(judged >= 50, "only {judged} cases ran their setup");
    assert!(proven >= 8, "the rules proved only {proven} crashes");
}
