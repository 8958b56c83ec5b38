//! The replay provider: answers a JunoBench case with the answers the paper's authors recorded
//! for one model and configuration (`code_only` or `with_runtime`), handed as raw text to the
//! same reading and voting path as a live provider's answers.

use std::collections::HashMap;

use crane_runtime::junobench::{Case, RecordedAnswer, RecordedOutputs};

use crate::model::ReplayModel;
use crate::prompt::{Prompt, PromptConfig};

/// Recorded answers of one model, by case id.
#[derive(Debug, Clone)]
pub struct ReplayProvider {
    model: ReplayModel,
    cases: HashMap<String, RecordedOutputs>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    #[error(
        "the replay provider answers JunoBench cases only; this prompt was not built from a case"
    )]
    NotACase,
    #[error(
        "no recorded answers for case `{0}` (was its case file given to the replay provider?)"
    )]
    UnknownCase(String),
    #[error("case `{case}` has no recorded answers of {model}")]
    ModelNotRecorded { case: String, model: ReplayModel },
    #[error("answers were recorded for code_only and with_runtime only, not for `{0}`")]
    ConfigNotRecorded(PromptConfig),
    #[error("case `{case}` has {recorded} recorded {config} answer(s) of {model}; run {} was asked for", run + 1)]
    NotEnoughRuns {
        case: String,
        model: ReplayModel,
        config: &'static str,
        recorded: usize,
        run: u32,
    },
}

impl ReplayProvider {
    pub fn new(model: ReplayModel) -> ReplayProvider {
        ReplayProvider {
            model,
            cases: HashMap::new(),
        }
    }

    /// A provider holding `model`'s recorded answers of every case given.
    pub fn from_cases<'a>(model: ReplayModel, cases: impl IntoIterator<Item = &'a Case>) -> Self {
        let mut provider = ReplayProvider::new(model);
        for case in cases {
            provider.add_case(case);
        }
        provider
    }

    pub fn add_case(&mut self, case: &Case) {
        if let Some(outputs) = case.recorded_llm_outputs.get(self.model.case_key()) {
            self.cases.insert(case.id.clone(), outputs.clone());
        }
    }

    pub fn model(&self) -> ReplayModel {
        self.model
    }

    pub fn len(&self) -> usize {
        self.cases.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cases.is_empty()
    }

    /// The text of recorded answer number `run` for the prompt's case and configuration.
    pub fn raw_answer(&self, prompt: &Prompt, run: u32) -> Result<String, ReplayError> {
        let case = prompt.case_id.as_deref().ok_or(ReplayError::NotACase)?;
        let outputs = self
            .cases
            .get(case)
            .ok_or_else(|| ReplayError::UnknownCase(case.to_string()))?;
        let config = prompt
            .config
            .recorded_name()
            .ok_or(ReplayError::ConfigNotRecorded(prompt.config))?;
        let answers = match config {
            "code_only" => &outputs.code_only,
            _ => &outputs.with_runtime,
        };
        if answers.is_empty() {
            return Err(ReplayError::ModelNotRecorded {
                case: case.to_string(),
                model: self.model,
            });
        }
        let answer = answers
            .get(run as usize)
            .ok_or_else(|| ReplayError::NotEnoughRuns {
                case: case.to_string(),
                model: self.model,
                config,
                recorded: answers.len(),
                run,
            })?;
        Ok(match answer {
            RecordedAnswer::Verdict(verdict) => serde_json::json!({
                "reasoning": verdict.reasoning,
                "detection": verdict.detection,
            })
            .to_string(),
            RecordedAnswer::Text(text) => text.clone(),
            RecordedAnswer::Other(value) => value.to_string(),
        })
    }
}
