//! crane's kernel in real Jupyter frontends: a Jupyter Server driven over REST and websocket
//! (`tests/jupyter/server_cases.py`) and nbclient (`tests/jupyter/nbclient_cases.py`). The
//! Python drivers assert; this runs them with the built binary and the project's Python.

mod common;

use std::process::Command;

fn run_driver(script: &str) {
    let dir = common::repo_root().join("crates/crane/tests/jupyter");
    let output = Command::new(common::python())
        .arg(dir.join(script))
        .arg(env!("CARGO_BIN_EXE_crane"))
        .arg(common::python())
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .env(
            "XDG_CACHE_HOME",
            std::env::temp_dir().join("crane-test-cache"),
        )
        .output()
        .expect("run the driver");
    let stdout = common::stdout(&output);
    assert!(
        output.status.success(),
        "{script} failed:\n{stdout}\n{}",
        common::stderr(&output)
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

#[test]
fn jupyter_server_runs_cells_through_the_crane_kernel() {
    run_driver("server_cases.py");
}

#[test]
fn nbclient_executes_notebooks_on_the_crane_kernel() {
    run_driver("nbclient_cases.py");
}
