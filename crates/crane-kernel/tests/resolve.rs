//! Choosing the kernel from the CLI inputs, in priority order, with real interpreters.

mod common;

use std::path::{Path, PathBuf};

use crane_kernel::{
    resolve_kernel, ActiveEnv, EnvKind, InterruptMode, KernelChoice, KernelInputs, KernelOrigin,
    ResolveError,
};

/// An executable script that runs the project Python without site-packages: a real
/// interpreter that cannot import ipykernel.
fn python_without_ipykernel(dir: &Path) -> PathBuf {
    let script = dir.join("python-no-site");
    common::write_executable(
        &script,
        &format!(
            "#!/bin/sh\nexec '{}' -S \"$@\"\n",
            common::project_python().display()
        ),
    );
    script
}

fn data_dir_with_kernelspec(name: &str, interrupt_mode: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec_dir = dir.path().join("kernels").join(name);
    std::fs::create_dir_all(&spec_dir).expect("mkdir");
    let kernel_json = serde_json::json!({
        "argv": ["/opt/some/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": name, "language": "python",
        "interrupt_mode": interrupt_mode, "env": {"SPEC_VAR": "1"},
    });
    std::fs::write(spec_dir.join("kernel.json"), kernel_json.to_string()).expect("write");
    dir
}

#[tokio::test]
async fn python_flag_wins_over_everything() {
    let python = common::project_python();
    let inputs = KernelInputs {
        python: Some(python.clone()),
        crane_python: Some("/nonexistent/crane-python".into()),
        kernel: Some("no-such-kernel".into()),
        notebook_kernel: Some("no-such-kernel".into()),
        ..KernelInputs::default()
    };
    let launch = resolve_kernel(&inputs).await.expect("resolved");
    assert_eq!(launch.origin, KernelOrigin::PythonFlag);
    assert_eq!(launch.choice, KernelChoice::Python(python.clone()));
    assert_eq!(launch.interrupt_mode, InterruptMode::Signal);
    assert_eq!(
        launch.argv,
        [
            python.to_string_lossy().as_ref(),
            "-m",
            "ipykernel_launcher",
            "-f",
            "{connection_file}"
        ]
    );
}

#[tokio::test]
async fn the_kernel_flag_comes_before_crane_python_which_comes_before_the_notebook() {
    let data = data_dir_with_kernelspec("custom", "signal");
    let inputs = KernelInputs {
        kernel: Some("custom".into()),
        crane_python: Some(common::project_python()),
        data_dirs: vec![data.path().to_path_buf()],
        ..KernelInputs::default()
    };
    let launch = resolve_kernel(&inputs).await.expect("resolved");
    assert_eq!(launch.origin, KernelOrigin::KernelFlag);
    let inputs = KernelInputs {
        kernel: None,
        notebook_kernel: Some("custom".into()),
        ..inputs
    };
    let launch = resolve_kernel(&inputs).await.expect("resolved");
    assert_eq!(launch.origin, KernelOrigin::CranePythonEnv);
}

#[tokio::test]
async fn explicit_python_that_does_not_exist_is_an_error() {
    let inputs = KernelInputs {
        python: Some("/nonexistent/bin/python".into()),
        crane_python: Some(common::project_python()),
        ..KernelInputs::default()
    };
    let error = resolve_kernel(&inputs).await.expect_err("unusable");
    assert!(
        matches!(error, ResolveError::PythonUnusable { .. }),
        "{error}"
    );
    let message = error.to_string();
    assert!(message.contains("--python"), "{message}");
    assert!(message.contains("/nonexistent/bin/python"), "{message}");
}

#[tokio::test]
async fn explicit_python_without_ipykernel_names_the_pip_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let python = python_without_ipykernel(dir.path());
    let inputs = KernelInputs {
        python: Some(python.clone()),
        ..KernelInputs::default()
    };
    let error = resolve_kernel(&inputs).await.expect_err("no ipykernel");
    let ResolveError::IpykernelMissing { fix, .. } = &error else {
        panic!("expected IpykernelMissing, got {error}");
    };
    assert_eq!(
        fix,
        &format!("{} -m pip install ipykernel", python.display())
    );
}

#[tokio::test]
async fn kernel_flag_reads_the_named_kernelspec() {
    let data = data_dir_with_kernelspec("custom", "message");
    let inputs = KernelInputs {
        kernel: Some("custom".into()),
        data_dirs: vec![data.path().to_path_buf()],
        ..KernelInputs::default()
    };
    let launch = resolve_kernel(&inputs).await.expect("resolved");
    assert_eq!(launch.origin, KernelOrigin::KernelFlag);
    assert_eq!(
        launch.choice,
        KernelChoice::Kernelspec {
            name: "custom".into(),
            dir: data.path().join("kernels/custom"),
        }
    );
    assert_eq!(launch.interrupt_mode, InterruptMode::Message);
    assert_eq!(launch.argv[0], "/opt/some/python");
    assert_eq!(launch.env.get("SPEC_VAR").map(String::as_str), Some("1"));
}

#[tokio::test]
async fn unknown_kernel_lists_the_available_ones() {
    let data = data_dir_with_kernelspec("custom", "signal");
    let inputs = KernelInputs {
        kernel: Some("missing".into()),
        data_dirs: vec![data.path().to_path_buf()],
        ..KernelInputs::default()
    };
    let error = resolve_kernel(&inputs).await.expect_err("not found");
    let ResolveError::KernelspecNotFound {
        available,
        searched,
        ..
    } = &error
    else {
        panic!("expected KernelspecNotFound, got {error}");
    };
    assert!(available.contains(&"custom".to_string()));
    assert_eq!(searched[0], data.path());
    assert!(error.to_string().contains("jupyter kernelspec list"));
}

/// The project's environment, as if activated.
fn project_env() -> ActiveEnv {
    let python = common::project_python();
    ActiveEnv {
        kind: EnvKind::Virtualenv,
        prefix: python
            .parent()
            .and_then(Path::parent)
            .expect("prefix")
            .into(),
    }
}

#[tokio::test]
async fn kernelspec_in_the_active_env_runs_with_the_env_python() {
    let env = project_env();
    let inputs = KernelInputs {
        notebook_kernel: Some("python3".into()),
        active_env: Some(env.clone()),
        ..KernelInputs::default()
    };
    let launch = resolve_kernel(&inputs).await.expect("resolved");
    assert_eq!(launch.origin, KernelOrigin::NotebookKernelspec);
    let KernelChoice::Kernelspec { dir, .. } = &launch.choice else {
        panic!("expected a kernelspec: {launch}");
    };
    assert!(dir.starts_with(&env.prefix), "{}", dir.display());
    assert_eq!(launch.argv[0], env.python().to_string_lossy());
}

#[tokio::test]
async fn the_notebooks_kernelspec_comes_before_the_active_env() {
    let data = data_dir_with_kernelspec("other-env", "signal");
    let inputs = KernelInputs {
        notebook_kernel: Some("other-env".into()),
        active_env: Some(project_env()),
        data_dirs: vec![data.path().to_path_buf()],
        ..KernelInputs::default()
    };
    let launch = resolve_kernel(&inputs).await.expect("resolved");
    assert_eq!(launch.origin, KernelOrigin::NotebookKernelspec);
    assert_eq!(launch.argv[0], "/opt/some/python");
}

#[tokio::test]
async fn an_uninstalled_notebook_kernelspec_falls_through_to_the_active_env_and_says_so() {
    let env = project_env();
    let inputs = KernelInputs {
        notebook_kernel: Some("conda-env-gone-py".into()),
        active_env: Some(env.clone()),
        ..KernelInputs::default()
    };
    let launch = resolve_kernel(&inputs).await.expect("resolved");
    assert_eq!(launch.origin, KernelOrigin::ActiveEnv(EnvKind::Virtualenv));
    assert_eq!(launch.choice, KernelChoice::Python(env.python()));
    let note = launch.note.expect("a note");
    assert!(
        note.contains("`conda-env-gone-py` is not installed"),
        "{note}"
    );
}

#[tokio::test]
async fn an_active_env_without_ipykernel_names_its_pip_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("bin")).expect("mkdir");
    let script = python_without_ipykernel(dir.path());
    std::fs::rename(&script, dir.path().join("bin/python")).expect("move");
    let env = ActiveEnv {
        kind: EnvKind::Conda,
        prefix: dir.path().to_path_buf(),
    };
    let inputs = KernelInputs {
        active_env: Some(env.clone()),
        ..KernelInputs::default()
    };
    let error = resolve_kernel(&inputs).await.expect_err("no ipykernel");
    let message = error.to_string();
    assert!(message.starts_with("$CONDA_PREFIX"), "{message}");
    assert!(
        message.ends_with(&format!(
            "fix: `{} -m pip install ipykernel`",
            env.python().display()
        )),
        "{message}"
    );
}

#[test]
fn earlier_data_dirs_shadow_later_ones() {
    let first = data_dir_with_kernelspec("python3", "signal");
    let second = data_dir_with_kernelspec("python3", "message");
    std::fs::create_dir_all(second.path().join("kernels/aaa")).expect("mkdir");
    std::fs::write(second.path().join("kernels/aaa/kernel.json"), "{}").expect("write");
    std::fs::create_dir_all(second.path().join("kernels/no-json")).expect("mkdir");
    let found = crane_kernel::list_kernelspecs(&[
        first.path().to_path_buf(),
        PathBuf::from("/nonexistent/share/jupyter"),
        second.path().to_path_buf(),
    ]);
    assert_eq!(
        found,
        vec![
            ("python3".to_string(), first.path().join("kernels/python3")),
            ("aaa".to_string(), second.path().join("kernels/aaa")),
        ]
    );
}

/// The kernel starts in the notebook's folder, so a relative interpreter path given from the
/// shell (`CRANE_PYTHON=.venv/bin/python`) is taken from where crane was started.
#[test]
fn a_relative_interpreter_path_is_anchored_at_the_current_directory() {
    let relative = crane_kernel::KernelLaunch::python(
        ".venv/bin/python",
        crane_kernel::KernelOrigin::CranePythonEnv,
    );
    let expected = std::env::current_dir()
        .expect("a current directory")
        .join(".venv/bin/python");
    assert_eq!(PathBuf::from(&relative.argv[0]), expected);
    let bare =
        crane_kernel::KernelLaunch::python("python3", crane_kernel::KernelOrigin::PythonOnPath);
    assert_eq!(bare.argv[0], "python3", "a bare name is looked up on PATH");
}
