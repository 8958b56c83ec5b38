//! Kernel sessions for commands: choosing the interpreter, starting or attaching, and running
//! a notebook's earlier cells with progress, stopping at the first failure.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use crane_kernel::{
    resolve_kernel, AttachOptions, AttachedKernel, ErrorInfo, ExecuteOptions, Execution,
    KernelInputs, KernelSession, OwnedKernel, StartOptions,
};
use crane_notebook::CodeCell;

use crate::cli::KernelArgs;
use crate::exit::Failure;
use crate::ui::Ui;

/// The kernel `--python`/`--kernel`, `$CRANE_PYTHON`, the project's .venv or the defaults name.
pub async fn resolve_launch(args: &KernelArgs) -> Result<crane_kernel::KernelLaunch, Failure> {
    let mut inputs = KernelInputs::from_env();
    inputs.python = args.python.clone();
    inputs.kernel = args.kernel.clone();
    inputs.project_venv_python = project_venv_python();
    inputs.setup_command = Some("bash scripts/setup-python.sh".into());
    resolve_kernel(&inputs).await.map_err(Failure::kernel)
}

/// Starts a kernel for a notebook in `working_dir` (the notebook's folder, as Jupyter does).
pub async fn start(
    args: &KernelArgs,
    working_dir: &Path,
    ui: &Ui,
) -> Result<KernelSession, Failure> {
    let launch = resolve_launch(args).await?;
    let options = StartOptions {
        working_dir: Some(working_dir.to_path_buf()),
        env: vec![("MPLBACKEND".into(), "Agg".into())],
        ..StartOptions::default()
    };
    ui.status(&format!("starting kernel ({})", launch_label(&launch)));
    let kernel = OwnedKernel::start(&launch, &options)
        .await
        .map_err(Failure::kernel)?;
    Ok(KernelSession::Owned(kernel))
}

/// Attaches to the user's running kernel; it is never restarted or shut down by crane.
pub async fn attach(existing: &str) -> Result<KernelSession, Failure> {
    let kernel = AttachedKernel::attach(existing, &AttachOptions::default())
        .await
        .map_err(|err| match err {
            crane_kernel::KernelError::ConnectionFile(_) => Failure::bad_input(err),
            other => Failure::kernel(other),
        })?;
    Ok(KernelSession::Attached(kernel))
}

fn launch_label(launch: &crane_kernel::KernelLaunch) -> String {
    match &launch.choice {
        crane_kernel::KernelChoice::Python(python) => python.display().to_string(),
        crane_kernel::KernelChoice::Kernelspec { name, .. } => format!("kernelspec {name}"),
    }
}

/// `<repo>/.venv/bin/python` when crane runs from its own repository: found from the current
/// directory upwards, or from the executable's location (`<repo>/target/<profile>/crane`).
fn project_venv_python() -> Option<PathBuf> {
    let mut starts = Vec::new();
    if let Ok(dir) = std::env::current_dir() {
        starts.push(dir);
    }
    if let Ok(exe) = std::env::current_exe() {
        starts.push(exe);
    }
    starts.iter().find_map(|start| {
        start.ancestors().find_map(|dir| {
            let python = dir.join(".venv/bin/python");
            (dir.join("scripts/setup-python.sh").is_file() && python.is_file()).then_some(python)
        })
    })
}

/// A cell of the notebook that did not complete.
#[derive(Debug)]
pub enum CellFailure {
    Raised {
        cell: CodeCell,
        error: ErrorInfo,
    },
    TimedOut {
        cell: CodeCell,
        after: Duration,
    },
    Kernel {
        cell: CodeCell,
        error: crane_kernel::KernelError,
    },
}

impl CellFailure {
    pub fn into_failure(self) -> Failure {
        match self {
            CellFailure::Raised { cell, error } => {
                let at = error
                    .cell_line()
                    .map(|line| format!(" at line {line}"))
                    .unwrap_or_default();
                Failure::kernel(anyhow!("{} raised {}{at}", cell.label(), error.summary()))
            }
            CellFailure::TimedOut { cell, after } => Failure::kernel(anyhow!(
                "{} ran longer than {:.0} s and was interrupted (raise the limit with --timeout)",
                cell.label(),
                after.as_secs_f64()
            )),
            CellFailure::Kernel { cell, error } => {
                Failure::kernel(anyhow!("{} failed: {error}", cell.label()))
            }
        }
    }
}

/// Runs one notebook cell like Jupyter would (counted, in history).
pub async fn execute_cell(
    session: &mut KernelSession,
    cell: &CodeCell,
    timeout: Duration,
) -> Result<Execution, CellFailure> {
    execute_cell_with(session, cell, ExecuteOptions::cell(), timeout).await
}

/// Runs one cell as [`execute_cell`] does, with `options` (e.g. extra user expressions).
pub async fn execute_cell_with(
    session: &mut KernelSession,
    cell: &CodeCell,
    options: ExecuteOptions,
    timeout: Duration,
) -> Result<Execution, CellFailure> {
    let options = options.with_timeout(timeout);
    let execution = session
        .execute(&cell.source, &options)
        .await
        .map_err(|error| CellFailure::Kernel {
            cell: cell.clone(),
            error,
        })?;
    if execution.timed_out() {
        return Err(CellFailure::TimedOut {
            cell: cell.clone(),
            after: timeout,
        });
    }
    if let Some(error) = execution.error() {
        return Err(CellFailure::Raised {
            cell: cell.clone(),
            error: error.clone(),
        });
    }
    Ok(execution)
}

/// Runs `cells` in order with progress; stops at the first that fails.
pub async fn execute_cells(
    session: &mut KernelSession,
    cells: &[&CodeCell],
    timeout: Duration,
    ui: &Ui,
) -> Result<Duration, CellFailure> {
    let started = Instant::now();
    let mut progress = ui.progress(cells.len() as u64, "executing");
    for cell in cells {
        progress.start(&format!("{} {}", cell.label(), first_line(&cell.source)));
        let result = execute_cell(session, cell, timeout).await;
        progress.advance();
        if let Err(failure) = result {
            progress.finish();
            return Err(failure);
        }
    }
    progress.finish();
    Ok(started.elapsed())
}

pub fn first_line(source: &str) -> String {
    let line = source
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#'))
        .unwrap_or("");
    let mut short: String = line.chars().take(50).collect();
    if line.chars().count() > 50 {
        short.push('…');
    }
    short
}

/// Converts a `--timeout` value, rejecting nonsense.
pub fn timeout(args: &KernelArgs) -> Result<Duration, Failure> {
    if args.timeout.is_finite() && args.timeout > 0.0 {
        Ok(Duration::from_secs_f64(args.timeout))
    } else {
        Err(Failure::bad_input(anyhow!(
            "--timeout must be a positive number of seconds, not {}",
            args.timeout
        )))
    }
}

/// The folder a notebook's kernel runs in.
pub fn notebook_dir(notebook: &Path) -> PathBuf {
    match notebook.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
