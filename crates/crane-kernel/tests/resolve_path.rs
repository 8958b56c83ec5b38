//! The last resort, `python3` on PATH, and the error when nothing works. PATH is process-wide,
//! so these cases run in one test of their own binary.

mod common;

use std::path::Path;

use crane_kernel::{resolve_kernel, KernelInputs, KernelOrigin, ResolveError};

fn write_python3(dir: &Path, extra_args: &str) {
    let script = dir.join("python3");
    common::write_executable(
        &script,
        &format!(
            "#!/bin/sh\nexec '{}' {extra_args} \"$@\"\n",
            common::project_python().display()
        ),
    );
}

#[tokio::test]
async fn falls_back_to_python3_on_path_and_explains_when_nothing_works() {
    let empty = tempfile::tempdir().expect("tempdir");
    let no_data_dirs = KernelInputs::default();
    std::env::set_var("PATH", empty.path());

    let error = resolve_kernel(&no_data_dirs).await.expect_err("nothing");
    let ResolveError::NothingFound { tried, fix } = &error else {
        panic!("expected NothingFound, got {error}");
    };
    assert!(tried.iter().any(|t| t == "no python3 on PATH"), "{tried:?}");
    assert_eq!(
        fix,
        "install Python 3, then run `python3 -m pip install ipykernel`"
    );

    let without_ipykernel = tempfile::tempdir().expect("tempdir");
    write_python3(without_ipykernel.path(), "-S");
    std::env::set_var("PATH", without_ipykernel.path());
    let error = resolve_kernel(&no_data_dirs)
        .await
        .expect_err("no ipykernel");
    let ResolveError::NothingFound { tried, fix } = &error else {
        panic!("expected NothingFound, got {error}");
    };
    assert!(
        tried.iter().any(|t| t.ends_with("cannot import ipykernel")),
        "{tried:?}"
    );
    assert_eq!(
        fix,
        &format!(
            "{} -m pip install ipykernel",
            without_ipykernel.path().join("python3").display()
        )
    );

    // The venv's own python3 kernelspec is found through the interpreter's prefix.
    let venv_python = tempfile::tempdir().expect("tempdir");
    write_python3(venv_python.path(), "");
    std::env::set_var("PATH", venv_python.path());
    let launch = resolve_kernel(&no_data_dirs).await.expect("resolved");
    assert_eq!(launch.origin, KernelOrigin::PythonOnPath);
    let python3_notebook = KernelInputs {
        notebook_kernel: Some("python3".into()),
        ..KernelInputs::default()
    };
    let launch = resolve_kernel(&python3_notebook).await.expect("resolved");
    assert_eq!(launch.origin, KernelOrigin::NotebookKernelspec);
    assert_eq!(
        launch.argv[0],
        venv_python.path().join("python3").to_string_lossy()
    );
}
