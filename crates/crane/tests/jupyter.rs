//! crane's kernel in real Jupyter frontends: a Jupyter Server driven over REST and websocket
//! (`tests/jupyter/server_cases.py`, `snapshot_cases.py`, `death_cases.py`, `llm_case.py`) and nbclient
//! (`nbclient_cases.py`). The
//! Python drivers assert; this runs them with the built binary and the project's Python.

mod common;

use std::process::Command;

use crane_llm::test_server::{Reply, TestServer};

/// The drivers run one at a time: each starts servers and kernels whose timeouts a 2-core
/// machine running the others too can miss.
static ONE_DRIVER_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run_driver(script: &str, extra: &[&str]) {
    let _turn = ONE_DRIVER_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
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
fn snapshots_are_taken_kept_dropped_and_take_over() {
    run_driver("snapshot_cases.py", &[]);
}

#[test]
fn a_kernel_that_dies_returns_to_the_snapshot_before_the_cell() {
    run_driver("death_cases.py", &[]);
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

/// `crane kernel install --llm` with credentials in the endpoint URL: they go to a private
/// file, not into kernel.json nor the command line of the `crane kernel serve` Jupyter starts
/// from the kernelspec; that kernel sends them (as basic authentication) and shows no form of
/// them, nor of the API key, when the server echoes them in an error: not in `%crane status`,
/// `%crane llm`'s reply, the note about the LLM's failure, or the kernel's log.
#[tokio::test]
async fn credentials_of_an_llm_endpoint_stay_out_of_the_kernelspec_argv_and_replies() {
    use base64::Engine;
    use crane_kernel::{ExecuteOptions, KernelLaunch, KernelOrigin, OwnedKernel, StartOptions};
    use std::os::unix::fs::PermissionsExt;

    const KEY: &str = "sk-compat-K3Y-0123456789";
    let server = TestServer::start([])
        .expect("server")
        .with_fallback(Reply::Echo { status: 401 });
    let url = server
        .base_url()
        .replacen("http://", "http://crane-user:p%40ss-S3CRET@", 1);
    let model = format!("openai-compat:tiny-model@{url}");
    let shown = format!("openai-compat:tiny-model@{}", server.base_url());
    let basic = base64::engine::general_purpose::STANDARD.encode("crane-user:p@ss-S3CRET");
    let forms = [
        "p%40ss-S3CRET",
        "p@ss-S3CRET",
        "crane-user:p",
        basic.trim_end_matches('='),
        KEY,
    ];
    let leaks = |text: &str| -> Vec<&str> {
        forms
            .iter()
            .copied()
            .filter(|form| text.contains(form))
            .collect()
    };

    let dir = tempfile::tempdir().unwrap();
    let python = common::python();
    let installed = crane_in(
        dir.path(),
        &[
            "kernel",
            "install",
            "--prefix",
            dir.path().to_str().unwrap(),
            "--python",
            python.to_str().unwrap(),
            "--llm",
            &model,
        ],
    );
    assert!(installed.status.success(), "{}", common::stderr(&installed));
    let installed_text = common::stdout(&installed) + &common::stderr(&installed);
    assert!(leaks(&installed_text).is_empty(), "{installed_text}");
    let spec_dir = dir.path().join("share/jupyter/kernels/crane-python3");
    let kernel_json = std::fs::read_to_string(spec_dir.join("kernel.json")).unwrap();
    assert!(leaks(&kernel_json).is_empty(), "{kernel_json}");
    assert!(kernel_json.contains(&shown), "{kernel_json}");
    let credentials = spec_dir.join("llm-credentials");
    let mode = std::fs::metadata(&credentials)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let launch =
        KernelLaunch::from_kernelspec("crane-python3", &spec_dir, KernelOrigin::KernelFlag)
            .expect("the kernelspec");
    let cache = tempfile::tempdir().unwrap();
    let options = StartOptions {
        env: vec![
            ("CRANE_LLM_API_KEY".into(), KEY.into()),
            ("XDG_CACHE_HOME".into(), cache.path().into()),
            ("NO_COLOR".into(), "1".into()),
        ],
        ..StartOptions::default()
    };
    let mut kernel = OwnedKernel::start(&launch, &options)
        .await
        .expect("the crane kernel starts");
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", kernel.pid())).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    assert!(cmdline.contains("kernel serve"), "{cmdline}");
    assert!(leaks(&cmdline).is_empty(), "{cmdline}");

    let mut replies = String::new();
    for cell in [
        "%crane status\n%crane dry-run on",
        "x = 1\ny = x + 1",
        &format!("%crane llm {model}"),
        "%crane",
    ] {
        let execution = kernel
            .execute(cell, &ExecuteOptions::cell())
            .await
            .expect("execute");
        for output in &execution.outputs {
            replies.push_str(&serde_json::to_string(output).unwrap());
            replies.push('\n');
        }
    }
    assert!(replies.contains(&format!("llm {shown}")), "{replies}");
    assert!(
        replies.contains("denied: url http://127.0.0.1"),
        "the server's echo reached the notebook: {replies}"
    );
    assert!(
        leaks(&replies).is_empty(),
        "{:?} in {replies}",
        leaks(&replies)
    );
    let sent: Vec<String> = server
        .requests()
        .iter()
        .flat_map(|request| request.headers.clone())
        .filter(|(name, _)| name == "authorization")
        .map(|(_, value)| value)
        .collect();
    assert!(
        sent.contains(&format!("Basic {basic}")),
        "the credentials file was read and its credentials sent: {sent:?}"
    );
    let log = kernel.stderr_tail();
    kernel.shutdown().await.expect("shutdown");
    assert!(leaks(&log).is_empty(), "{log}");
}
