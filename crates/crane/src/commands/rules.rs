//! `crane rules [CODE]`: the rule catalogue of the rules detector, or one rule explained.

use console::Style;
use crane_detect::rules::{RuleCode, RuleInfo};

use crate::cli::{OutputFormat, RulesArgs};
use crate::exit::{Failure, Outcome};
use crate::ui::{outln, Ui};

pub fn run(args: RulesArgs, ui: &Ui) -> Result<Outcome, Failure> {
    let catalogue = crane_detect::rules::catalogue();
    if let Some(code) = &args.code {
        let wanted: RuleCode = code.parse().map_err(Failure::bad_input)?;
        let Some(rule) = catalogue.iter().find(|rule| rule.code == wanted.code()) else {
            return Err(Failure::bad_input(anyhow::anyhow!(
                "rule {code} is not in the catalogue"
            )));
        };
        match args.format {
            OutputFormat::Json => {
                let json = serde_json::to_string_pretty(rule).map_err(Failure::bad_input)?;
                outln!("{json}");
            }
            OutputFormat::Text => outln!("{}", explain(rule, ui)),
        }
        return Ok(Outcome::Success);
    }
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
                "{} rules; `crane rules CODE` explains one, with an example",
                catalogue.len()
            ));
        }
    }
    Ok(Outcome::Success)
}

/// One rule as a short page: what it flags, why that crashes, and a cell it flags.
fn explain(rule: &RuleInfo, ui: &Ui) -> String {
    let example: String = rule
        .example
        .lines()
        .map(|line| format!("    {line}\n"))
        .collect();
    format!(
        "{} {} ({}, raises {})\n\n{}\n\n{}\n\nExample:\n{}",
        ui.paint(&Style::new().bold(), rule.code),
        rule.name,
        rule.library,
        rule.exception,
        rule.summary,
        rule.explanation,
        example.trim_end()
    )
}
