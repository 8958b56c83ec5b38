//! Fixture files of cells run in CPython for their truth, with crane's probe collecting the
//! facts the rules then judge them by (the contract tables and the good cells share them).
//!
//! Format: `### setup` starts code shared by the fixtures after it; `## ID crash EXCEPTION`,
//! `## ID raises EXCEPTION` (Python raises it; the rules may be silent, but name no other
//! exception) or `## ID clean` starts a fixture, whose lines before a `--` line are its own setup and after it
//! (or all of them, without `--`) the target cell.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crane_detect::rules::{self, CheckContext, ExecutedCells};
use crane_detect::Finding;
use crane_runtime::RuntimeInfo;
use serde_json::{json, Value};

pub struct Fixture {
    pub id: String,
    /// The exception the target raises, or `None` for a clean fixture.
    pub crash: Option<String>,
    /// The rules must prove the crash (`crash`), or may be silent about it (`raises`).
    pub proven: bool,
    pub setup: Vec<String>,
    pub target: String,
    pub origin: String,
}

/// The fixtures of every `.txt` file in `tests/{directory}`.
pub fn fixtures(directory: &str) -> Vec<Fixture> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(directory);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|_| panic!("tests/{directory}"))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    let mut all = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let mut shared = String::new();
        let mut in_shared = false;
        type Current = (String, Option<String>, bool, Vec<String>, usize);
        let mut current: Option<Current> = None;
        let finish = |current: Option<Current>, shared: &str, all: &mut Vec<Fixture>| {
            let Some((id, crash, proven, lines, line)) = current else {
                return;
            };
            let (own, target) = match lines.iter().position(|l| l == "--") {
                Some(split) => (lines[..split].join("\n"), lines[split + 1..].join("\n")),
                None => (String::new(), lines.join("\n")),
            };
            assert!(
                !target.trim().is_empty(),
                "{name}:{line}: fixture {id} has no cell after its setup"
            );
            let mut setup = vec![shared.to_owned()];
            if !own.is_empty() {
                setup.push(own);
            }
            all.push(Fixture {
                id,
                crash,
                proven,
                setup,
                target,
                origin: format!("{name}:{line}"),
            });
        };
        for (number, line) in text.lines().enumerate() {
            if line == "### setup" {
                finish(current.take(), &shared, &mut all);
                shared.clear();
                in_shared = true;
            } else if let Some(header) = line.strip_prefix("## ") {
                finish(current.take(), &shared, &mut all);
                in_shared = false;
                let words: Vec<&str> = header.split_whitespace().collect();
                let (crash, proven) = match words.as_slice() {
                    [_, "crash", exception] => (Some((*exception).to_owned()), true),
                    [_, "raises", exception] => (Some((*exception).to_owned()), false),
                    [_, "clean"] => (None, true),
                    _ => panic!("{name}:{}: bad fixture header {line:?}", number + 1),
                };
                current = Some((words[0].to_owned(), crash, proven, Vec::new(), number + 1));
            } else if in_shared {
                shared.push_str(line);
                shared.push('\n');
            } else if let Some((_, _, _, lines, _)) = current.as_mut() {
                lines.push(line.to_owned());
            }
        }
        finish(current.take(), &shared, &mut all);
    }
    all
}

fn python() -> String {
    std::env::var("CRANE_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// Runs every fixture in CPython (`bench/generated/corpus.py truth`, with `preload` imported
/// first) and returns, per fixture, its truth: the exception raised and the probe's facts.
pub fn truths(fixtures: &[Fixture], preload: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut cases = String::new();
    let mut targets = serde_json::Map::new();
    for (index, fixture) in fixtures.iter().enumerate() {
        let id = format!("f{index}");
        let library = fixture.id.split('.').next().unwrap();
        cases.push_str(
            &json!({"id": id, "library": library, "setup": fixture.setup, "target": fixture.target})
                .to_string(),
        );
        cases.push('\n');
        let expressions = crane_analysis::analyze_cell(&fixture.target)
            .map(|analysis| crane_analysis::targets_for_probe(&analysis))
            .unwrap_or_default();
        targets.insert(id, expressions.into());
    }
    std::fs::write(dir.path().join("cases.jsonl"), cases).unwrap();
    std::fs::write(
        dir.path().join("targets.json"),
        serde_json::to_vec(&targets).unwrap(),
    )
    .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/generated/corpus.py");
    let status = Command::new(python())
        .arg(script)
        .arg("truth")
        .arg(dir.path())
        .arg(format!("--preload={preload}"))
        .env("MPLBACKEND", "Agg")
        .env("TF_CPP_MIN_LOG_LEVEL", "3")
        .stdout(std::process::Stdio::null())
        .status()
        .expect("python runs");
    assert!(status.success(), "corpus.py truth failed");
    let mut truths: BTreeMap<String, Value> =
        std::fs::read_to_string(dir.path().join("truth.jsonl"))
            .unwrap()
            .lines()
            .map(|line| {
                let case: Value = serde_json::from_str(line).unwrap();
                (case["id"].as_str().unwrap().to_owned(), case)
            })
            .collect();
    (0..fixtures.len())
        .map(|index| truths.remove(&format!("f{index}")).expect("a truth"))
        .collect()
}

/// The rules' findings on a fixture's target, given the facts its truth recorded.
pub fn findings(fixture: &Fixture, truth: &Value) -> Vec<Finding> {
    let runtime: RuntimeInfo = serde_json::from_value(truth["facts"].clone()).expect("facts");
    let parsed_target = crane_analysis::ParsedCell::parse(&fixture.target);
    let analysis = crane_analysis::analyze_parsed(&parsed_target);
    rules::check(&CheckContext {
        target: &parsed_target,
        analysis: analysis.as_ref(),
        runtime: &runtime,
        executed_cells: &ExecutedCells::new(&fixture.setup),
    })
}

/// What is wrong with each fixture: Python did not do what it says, or the rules did not
/// prove its crash (with its exception), named another exception, or found one in a clean
/// fixture.
pub fn problems(fixtures: &[Fixture], truths: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    for (fixture, truth) in fixtures.iter().zip(truths) {
        let origin = &fixture.origin;
        if let Some(failed) = truth.get("setup_failed") {
            problems.push(format!("{origin}: setup raised {failed}"));
            continue;
        }
        let raised = truth["exception"].as_str().map(str::to_owned);
        if raised != fixture.crash {
            problems.push(format!(
                "{origin}: the fixture says {:?}, Python raised {raised:?}",
                fixture.crash
            ));
            continue;
        }
        let findings = findings(fixture, truth);
        match (&fixture.crash, findings.first()) {
            (Some(exception), Some(finding)) if finding.exception.as_deref() == Some(exception) => {
            }
            (Some(_), None) if !fixture.proven => {}
            (Some(exception), found) => problems.push(format!(
                "{origin}: {} should be proven ({exception}), rules found {:?}",
                fixture.id,
                found.map(|f| (&f.rule, &f.exception, &f.diagnosis))
            )),
            (None, Some(finding)) => problems.push(format!(
                "{origin}: false alarm on a clean fixture of {}: {:?} {}",
                fixture.id, finding.rule, finding.diagnosis
            )),
            (None, None) => {}
        }
    }
    problems
}
