//! Grading the diagnosis of a correctly detected crash.
//!
//! With a judge model, the paper's rubric: the judge compares the predicted reasoning with the
//! ground-truth diagnosis and grades it Correct, Partially correct, Reasoning wrong or Wrong. The
//! judge answers through crane's LLM client in its detection schema (`reasoning`, `detection`):
//! `reasoning` starts with the grade, `detection` says whether the diagnosis identifies the
//! actual crash at least partly; so the judge gets the client's retries, cache, replay and
//! accounting unchanged.
//!
//! Without a judge, a deterministic check: the predicted exception class (the detector's own
//! field, else the first exception class named in its reasoning) against the labelled one.

use crane_llm::{AnswerSchema, Client, Judgement, LlmError, Prompt, PromptConfig, PromptStyle};

use crate::dataset::same_exception;
use crate::report::{ExceptionCheck, RubricGrade};

const RUBRIC: &str = "\
You grade the crash diagnoses of a tool that predicts whether a Jupyter notebook cell crashes.
You are given the target cell, the exception it actually raises, the ground-truth diagnosis
written by a person who reproduced the crash, and the tool's predicted diagnosis. The tool
correctly predicted that the cell crashes; judge only its explanation, against the ground truth:

- correct: the predicted diagnosis identifies the same cause as the ground truth (the same
  object, call or operation, and the same reason it fails). Wording and extra detail do not
  matter.
- partially_correct: it identifies the failing call or operation, or part of the cause, but
  misses or misstates an essential part of it (e.g. one of two problems, or the right call with
  an imprecise reason).
- reasoning_wrong: it points at the right cell region or exception, but explains the crash with
  a cause that is not the actual one.
- wrong: it describes a different crash altogether.

Answer with a JSON object {\"reasoning\": string, \"detection\": boolean}. `reasoning` must start
with the grade (exactly one of correct, partially_correct, reasoning_wrong, wrong), a colon, and
one sentence of justification. `detection` is true for correct and partially_correct, false
otherwise.";

/// What the judge is shown.
#[derive(Debug, Clone, Copy)]
pub struct JudgeInput<'a> {
    pub target_cell: &'a str,
    pub exception: Option<&'a str>,
    pub ground_truth: &'a str,
    pub predicted: &'a str,
}

/// The judge's prompt for one diagnosis.
pub fn rubric_prompt(input: &JudgeInput<'_>) -> Prompt {
    let user = format!(
        "# Target Cell\n{}\n\n# Actual exception\n{}\n\n# Ground-truth diagnosis\n{}\n\n\
         # Predicted diagnosis\n{}\n",
        input.target_cell.trim(),
        input.exception.unwrap_or("(not recorded)"),
        input.ground_truth.trim(),
        input.predicted.trim(),
    );
    Prompt {
        system: RUBRIC.to_owned(),
        user,
        schema: AnswerSchema::Paper,
        config: PromptConfig::CodeOnly,
        style: PromptStyle::Paper,
        case_id: None,
        runtime_truncated: false,
        api_docs_included: None,
    }
}

/// The grade at the start of a judge's reasoning (case, spaces and hyphens tolerated:
/// `Partially correct: ...`, `**reasoning-wrong** - ...`).
pub fn parse_grade(reasoning: &str) -> Option<RubricGrade> {
    let normalized: String = reasoning
        .trim_start_matches(|c: char| !c.is_ascii_alphabetic())
        .chars()
        .take(40)
        .map(|c| match c {
            ' ' | '-' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    // Longest first: `wrong` is a suffix of `reasoning_wrong`, `correct` of `partially_correct`.
    [
        ("partially_correct", RubricGrade::PartiallyCorrect),
        ("reasoning_wrong", RubricGrade::ReasoningWrong),
        ("correct", RubricGrade::Correct),
        ("wrong", RubricGrade::Wrong),
    ]
    .into_iter()
    .find(|(name, _)| {
        normalized.starts_with(name)
            && !normalized[name.len()..].starts_with(|c: char| c.is_ascii_alphanumeric())
    })
    .map(|(_, grade)| grade)
}

#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    #[error("judge call failed: {0}")]
    Llm(#[from] LlmError),
    #[error("the judge's answer names no grade: {0:?}")]
    NoGrade(String),
}

/// An LLM judge with the paper's rubric.
#[derive(Clone)]
pub struct Judge {
    client: Client,
}

/// A judge's grade and what asking cost.
#[derive(Debug, Clone)]
pub struct Graded {
    pub grade: RubricGrade,
    pub judgement: Judgement,
}

impl Judge {
    pub fn new(client: Client) -> Judge {
        Judge { client }
    }

    pub fn model(&self) -> String {
        self.client.config().model.to_string()
    }

    /// Grade one diagnosis (one judge answer).
    pub async fn grade(&self, input: &JudgeInput<'_>) -> Result<Graded, JudgeError> {
        let judgement = self.client.ask(&rubric_prompt(input), 1).await?;
        let reasoning = judgement
            .answers
            .first()
            .map(|answer| answer.reasoning.clone())
            .unwrap_or_default();
        let grade = parse_grade(&reasoning).ok_or(JudgeError::NoGrade(reasoning))?;
        Ok(Graded { grade, judgement })
    }
}

/// The exception class a diagnosis predicts: `stated` if the detector gave one, else the first
/// `...Error` or `...Exception` word of the reasoning.
pub fn predicted_exception(stated: Option<&str>, reasoning: &str) -> Option<String> {
    if let Some(stated) = stated.filter(|s| !s.trim().is_empty()) {
        return Some(stated.trim().to_owned());
    }
    reasoning
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .map(|word| word.trim_matches('.'))
        .map(|word| word.rsplit('.').next().unwrap_or(word))
        .find(|word| {
            word.starts_with(|c: char| c.is_ascii_uppercase())
                && (word.ends_with("Error") || word.ends_with("Exception"))
                && word.len() > "Error".len()
        })
        .map(str::to_owned)
}

/// The deterministic diagnosis check.
pub fn check_exception(labelled: Option<&str>, predicted: Option<&str>) -> ExceptionCheck {
    match (labelled, predicted) {
        (_, None) => ExceptionCheck::NotStated,
        (Some(labelled), Some(predicted)) if same_exception(labelled, predicted) => {
            ExceptionCheck::Match
        }
        _ => ExceptionCheck::Mismatch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grades_are_read_from_the_start_of_the_reasoning() {
        assert_eq!(
            parse_grade("correct: same cause"),
            Some(RubricGrade::Correct)
        );
        assert_eq!(
            parse_grade("Partially correct - names the call only"),
            Some(RubricGrade::PartiallyCorrect)
        );
        assert_eq!(
            parse_grade("**reasoning_wrong**: blames the dtype"),
            Some(RubricGrade::ReasoningWrong)
        );
        assert_eq!(parse_grade("Wrong. Unrelated."), Some(RubricGrade::Wrong));
        assert_eq!(parse_grade("correctly identifies"), None);
        assert_eq!(parse_grade("The diagnosis is correct"), None);
    }

    #[test]
    fn the_rubric_prompt_shows_both_diagnoses() {
        let prompt = rubric_prompt(&JudgeInput {
            target_cell: "df['c'].mean()",
            exception: Some("KeyError"),
            ground_truth: "column c does not exist",
            predicted: "KeyError: df has no column 'c'",
        });
        for part in [
            "# Target Cell\ndf['c'].mean()",
            "# Actual exception\nKeyError",
            "# Ground-truth diagnosis\ncolumn c does not exist",
            "# Predicted diagnosis\nKeyError: df has no column 'c'",
        ] {
            assert!(prompt.user.contains(part), "{}", prompt.user);
        }
        for grade in ["correct", "partially_correct", "reasoning_wrong", "wrong"] {
            assert!(prompt.system.contains(&format!("- {grade}:")));
        }
        assert_eq!(prompt.schema, AnswerSchema::Paper);
    }

    #[test]
    fn exception_classes_come_from_the_field_or_the_reasoning() {
        assert_eq!(
            predicted_exception(Some("KeyError"), "raises a ValueError"),
            Some("KeyError".to_owned())
        );
        assert_eq!(
            predicted_exception(None, "This raises a TypeError because compile() ..."),
            Some("TypeError".to_owned())
        );
        assert_eq!(
            predicted_exception(None, "sklearn.exceptions.NotFittedError is raised."),
            Some("NotFittedError".to_owned())
        );
        assert_eq!(predicted_exception(None, "an error will occur"), None);
        assert_eq!(
            check_exception(Some("TypeError"), Some("typeerror")),
            ExceptionCheck::Match
        );
        assert_eq!(
            check_exception(Some("TypeError"), Some("ValueError")),
            ExceptionCheck::Mismatch
        );
        assert_eq!(
            check_exception(Some("TypeError"), None),
            ExceptionCheck::NotStated
        );
    }
}
