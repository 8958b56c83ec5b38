//! The check engine's options resolved from the command line: flags, the environment and the
//! configuration file become a [`CheckOptions`] before the engine sees them, and are checked
//! for what cannot work before any kernel starts.

use anyhow::anyhow;
use crane_check::{CheckOptions, Detector, DryRunWhen};
use crane_llm::{Client, LlmConfig, LlmSettings, PromptConfig, Redact};

use crate::cli::{self, DetectArgs, DetectorChoice, RedactChoice};
use crate::config::ConfigFile;
use crate::exit::Failure;

/// The options `args` and the configuration `file` give a check: the LLM resolved from
/// `--llm`, the environment and the file's `[llm]`, and a `--config` that reads.
pub fn check_options(args: &DetectArgs, file: &ConfigFile) -> Result<CheckOptions, Failure> {
    let llm = llm_config(
        LlmSettings {
            model: args.llm.clone(),
            runs: args.runs,
            cache: args.no_cache.then_some(false),
            ..LlmSettings::default()
        },
        file,
    )?;
    let prompt = args
        .config
        .as_deref()
        .map(str::parse::<PromptConfig>)
        .transpose()
        .map_err(Failure::bad_input)?;
    Ok(CheckOptions {
        detector: match args.detector {
            DetectorChoice::Auto => Detector::Auto,
            DetectorChoice::Rules => Detector::Rules,
            DetectorChoice::Llm => Detector::Llm,
            DetectorChoice::Hybrid => Detector::Hybrid,
            DetectorChoice::DryRun => Detector::DryRun,
        },
        llm,
        prompt,
        redact: args.redact.map(|choice| match choice {
            RedactChoice::None => Redact::None,
            RedactChoice::Strings => Redact::Strings,
            RedactChoice::Values => Redact::Values,
        }),
        show_prompt: args.show_prompt,
        dry_run: match args.dry.dry_run {
            cli::DryRunWhen::Auto => DryRunWhen::Auto,
            cli::DryRunWhen::On => DryRunWhen::On,
            cli::DryRunWhen::Off => DryRunWhen::Off,
        },
        allow_side_effects: args.dry.allow_side_effects,
    })
}

/// Resolves the LLM configuration from `flags`, the environment and the configuration file's
/// `[llm]`; `None` when no model is configured anywhere.
pub fn llm_config(flags: LlmSettings, file: &ConfigFile) -> Result<Option<LlmConfig>, Failure> {
    let from_file = crate::config::llm_settings(file)?;
    match LlmConfig::resolve(flags, |name| std::env::var(name).ok(), from_file) {
        Ok(config) => Ok(Some(config)),
        Err(crane_llm::ConfigError::NoModel) => Ok(None),
        Err(err) => Err(Failure::bad_input(err)),
    }
}

/// Checks, before any kernel starts or cell runs, that the detectors asked for can answer (and
/// that the dry-run options agree): a model for `--detector llm|hybrid`, an LLM client that can
/// be built (provider known, key present, endpoint given), and a model that answers live
/// prompts (recorded replay answers exist only for `crane bench` on JunoBench cases).
pub fn check_setup(options: &CheckOptions) -> Result<(), Failure> {
    if options.allow_side_effects && !options.dry_run_asked() {
        return Err(Failure::bad_input(anyhow!(
            "--allow-side-effects lets a dry run's effects out of its fork, and only a dry run asked for by name may do that: add --dry-run on"
        )));
    }
    if !options.asks_llm() {
        return Ok(());
    }
    let Some(config) = &options.llm else {
        return Err(Failure::bad_input(anyhow!(
            "--detector {} needs a model: pass --llm MODEL (e.g. openai:gpt-5), set CRANE_LLM, or add [llm] model to crane.toml",
            if options.detector == Detector::Llm { "llm" } else { "hybrid" }
        )));
    };
    if matches!(config.model, crane_llm::ModelSpec::Replay(_)) {
        return Err(Failure::bad_input(anyhow!(
            "{} answers only the recorded JunoBench cases (`crane bench`); give a live model with --llm",
            config.model
        )));
    }
    Client::new(config.clone())
        .map(drop)
        .map_err(Failure::bad_input)
}

/// The note saying that no LLM judges the cells, and what does: `walk` for a command that
/// executes every cell (`run`, `check --every-unexecuted`).
pub fn no_llm_note(options: &CheckOptions, walk: bool) -> String {
    let detectors = match options.dry_run {
        DryRunWhen::Off => "rules only",
        DryRunWhen::On if walk => "rules, and a dry run of every cell",
        DryRunWhen::On => "rules and a dry run",
        DryRunWhen::Auto if walk => "rules, and dry runs of the cells that look long",
        DryRunWhen::Auto => "rules and a dry run",
    };
    format!("LLM detector off ({detectors}); add one with --llm MODEL, CRANE_LLM or crane.toml")
}
