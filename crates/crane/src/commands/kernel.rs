//! Kernel sessions for commands: choosing the interpreter, starting or attaching, and running
//! a notebook's earlier cells with progress, stopping at the first failure.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use crane_kernel::{
    resolve_kernel, AttachOptions, AttachedKernel, ErrorInfo, ExecuteOptions, Execution,
    KernelInputs, KernelSession, OwnedKernel, StartOptions,
};
use crane_notebook::{CodeCell, ExecutionOrder, Notebook, TargetSelector};

use crate::cli::{KernelArgs, Order};
use crate::exit::Failure;
use crate::signals::Stop;
use crate::ui::Ui;

/// The kernel `--python`, `--kernel`, `$CRANE_PYTHON`, the notebook's kernelspec, the active
/// environment or python3 on PATH names, in that order. A notebook in another language than
/// Python is refused unless `--python` or `--kernel` says what to run it with.
pub async fn resolve_launch(
    args: &KernelArgs,
    notebook: Option<&Notebook>,
) -> Result<crane_kernel::KernelLaunch, Failure> {
    let spec = notebook.and_then(Notebook::kernelspec);
    let explicit = args.python.is_some() || args.kernel.is_some();
    if let (Some(spec), false) = (&spec, explicit) {
        if !spec.is_python() {
            return Err(Failure::bad_input(anyhow!(
                "the notebook's kernel is `{}` (language {}); crane checks Python notebooks only (name a Python kernel with --kernel or --python to run it anyway)",
                spec.name,
                spec.language.as_deref().unwrap_or("unknown")
            )));
        }
    }
    let mut inputs = KernelInputs::from_env();
    inputs.python = args.python.clone();
    inputs.kernel = args.kernel.clone();
    inputs.notebook_kernel = spec.map(|spec| spec.name);
    resolve_kernel(&inputs).await.map_err(Failure::kernel)
}

/// How plots reach the output: `run` keeps them as Jupyter does (the inline backend ipykernel
/// picks); commands that throw outputs away draw nowhere. A backend the user set wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plots {
    Inline,
    Discarded,
}

/// Starts a kernel for a notebook in `working_dir` (the notebook's folder, as Jupyter does).
pub async fn start(
    args: &KernelArgs,
    notebook: Option<&Notebook>,
    working_dir: &Path,
    plots: Plots,
    ui: &Ui,
) -> Result<KernelSession, Failure> {
    let launch = resolve_launch(args, notebook).await?;
    if let Some(note) = &launch.note {
        ui.note(note);
    }
    let user_backend = std::env::var_os("MPLBACKEND").is_some_and(|value| !value.is_empty());
    let env = match plots {
        Plots::Discarded if !user_backend => vec![("MPLBACKEND".into(), "Agg".into())],
        _ => Vec::new(),
    };
    let options = StartOptions {
        working_dir: Some(working_dir.to_path_buf()),
        env,
        ..StartOptions::default()
    };
    ui.status(&format!("starting kernel ({launch})"));
    let kernel = OwnedKernel::start(&launch, &options)
        .await
        .map_err(Failure::kernel)?;
    Ok(KernelSession::Owned(kernel))
}

/// Starts a kernel and runs `cells` in it, both cut short by a stop signal (the kernel is then
/// closed as after a stop). The session comes back with how the cells went.
pub async fn start_and_execute(
    args: &KernelArgs,
    notebook: Option<&Notebook>,
    working_dir: &Path,
    cells: &[&CodeCell],
    timeout: Duration,
    ui: &Ui,
    stop: &mut Stop,
) -> Result<(KernelSession, Result<Duration, CellFailure>), Failure> {
    let started = tokio::select! {
        started = start(args, notebook, working_dir, Plots::Discarded, ui) => started,
        signal = stop.signalled() => return Err(Failure::stopped(signal)),
    };
    let mut session = started?;
    let executed = tokio::select! {
        executed = execute_cells(&mut session, cells, timeout, ui) => executed,
        signal = stop.signalled() => {
            close_after_stop(session).await;
            return Err(Failure::stopped(signal));
        }
    };
    Ok((session, executed))
}

/// Ends a session after a stop signal, through its normal close path: a kernel crane started
/// has its running cell interrupted first so it shuts down promptly; an attached kernel is
/// only disconnected.
pub async fn close_after_stop(mut session: KernelSession) {
    if matches!(session, KernelSession::Owned(_)) {
        let _ = session.interrupt().await;
    }
    let _ = session.close().await;
}

/// Warns of cell ids more than one code cell carries (nbformat requires them unique), and
/// says which cell `--cell-id` picked when it names one of them.
pub fn warn_duplicate_ids(notebook: &Notebook, selector: &TargetSelector, ui: &Ui) {
    for (id, cells) in notebook.duplicate_ids() {
        let list = cells
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let picked = match selector {
            TargetSelector::Id(wanted) if *wanted == id => {
                format!("; --cell-id {id} picked cell {}, the first", cells[0])
            }
            _ => String::new(),
        };
        ui.note(&format!(
            "cell id `{id}` is used by code cells {list} (ids should be unique){picked}"
        ));
    }
}

/// The order to use: the one asked for, else the notebook's default (see
/// [`Notebook::default_order`]).
pub fn order(choice: Option<Order>, notebook: &Notebook) -> ExecutionOrder {
    choice.map_or_else(|| notebook.default_order(), ExecutionOrder::from)
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

/// A cell of the notebook that did not complete.
#[derive(Debug)]
pub enum CellFailure {
    Raised {
        cell: CodeCell,
        error: ErrorInfo,
        /// Everything the cell printed before it raised, and its execution count.
        execution: Box<Execution>,
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
            CellFailure::Raised { cell, error, .. } => {
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
    if let Some(error) = execution.error().cloned() {
        return Err(CellFailure::Raised {
            cell: cell.clone(),
            error,
            execution: Box::new(execution),
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
