//! `crane exec`: run a notebook's cells in a fresh kernel and report the first error.

use crane_notebook::Notebook;

use crate::cli::ExecArgs;
use crate::commands::kernel;
use crate::exit::{Failure, Outcome};
use crate::ui::Ui;

pub async fn run(args: ExecArgs, ui: &Ui) -> Result<Outcome, Failure> {
    let notebook = Notebook::read(&args.notebook).map_err(Failure::bad_input)?;
    let timeout = kernel::timeout(&args.kernel)?;
    let plan = notebook.execution_plan(args.order.into());
    if plan.is_empty() {
        return Err(Failure::bad_input(
            crane_notebook::NotebookError::NoCodeCells,
        ));
    }
    let mut session =
        kernel::start(&args.kernel, &kernel::notebook_dir(&args.notebook), ui).await?;
    let result = kernel::execute_cells(&mut session, &plan, timeout, ui).await;
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
