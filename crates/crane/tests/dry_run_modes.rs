//! `--dry-run auto|on|off` of `crane check` and `crane run`, against the real binary and a real
//! kernel: which cells each dry-runs, and that a dry run that decided nothing says why in the
//! text and the JSON and holds nothing.

mod common;

use common::{crane, stderr, stdout, write_notebook};
use serde_json::Value;

/// 100 iterations of 50 ms: longer than the 3 s a dry run gets before it is abridged.
const SLOW_LOOP: &str =
    "history = []\nfor epoch in range(100):\n    time.sleep(0.05)\n    history.append(epoch)\n";

fn json(output: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(output))
        .unwrap_or_else(|_| panic!("JSON on stdout: {}{}", stdout(output), stderr(output)))
}

fn dry_run_finding(report: &Value) -> Option<&Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["detector"] == "dry_run")
}

#[test]
fn auto_dry_runs_a_long_looking_cell_and_holds_its_late_crash_found_by_an_abridged_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    write_notebook(
        &path,
        &[
            ("import time", None),
            (&format!("{SLOW_LOOP}{{'loss': 1}}['accuracy']"), None),
            ("print('after')", None),
        ],
    );
    let path = path.to_str().unwrap();

    let run = crane(&["run", path, "--dry-run", "auto", "--format", "json"]);
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    let summary = json(&run);
    let cells = &summary["cells"];
    // A fast cell is not dry-run.
    assert_eq!(cells[0]["fate"], "ran", "{summary}");
    assert!(cells[0].get("dry_run").is_none(), "{summary}");
    assert_eq!(cells[1]["fate"], "held", "{summary}");
    assert_eq!(cells[1]["dry_run"]["status"], "abridged", "{summary}");
    assert_eq!(cells[1]["verdict"]["exception"], "KeyError", "{summary}");
    assert!(
        cells[1]["dry_run"]["diagnosis"]
            .as_str()
            .is_some_and(|text| text.contains("ran 2 of 100 iterations")),
        "{summary}"
    );
    assert_eq!(cells[2]["fate"], "not_reached", "{summary}");

    let check = check_json(path, "1", "auto");
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    let report = json(&check);
    assert_eq!(
        dry_run_finding(&report).map(|finding| &finding["status"]),
        Some(&Value::from("abridged")),
        "{report}"
    );

    // off: the cell runs for real, to its crash, and no cell is dry-run.
    let off = crane(&["run", path, "--dry-run", "off", "--format", "json"]);
    assert_eq!(off.status.code(), Some(3), "{}", stderr(&off));
    let summary = json(&off);
    assert_eq!(summary["cells"][1]["fate"], "crashed", "{summary}");
    for cell in summary["cells"].as_array().unwrap() {
        assert!(cell.get("dry_run").is_none(), "{summary}");
    }
}

#[test]
fn run_auto_leaves_a_fast_cell_to_its_real_run_where_check_auto_dry_runs_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    // The rules do not follow what a notebook function returns: only running the cell shows
    // its KeyError.
    write_notebook(
        &path,
        &[
            ("def lookup(table):\n    return table['missing']", None),
            ("value = lookup({'present': 1})", None),
        ],
    );
    let path = path.to_str().unwrap();

    let run = crane(&["run", path, "--dry-run", "auto", "--format", "json"]);
    assert_eq!(run.status.code(), Some(3), "{}", stderr(&run));
    let summary = json(&run);
    assert_eq!(summary["cells"][1]["fate"], "crashed", "{summary}");
    for cell in summary["cells"].as_array().unwrap() {
        assert!(cell.get("dry_run").is_none(), "{summary}");
    }

    let check = check_json(path, "1", "auto");
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    let report = json(&check);
    assert_eq!(report["verdict"]["detector"], "dry_run", "{report}");
    assert_eq!(report["verdict"]["exception"], "KeyError", "{report}");

    let off = check_json(path, "1", "off");
    assert_eq!(off.status.code(), Some(0), "{}", stderr(&off));
    assert!(dry_run_finding(&json(&off)).is_none(), "{}", stdout(&off));

    // A bare --dry-run before the notebook still means on, as before it took a value.
    let bare = crane(&["run", "--dry-run", path, "--format", "json"]);
    assert_eq!(bare.status.code(), Some(1), "{}", stderr(&bare));
    assert_eq!(json(&bare)["cells"][1]["fate"], "held");
}

#[test]
fn a_dry_run_that_decided_nothing_says_why_in_text_and_json_and_holds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    let written = dir.path().join("out.txt");
    std::fs::write(&written, "old").unwrap();
    let write = format!(
        "for line in ['a', 'b']:\n    pass\nopen({:?}, 'w').write(line)",
        written.to_str().unwrap()
    );
    let pool = "from concurrent.futures import ThreadPoolExecutor\n\
                pool = ThreadPoolExecutor(2)\n\
                pool.submit(abs, -1).result()";
    write_notebook(
        &path,
        &[
            (&write, None),
            (pool, None),
            (
                "for i in range(3):\n    total = pool.submit(abs, -i).result()",
                None,
            ),
        ],
    );
    let path = path.to_str().unwrap();
    let blocked = format!(
        "the cell tried to open '{}' for writing and the seal of the fork blocked it",
        written.display()
    );
    // The kernel's fork is refused (its pool's workers would not exist in the fork); where
    // the cell runs elsewhere instead, the pool cannot be copied there: either way nothing is
    // decided, and the reason names the pool.
    let refused = "pool";
    let undecided = |status: &Value| status == "unsupported" || status == "inconclusive";

    let run = crane(&["run", path, "--dry-run", "auto", "--format", "json"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let err = stderr(&run);
    let warned = |cell: &str, why: &str| {
        err.lines()
            .any(|line| line.starts_with(&format!("warning: {cell} (")) && line.contains(why))
    };
    assert!(warned("cell 0", &blocked), "{err}");
    assert!(warned("cell 2", refused), "{err}");
    let summary = json(&run);
    let cells = &summary["cells"];
    assert_eq!(cells[0]["dry_run"]["status"], "inconclusive", "{summary}");
    assert!(
        cells[0]["warnings"][0]
            .as_str()
            .is_some_and(|text| text.contains(&blocked)),
        "{summary}"
    );
    assert!(undecided(&cells[2]["dry_run"]["status"]), "{summary}");
    assert!(
        cells[2]["dry_run"]["diagnosis"]
            .as_str()
            .is_some_and(|text| text.contains(refused)),
        "{summary}"
    );
    for cell in cells.as_array().unwrap() {
        assert_eq!(cell["fate"], "ran", "{summary}");
    }
    // The real run wrote it, once.
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "b");

    let text = crane(&["check", path, "--cell", "0", "--dry-run", "auto"]);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    assert!(
        stdout(&text).contains(&format!(
            "dry_run: Inconclusive: The dry run is inconclusive at line 3: {blocked}"
        )),
        "{}",
        stdout(&text)
    );
    let report = json(&check_json(path, "2", "auto"));
    let finding = dry_run_finding(&report).expect("a dry-run finding");
    assert!(undecided(&finding["status"]), "{report}");
    assert!(
        finding["diagnosis"]
            .as_str()
            .is_some_and(|text| text.contains(refused)),
        "{report}"
    );
    assert_eq!(report["verdict"]["crash"], false, "{report}");
}

#[test]
fn a_dry_run_auto_stopped_at_its_timeout_is_no_failed_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    // Nothing to abridge, and longer than the dry run's 30 s.
    write_notebook(&path, &[("import time\ntime.sleep(45)", None)]);
    let check = crane(&[
        "check",
        path.to_str().unwrap(),
        "--dry-run",
        "auto",
        "--format",
        "json",
    ]);
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    let report = json(&check);
    assert_eq!(
        report["detector_failures"],
        Value::Array(Vec::new()),
        "{report}"
    );
    let finding = dry_run_finding(&report).expect("a dry-run finding");
    assert_eq!(finding["status"], "unsupported", "{report}");
    assert!(
        finding["diagnosis"]
            .as_str()
            .is_some_and(|text| text.contains("still running after 30 s")),
        "{report}"
    );
}

#[test]
fn side_effects_are_allowed_only_in_a_dry_run_asked_for_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    write_notebook(&path, &[("x = 1", None)]);
    let path = path.to_str().unwrap();
    for args in [
        &["check", path, "--dry-run", "auto", "--allow-side-effects"][..],
        &["run", path, "--dry-run", "auto", "--allow-side-effects"],
        &["run", path, "--allow-side-effects"],
        &["run", path, "--dry-run", "off", "--allow-side-effects"],
    ] {
        let refused = crane(args);
        assert_eq!(
            refused.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&refused)
        );
    }
    let allowed = crane(&[
        "run",
        path,
        "--dry-run",
        "--allow-side-effects",
        "--format",
        "json",
    ]);
    assert_eq!(allowed.status.code(), Some(0), "{}", stderr(&allowed));
    assert_eq!(json(&allowed)["cells"][0]["dry_run"]["status"], "observed");
}

/// `crane check PATH --cell CELL --dry-run MODE --format json`.
fn check_json(path: &str, cell: &str, mode: &str) -> std::process::Output {
    crane(&[
        "check",
        path,
        "--cell",
        cell,
        "--dry-run",
        mode,
        "--format",
        "json",
    ])
}
