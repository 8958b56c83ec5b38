//! crane's kernel in real Jupyter frontends: a Jupyter Server driven over REST and websocket
//! (`tests/jupyter/server_cases.py`, `llm_case.py`) and nbclient (`nbclient_cases.py`). The
//! Python drivers assert; this runs them with the built binary and the project's Python.

mod common;

use std::process::Command;

use crane_llm::test_server::{Reply, TestServer};

fn run_driver(script: &str, extra: &[&str]) {
    let dir = common::repo_root().join("crates/crane/tests/jupyter");
    let cache = tempfile::tempdir().expect("cache dir");
    let output = Command::new(common::python())
        .arg(dir.join(script))
        .arg(env!("CARGO_BIN_EXE_crane"))
        .arg(common::python())
        .args(extra)
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .env("XDG_CACHE_HOME", cache.path())
        .output()
        .expect("run the driver");
    let stdout = common::stdout(&output);
    assert!(
        output.status.success(),
        "{script} failed:\n{stdout}\n{}",
        common::stderr(&output)
    );
    assert!(
        stdout.contains(" passed, 0 failed") && !stdout.contains("\n0 passed"),
        "{stdout}"
    );
}

#[test]
fn jupyter_server_runs_cells_through_the_crane_kernel() {
    run_driver("server_cases.py", &[]);
}

#[test]
fn nbclient_executes_notebooks_on_the_crane_kernel() {
    run_driver("nbclient_cases.py", &[]);
}

#[test]
fn an_llm_set_from_the_notebook_warns_and_the_cell_runs() {
    let answer = r#"{"detection": true, "reasoning": "x may hold a value that cannot be added to 1.", "exception": "ValueError", "line": 1, "confidence": 0.6, "evidence": []}"#;
    let server = TestServer::start([])
        .expect("server")
        .with_fallback(Reply::answer(answer));
    let model = format!("openai-compat:tiny-model@{}", server.base_url());
    run_driver("llm_case.py", &[&model]);
    let requests = server.requests();
    assert!(!requests.is_empty(), "the kernel asked the LLM");
    let prompt = requests[0].json().expect("JSON request").to_string();
    assert!(prompt.contains("z = x + 1"), "{prompt}");
}
