//! Silencing rule findings end to end: the real binary checks real notebooks whose target cell
//! really raises KeyError (`df` has no column `b`), silenced by a comment on the line or in the
//! cell, by `--ignore`, by crane.toml or pyproject.toml, and not silenced with `--isolated`.

mod common;

use std::path::Path;

use common::{crane, crane_command, stderr, stdout, write_notebook};
use serde_json::Value;

const SETUP: &str = "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})";

/// A notebook whose next cell is `target`, after a cell that made `df` with column `a` only.
fn notebook(path: &Path, target: &str) {
    write_notebook(path, &[(SETUP, Some(1)), (target, None)]);
}

fn json(output: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(output)).unwrap_or_else(|err| {
        panic!(
            "not JSON ({err}):\n{}\nstderr:\n{}",
            stdout(output),
            stderr(output)
        )
    })
}

/// `(rule, by)` of each silenced finding of one notebook's report.
fn silenced(report: &Value) -> Vec<(String, String)> {
    report["silenced"]
        .as_array()
        .unwrap_or_else(|| panic!("no silenced list: {report}"))
        .iter()
        .map(|s| {
            (
                s["rule"].as_str().unwrap_or_default().to_owned(),
                s["by"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn check_json(notebook: &Path, extra: &[&str]) -> (Option<i32>, Value, String) {
    let mut args = vec!["check", notebook.to_str().unwrap(), "--format", "json"];
    args.extend_from_slice(extra);
    let output = crane(&args);
    let stderr_text = stderr(&output);
    (output.status.code(), json(&output), stderr_text)
}

#[test]
fn comments_in_the_cell_silence_findings_on_their_line_or_in_the_cell() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "a_code",
            "x = df['b']  # crane: ignore[PD001]",
            Some("line"),
        ),
        (
            "b_name_and_another",
            "x = df['b']  # crane:ignore[NB004, missing-column]",
            Some("line"),
        ),
        ("c_bare", "x = df['b']  # crane: ignore", Some("line")),
        ("d_other_rule", "x = df['b']  # crane: ignore[NB004]", None),
        (
            "e_cell",
            "# crane: ignore-cell[PD001]\ny = 1\nx = df['b']",
            Some("cell"),
        ),
        ("f_other_line", "y = 1  # crane: ignore\nx = df['b']", None),
        (
            "g_unknown_code",
            "x = df['b']  # crane: ignore[PD999]",
            None,
        ),
    ];
    for (name, target, _) in &cases {
        notebook(&dir.path().join(format!("{name}.ipynb")), target);
    }
    let output = crane(&["check", dir.path().to_str().unwrap(), "--format", "json"]);
    // Some notebooks still predict the crash: the most serious code over all of them.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let reports = json(&output);
    let reports = reports.as_array().expect("one report per notebook");
    assert_eq!(reports.len(), cases.len());
    for (report, (name, _, by)) in reports.iter().zip(&cases) {
        assert!(
            report["notebook"]
                .as_str()
                .unwrap()
                .ends_with(&format!("{name}.ipynb")),
            "{report}"
        );
        match by {
            Some(by) => {
                assert_eq!(report["verdict"]["crash"], false, "{name}: {report}");
                assert_eq!(
                    silenced(report),
                    [("PD001".to_owned(), (*by).to_owned())],
                    "{name}"
                );
                let finding = &report["silenced"][0];
                assert_eq!(finding["exception"], "KeyError", "{name}");
                assert!(report["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|f| f["rule"] != "PD001"));
            }
            None => {
                assert_eq!(report["verdict"]["crash"], true, "{name}: {report}");
                assert_eq!(report["verdict"]["exception"], "KeyError", "{name}");
                assert!(silenced(report).is_empty(), "{name}");
            }
        }
    }
    // The unknown code is a warning naming the cell and line, not an error.
    let warnings = stderr(&output);
    assert!(
        warnings.contains("warning: cell 1") && warnings.contains("line 1: unknown rule `PD999`"),
        "{warnings}"
    );
}

#[test]
fn the_ignore_flag_silences_and_unknown_codes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    notebook(&path, "x = df['b']");
    let (code, report, _) = check_json(&path, &["--ignore", "NB004,PD001"]);
    assert_eq!(code, Some(0));
    assert_eq!(report["verdict"]["crash"], false);
    assert_eq!(silenced(&report), [("PD001".to_owned(), "flag".to_owned())]);

    // Text output says what silenced it.
    let output = crane(&[
        "check",
        path.to_str().unwrap(),
        "--ignore",
        "missing-column",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    assert!(
        text.contains("no crash predicted") && text.contains("silenced: PD001 line 1, by --ignore"),
        "{text}"
    );

    // Without it the same cell is a predicted crash.
    let (code, report, _) = check_json(&path, &[]);
    assert_eq!(code, Some(1));
    assert_eq!(report["findings"][0]["rule"], "PD001");
    assert!(silenced(&report).is_empty());

    let output = crane(&["check", path.to_str().unwrap(), "--ignore", "PD001,PD999"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("unknown rule \"PD999\""),
        "{}",
        stderr(&output)
    );
}

#[test]
fn configuration_files_silence_the_closest_wins_and_isolated_reads_none() {
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("project");
    let inner = project.join("notebooks");
    std::fs::create_dir_all(&inner).unwrap();
    let outer_nb = project.join("outer.ipynb");
    let inner_nb = inner.join("inner.ipynb");
    notebook(&outer_nb, "x = df['b']");
    notebook(&inner_nb, "x = df['b']");
    std::fs::write(
        project.join("pyproject.toml"),
        "[project]\nname = \"demo\"\n\n[tool.crane]\nignore = [\"PD001\"]\n",
    )
    .unwrap();

    // pyproject.toml's [tool.crane], found from a folder below it.
    let (code, report, _) = check_json(&inner_nb, &[]);
    assert_eq!(code, Some(0));
    assert_eq!(
        silenced(&report),
        [("PD001".to_owned(), "config".to_owned())]
    );

    // A crane.toml closer to the notebook wins (it silences another rule only).
    std::fs::write(inner.join("crane.toml"), "ignore = [\"NB004\"]\n").unwrap();
    let (code, report, _) = check_json(&inner_nb, &[]);
    assert_eq!(code, Some(1));
    assert!(silenced(&report).is_empty());
    // In one folder, crane.toml comes before pyproject.toml.
    std::fs::write(project.join("crane.toml"), "ignore = [\"NB004\"]\n").unwrap();
    let (code, _, _) = check_json(&outer_nb, &[]);
    assert_eq!(code, Some(1));
    std::fs::remove_file(project.join("crane.toml")).unwrap();
    std::fs::write(inner.join("crane.toml"), "ignore = [\"missing-column\"]\n").unwrap();
    let (code, report, _) = check_json(&inner_nb, &[]);
    assert_eq!(code, Some(0));
    assert_eq!(
        silenced(&report),
        [("PD001".to_owned(), "config".to_owned())]
    );

    // --isolated reads no configuration; --config-file names one.
    let (code, report, _) = check_json(&inner_nb, &["--isolated"]);
    assert_eq!(code, Some(1));
    assert!(silenced(&report).is_empty());
    let elsewhere = root.path().join("elsewhere.toml");
    std::fs::write(&elsewhere, "ignore = [\"PD001\"]\n").unwrap();
    let (code, report, _) = check_json(&outer_nb, &["--config-file", elsewhere.to_str().unwrap()]);
    assert_eq!(code, Some(0));
    assert_eq!(
        silenced(&report),
        [("PD001".to_owned(), "config".to_owned())]
    );
    // A flag and the configuration together: the flag is the more specific.
    let (_, report, _) = check_json(&inner_nb, &["--ignore", "PD001"]);
    assert_eq!(silenced(&report), [("PD001".to_owned(), "flag".to_owned())]);
}

#[test]
fn a_bad_configuration_is_exit_2_naming_the_file_and_key_before_any_kernel_starts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    notebook(&path, "x = df['b']");
    let config = dir.path().join("crane.toml");
    for (text, expected) in [
        (
            "ignore = [\"PD001\", \"XX123\"]\n",
            "`ignore`: unknown rule \"XX123\"",
        ),
        (
            "ignore = \"PD001\"\n",
            "`ignore` must be a list of rule codes",
        ),
        ("ignore = [\n", "is not valid TOML"),
    ] {
        std::fs::write(&config, text).unwrap();
        let output = crane(&["check", path.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(2), "{text}");
        let message = stderr(&output);
        assert!(
            message.contains("crane.toml") && message.contains(expected),
            "{text}: {message}"
        );
        assert!(!message.contains("starting kernel"), "{message}");
    }
    // --isolated does not read it; nor is a bad pyproject.toml read past a crane.toml.
    let output = crane(&[
        "check",
        path.to_str().unwrap(),
        "--isolated",
        "--ignore",
        "PD001",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    std::fs::remove_file(&config).unwrap();
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[tool.crane]\nignore = [\"PD0001\"]\n",
    )
    .unwrap();
    let output = crane(&["check", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("pyproject.toml: `tool.crane.ignore`: unknown rule \"PD0001\""),
        "{}",
        stderr(&output)
    );
    let missing = dir.path().join("missing.toml");
    let output = crane(&[
        "check",
        path.to_str().unwrap(),
        "--config-file",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("no such file"));
}

#[test]
fn run_lets_a_silenced_cell_run_and_it_really_raises() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    notebook(&path, "x = df['b']  # crane: ignore[PD001]");
    let out = dir.path().join("out.ipynb");
    let output = crane_command(&[
        "run",
        path.to_str().unwrap(),
        out.to_str().unwrap(),
        "--format",
        "json",
    ])
    .output()
    .unwrap();
    let summary = json(&output);
    let cell = &summary["cells"][1];
    assert_eq!(cell["fate"], "crashed", "{summary}");
    assert_eq!(cell["predicted_crash"], false);
    assert_eq!(cell["silenced"][0]["rule"], "PD001");
    assert_eq!(cell["silenced"][0]["by"], "line");
    assert_eq!(summary["actual_crashes"], 1);
    // The written notebook keeps them in the cell's metadata, beside its verdict.
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let target = written["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|cell| cell["cell_type"] == "code" && cell["source"].to_string().contains("df['b']"))
        .expect("the target cell");
    let metadata = &target["metadata"]["crane"];
    assert_eq!(metadata["silenced"][0]["rule"], "PD001", "{metadata}");
    assert_eq!(metadata["verdict"]["crash"], false);
    // Held back without the comment.
    notebook(&path, "x = df['b']");
    let output = crane(&[
        "run",
        path.to_str().unwrap(),
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(json(&output)["cells"][1]["fate"], "held");
}

#[test]
fn sarif_reports_silenced_findings_as_suppressed_results() {
    let dir = tempfile::tempdir().unwrap();
    notebook(
        &dir.path().join("a_line.ipynb"),
        "y = 1\nx = df['b']  # crane: ignore[PD001]",
    );
    notebook(&dir.path().join("b_crash.ipynb"), "x = df['b']");
    let output = crane(&[
        "check",
        dir.path().to_str().unwrap(),
        "--output-format",
        "sarif",
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let sarif = dir.path().join("out.sarif");
    std::fs::write(&sarif, stdout(&output)).unwrap();
    let schema =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sarif-2.1.0-rtm.5.json");
    let summary = common::run_python(
        "import json, sys, jsonschema\n\
         schema = json.load(open(sys.argv[1]))\n\
         log = json.load(open(sys.argv[2]))\n\
         jsonschema.Draft4Validator(schema).validate(log)\n\
         for r in log['runs'][0]['results']:\n\
         \x20   where = r['locations'][0]['physicalLocation']\n\
         \x20   line = open(where['artifactLocation']['uri']).read().splitlines()[where['region']['startLine'] - 1]\n\
         \x20   print(r['ruleId'], [s['kind'] for s in r.get('suppressions', [])], line.strip())\n",
        &[schema.to_str().unwrap(), sarif.to_str().unwrap()],
    );
    assert_eq!(
        summary.trim(),
        "PD001 ['inSource'] \"x = df['b']  # crane: ignore[PD001]\"\nPD001 [] \"x = df['b']\""
    );
}

#[test]
fn each_notebook_of_a_folder_gets_the_configuration_closest_to_it() {
    let root = tempfile::tempdir().unwrap();
    for (folder, ignore) in [("a_quiet", "PD001"), ("b_loud", "NB004")] {
        let dir = root.path().join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("crane.toml"), format!("ignore = [\"{ignore}\"]\n")).unwrap();
        notebook(&dir.join("nb.ipynb"), "x = df['b']");
    }
    let output = crane(&["check", root.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let reports = json(&output);
    let crashes: Vec<(bool, Vec<(String, String)>)> = reports
        .as_array()
        .unwrap()
        .iter()
        .map(|report| (report["verdict"]["crash"] == true, silenced(report)))
        .collect();
    assert_eq!(
        crashes,
        [
            (false, vec![("PD001".to_owned(), "config".to_owned())]),
            (true, vec![])
        ]
    );
}
