//! NB005 end to end: a notebook whose cell calls a library with arguments its signature does
//! not bind is checked against a real kernel; the finding carries the message Python raises
//! (asked of the same Python), and correct calls, or calls a wrapper accepts, stay silent.

mod common;

use common::{crane, run_python, stderr, stdout, write_notebook};
use serde_json::Value;

const SETUP: &str = "import numpy as np\nimport pandas as pd\nfrom sklearn.model_selection import train_test_split\n\
X = np.zeros((10, 2)); y = np.arange(10) % 2\ndf = pd.DataFrame({'a': [1.0, 2.0]})\ndf.to_csv('data.csv', index=False)";

/// What Python says when it runs `cell` after the setup.
fn python_message(cell: &str) -> String {
    run_python(
        &format!(
            "import os, sys, tempfile, warnings\nwarnings.simplefilter('ignore')\nos.chdir(tempfile.mkdtemp())\n{SETUP}\n\
             try:\n    exec(sys.argv[1])\nexcept TypeError as exc:\n    print(exc, end='')\n"
        ),
        &[cell],
    )
}

#[test]
fn a_call_its_signature_refuses_is_a_type_error_with_pythons_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.ipynb");
    let crashing = [
        "parts = train_test_split(X, y, test_sizee=0.2)",
        "frame = pd.read_csv('data.csv', sepp=',')",
        "merged = df.merge(df, onn='a')",
    ];
    // The last: pandas' deprecate_nonkeyword_arguments takes `df.mean(0)`, with a warning.
    let fine = [
        "parts = train_test_split(X, y, test_size=0.2)\nframe = pd.read_csv('data.csv', sep=',')\n\
                 merged = df.merge(df, on='a')\naverage = df.mean(0)",
    ];
    let mut cells = vec![(SETUP, Some(1))];
    cells.extend(crashing.iter().chain(&fine).map(|cell| (*cell, None)));
    write_notebook(&path, &cells);
    let notebook = path.to_str().unwrap();
    for (index, cell) in crashing.iter().enumerate() {
        let expected = python_message(cell);
        assert!(!expected.is_empty(), "Python ran {cell}");
        let target = (index + 1).to_string();
        let output = crane(&["check", notebook, "--cell", &target, "--format", "json"]);
        assert_eq!(output.status.code(), Some(1), "{cell}: {}", stderr(&output));
        let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
        let finding = &report["findings"][0];
        assert_eq!(finding["rule"], "NB005", "{report:#}");
        assert_eq!(finding["exception"], "TypeError");
        let diagnosis = finding["diagnosis"].as_str().unwrap();
        assert!(
            diagnosis.ends_with(&format!("raises TypeError: {expected}")),
            "{diagnosis}\nPython: {expected}"
        );
    }
    for index in 0..fine.len() {
        let target = (crashing.len() + index + 1).to_string();
        let output = crane(&["check", notebook, "--cell", &target, "--format", "json"]);
        assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    }
}
