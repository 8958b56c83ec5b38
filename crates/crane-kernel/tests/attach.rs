//! Attaching to a kernel crane did not start: it runs code, and it outlives the session.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crane_kernel::{
    AttachOptions, AttachedKernel, ConnectionFileError, DeathCause, ExecuteOptions,
    ExecutionOutcome, KernelError,
};

/// A kernel the test starts by itself, the way JupyterLab would; killed on drop.
struct ExternalKernel {
    child: Child,
    connection_file: PathBuf,
    _dir: tempfile::TempDir,
}

impl ExternalKernel {
    fn spawn() -> ExternalKernel {
        let dir = tempfile::tempdir().expect("tempdir");
        let connection_file = dir.path().join("kernel-external.json");
        write_connection_file(&connection_file, &free_ports());
        let child = Command::new(common::project_python())
            .args(["-m", "ipykernel_launcher", "-f"])
            .arg(&connection_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn ipykernel");
        ExternalKernel {
            child,
            connection_file,
            _dir: dir,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Attach, waiting for the kernel to come up (slow on a loaded machine).
    async fn attach(&self) -> AttachedKernel {
        let deadline = Instant::now() + Duration::from_secs(60);
        let options = AttachOptions {
            timeout: Duration::from_secs(60),
            ..AttachOptions::default()
        };
        loop {
            match AttachedKernel::attach_file(&self.connection_file, &options).await {
                Ok(kernel) => return kernel,
                Err(KernelError::NotListening { .. }) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => panic!("attach failed: {error}"),
            }
        }
    }
}

impl Drop for ExternalKernel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_ports() -> Vec<u16> {
    let listeners: Vec<_> = (0..5)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("addr").port())
        .collect()
}

fn write_connection_file(path: &Path, ports: &[u16]) {
    let info = serde_json::json!({
        "shell_port": ports[0], "iopub_port": ports[1], "stdin_port": ports[2],
        "control_port": ports[3], "hb_port": ports[4],
        "ip": "127.0.0.1", "key": "a0436f6c-1916-498b-8eb9-e81ab9368e84",
        "transport": "tcp", "signature_scheme": "hmac-sha256", "kernel_name": "",
    });
    std::fs::write(path, info.to_string()).expect("write connection file");
}

#[tokio::test]
async fn attached_kernel_keeps_running_and_keeps_its_state_after_the_session() {
    let mut external = ExternalKernel::spawn();
    let pid = external.pid();

    let mut kernel = external.attach().await;
    assert_eq!(kernel.connection_file(), external.connection_file);
    let first = kernel
        .execute("x = 41", &ExecuteOptions::cell())
        .await
        .expect("execute");
    assert_eq!(first.reply().and_then(|r| r.execution_count), Some(1));
    drop(kernel);

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        external.child.try_wait().expect("try_wait").is_none(),
        "crane must not stop a kernel it attached to"
    );
    assert!(common::process_alive(pid));

    let mut again = external.attach().await;
    let second = again
        .execute("x + 1", &ExecuteOptions::cell())
        .await
        .expect("execute");
    assert_eq!(second.result_text(), Some("42"));
    assert_eq!(second.reply().and_then(|r| r.execution_count), Some(2));
    crane_kernel::KernelSession::from(again)
        .close()
        .await
        .expect("close");
    assert!(external.child.try_wait().expect("try_wait").is_none());

    drop(external);
    assert!(common::wait_gone(pid));
}

#[tokio::test]
async fn attached_kernel_death_is_detected_by_heartbeat() {
    let external = ExternalKernel::spawn();
    let mut kernel = external.attach().await;
    let error = kernel
        .execute("import os\nos._exit(1)", &ExecuteOptions::cell())
        .await
        .expect_err("death");
    assert!(
        matches!(
            error,
            KernelError::KernelDied {
                cause: DeathCause::HeartbeatLost(_),
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("heartbeat"), "{error}");
}

#[tokio::test]
async fn timeout_on_attached_kernel_interrupts_by_message() {
    let external = ExternalKernel::spawn();
    let mut kernel = external.attach().await;
    let options = ExecuteOptions::cell().with_timeout(Duration::from_secs(1));
    let execution = kernel
        .execute("import time\ntime.sleep(60)", &options)
        .await
        .expect("execute");
    assert!(execution.timed_out());
    assert_eq!(
        execution.error().map(|e| e.ename.as_str()),
        Some("KeyboardInterrupt")
    );
    let next = kernel
        .execute("'still here'", &ExecuteOptions::cell())
        .await
        .expect("execute");
    assert_eq!(next.result_text(), Some("'still here'"));
}

#[tokio::test]
async fn a_busy_kernel_is_attached_and_the_users_cell_is_never_interrupted() {
    let external = ExternalKernel::spawn();
    let mut first = external.attach().await;
    let marker = tempfile::tempdir().expect("tempdir");
    let started = marker.path().join("started");
    let code = format!("import time\nopen({started:?}, 'w').close()\ntime.sleep(6)\n'finished'");
    let busy = tokio::spawn(async move {
        let execution = first.execute(&code, &ExecuteOptions::cell()).await;
        (first, execution)
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while !started.exists() {
        assert!(Instant::now() < deadline, "the long cell never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Shell is busy; the handshake must not wait for it.
    let options = AttachOptions {
        timeout: Duration::from_secs(20),
        ..AttachOptions::default()
    };
    let mut second = AttachedKernel::attach_file(&external.connection_file, &options)
        .await
        .expect("attach while the kernel is busy");
    assert!(
        !second.interrupt().await.expect("interrupt"),
        "crane's own request is not running: nothing to interrupt"
    );
    let probe = ExecuteOptions::silent()
        .with_timeout(Duration::from_secs(1))
        .with_user_expression("x", "1 + 1");
    let execution = second.execute("", &probe).await.expect("execute");
    assert!(
        matches!(execution.outcome, ExecutionOutcome::Abandoned { .. }),
        "a request queued behind the user's cell is abandoned, not interrupted: {:?}",
        execution.outcome
    );
    second.detach().await;

    let (_first, execution) = busy.await.expect("task");
    let execution = execution.expect("execute");
    assert_eq!(execution.error().map(|e| e.ename.clone()), None);
    assert_eq!(execution.result_text(), Some("'finished'"));
}

#[tokio::test]
async fn detaching_after_a_cancelled_execute_stops_cranes_own_request() {
    let external = ExternalKernel::spawn();
    let mut crane = external.attach().await;
    let silent = ExecuteOptions::silent();
    let long = crane.execute("import time\ntime.sleep(60)", &silent);
    tokio::select! {
        _ = long => panic!("the request finished"),
        _ = tokio::time::sleep(Duration::from_secs(2)) => {}
    }
    crane.detach().await;

    let mut user = external.attach().await;
    let options = ExecuteOptions::cell().with_timeout(Duration::from_secs(20));
    let next = user.execute("'free'", &options).await.expect("execute");
    assert_eq!(
        next.result_text(),
        Some("'free'"),
        "the kernel is no longer busy with crane's request"
    );
}

#[tokio::test]
async fn attaching_leaves_the_users_random_state_alone() {
    let external = ExternalKernel::spawn();
    let mut user = external.attach().await;
    let cell = ExecuteOptions::cell();
    user.execute(
        "import random\nrandom.seed(7)\nsaved = random.getstate()",
        &cell,
    )
    .await
    .expect("execute");
    for _ in 0..3 {
        let mut crane = external.attach().await;
        let probe = ExecuteOptions::silent().with_user_expression("x", "len('abc')");
        crane.execute("", &probe).await.expect("execute");
        crane.detach().await;
    }
    let same = user
        .execute("random.getstate() == saved", &cell)
        .await
        .expect("execute");
    assert_eq!(same.result_text(), Some("True"));
}

#[tokio::test]
async fn missing_connection_file_names_the_runtime_dir() {
    let runtime = tempfile::tempdir().expect("tempdir");
    let options = AttachOptions {
        runtime_dir: runtime.path().to_path_buf(),
        ..AttachOptions::default()
    };
    let error = AttachedKernel::attach("kernel-nope.json", &options)
        .await
        .err()
        .expect("missing file");
    assert!(matches!(
        error,
        KernelError::ConnectionFile(ConnectionFileError::NotFound { .. })
    ));
    let message = error.to_string();
    assert!(message.contains("kernel-nope.json"), "{message}");
    assert!(
        message.contains(&runtime.path().display().to_string()),
        "{message}"
    );
}

#[tokio::test]
async fn malformed_unreadable_and_stale_connection_files_are_clear_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = AttachOptions::default();

    let malformed = dir.path().join("kernel-bad.json");
    std::fs::write(&malformed, "{\"shell_port\": ").expect("write");
    let error = AttachedKernel::attach_file(&malformed, &options)
        .await
        .err()
        .expect("malformed");
    assert!(matches!(
        error,
        KernelError::ConnectionFile(ConnectionFileError::Malformed { .. })
    ));
    assert!(error.to_string().contains("kernel-bad.json"));

    let missing_key = dir.path().join("kernel-nokey.json");
    std::fs::write(&missing_key, r#"{"shell_port": 1, "ip": "127.0.0.1"}"#).expect("write");
    let error = AttachedKernel::attach_file(&missing_key, &options)
        .await
        .err()
        .expect("incomplete");
    assert!(matches!(
        error,
        KernelError::ConnectionFile(ConnectionFileError::Malformed { .. })
    ));

    let error = AttachedKernel::attach_file(dir.path(), &options)
        .await
        .err()
        .expect("a directory");
    assert!(matches!(
        error,
        KernelError::ConnectionFile(ConnectionFileError::Unreadable { .. })
    ));

    let stale = dir.path().join("kernel-stale.json");
    write_connection_file(&stale, &free_ports());
    let error = AttachedKernel::attach_file(&stale, &options)
        .await
        .err()
        .expect("nobody listens");
    assert!(matches!(error, KernelError::NotListening { .. }), "{error}");
    assert!(error.to_string().contains("stale"));
}

#[test]
fn existing_names_are_looked_up_in_the_runtime_dir() {
    let runtime = tempfile::tempdir().expect("tempdir");
    let file = runtime.path().join("kernel-4f2a.json");
    std::fs::write(&file, "{}").expect("write");
    for existing in ["kernel-4f2a.json", "kernel-4f2a", "4f2a"] {
        assert_eq!(
            crane_kernel::find_connection_file(existing, runtime.path()).expect(existing),
            file
        );
    }
    let by_path = file.to_string_lossy().into_owned();
    assert_eq!(
        crane_kernel::find_connection_file(&by_path, Path::new("/nonexistent")).expect("path"),
        file
    );
    assert!(crane_kernel::find_connection_file("sub/kernel-4f2a.json", runtime.path()).is_err());
}

/// Callers run sessions in spawned tasks, so every session future must be `Send`.
#[allow(dead_code)]
fn session_futures_are_send(
    owned: &mut crane_kernel::OwnedKernel,
    attached: &mut AttachedKernel,
    session: &mut crane_kernel::KernelSession,
    closing: crane_kernel::KernelSession,
) {
    fn send<T: Send>(_: T) {}
    let options = ExecuteOptions::cell();
    send(owned.execute("", &options));
    send(owned.interrupt());
    send(attached.execute("", &options));
    send(attached.interrupt());
    send(session.execute("", &options));
    send(session.interrupt());
    send(crane_kernel::OwnedKernel::start(
        &common::python_launch(),
        &crane_kernel::StartOptions::default(),
    ));
    send(AttachedKernel::attach("x", &AttachOptions::default()));
    send(closing.close());
}
