//! Helpers for the end-to-end tests: the built `crane` binary, the project's Python, and
//! notebooks written by the real nbformat library.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

pub fn python() -> PathBuf {
    std::env::var_os("CRANE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/bin/python"))
}

/// The binary with the test environment, ready to be changed further.
pub fn crane_command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_crane"));
    command
        .args(args)
        .env("CRANE_PYTHON", python())
        .env("NO_COLOR", "1")
        .env_remove("CRANE_LLM")
        .env(
            "XDG_CACHE_HOME",
            std::env::temp_dir().join("crane-test-cache"),
        );
    command
}

pub fn crane(args: &[&str]) -> Output {
    crane_command(args).output().expect("run crane")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs a Python script with the project's interpreter and returns its stdout.
pub fn run_python(script: &str, args: &[&str]) -> String {
    let output = Command::new(python())
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        output.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Writes a notebook with nbformat: `cells` are (source, execution_count) pairs.
pub fn write_notebook(path: &Path, cells: &[(&str, Option<u32>)]) {
    let cells_json = serde_json::to_string(
        &cells
            .iter()
            .map(|(source, count)| serde_json::json!([source, count]))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    run_python(
        "import json, sys, nbformat
nb = nbformat.v4.new_notebook()
nb.metadata['kernelspec'] = {'name': 'python3', 'display_name': 'Python 3', 'language': 'python'}
for source, count in json.loads(sys.argv[2]):
    nb.cells.append(nbformat.v4.new_code_cell(source, execution_count=count))
nbformat.write(nb, sys.argv[1])
",
        &[path.to_str().unwrap(), &cells_json],
    );
}
