//! crane's kernel in real Jupyter frontends: a Jupyter Server driven over REST and websocket
//! (`tests/jupyter/server_cases.py`, `snapshot_cases.py`, `llm_case.py`) and nbclient (`nbclient_cases.py`). The
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
fn snapshots_are_taken_kept_and_dropped_before_cells() {
    run_driver("snapshot_cases.py", &[]);
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

fn crane_in(data: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_crane"))
        .args(args)
        .env("JUPYTER_PATH", data.join("share/jupyter"))
        .env("JUPYTER_DATA_DIR", data.join("user"))
        .env_remove("VIRTUAL_ENV")
        .env_remove("CONDA_PREFIX")
        .env("NO_COLOR", "1")
        .output()
        .expect("run crane")
}

#[test]
fn kernelspecs_are_installed_listed_and_uninstalled() {
    let dir = tempfile::tempdir().unwrap();
    let python = common::python();
    let prefix = dir.path().to_str().unwrap();
    let output = crane_in(
        dir.path(),
        &[
            "kernel",
            "install",
            "--prefix",
            prefix,
            "--python",
            python.to_str().unwrap(),
            "--policy",
            "warn",
        ],
    );
    assert!(output.status.success(), "{}", common::stderr(&output));
    let spec_dir = dir.path().join("share/jupyter/kernels/crane-python3");
    assert_eq!(common::stdout(&output).trim(), spec_dir.to_str().unwrap());
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(spec_dir.join("kernel.json")).unwrap())
            .unwrap();
    assert_eq!(spec["display_name"], "Python 3 (crane)");
    assert_eq!(spec["interrupt_mode"], "signal");
    let argv: Vec<&str> = spec["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap())
        .collect();
    assert_eq!(&argv[1..5], ["kernel", "serve", "-f", "{connection_file}"]);
    assert!(
        argv.windows(2).any(|pair| pair == ["--policy", "warn"]),
        "{argv:?}"
    );

    // Another kernel's spec beside it: listed, but not crane's to remove.
    let other = dir.path().join("share/jupyter/kernels/plain");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("kernel.json"),
        r#"{"argv": ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "Plain", "language": "python"}"#,
    )
    .unwrap();
    let listed = common::stdout(&crane_in(dir.path(), &["kernel", "list"]));
    let line = |name: &str| {
        listed
            .lines()
            .find(|line| line.starts_with(name))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(line("crane-python3").contains(" crane "), "{listed}");
    assert!(!line("plain").contains(" crane "), "{listed}");
    let refused = crane_in(dir.path(), &["kernel", "uninstall", "plain"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(other.join("kernel.json").is_file());

    let removed = crane_in(dir.path(), &["kernel", "uninstall", "crane-python3"]);
    assert!(removed.status.success(), "{}", common::stderr(&removed));
    assert!(!spec_dir.exists());
    let missing = crane_in(dir.path(), &["kernel", "uninstall", "crane-python3"]);
    assert_eq!(missing.status.code(), Some(2));
    let bad = crane_in(
        dir.path(),
        &[
            "kernel",
            "install",
            "--prefix",
            prefix,
            "--python",
            "/nonexistent/python",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
}
