//! `crane inspect`: the runtime facts a check of a cell would use.

use crane_runtime::{render, RenderOptions};

use crate::cli::{InspectArgs, OutputFormat};
use crate::commands::prepare;
use crate::exit::{Failure, Outcome};
use crate::signals::Stop;
use crate::ui::{outln, Ui};

pub async fn run(args: InspectArgs, ui: &Ui, mut stop: Stop) -> Result<Outcome, Failure> {
    let mut source = args.source.clone();
    source.notebook = args.notebook.clone();
    let mut prepared = prepare::prepare(&source, ui, &mut stop).await?;
    let prior = crane_detect::ExecutedCells::new(&prepared.prior_cells);
    let gathered = tokio::select! {
        gathered = crane_check::gather(
            &mut prepared.session,
            &prepared.target,
            &prior,
            &prepared.prior_indices,
            false,
            None,
        ) => gathered,
        signal = stop.signalled() => {
            crate::commands::kernel::close_after_stop(prepared.session).await;
            return Err(Failure::stopped(signal));
        }
    };
    let closed = prepared.session.close().await;
    let gathered = gathered?;
    closed.map_err(Failure::kernel)?;
    if let Err(error) = &gathered.analysis {
        ui.note(&format!(
            "{} does not parse ({error}); it reads nothing crane can summarize",
            prepared.target.label()
        ));
    }
    match args.format {
        OutputFormat::Json => {
            let json =
                serde_json::to_string_pretty(&gathered.runtime).map_err(Failure::bad_input)?;
            outln!("{json}");
        }
        OutputFormat::Text => {
            let rendered = render(&gathered.runtime, &RenderOptions::default());
            outln!("{}", rendered.text);
            ui.status(&format!(
                "{} tokens{}",
                rendered.tokens,
                if rendered.truncated {
                    ", shortened to fit the budget"
                } else {
                    ""
                }
            ));
        }
    }
    Ok(Outcome::Success)
}
