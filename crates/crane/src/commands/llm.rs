//! `crane llm test`: one tiny request to the configured model, with failures explained.

use anyhow::anyhow;
use crane_llm::{Client, LlmConfig, LlmSettings};

use crate::cli::LlmCommand;
use crate::exit::{Failure, Outcome};
use crate::ui::{outln, Ui};

pub async fn run(command: LlmCommand, ui: &Ui) -> Result<Outcome, Failure> {
    let LlmCommand::Test { llm } = command;
    let crane_toml = std::env::current_dir()
        .ok()
        .and_then(|dir| crane_llm::find_crane_toml(&dir));
    let flags = LlmSettings {
        model: llm,
        ..LlmSettings::default()
    };
    let config = match LlmConfig::load(flags, crane_toml.as_deref()) {
        Ok(config) => config,
        Err(crane_llm::ConfigError::NoModel) => {
            return Err(Failure::bad_input(anyhow!(
                "no model configured: pass --llm MODEL (e.g. openai:gpt-5, ollama:qwen2.5-coder:32b), set CRANE_LLM, or add [llm] model = \"...\" to crane.toml"
            )))
        }
        Err(err) => return Err(Failure::bad_input(err)),
    };
    ui.status(&format!("asking {} one tiny question", config.model));
    let client = Client::new(config).map_err(Failure::detector)?;
    let report = client.test_connection().await.map_err(Failure::detector)?;
    outln!("model:             {}", report.model);
    if let Some(endpoint) = &report.endpoint {
        outln!("endpoint:          {endpoint}");
    }
    outln!(
        "structured output: {}",
        if report.structured_output {
            "yes (JSON schema)"
        } else {
            "no (instructed JSON, repaired)"
        }
    );
    outln!(
        "latency:           {} ms; tokens {}{} in / {} out",
        report.latency.as_millis(),
        if report.usage.estimated { "~" } else { "" },
        report.usage.input_tokens,
        report.usage.output_tokens
    );
    match report.answer_correct {
        Some(true) => outln!("answer:            correct (it predicted the crash of `1 / 0`)"),
        Some(false) => outln!("answer:            readable but wrong (it missed the crash of `1 / 0`): usable, but expect weak predictions"),
        None => outln!("answer:            none (replay answers only recorded JunoBench cases)"),
    }
    Ok(Outcome::Success)
}
