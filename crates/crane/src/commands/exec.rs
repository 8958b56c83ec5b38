//! `crane exec`: run a notebook's cells in a fresh kernel and report the first error.

use crane_notebook::Notebook;

use crate::cli::ExecArgs;
use crate::commands::kernel;
use crate::exit::{Failure, Outcome};
use crate::signals::Stop;
use crate::ui::Ui;

pub async fn run(args: ExecArgs, ui: &Ui, mut stop: Stop) -> Result<Outcome, Failure> {
    let notebook = Notebook::read(&args.notebook).map_err(Failure::bad_input)?;
    let timeout = kernel::timeout(&args.kernel)?;
    let plan = notebook.execution_plan(kernel::order(args.order, &notebook));
    if plan.is_empty() {
        return Err(Failure::bad_input(
            crane_notebook::NotebookError::NoCodeCells,
        ));
    }
    kernel::warn_duplicate_ids(&notebook, &crane_notebook::TargetSelector::default(), ui);
    let working_dir = kernel::notebook_dir(&args.notebook);
    let (session, result) = kernel::start_and_execute(
        &args.kernel,
        Some(&notebook),
        &working_dir,
        &plan,
        timeout,
        ui,
        &mut stop,
    )
    .await?;
    let closed = session.close().await;
    let elapsed = result.map_err(kernel::CellFailure::into_failure)?;
    closed.map_err(Failure::kernel)?;
    ui.status(&format!(
        "executed {} cells in {:.2} s without error",
        plan.len(),
        elapsed.as_secs_f64()
    ));
    Ok(Outcome::Success)
}
