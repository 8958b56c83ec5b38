//! End-to-end tests of the `crane` binary against a real ipykernel.

mod common;

use common::{crane, repo_root, run_python, stderr, stdout, write_notebook};
use serde_json::Value;

fn example() -> String {
    repo_root()
        .join("examples/titanic_like.ipynb")
        .display()
        .to_string()
}

#[test]
fn check_predicts_the_example_crash_with_its_diagnosis() {
    let output = crane(&["check", &example()]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("crash predicted: cell 3"), "{text}");
    assert!(text.contains("KeyError"), "{text}");
    assert!(
        text.contains("> 2 | df['HasCabin'] = df['Cabin']"),
        "{text}"
    );
    assert!(text.contains("'Cabin'"), "{text}");
    assert!(stderr(&output).contains("LLM detector off"));
}

#[test]
fn check_json_follows_the_documented_shape() {
    let output = crane(&["check", &example(), "--format", "json", "--quiet"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).expect("JSON on stdout");
    for key in [
        "notebook",
        "target_cell",
        "verdict",
        "findings",
        "silenced",
        "runtime_info",
        "timings_ms",
        "llm",
    ] {
        assert!(report.get(key).is_some(), "missing {key}: {report}");
    }
    let verdict = &report["verdict"];
    assert_eq!(verdict["crash"], true);
    assert_eq!(verdict["exception"], "KeyError");
    assert_eq!(verdict["line"], 2);
    assert_eq!(verdict["detector"], "rules");
    assert!(verdict["diagnosis"].as_str().unwrap().contains("Cabin"));
    assert!(verdict["confidence"].as_f64().unwrap() > 0.5);
    assert_eq!(report["target_cell"]["index"], 3);
    for key in ["execute_prior", "extract", "detect", "total"] {
        assert!(report["timings_ms"][key].is_u64(), "timings_ms.{key}");
    }
    assert!(report["llm"].is_null());
    let df = &report["runtime_info"]["variables"]["df"];
    assert_eq!(df["kind"], "dataframe");
    assert_eq!(df["origin"]["cell"], 2, "df was last bound in cell 2: {df}");
    let columns: Vec<&str> = df["R"]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(
        columns.contains(&"Age") && !columns.contains(&"Cabin"),
        "{columns:?}"
    );
    assert!(report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["rule"].is_string()));
}

#[test]
fn check_passes_a_correct_cell_and_flags_an_undefined_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    write_notebook(
        &path,
        &[
            ("import numpy as np\nx = np.arange(12)", Some(1)),
            ("y = x.reshape(3, 4)\ny.sum()", None),
            ("z = undefined_thing + 1", None),
        ],
    );
    let path = path.display().to_string();
    let ok = crane(&["check", &path, "--cell", "1"]);
    assert_eq!(ok.status.code(), Some(0), "{}{}", stdout(&ok), stderr(&ok));
    assert!(stdout(&ok).starts_with("no crash predicted: cell 1"));

    let bad = crane(&["check", &path, "--cell", "2", "--format", "json", "--quiet"]);
    assert_eq!(bad.status.code(), Some(1), "{}", stderr(&bad));
    let report: Value = serde_json::from_str(&stdout(&bad)).unwrap();
    assert_eq!(report["verdict"]["exception"], "NameError");
}

#[test]
fn an_earlier_failing_cell_stops_the_check_with_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    write_notebook(
        &path,
        &[
            ("x = 1", Some(1)),
            ("raise ValueError('boom')", Some(2)),
            ("x + 1", None),
        ],
    );
    let output = crane(&["check", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(3));
    let err = stderr(&output);
    assert!(
        err.contains("cell 1")
            && err.contains("ValueError: boom")
            && err.contains("nothing was checked"),
        "{err}"
    );
}

#[test]
fn bad_inputs_get_one_line_errors_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let not_json = dir.path().join("broken.ipynb");
    std::fs::write(&not_json, "{\"cells\": [").unwrap();
    let empty = dir.path().join("empty.ipynb");
    write_notebook(&empty, &[]);
    let one = dir.path().join("one.ipynb");
    write_notebook(&one, &[("x = 1", Some(1))]);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["check".into(), "/nonexistent/nb.ipynb".into()],
            "cannot read",
        ),
        (
            vec!["check".into(), not_json.display().to_string()],
            "truncated",
        ),
        (
            vec!["exec".into(), empty.display().to_string()],
            "no code cells",
        ),
        (
            vec![
                "check".into(),
                one.display().to_string(),
                "--cell".into(),
                "4".into(),
            ],
            "out of range",
        ),
        (
            vec!["check".into(), one.display().to_string()],
            "every code cell has been executed",
        ),
        (
            vec![
                "check".into(),
                "--existing".into(),
                "/nonexistent/kernel-1.json".into(),
                "--code".into(),
                "x".into(),
            ],
            "kernel-1.json",
        ),
        (
            vec![
                "check".into(),
                one.display().to_string(),
                "--timeout=0".into(),
            ],
            "--timeout",
        ),
    ];
    for (args, needle) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = crane(&args);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("error:") && err.contains(needle),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    let usage = crane(&["check", "--cell", "x"]);
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn exec_reports_the_failing_cell_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    write_notebook(
        &path,
        &[("a = [1, 2]", Some(1)), ("b = 1\nc = a[5]", Some(2))],
    );
    let output = crane(&["exec", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(3));
    let err = stderr(&output);
    assert!(
        err.contains("cell 1") && err.contains("IndexError") && err.contains("line 2"),
        "{err}"
    );
    assert!(err.contains("[2/2]"), "progress is shown: {err}");
}

/// The fate of each cell in a `crane run` JSON summary.
fn fates(summary: &Value) -> Vec<&str> {
    summary["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| cell["fate"].as_str().unwrap())
        .collect()
}

/// Processes whose working directory is `dir` (a kernel crane started for a notebook there).
fn processes_in(dir: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| {
            std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(dir))
        })
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn run_interrupted_by_ctrl_c_writes_what_ran_and_leaves_no_kernel() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    let out = dir.path().join("out.ipynb");
    write_notebook(
        &path,
        &[
            ("print('first')", None),
            ("import time\ntime.sleep(120)", None),
            ("after = 1", None),
        ],
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_crane"))
        .args(["run", path.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .args(["--format", "json"])
        .env("CRANE_PYTHON", common::python())
        .env("NO_COLOR", "1")
        .env_remove("CRANE_LLM")
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("crane starts");
    let mut progress = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("[2/3]") {
        let mut line = String::new();
        if progress.read_line(&mut line).unwrap() == 0 {
            panic!("crane ended before the second cell: {seen}");
        }
        seen.push_str(&line);
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut progress, &mut rest).unwrap();
    let output = child.wait_with_output().expect("crane ends");
    assert_eq!(output.status.code(), Some(130), "{seen}{rest}");
    assert!(rest.contains("interrupted"), "{rest}");

    let summary: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let fates = fates(&summary);
    assert_eq!(fates, ["ran", "interrupted", "not_reached"], "{summary:#}");
    let written = run_python(
        "import sys, nbformat\n\
         nb = nbformat.read(sys.argv[1], as_version=4)\n\
         nbformat.validate(nb)\n\
         print(nb.cells[0].outputs[0]['text'].strip(), nb.cells[1].outputs[0]['text'][:19], nb.cells[2].execution_count)\n",
        &[out.to_str().unwrap()],
    );
    assert_eq!(written.trim(), "first [crane] interrupted None");
    assert_eq!(
        processes_in(dir.path()),
        Vec::<String>::new(),
        "no kernel is left"
    );
}

#[test]
fn run_stops_before_the_predicted_crash_and_writes_a_valid_notebook() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("checked.ipynb");
    let output = crane(&["run", &example(), "-o", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let summary = stdout(&output);
    assert!(
        summary.contains("3 cells run; crashes: 1 predicted, 0 actual"),
        "{summary}"
    );
    assert!(summary.contains("stopped before cell 3"), "{summary}");
    let checked = run_python(
        "import sys, nbformat\n\
         nb = nbformat.read(sys.argv[1], as_version=4)\n\
         nbformat.validate(nb)\n\
         code = [c for c in nb.cells if c.cell_type == 'code']\n\
         print(code[2].execution_count, code[3].metadata['crane']['verdict']['exception'], code[3].outputs[0]['text'][:7])\n",
        &[out.to_str().unwrap()],
    );
    assert_eq!(checked.trim(), "3 KeyError [crane]");
}

/// `crane run --on-predicted-crash POLICY --format json` on a notebook of `cells`: the exit
/// code and the summary.
fn run_with_policy(cells: &[&str], policy: &str) -> (Option<i32>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    let cells: Vec<(&str, Option<u32>)> = cells.iter().map(|source| (*source, None)).collect();
    write_notebook(&path, &cells);
    let output = crane(&[
        "run",
        path.to_str().unwrap(),
        "--on-predicted-crash",
        policy,
        "--format",
        "json",
        "--quiet",
    ]);
    let summary = serde_json::from_str(&stdout(&output))
        .unwrap_or_else(|error| panic!("{error}: {}", stderr(&output)));
    (output.status.code(), summary)
}

#[test]
fn run_skip_holds_each_predicted_crash_and_goes_on_with_fresh_facts() {
    let (code, summary) = run_with_policy(
        &[
            "import pandas as pd\ndf = pd.DataFrame({'a': [1]})",
            "df['b']",
            "df['c']",
            "df['b'] = df['a'] * 2",
            "total = df['b'].sum()",
        ],
        "skip",
    );
    assert_eq!(code, Some(0), "{summary:#}");
    let fates = fates(&summary);
    assert_eq!(fates, ["ran", "held", "held", "ran", "ran"], "{summary:#}");
    assert_eq!(summary["predicted_crashes"], 2);
    assert_eq!(summary["actual_crashes"], 0);
}

#[test]
fn run_warn_executes_anyway_and_scores_the_prediction() {
    let (code, summary) = run_with_policy(
        &[
            "import pandas as pd\ndf = pd.DataFrame({'a': [1]})",
            "df['b']",
        ],
        "warn",
    );
    assert_eq!(code, Some(3), "{summary:#}");
    assert_eq!(summary["actual_crashes"], 1);
    assert_eq!(summary["cells"][1]["fate"], "crashed");
    assert_eq!(summary["cells"][1]["prediction_correct"], true);
}

#[test]
fn help_documents_exit_codes_and_examples() {
    let output = crane(&["--help"]);
    let help = stdout(&output);
    assert!(
        help.contains("Exit codes") && help.contains("130"),
        "{help}"
    );
    let check_help = stdout(&crane(&["check", "--help"]));
    assert!(check_help.contains("Examples") && check_help.contains("--existing"));
}

fn junobench_cases() -> String {
    crane_runtime::junobench::default_cases_dir()
        .display()
        .to_string()
}

#[test]
fn bench_reproduces_the_papers_gpt5_figures_from_recorded_answers() {
    let cases = junobench_cases();
    let output = crane(&[
        "bench",
        &cases,
        "--detector",
        "llm",
        "--llm",
        "replay:gpt_5",
        "--config",
        "with_runtime",
        "--format",
        "json",
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let overall = &report["overall"];
    assert_eq!(overall["n"], 148);
    for (key, expected) in [
        ("precision", 0.779),
        ("recall", 0.811),
        ("f1", 0.795),
        ("accuracy", 0.791),
    ] {
        let value = overall[key].as_f64().unwrap();
        assert!(
            (value - expected).abs() < 0.0005,
            "{key}: {value} vs {expected}"
        );
    }
}

#[test]
fn bench_shards_merge_into_the_unsharded_result() {
    let cases = junobench_cases();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    for shard in ["1/2", "2/2"] {
        let output = crane(&[
            "bench",
            &cases,
            "--detector",
            "rules",
            "--shard",
            shard,
            "--out",
            out,
            "--quiet",
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    let mut parts: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.contains("shard") && p.ends_with(".json"))
        .collect();
    parts.sort();
    assert_eq!(parts.len(), 2, "{parts:?}");
    let mut args = vec!["bench", "merge"];
    args.extend(parts.iter().map(String::as_str));
    args.extend(["--format", "json", "--quiet"]);
    let merged: Value = serde_json::from_str(&stdout(&crane(&args))).unwrap();
    let whole: Value = serde_json::from_str(&stdout(&crane(&[
        "bench",
        &cases,
        "--detector",
        "rules",
        "--format",
        "json",
        "--quiet",
    ])))
    .unwrap();
    assert_eq!(merged["overall"], whole["overall"]);
    for shard in ["1-of-2", "2-of-2"] {
        let report = dir.path().join(format!("report.shard-{shard}.md"));
        assert!(report.is_file(), "Markdown report of shard {shard}");
    }
}

/// `crane check PATH --cell CELL --detector dry-run` as JSON, with its exit code.
fn dry_run_json(path: &str, cell: &str) -> (Option<i32>, Value) {
    let output = crane(&[
        "check",
        path,
        "--cell",
        cell,
        "--detector",
        "dry-run",
        "--format",
        "json",
        "--quiet",
    ]);
    let report = serde_json::from_str(&stdout(&output))
        .unwrap_or_else(|error| panic!("{error}: {}", stderr(&output)));
    (output.status.code(), report)
}

#[test]
fn dry_run_observes_the_real_exception_and_seals_side_effects() {
    let output = crane(&[
        "check",
        &example(),
        "--detector",
        "dry-run",
        "--format",
        "json",
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["verdict"]["detector"], "dry_run");
    assert_eq!(report["verdict"]["exception"], "KeyError");
    assert_eq!(report["verdict"]["line"], 2);
    assert_eq!(report["findings"][0]["status"], "observed");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    write_notebook(
        &path,
        &[
            (
                "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})",
                Some(1),
            ),
            ("df.to_csv('out.csv')", None),
            ("df['b'] = df['a'] * 2\ndf['b'].sum()", None),
        ],
    );
    // Over a file that exists: the seal blocks it (a new one would stay in the fork's memory).
    std::fs::write(dir.path().join("out.csv"), "old").unwrap();
    let path = path.to_str().unwrap();
    let (code, report) = dry_run_json(path, "1");
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["findings"][0]["status"], "inconclusive");
    assert_eq!(report["findings"][0]["line"], 1);
    assert!(report["findings"][0]["diagnosis"]
        .as_str()
        .unwrap()
        .contains("out.csv"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.csv")).unwrap(),
        "old",
        "the sealed cell wrote nothing"
    );
    let text = crane(&[
        "check",
        path,
        "--cell",
        "1",
        "--detector",
        "dry-run",
        "--quiet",
    ]);
    assert!(
        stdout(&text).contains(
            "dry_run: Inconclusive: The dry run is inconclusive at line 1: the cell tried to open"
        ),
        "the text says why the dry run decided nothing:\n{}",
        stdout(&text)
    );

    let passed = crane(&[
        "check",
        path,
        "--cell",
        "2",
        "--dry-run",
        "--format",
        "json",
        "--quiet",
    ]);
    assert_eq!(passed.status.code(), Some(0), "{}", stderr(&passed));
    let report: Value = serde_json::from_str(&stdout(&passed)).unwrap();
    assert_eq!(report["verdict"]["detector"], "dry_run");
    assert_eq!(report["verdict"]["crash"], false);
}

#[test]
fn a_fork_killed_by_a_signal_is_inconclusive_and_a_cell_that_exits_is_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    write_notebook(
        &path,
        &[
            ("import ctypes, os", Some(1)),
            ("ctypes.string_at(0)", None),
            ("os._exit(3)", None),
        ],
    );
    let path = path.to_str().unwrap();
    // A fork can die where the kernel would not: nothing is held on the fork's death alone.
    let (code, report) = dry_run_json(path, "1");
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["findings"][0]["status"], "inconclusive");
    assert_eq!(report["verdict"]["crash"], false);
    assert!(report["findings"][0]["diagnosis"]
        .as_str()
        .unwrap()
        .contains("signal 11"));

    let (code, report) = dry_run_json(path, "2");
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(report["findings"][0]["status"], "observed");
    assert_eq!(report["verdict"]["crash"], true);
}

#[test]
fn a_long_cell_is_judged_by_an_abridged_run_and_only_a_certain_crash_is_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    let slow_loop =
        "history = []\nfor epoch in range(100):\n    time.sleep(0.05)\n    history.append(epoch)\n";
    write_notebook(
        &path,
        &[
            ("import time", Some(1)),
            (&format!("{slow_loop}{{'loss': 1}}['accuracy']"), None),
            (&format!("{slow_loop}assert history[50] == 50"), None),
        ],
    );
    let path = path.to_str().unwrap();
    let (code, report) = dry_run_json(path, "1");
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(report["findings"][0]["status"], "abridged", "{report}");
    assert_eq!(report["verdict"]["exception"], "KeyError");
    assert!(report["findings"][0]["diagnosis"]
        .as_str()
        .unwrap()
        .contains("ran 2 of 100 iterations"));
    // The run passes for real; the abridged history has 100 entries, but those the skipped
    // iterations left are stand-ins (copies of the first): a warning, no verdict of a crash
    // (exit 0), as in `crane run` and the crane kernel.
    let (code, report) = dry_run_json(path, "2");
    assert_eq!(
        report["findings"][0]["status"], "abridged_uncertain",
        "{report}"
    );
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["verdict"]["crash"], false, "{report}");
    assert!(report["findings"][0]["diagnosis"]
        .as_str()
        .unwrap()
        .contains("reads history"));
}

#[test]
fn cells_of_a_kernel_that_cannot_fork_are_judged_in_the_replica_by_check_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    // The seam makes the kernel refuse forks as a kernel that touched a GPU does.
    write_notebook(
        &path,
        &[
            (
                "import os\nimport torch\nos.environ['CRANE_TEST_REFUSE_FORK'] = 'a device'\n\
                 layer = torch.nn.Linear(4, 2)\nbatch = torch.randn(8, 3)",
                Some(1),
            ),
            ("print('ready')", Some(2)),
            ("hidden = layer(batch)\nprint(hidden.shape)", None),
        ],
    );
    let path = path.to_str().unwrap();
    let (code, report) = dry_run_json(path, "2");
    assert_eq!(code, Some(1), "{report}");
    let finding = &report["findings"][0];
    assert_eq!(finding["status"], "replicated", "{report}");
    assert_eq!(finding["exception"], "RuntimeError", "{report}");
    assert_eq!(finding["line"], 1, "{report}");
    assert!(
        finding["diagnosis"].as_str().unwrap().contains("replica"),
        "{report}"
    );

    // `crane run` stops before the cell, having seen it crash in the replica.
    let out = dir.path().join("out.ipynb");
    let output = crane(&["run", path, "-o", out.to_str().unwrap(), "--dry-run", "on"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("RuntimeError"),
        "{}",
        stderr(&output)
    );
}
