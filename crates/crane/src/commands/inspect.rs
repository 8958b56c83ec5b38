//! `crane inspect`: the runtime facts a check of a cell would use.

use crane_runtime::{render, RenderOptions};

use crate::cli::{InspectArgs, OutputFormat};
use crate::commands::pipeline;
use crate::exit::{Failure, Outcome};
use crate::ui::{outln, Ui};

pub async fn run(args: InspectArgs, ui: &Ui) -> Result<Outcome, Failure> {
    let mut prepared = pipeline::prepare(&args.source, ui).await?;
    let gathered = pipeline::gather(
        &mut prepared.session,
        &prepared.target,
        &prepared.prior_cells,
        &prepared.prior_indices,
        false,
        None,
    )
    .await;
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
