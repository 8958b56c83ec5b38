//! The options a check runs with, resolved before the engine sees them: plain values, no
//! command-line parser. The command line resolves them from its flags, the environment and the
//! configuration file; the checking kernel builds them from its `%crane` settings.

use crane_llm::{LlmConfig, PromptConfig, Redact};

/// Which detectors judge the cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detector {
    /// Rules; plus the LLM (hybrid) when one is configured; plus a dry run as
    /// [`CheckOptions::dry_run`] says.
    Auto,
    Rules,
    Llm,
    /// Rules and LLM combined: proven rule crashes stand, contradicted LLM claims are refuted.
    Hybrid,
    /// The cell run in a forked copy of the kernel.
    DryRun,
}

/// When a check dry-runs the cell (docs/cli.md, "Dry runs: auto, on, off").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DryRunWhen {
    /// Where a dry run is worth its cost and its fork can be sealed ([`crate::AutoDryRun`]).
    Auto,
    /// Every cell judged (sealed where the platform allows, else behind the side-effect checks).
    On,
    Off,
}

/// How a cell is judged.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub detector: Detector,
    /// The model, when one is configured anywhere.
    pub llm: Option<LlmConfig>,
    /// A prompt configuration that replaces the model's (`--config`).
    pub prompt: Option<PromptConfig>,
    /// What data values may appear in a prompt, in place of the model's setting.
    pub redact: Option<Redact>,
    /// Stop at the prompt the LLM would be sent ([`crate::Judged::PromptShown`]).
    pub show_prompt: bool,
    pub dry_run: DryRunWhen,
    /// Dry runs asked for by name run unsealed: their effects outside the fork are real.
    pub allow_side_effects: bool,
}

impl CheckOptions {
    /// Whether an LLM judges the cell.
    pub fn asks_llm(&self) -> bool {
        match self.detector {
            Detector::Llm | Detector::Hybrid => true,
            Detector::Auto => self.llm.is_some(),
            Detector::Rules | Detector::DryRun => false,
        }
    }

    /// Whether the rules judge the cell.
    pub fn uses_rules(&self) -> bool {
        matches!(
            self.detector,
            Detector::Auto | Detector::Rules | Detector::Hybrid
        )
    }

    /// Whether the cell is dry-run by name (`--dry-run on`, `--detector dry-run`), as opposed
    /// to [`DryRunWhen::Auto`]'s choice.
    pub fn dry_run_asked(&self) -> bool {
        self.detector == Detector::DryRun
            || (self.detector == Detector::Auto && self.dry_run == DryRunWhen::On)
    }

    /// The prompt configuration an LLM is asked with.
    pub fn prompt_config(&self) -> PromptConfig {
        match (self.prompt, &self.llm) {
            (Some(prompt), _) => prompt,
            (None, Some(config)) => config.prompt.config,
            (None, None) => PromptConfig::default(),
        }
    }

    /// Whether the check needs API docstrings from the kernel: an LLM will be asked with the
    /// `with_api_docs` configuration.
    pub fn wants_api_docs(&self) -> bool {
        self.asks_llm() && matches!(self.prompt_config(), PromptConfig::WithApiDocs(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(detector: Detector, dry_run: DryRunWhen) -> CheckOptions {
        CheckOptions {
            detector,
            llm: None,
            prompt: None,
            redact: None,
            show_prompt: false,
            dry_run,
            allow_side_effects: false,
        }
    }

    #[test]
    fn a_dry_run_is_asked_by_name_only_through_the_detector_or_on() {
        assert!(options(Detector::DryRun, DryRunWhen::Off).dry_run_asked());
        assert!(options(Detector::Auto, DryRunWhen::On).dry_run_asked());
        assert!(!options(Detector::Auto, DryRunWhen::Auto).dry_run_asked());
        // `--dry-run on` belongs to `--detector auto`: another detector is judged alone.
        assert!(!options(Detector::Rules, DryRunWhen::On).dry_run_asked());
    }

    #[test]
    fn api_docs_are_wanted_only_by_an_llm_asked_with_them() {
        let with_docs = "with_api_docs".parse::<PromptConfig>().unwrap();
        let mut llm = options(Detector::Llm, DryRunWhen::Auto);
        assert!(llm.asks_llm());
        assert!(!llm.wants_api_docs());
        llm.prompt = Some(with_docs);
        assert!(llm.wants_api_docs());
        // Without a model, auto asks no LLM, whatever the prompt configuration.
        let mut auto = options(Detector::Auto, DryRunWhen::Auto);
        auto.prompt = Some(with_docs);
        assert!(!auto.asks_llm());
        assert!(!auto.wants_api_docs());
        assert!(auto.uses_rules());
        assert!(!options(Detector::Llm, DryRunWhen::Auto).uses_rules());
    }
}
