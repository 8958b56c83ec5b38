//! JunoBench case files (`shared/junobench/cases/*.json`): code, ground truth, CRANE-LLM's
//! recorded runtime information, prompts and answers.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::crane::from_crane_with_source;
use crate::model::RuntimeInfo;

/// One benchmark case: a notebook executed up to a target cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Case {
    /// `<group>_<n>_reproduced` or `<group>_<n>_fixed`.
    pub id: String,
    pub pair: String,
    pub variant: Variant,
    pub group: String,
    /// Code of the cells executed before the target, in execution order.
    pub executed_cells: Vec<String>,
    pub target_cell: String,
    /// Ground truth: the target cell crashes.
    pub crash: bool,
    pub diagnosis: Option<String>,
    /// The runtime information as CRANE-LLM printed it into its prompt (`pprint` of a dict).
    pub crane_runtime_info_text: String,
    /// The same as JSON (best effort).
    pub crane_runtime_info: Value,
    pub crane_prompt_code_only: String,
    pub crane_prompt_with_runtime: String,
    pub crash_labels: CrashLabels,
    #[serde(default)]
    pub notebook_url: Option<String>,
    /// Per model: the answers recorded by the paper's authors.
    #[serde(default)]
    pub recorded_llm_outputs: BTreeMap<String, RecordedOutputs>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    Buggy,
    Fixed,
}

/// Labels of the pair's crash (shared by both variants).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrashLabels {
    pub ename: String,
    pub evalue: String,
    pub library: Option<String>,
    pub label_root_cause: String,
    pub label_refined_exp_type: String,
    #[serde(rename = "label_ML_pipeline")]
    pub label_ml_pipeline: String,
    /// On buggy cases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RecordedOutputs {
    #[serde(default)]
    pub code_only: Vec<RecordedAnswer>,
    #[serde(default)]
    pub with_runtime: Vec<RecordedAnswer>,
}

/// One recorded LLM answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RecordedAnswer {
    Verdict(Verdict),
    /// A raw string, normally holding a verdict's JSON.
    Text(String),
    Other(Value),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub reasoning: String,
    pub detection: bool,
}

impl RecordedAnswer {
    /// The verdict, parsing it out of a raw string when the answer is one (the first `{...}`
    /// block, so code fences and surrounding prose are tolerated).
    pub fn verdict(&self) -> Option<Verdict> {
        match self {
            RecordedAnswer::Verdict(verdict) => Some(verdict.clone()),
            RecordedAnswer::Text(text) => {
                let start = text.find('{')?;
                let end = text.rfind('}')?;
                serde_json::from_str(text.get(start..=end)?).ok()
            }
            RecordedAnswer::Other(_) => None,
        }
    }

    pub fn detection(&self) -> Option<bool> {
        self.verdict().map(|verdict| verdict.detection)
    }
}

impl Case {
    /// The recorded runtime information in crane's vocabulary.
    pub fn runtime_info(&self) -> RuntimeInfo {
        from_crane_with_source(&self.crane_runtime_info, &self.target_cell)
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Variant::Buggy => "buggy",
            Variant::Fixed => "fixed",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    #[error("cannot read case file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("case file {path} is not a valid JunoBench case: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("cannot list case directory {path}: {source}")]
    ListDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no case files (*.json) in {0}")]
    Empty(PathBuf),
}

/// The environment variable that names the directory of case files for [`default_cases_dir`].
pub const CASES_DIR_VAR: &str = "CRANE_JUNOBENCH_CASES";

/// The directory of case files: `$CRANE_JUNOBENCH_CASES` when set, else `shared/junobench/cases`
/// beside the workspace this crate was built in (how a checkout and CI lay them out).
pub fn default_cases_dir() -> PathBuf {
    match std::env::var_os(CASES_DIR_VAR) {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/junobench/cases"),
    }
}

/// Read one case file.
pub fn load_case(path: &Path) -> Result<Case, CaseError> {
    let text = std::fs::read_to_string(path).map_err(|source| CaseError::Read {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| CaseError::Parse {
        path: path.to_owned(),
        source,
    })
}

/// Read every `*.json` case in a directory, sorted by id.
pub fn load_cases(dir: &Path) -> Result<Vec<Case>, CaseError> {
    let list_error = |source| CaseError::ListDir {
        path: dir.to_owned(),
        source,
    };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(list_error)? {
        let path = entry.map_err(list_error)?.path();
        if path.extension().is_some_and(|ext| ext == "json") {
            paths.push(path);
        }
    }
    if paths.is_empty() {
        return Err(CaseError::Empty(dir.to_owned()));
    }
    let mut cases = paths
        .iter()
        .map(|path| load_case(path))
        .collect::<Result<Vec<_>, _>>()?;
    cases.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(cases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_verdicts_raw_strings_or_other_json() {
        let answers: Vec<RecordedAnswer> = serde_json::from_str(
            r#"[
                {"reasoning": "fine", "detection": false},
                "```json\n{\"reasoning\": \"KeyError\", \"detection\": true}\n```",
                "no verdict here",
                {"unexpected": 1}
            ]"#,
        )
        .expect("answers parse");
        assert_eq!(answers[0].detection(), Some(false));
        assert!(matches!(answers[1], RecordedAnswer::Text(_)));
        assert_eq!(answers[1].detection(), Some(true));
        assert_eq!(
            answers[1].verdict().map(|v| v.reasoning),
            Some("KeyError".to_owned())
        );
        assert_eq!(answers[2].detection(), None);
        assert!(matches!(answers[3], RecordedAnswer::Other(_)));
        assert_eq!(answers[3].detection(), None);
    }
}
