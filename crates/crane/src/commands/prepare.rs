//! The first step of `check`, `inspect` and `run` on a notebook: the notebook and its target
//! read, and a kernel brought to the state before the target (fresh or attached); the check
//! engine (crane-check) takes it from there.

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, Context};
use crane_check::Target;
use crane_kernel::KernelSession;
use crane_notebook::{CodeCell, ExecutionOrder, Notebook};

use crate::cli::CellSourceArgs;
use crate::commands::kernel;
use crate::exit::Failure;
use crate::signals::Stop;
use crate::ui::Ui;

/// A kernel in the state just before the target cell.
pub struct Prepared {
    pub session: KernelSession,
    pub notebook: Option<PathBuf>,
    pub target: Target,
    /// Sources of the cells that ran before the target, in order (for bindings and prompts).
    pub prior_cells: Vec<String>,
    /// Their 0-based code-cell indices, in the same order.
    pub prior_indices: Vec<usize>,
    pub execute_prior: Duration,
}

/// Reads the notebook and target, then starts a kernel and replays the cells before the
/// target (fresh mode) or attaches to the user's kernel and executes nothing (attached mode).
/// A stop signal ends it through the session's normal close path.
pub async fn prepare(
    source: &CellSourceArgs,
    ui: &Ui,
    stop: &mut Stop,
) -> Result<Prepared, Failure> {
    let timeout = kernel::timeout(&source.kernel)?;
    let notebook = source
        .notebook
        .as_deref()
        .map(Notebook::read)
        .transpose()
        .map_err(Failure::bad_input)?;
    let code = source.code.as_deref().map(read_code).transpose()?;

    let (target, prior): (Target, Vec<&CodeCell>) = match (&code, &notebook) {
        (Some(code), _) => (
            Target::code(code.clone()),
            notebook
                .as_ref()
                .map(|nb| {
                    nb.code_cells()
                        .iter()
                        .filter(|c| c.execution_count.is_some())
                        .collect()
                })
                .unwrap_or_default(),
        ),
        (None, Some(nb)) => {
            let selector = source.target.selector();
            kernel::warn_duplicate_ids(nb, &selector, ui);
            let cell = nb.target(&selector).map_err(Failure::bad_input)?;
            let order = kernel::order(source.order, nb);
            if source.order.is_none()
                && order == ExecutionOrder::Visual
                && source.existing.is_none()
            {
                ui.note("no code cell records an execution count (a cleared notebook): the cells above the target run top to bottom, as with --order visual");
            }
            (Target::from_cell(cell), nb.cells_before(cell, order))
        }
        (None, None) => return Err(Failure::bad_input(anyhow!("give a NOTEBOOK or --code"))),
    };
    let prior_cells: Vec<String> = prior.iter().map(|cell| cell.source.clone()).collect();
    let prior_indices: Vec<usize> = prior.iter().map(|cell| cell.index).collect();

    if let Some(existing) = source.existing.as_deref() {
        let session = kernel::attach(existing).await?;
        ui.note(&format!(
            "attached to {}; nothing of the notebook is executed and the kernel is left as it is",
            session.connection_file().display()
        ));
        return Ok(Prepared {
            session,
            notebook: source.notebook.clone(),
            target,
            prior_cells,
            prior_indices,
            execute_prior: Duration::ZERO,
        });
    }

    let Some(notebook_path) = source.notebook.as_deref() else {
        return Err(Failure::bad_input(anyhow!("--code needs --existing")));
    };
    let working_dir = kernel::notebook_dir(notebook_path);
    let (session, executed) = kernel::start_and_execute(
        &source.kernel,
        notebook.as_ref(),
        &working_dir,
        &prior,
        timeout,
        ui,
        stop,
    )
    .await?;
    match executed {
        Ok(execute_prior) => Ok(Prepared {
            session,
            notebook: Some(notebook_path.to_path_buf()),
            target,
            prior_cells,
            prior_indices,
            execute_prior,
        }),
        Err(failure) => {
            let _ = session.close().await;
            let failure = failure.into_failure();
            Err(Failure::kernel(anyhow!(
                "{:#}; the cells before {} must run cleanly, so nothing was checked",
                failure.error,
                target.label()
            )))
        }
    }
}

fn read_code(code: &str) -> Result<String, Failure> {
    if code != "-" {
        return Ok(code.to_owned());
    }
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("cannot read the code from standard input")
        .map_err(Failure::bad_input)?;
    Ok(text)
}
