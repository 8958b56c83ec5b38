//! `crane rules`: the rule catalogue of the rules detector.

use console::Style;

use crate::cli::{OutputFormat, RulesArgs};
use crate::exit::{Failure, Outcome};
use crate::ui::{outln, Ui};

pub fn run(args: RulesArgs, ui: &Ui) -> Result<Outcome, Failure> {
    let catalogue = crane_detect::rules::catalogue();
    match args.format {
        OutputFormat::Json => {
            let json = serde_json::to_string_pretty(catalogue).map_err(Failure::bad_input)?;
            outln!("{json}");
        }
        OutputFormat::Text => {
            let bold = Style::new().bold();
            for rule in catalogue {
                outln!(
                    "{}  {:<34} {:<11} {:<18} {}",
                    ui.paint(&bold, rule.code),
                    rule.name,
                    rule.library,
                    rule.exception,
                    rule.summary
                );
            }
            ui.status(&format!(
                "{} rules; `crane rules --format json` shows each rule's explanation and example",
                catalogue.len()
            ));
        }
    }
    Ok(Outcome::Success)
}
