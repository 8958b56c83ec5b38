//! Deterministic prompts in the paper's layout: an instruction (system message), then
//! `# Executed Cells` (each cell in execution order), `# Current relevant runtime information`,
//! optionally the API documentation of the functions the target cell calls, and
//! `# Target Cell`.
//!
//! Two styles: crane's own (crane's instruction and extended answer schema, compact rendering
//! of runtime facts with redaction), and the paper's (its `{reasoning, detection}` schema and
//! its exact user-message text: verbatim from a JunoBench case file, or rebuilt in the same
//! layout with the `pprint` rendering for other notebooks). The case files carry only the
//! paper's user messages; the paper-style instruction is crane's wording of the paper's task
//! and schema.

use std::fmt;
use std::str::FromStr;

use crane_runtime::junobench::Case;
use crane_runtime::{
    render, render_paper, token_count, Redact, RenderOptions, RuntimeInfo, Sections,
};
use serde::{Deserialize, Serialize};

use crate::answer::AnswerSchema;

/// Which information the prompt gives the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum PromptConfig {
    /// Code only (the paper's -RT).
    CodeOnly,
    /// Code and runtime information (the paper's +RT with all sections; fewer sections are the
    /// -S/-R/-V ablations).
    WithRuntime(Sections),
    /// Code, runtime information, and the docstrings of the library functions and methods the
    /// target cell calls.
    WithApiDocs(Sections),
}

impl Default for PromptConfig {
    fn default() -> Self {
        PromptConfig::WithRuntime(Sections::ALL)
    }
}

impl PromptConfig {
    /// The runtime sections shown, if any.
    pub fn sections(self) -> Option<Sections> {
        match self {
            PromptConfig::CodeOnly => None,
            PromptConfig::WithRuntime(sections) | PromptConfig::WithApiDocs(sections) => {
                Some(sections)
            }
        }
    }

    /// The configuration whose answers JunoBench cases record, if this is one of them.
    pub fn recorded_name(self) -> Option<&'static str> {
        match self {
            PromptConfig::CodeOnly => Some("code_only"),
            PromptConfig::WithRuntime(Sections::ALL) => Some("with_runtime"),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown prompt configuration `{0}`: expected code_only (-RT), with_runtime (+RT), an ablation such as with_runtime-S or -R-V, or with_api_docs")]
pub struct ParsePromptConfigError(String);

impl FromStr for PromptConfig {
    type Err = ParsePromptConfigError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || ParsePromptConfigError(text.to_string());
        let compact = text.trim();
        match compact {
            "code_only" | "-RT" | "-rt" => return Ok(PromptConfig::CodeOnly),
            "+RT" | "+rt" => return Ok(PromptConfig::WithRuntime(Sections::ALL)),
            _ => {}
        }
        let (make, removals): (fn(Sections) -> PromptConfig, &str) =
            if let Some(rest) = compact.strip_prefix("with_api_docs") {
                (PromptConfig::WithApiDocs, rest)
            } else if let Some(rest) = compact.strip_prefix("with_runtime") {
                (PromptConfig::WithRuntime, rest)
            } else if compact.starts_with('-') {
                (PromptConfig::WithRuntime, compact)
            } else {
                return Err(invalid());
            };
        if !removals.is_empty() && !removals.starts_with('-') {
            return Err(invalid());
        }
        let sections: Sections = removals.parse().map_err(|_| invalid())?;
        if sections == Sections::NONE {
            return Err(invalid());
        }
        Ok(make(sections))
    }
}

impl fmt::Display for PromptConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, sections) = match self {
            PromptConfig::CodeOnly => return f.write_str("code_only"),
            PromptConfig::WithRuntime(sections) => ("with_runtime", sections),
            PromptConfig::WithApiDocs(sections) => ("with_api_docs", sections),
        };
        f.write_str(name)?;
        if *sections != Sections::ALL {
            write!(f, "{sections}")?;
        }
        Ok(())
    }
}

impl TryFrom<String> for PromptConfig {
    type Error = ParsePromptConfigError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl From<PromptConfig> for String {
    fn from(config: PromptConfig) -> String {
        config.to_string()
    }
}

/// Whose wording the prompt uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptStyle {
    /// crane's instruction, extended answer schema and compact runtime rendering.
    #[default]
    Crane,
    /// The paper's exact user-message text and its `{reasoning, detection}` schema, for
    /// like-for-like comparison with the paper's results.
    Paper,
}

impl FromStr for PromptStyle {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "crane" => Ok(PromptStyle::Crane),
            "paper" | "paper_exact" | "paper-exact" => Ok(PromptStyle::Paper),
            other => Err(format!(
                "unknown prompt style `{other}`: expected crane or paper"
            )),
        }
    }
}

/// The docstring of a library function or method the target cell calls, as read from the
/// live kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiDoc {
    /// Qualified name, e.g. `pandas.DataFrame.groupby`.
    pub name: String,
    pub doc: String,
}

/// What a prompt is built from.
#[derive(Debug, Clone, Copy)]
pub struct PromptInput<'a> {
    /// The code of the executed cells, in execution order.
    pub executed_cells: &'a [String],
    pub target_cell: &'a str,
    /// Runtime information read from the kernel; required by configurations that show it.
    pub runtime: Option<&'a RuntimeInfo>,
    /// Docstrings read from the kernel; `None` offline (the section is then left out).
    pub api_docs: Option<&'a [ApiDoc]>,
}

/// A prompt, exactly as it would be sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prompt {
    /// The instruction (system message).
    pub system: String,
    /// The user message.
    pub user: String,
    pub schema: AnswerSchema,
    pub config: PromptConfig,
    pub style: PromptStyle,
    /// The JunoBench case the prompt was built from (the replay provider answers by it).
    pub case_id: Option<String>,
    /// The runtime section was shortened to fit its budget.
    pub runtime_truncated: bool,
    /// API docs: `None` when the configuration asks for none or none were available.
    pub api_docs_included: Option<usize>,
}

impl Prompt {
    /// The text of both messages, labelled, for `--show-prompt`.
    pub fn to_display_string(&self) -> String {
        format!(
            "=== system ===\n{}\n=== user ===\n{}\n=== answer schema: {} ===\n",
            self.system,
            self.user,
            serde_json::to_string(&self.schema.json_schema()).unwrap_or_default()
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    #[error("the `{0}` configuration needs runtime information, and none was given")]
    MissingRuntime(PromptConfig),
    #[error("the paper's prompt text cannot be redacted (requested --redact {0:?}); use the crane prompt style or --redact none")]
    PaperTextNotRedactable(Redact),
}

/// Default token budget of the API documentation section.
pub const DEFAULT_API_DOCS_BUDGET: usize = 1500;

/// Builds prompts; the same inputs always give the same text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptBuilder {
    pub config: PromptConfig,
    pub style: PromptStyle,
    pub redact: Redact,
    /// Token budget of the runtime section; `None` for no limit.
    pub runtime_budget: Option<usize>,
    /// Token budget of the API documentation section.
    pub api_docs_budget: usize,
}

impl Default for PromptBuilder {
    fn default() -> Self {
        PromptBuilder::new(PromptConfig::default())
    }
}

const NO_CELL_EXECUTED: &str = "No cell has been executed";

impl PromptBuilder {
    pub fn new(config: PromptConfig) -> PromptBuilder {
        PromptBuilder {
            config,
            style: PromptStyle::Crane,
            redact: Redact::None,
            runtime_budget: None,
            api_docs_budget: DEFAULT_API_DOCS_BUDGET,
        }
    }

    pub fn style(mut self, style: PromptStyle) -> Self {
        self.style = style;
        self
    }

    pub fn redact(mut self, redact: Redact) -> Self {
        self.redact = redact;
        self
    }

    pub fn runtime_budget(mut self, tokens: Option<usize>) -> Self {
        self.runtime_budget = tokens;
        self
    }

    pub fn api_docs_budget(mut self, tokens: usize) -> Self {
        self.api_docs_budget = tokens;
        self
    }

    /// The prompt for a target cell.
    pub fn build(&self, input: &PromptInput<'_>) -> Result<Prompt, PromptError> {
        if self.style == PromptStyle::Paper && self.redact != Redact::None {
            return Err(PromptError::PaperTextNotRedactable(self.redact));
        }
        let (runtime_text, runtime_truncated) = match self.config.sections() {
            None => (None, false),
            Some(sections) => {
                let info = input
                    .runtime
                    .ok_or(PromptError::MissingRuntime(self.config))?
                    .filtered(sections);
                match self.style {
                    PromptStyle::Paper => (Some(render_paper(&info)), false),
                    PromptStyle::Crane => {
                        let rendered = render(
                            &info,
                            &RenderOptions {
                                budget_tokens: self.runtime_budget,
                                redact: self.redact,
                            },
                        );
                        (Some(rendered.text), rendered.truncated)
                    }
                }
            }
        };
        let api_docs = match (self.config, input.api_docs) {
            (PromptConfig::WithApiDocs(_), Some(docs)) if !docs.is_empty() => {
                Some(docs_section(docs, self.api_docs_budget))
            }
            _ => None,
        };
        let user = match self.style {
            PromptStyle::Paper => paper_layout(
                input.executed_cells,
                runtime_text.as_deref(),
                api_docs.as_ref().map(|(text, _)| text.as_str()),
                input.target_cell,
            ),
            PromptStyle::Crane => crane_layout(
                input.executed_cells,
                runtime_text.as_deref(),
                api_docs.as_ref().map(|(text, _)| text.as_str()),
                input.target_cell,
            ),
        };
        Ok(Prompt {
            system: self.instruction(api_docs.is_some()),
            user,
            schema: self.schema(),
            config: self.config,
            style: self.style,
            case_id: None,
            runtime_truncated,
            api_docs_included: api_docs.map(|(_, count)| count),
        })
    }

    /// The prompt for a JunoBench case. In the paper style, the code-only and with-runtime
    /// configurations give the case file's recorded prompt text byte for byte; otherwise the
    /// prompt is built from the case's cells and recorded runtime information.
    pub fn build_for_case(&self, case: &Case) -> Result<Prompt, PromptError> {
        let recorded_text = match (self.style, self.config.recorded_name()) {
            (PromptStyle::Paper, Some("code_only")) => Some(&case.crane_prompt_code_only),
            (PromptStyle::Paper, Some(_)) => Some(&case.crane_prompt_with_runtime),
            _ => None,
        };
        let mut prompt = match recorded_text {
            Some(text) => {
                if self.redact != Redact::None {
                    return Err(PromptError::PaperTextNotRedactable(self.redact));
                }
                Prompt {
                    system: self.instruction(false),
                    user: text.clone(),
                    schema: self.schema(),
                    config: self.config,
                    style: self.style,
                    case_id: None,
                    runtime_truncated: false,
                    api_docs_included: None,
                }
            }
            None => {
                let runtime = case.runtime_info();
                self.build(&PromptInput {
                    executed_cells: &case.executed_cells,
                    target_cell: &case.target_cell,
                    runtime: Some(&runtime),
                    api_docs: None,
                })?
            }
        };
        prompt.case_id = Some(case.id.clone());
        Ok(prompt)
    }

    fn schema(&self) -> AnswerSchema {
        match self.style {
            PromptStyle::Crane => AnswerSchema::Crane,
            PromptStyle::Paper => AnswerSchema::Paper,
        }
    }

    fn instruction(&self, with_api_docs: bool) -> String {
        let with_runtime = self.config.sections().is_some();
        match self.style {
            PromptStyle::Paper => paper_instruction(with_runtime, with_api_docs),
            PromptStyle::Crane => crane_instruction(with_runtime, with_api_docs),
        }
    }
}

fn paper_instruction(with_runtime: bool, with_api_docs: bool) -> String {
    let mut given = String::from(
        "the code cells of a Jupyter notebook that have already been executed, in execution order",
    );
    if with_runtime {
        given.push_str(", the current relevant runtime information");
    }
    if with_api_docs {
        given.push_str(", the documentation of the library APIs the target cell calls");
    }
    format!(
        "You are an expert in machine learning notebooks. You are given {given}, and a target cell. \
Determine whether executing the target cell will crash (raise an exception).\n\
Respond in JSON format with two fields: \"reasoning\" (a brief explanation) and \"detection\" \
(true if the target cell will crash, false otherwise)."
    )
}

fn crane_instruction(with_runtime: bool, with_api_docs: bool) -> String {
    let mut text = String::from(
        "You are an expert in Python, Jupyter notebooks and machine-learning libraries \
(pandas, NumPy, scikit-learn, PyTorch, TensorFlow/Keras, matplotlib, seaborn).\n\
You are given the code cells of a notebook that have already been executed, in execution order",
    );
    if with_runtime {
        text.push_str(
            ", a summary of the current runtime state of the objects the next cell uses \
(S: structure such as shapes and lengths; R: types, dtypes, columns, devices; V: value ranges, \
NaNs, classes, fitted state, example values)",
        );
    }
    if with_api_docs {
        text.push_str(", the documentation of the library functions and methods it calls");
    }
    text.push_str(
        ", and the target cell that is about to run in the same kernel.\n\
Predict whether executing the target cell will crash, that is, raise an uncaught exception. \
Warnings and silently wrong results are not crashes.",
    );
    if with_runtime {
        text.push_str(
            " The runtime information describes the kernel right before the target cell runs; \
where it disagrees with what the code suggests, trust the runtime information. Facts marked as \
sampled were computed on part of the data.",
        );
    }
    let evidence = if with_runtime {
        "each runtime fact or line of code you relied on"
    } else {
        "each line of code or fact you relied on"
    };
    text.push_str(&format!(
        "\nAnswer with one JSON object and nothing else:\n\
{{\"reasoning\": \"<short explanation>\", \"detection\": <true if the target cell crashes, else false>, \
\"exception\": \"<predicted exception class, or null>\", \"line\": <1-based line of the target cell \
that raises, or null>, \"confidence\": <probability from 0 to 1 that detection is right>, \
\"evidence\": [\"<{evidence}>\"]}}"
    ));
    text
}

/// The paper's user message, byte for byte: cells as recorded (no trimming), its section
/// names, and its single newline before `# Target Cell`.
fn paper_layout(
    executed_cells: &[String],
    runtime: Option<&str>,
    api_docs: Option<&str>,
    target_cell: &str,
) -> String {
    let mut text = String::from("# Executed Cells:\n");
    if executed_cells.is_empty() {
        text.push_str(NO_CELL_EXECUTED);
        text.push('\n');
    }
    for (index, cell) in executed_cells.iter().enumerate() {
        text.push_str(&format!("## Cell {}:\n{cell}\n\n", index + 1));
    }
    if let Some(runtime) = runtime {
        text.push_str("# Current relevent runtime information:\n");
        text.push_str(runtime);
        text.push('\n');
    }
    if let Some(docs) = api_docs {
        text.push_str("# Relevant API documentation:\n");
        text.push_str(docs);
        text.push('\n');
    }
    text.push_str("# Target Cell:\n");
    text.push_str(target_cell);
    text
}

/// crane's user message: the paper's layout with trailing blank lines trimmed and one blank
/// line between sections.
fn crane_layout(
    executed_cells: &[String],
    runtime: Option<&str>,
    api_docs: Option<&str>,
    target_cell: &str,
) -> String {
    let mut text = String::from("# Executed Cells:\n");
    if executed_cells.is_empty() {
        text.push_str(NO_CELL_EXECUTED);
        text.push_str("\n\n");
    }
    for (index, cell) in executed_cells.iter().enumerate() {
        text.push_str(&format!("## Cell {}:\n{}\n\n", index + 1, cell.trim_end()));
    }
    if let Some(runtime) = runtime {
        text.push_str("# Current relevant runtime information:\n");
        text.push_str(runtime.trim_end());
        text.push_str("\n\n");
    }
    if let Some(docs) = api_docs {
        text.push_str("# Relevant API documentation:\n");
        text.push_str(docs.trim_end());
        text.push_str("\n\n");
    }
    text.push_str("# Target Cell:\n");
    text.push_str(target_cell.trim_end());
    text.push('\n');
    text
}

/// The API documentation section within `budget` tokens: each docstring gets an equal share
/// and is cut at a line or character boundary, marked `[...]`. Returns the text and the number
/// of docstrings shown.
fn docs_section(docs: &[ApiDoc], budget: usize) -> (String, usize) {
    let share = budget / docs.len().max(1);
    let mut text = String::new();
    let mut shown = 0;
    for doc in docs {
        let header = format!("## {}\n", doc.name);
        let room = share.saturating_sub(token_count(&header));
        if room == 0 {
            continue;
        }
        text.push_str(&header);
        text.push_str(&truncate_to_tokens(doc.doc.trim(), room));
        text.push_str("\n\n");
        shown += 1;
    }
    (text, shown)
}

const CUT_MARK: &str = "\n[...]";

fn truncate_to_tokens(text: &str, budget: usize) -> String {
    if token_count(text) <= budget {
        return text.to_string();
    }
    let room = budget.saturating_sub(token_count(CUT_MARK));
    let boundaries: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let prefix_of = |chars: usize| boundaries.get(chars).map_or(text, |&end| &text[..end]);
    // The longest prefix within the budget, by binary search over character counts.
    let (mut low, mut high) = (0usize, boundaries.len());
    while low < high {
        let mid = (low + high).div_ceil(2);
        if token_count(prefix_of(mid)) <= room {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    let prefix = prefix_of(low);
    let prefix = match prefix.rfind('\n') {
        Some(newline) if newline > prefix.len() / 2 => &prefix[..newline],
        _ => prefix,
    };
    format!("{}{CUT_MARK}", prefix.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_parse_and_print_canonically() {
        let cases = [
            ("code_only", "code_only"),
            ("-RT", "code_only"),
            ("with_runtime", "with_runtime"),
            ("+RT", "with_runtime"),
            ("with_runtime-S", "with_runtime-S"),
            ("-R-V", "with_runtime-R-V"),
            ("with_api_docs", "with_api_docs"),
            ("with_api_docs-V", "with_api_docs-V"),
        ];
        for (text, canonical) in cases {
            let config: PromptConfig = text.parse().unwrap();
            assert_eq!(config.to_string(), canonical);
            assert_eq!(canonical.parse::<PromptConfig>().unwrap(), config);
        }
        for bad in ["", "runtime", "with_runtimeS", "-S-R-V", "with_runtime-X"] {
            assert!(bad.parse::<PromptConfig>().is_err(), "{bad}");
        }
    }

    #[test]
    fn docs_are_truncated_to_the_budget() {
        let long = (0..400)
            .map(|i| format!("Parameter number {i} controls something."))
            .collect::<Vec<_>>()
            .join("\n");
        let docs = vec![
            ApiDoc {
                name: "pandas.DataFrame.groupby".into(),
                doc: long.clone(),
            },
            ApiDoc {
                name: "numpy.reshape".into(),
                doc: "Gives a new shape to an array without changing its data.".into(),
            },
        ];
        let (text, shown) = docs_section(&docs, 200);
        assert_eq!(shown, 2);
        assert!(token_count(&text) <= 200 + 4, "{}", token_count(&text));
        assert!(text.contains("## pandas.DataFrame.groupby\nParameter number 0"));
        assert!(text.contains("[...]"));
        assert!(text.contains("without changing its data."));
    }
}
