//! `--explain-silence` end to end: where the rules' interpreter gave up on a real cell that
//! really crashes, and the bench option's refusal without the rules.

mod common;

use common::{crane, stderr, stdout, write_notebook};

#[test]
fn check_shows_where_the_interpreter_gave_up_on_the_cell() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    // The folder holds the notebook, so the loop runs and raises KeyError; the interpreter
    // cannot know what the folder lists.
    write_notebook(
        &path,
        &[
            (
                "import os\nimport pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})",
                Some(1),
            ),
            ("for name in os.listdir('.'):\n    x = df['b']", None),
        ],
    );
    let nb = path.to_str().unwrap();
    // The rules alone: a dry run would see the crash.
    let output = crane(&[
        "check",
        nb,
        "--dry-run",
        "off",
        "--explain-silence",
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["verdict"]["crash"], false);
    assert_eq!(
        report["gave_up"],
        serde_json::json!({"loop over unknown items": 1})
    );
    let output = crane(&["check", nb, "--dry-run", "off", "--explain-silence"]);
    let text = stdout(&output);
    assert!(
        text.contains("the rules' interpreter gave up at:\n    - loop over unknown items (1x)"),
        "{text}"
    );
    // Without the flag the JSON has no `gave_up`.
    let output = crane(&["check", nb, "--dry-run", "off", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert!(report.get("gave_up").is_none());
    // Really: the cell raises what the rules could not prove.
    let output = crane(&["exec", nb, "--order", "visual"]);
    assert_eq!(output.status.code(), Some(3));
    assert!(stderr(&output).contains("KeyError"), "{}", stderr(&output));
}

#[test]
fn bench_explains_silence_only_for_the_rules() {
    let cases = crane_runtime::junobench::default_cases_dir();
    let output = crane(&[
        "bench",
        cases.to_str().unwrap(),
        "--detector",
        "llm",
        "--llm",
        "replay:gpt_5",
        "--explain-silence",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--explain-silence counts where the rules gave up"));
}
