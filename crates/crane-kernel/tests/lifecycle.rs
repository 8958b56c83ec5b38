//! Starting, stopping and dropping kernels crane owns: no process outlives its session,
//! and start failures say what went wrong.

mod common;

use std::time::Duration;

use crane_kernel::{
    ExecuteOptions, KernelError, KernelLaunch, KernelOrigin, OwnedKernel, StartOptions,
};

/// A kernelspec whose argv is `argv`, in a temporary data directory.
fn kernelspec(name: &str, argv: &[&str]) -> (tempfile::TempDir, KernelLaunch) {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec_dir = dir.path().join("kernels").join(name);
    std::fs::create_dir_all(&spec_dir).expect("mkdir");
    let kernel_json = serde_json::json!({
        "argv": argv, "display_name": name, "language": "python",
    });
    std::fs::write(spec_dir.join("kernel.json"), kernel_json.to_string()).expect("write");
    let launch =
        KernelLaunch::from_kernelspec(name, &spec_dir, KernelOrigin::KernelFlag).expect("spec");
    (dir, launch)
}

fn python() -> String {
    common::project_python().to_string_lossy().into_owned()
}

#[tokio::test]
async fn shutdown_stops_the_kernel_and_removes_the_connection_file() {
    let kernel = common::start_kernel().await;
    let pid = kernel.pid();
    let connection_file = kernel.connection_file().to_path_buf();
    assert!(connection_file.is_file());
    // The file holds the key that lets anyone who reads it run code in the kernel.
    let mode = |path: &std::path::Path| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).expect("stat").mode() & 0o777
    };
    assert_eq!(mode(&connection_file), 0o600);
    assert_eq!(mode(connection_file.parent().expect("a directory")), 0o700);
    assert!(common::process_alive(pid));
    kernel.shutdown().await.expect("shutdown");
    assert!(common::wait_gone(pid));
    assert!(!connection_file.exists());
}

#[tokio::test]
async fn kernel_runs_in_its_own_process_group_with_given_dir_and_env() {
    let workdir = tempfile::tempdir().expect("tempdir");
    let options = StartOptions {
        working_dir: Some(workdir.path().to_path_buf()),
        env: vec![("CRANE_KERNEL_TEST".into(), "marker-7".into())],
        ..StartOptions::default()
    };
    let mut kernel = OwnedKernel::start(&common::python_launch(), &options)
        .await
        .expect("start");
    let pid = kernel.pid();
    let cwd = std::fs::canonicalize(workdir.path()).expect("canonical");
    let probe = kernel
        .execute(
            "import os\nprint(os.getcwd(), os.environ['CRANE_KERNEL_TEST'], os.getpgrp() == os.getpid())",
            &ExecuteOptions::cell(),
        )
        .await
        .expect("execute");
    assert_eq!(
        probe.stream_text(crane_kernel::StreamName::Stdout),
        format!("{} marker-7 True\n", cwd.display())
    );
    kernel.kill().await;
    assert!(common::wait_gone(pid));
}

#[tokio::test]
async fn dropping_a_kernel_kills_it_and_what_it_started() {
    let mut kernel = common::start_kernel().await;
    let pid = kernel.pid();
    let execution = kernel
        .execute(
            "import subprocess\np = subprocess.Popen(['sleep', '300'])\np.pid",
            &ExecuteOptions::cell(),
        )
        .await
        .expect("execute");
    let child: u32 = execution
        .result_text()
        .expect("pid")
        .parse()
        .expect("a pid");
    assert!(common::process_alive(child));
    drop(kernel);
    assert!(common::wait_gone(pid), "kernel {pid} survived drop");
    assert!(common::wait_gone(child), "subprocess {child} survived drop");
}

#[tokio::test]
async fn a_panicking_caller_leaves_no_kernel_behind() {
    let (pid_tx, pid_rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let kernel = common::start_kernel().await;
        pid_tx.send(kernel.pid()).expect("send pid");
        panic!("caller fails while holding the kernel");
    });
    let joined = task.await;
    assert!(joined.expect_err("the task panicked").is_panic());
    let pid = pid_rx.await.expect("pid");
    assert!(common::wait_gone(pid), "kernel {pid} survived the panic");
}

#[tokio::test]
async fn bogus_interpreter_is_a_spawn_error_naming_it() {
    let launch = KernelLaunch::python("/nonexistent/bin/python3", KernelOrigin::PythonFlag);
    let error = OwnedKernel::start(&launch, &StartOptions::default())
        .await
        .err()
        .expect("cannot start");
    assert!(matches!(error, KernelError::Spawn { .. }), "{error}");
    assert!(error.to_string().contains("/nonexistent/bin/python3"));
}

#[tokio::test]
async fn interpreter_without_ipykernel_fails_with_the_fix() {
    // `-S` hides site-packages, so this interpreter cannot import ipykernel.
    let python = python();
    let (_dir, launch) = kernelspec(
        "no-site",
        &[
            &python,
            "-S",
            "-m",
            "ipykernel_launcher",
            "-f",
            "{connection_file}",
        ],
    );
    let error = OwnedKernel::start(&launch, &StartOptions::default())
        .await
        .err()
        .expect("cannot start");
    let KernelError::StartExited {
        status,
        stderr_tail,
        hint,
    } = &error
    else {
        panic!("expected StartExited, got {error}");
    };
    assert!(!status.success());
    assert!(
        stderr_tail.contains("No module named ipykernel_launcher"),
        "{stderr_tail}"
    );
    assert_eq!(
        hint.as_deref(),
        Some(format!("{python} -m pip install ipykernel").as_str())
    );
    assert!(error.to_string().contains("pip install ipykernel"));
}

#[tokio::test]
async fn kernel_exiting_during_start_reports_status_and_stderr() {
    let python = python();
    let (_dir, launch) = kernelspec(
        "exits",
        &[
            &python,
            "-c",
            "import sys; sys.stderr.write('cannot start: boom\\n'); sys.exit(3)",
        ],
    );
    let error = OwnedKernel::start(&launch, &StartOptions::default())
        .await
        .err()
        .expect("cannot start");
    let KernelError::StartExited {
        status,
        stderr_tail,
        hint,
    } = &error
    else {
        panic!("expected StartExited, got {error}");
    };
    assert_eq!(status.code(), Some(3));
    assert_eq!(stderr_tail, "cannot start: boom\n");
    assert_eq!(hint, &None);
    assert!(error.to_string().contains("cannot start: boom"));
}

#[tokio::test]
async fn kernel_that_never_answers_times_out_and_is_killed() {
    let python = python();
    let pid_file = tempfile::NamedTempFile::new().expect("pid file");
    let script = format!(
        "import os, time; open({:?}, 'w').write(str(os.getpid())); time.sleep(300)",
        pid_file.path()
    );
    let (_dir, launch) = kernelspec("silent", &[&python, "-c", &script]);
    let options = StartOptions {
        start_timeout: Duration::from_secs(3),
        ..StartOptions::default()
    };
    let error = OwnedKernel::start(&launch, &options)
        .await
        .err()
        .expect("timeout");
    assert!(matches!(error, KernelError::StartTimeout { .. }), "{error}");
    let pid: u32 = std::fs::read_to_string(pid_file.path())
        .expect("the script ran")
        .parse()
        .expect("pid");
    assert!(
        common::wait_gone(pid),
        "process {pid} survived the failed start"
    );
}
