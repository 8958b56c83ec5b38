//! What a user reads about a finding: which rule made it and how to silence it, which cell it
//! is in as Jupyter shows it, and `crane run --dry-run`; the real binary on notebooks that run.

mod common;

use common::{crane, stderr, stdout};
use serde_json::{json, Value};

/// A notebook of markdown and code cells (`None` source: a markdown cell), no outputs.
fn notebook(path: &std::path::Path, cells: &[Option<&str>]) {
    let cells: Vec<Value> = cells
        .iter()
        .map(|cell| match cell {
            Some(source) => json!({"cell_type": "code", "metadata": {}, "source": source,
                                   "outputs": [], "execution_count": null}),
            None => json!({"cell_type": "markdown", "metadata": {}, "source": "Notes"}),
        })
        .collect();
    let document = json!({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": cells});
    std::fs::write(path, serde_json::to_vec(&document).unwrap()).unwrap();
}

const FRAME: &str = "import pandas as pd\ndf = pd.DataFrame({'price': [1.0, 2.5]})";
const MISSPELT: &str = "total = 0\ntotal = df['prize'].sum()";

#[test]
fn a_held_cell_names_its_rule_and_how_to_silence_it_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    let out = dir.path().join("out.ipynb");
    notebook(&path, &[None, Some(FRAME), None, Some(MISSPELT)]);
    let hint = "`# crane: ignore[PD001]` on line 2, or `--ignore PD001`";

    let run = crane(&["run", path.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    let err = stderr(&run);
    assert!(
        err.contains("cell 1 (4th in the notebook) predicted to raise KeyError (PD001)")
            && err.contains(hint),
        "{err}"
    );
    let written: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let held = written["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|cell| cell["source"] == MISSPELT)
        .expect("the held cell");
    assert_eq!(held["metadata"]["crane"]["rule"], "PD001", "{held}");
    assert!(
        held["metadata"]["crane"]["silence"]
            .as_str()
            .is_some_and(|text| text.contains(hint)),
        "{held}"
    );
    let marker = held["outputs"][0]["text"].as_str().unwrap_or_default();
    assert!(
        marker.contains("KeyError at line 2 (PD001)") && marker.contains(hint),
        "{marker}"
    );

    let check = crane(&["check", path.to_str().unwrap(), "--cell", "1"]);
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    let text = stdout(&check);
    assert!(
        text.starts_with("crash predicted: cell 1 (4th in the notebook) will raise KeyError"),
        "{text}"
    );
    assert!(
        text.contains(&format!("rule: PD001; silence it with {hint}")),
        "{text}"
    );
}

#[test]
fn cells_that_ran_are_named_with_their_execution_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    let mut document: Value = json!({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "Notes"},
        {"cell_type": "code", "metadata": {}, "source": FRAME, "outputs": [], "execution_count": 7},
        {"cell_type": "code", "metadata": {}, "source": "x = df['prize']", "outputs": [],
         "execution_count": null},
    ]});
    std::fs::write(&path, serde_json::to_vec(&document).unwrap()).unwrap();
    let check = crane(&["check", path.to_str().unwrap(), "--cell", "0"]);
    let text = stdout(&check);
    assert!(
        text.starts_with("no crash predicted: cell 0 (2nd in the notebook, In [7])"),
        "{text}{}",
        stderr(&check)
    );
    document["cells"][1]["execution_count"] = json!(null);
    std::fs::write(&path, serde_json::to_vec(&document).unwrap()).unwrap();
    let check = crane(&["check", path.to_str().unwrap(), "--cell", "0"]);
    assert!(
        stdout(&check).starts_with("no crash predicted: cell 0 (2nd in the notebook)\n"),
        "{}",
        stdout(&check)
    );
}

#[test]
fn run_dry_run_holds_a_crash_only_running_the_cell_shows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    // The rules do not follow a value computed by a user function; the dry run sees it raise.
    notebook(
        &path,
        &[
            Some("def lookup(table):\n    return table['missing']"),
            Some("value = lookup({'present': 1})"),
            Some("print('after')"),
        ],
    );
    let plain = crane(&["run", path.to_str().unwrap(), "--format", "json"]);
    let summary: Value = serde_json::from_str(&stdout(&plain)).expect("JSON summary");
    assert_eq!(summary["cells"][1]["fate"], "crashed", "{summary}");

    let dry = crane(&[
        "run",
        path.to_str().unwrap(),
        "--dry-run",
        "--format",
        "json",
    ]);
    assert_eq!(dry.status.code(), Some(1), "{}", stderr(&dry));
    let summary: Value = serde_json::from_str(&stdout(&dry)).expect("JSON summary");
    let cell = &summary["cells"][1];
    assert_eq!(cell["fate"], "held", "{summary}");
    assert_eq!(cell["verdict"]["detector"], "dry_run", "{summary}");
    assert_eq!(cell["verdict"]["exception"], "KeyError", "{summary}");
    assert_eq!(summary["cells"][0]["fate"], "ran", "{summary}");
}

#[test]
fn a_dry_run_that_timed_out_is_a_check_that_could_not_complete() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    // Longer than the dry run's 30 s timeout.
    notebook(&path, &[Some("import time\ntime.sleep(45)")]);
    let check = crane(&[
        "check",
        path.to_str().unwrap(),
        "--dry-run",
        "--format",
        "json",
    ]);
    let report: Value = serde_json::from_str(&stdout(&check)).expect("JSON report");
    assert_eq!(check.status.code(), Some(4), "{report}");
    assert_eq!(report["verdict"]["crash"], false, "{report}");
    assert_eq!(
        report["detector_failures"][0]["detector"], "dry_run",
        "{report}"
    );
}

#[test]
fn run_dry_run_says_why_a_dry_run_decided_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    let written = dir.path().join("out.csv");
    std::fs::write(&written, "old").unwrap();
    let write = format!("df.to_csv({:?})", written.to_str().unwrap());
    notebook(&path, &[Some(FRAME), Some(&write)]);
    let run = crane(&["run", path.to_str().unwrap(), "--dry-run"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let err = stderr(&run);
    assert!(
        err.contains(&format!(
            "the cell tried to open '{}' for writing and the seal of the fork blocked it",
            written.display()
        )),
        "{err}"
    );
    // The real run wrote it, once.
    assert!(std::fs::read_to_string(&written)
        .unwrap()
        .starts_with(",price"));
}
