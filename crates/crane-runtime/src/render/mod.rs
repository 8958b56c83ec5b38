//! Compact, deterministic, token-budgeted text rendering of runtime information for prompts.
//!
//! One line per expression: `df: DataFrame shape=(891, 12) (cell 2, line 1); columns: Age
//! float64 nulls=177 [0.42..80.0], Name object n_unique=891 e.g. ['Braund']`. Expressions with
//! no facts share a line per type (`np, pd: module`). Over budget, the largest entries are
//! summarized first (fewer list items, then no value facts, then the type alone), and what was
//! left out is marked with `…`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{number, Facts, Kind, RuntimeInfo, Section, Variable};
use crane_analysis::{python_float_repr, python_repr};

use line::render_variable;

mod line;
mod redact;

/// What to hide from the rendering.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Redact {
    /// Show everything.
    #[default]
    None,
    /// String example values and string `value`s become `<str>`.
    Strings,
    /// Only types, shapes, dtypes, counts, flags and column names (an allow-list): no example
    /// values, ranges, `value`s, reprs, parameters, classes or dict keys.
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

/// The placeholder for a redacted string.
const REDACTED_STR: &str = "<str>";

/// Number of o200k_base tokens of a text.
pub fn token_count(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len()
}

/// Render runtime information as terse text, within the budget.
pub fn render(info: &RuntimeInfo, options: &RenderOptions) -> Rendered {
    let info = info.redacted(options.redact);
    let mut entries = Entries::new(&info);
    let budget = options.budget_tokens.unwrap_or(usize::MAX);
    let mut truncated = false;
    loop {
        let text = entries.text();
        let tokens = token_count(&text);
        if tokens <= budget {
            return Rendered {
                text,
                tokens,
                truncated,
            };
        }
        truncated = true;
        let overshoot = tokens - budget;
        if !entries.shrink_until(overshoot) {
            let text = entries.text();
            let tokens = token_count(&text);
            if tokens <= budget {
                return Rendered {
                    text,
                    tokens,
                    truncated,
                };
            }
            if !entries.drop_last() {
                return Rendered {
                    text: String::new(),
                    tokens: 0,
                    truncated,
                };
            }
        }
    }
}

/// How much of a variable to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Detail {
    /// Most items shown of any list (columns, examples, keys); `None` for all.
    items: Option<usize>,
    level: Level,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Full,
    /// S and R facts only, columns as a count.
    NoValues,
    /// S facts only.
    Structure,
    /// The type alone.
    TypeOnly,
}

const FULL: Detail = Detail {
    items: None,
    level: Level::Full,
};

/// A rendered line, or a group of fact-less expressions sharing a type.
struct Entry<'a> {
    expressions: Vec<&'a str>,
    variable: Option<&'a Variable>,
    detail: Detail,
    line: String,
    tokens: usize,
    truncated: bool,
}

struct Entries<'a> {
    entries: Vec<Entry<'a>>,
    missing: Option<String>,
    dropped: usize,
}

impl<'a> Entries<'a> {
    fn new(info: &'a RuntimeInfo) -> Entries<'a> {
        let mut entries: Vec<Entry<'a>> = Vec::new();
        let mut groups: Vec<(String, Vec<&'a str>)> = Vec::new();
        for (expression, variable) in &info.variables {
            if is_bare(variable) {
                let label = type_label(variable);
                match groups.iter_mut().find(|(l, _)| *l == label) {
                    Some((_, members)) => members.push(expression),
                    None => groups.push((label, vec![expression])),
                }
            } else {
                let mut entry = Entry {
                    expressions: vec![expression],
                    variable: Some(variable),
                    detail: FULL,
                    line: String::new(),
                    tokens: 0,
                    truncated: false,
                };
                entry.refresh();
                entries.push(entry);
            }
        }
        for (label, members) in groups {
            let line = format!("{}: {label}", members.join(", "));
            entries.push(Entry {
                tokens: token_count(&line),
                expressions: members,
                variable: None,
                detail: FULL,
                line,
                truncated: false,
            });
        }
        let missing =
            (!info.missing.is_empty()).then(|| format!("not defined: {}", info.missing.join(", ")));
        Entries {
            entries,
            missing,
            dropped: 0,
        }
    }

    fn text(&self) -> String {
        let mut lines: Vec<&str> = self.entries.iter().map(|e| e.line.as_str()).collect();
        if let Some(missing) = &self.missing {
            lines.push(missing);
        }
        let dropped;
        if self.dropped > 0 {
            dropped = format!("… {} more entries left out", self.dropped);
            lines.push(&dropped);
        }
        lines.join("\n")
    }

    /// Summarize the largest entries until about `overshoot` tokens are saved; false when
    /// nothing can be summarized any more.
    fn shrink_until(&mut self, overshoot: usize) -> bool {
        let mut saved = 0;
        let mut shrunk_any = false;
        while saved < overshoot {
            let largest = self
                .entries
                .iter_mut()
                .filter(|entry| entry.can_shrink())
                .max_by_key(|entry| entry.tokens);
            let Some(entry) = largest else {
                return shrunk_any;
            };
            let before = entry.tokens;
            entry.shrink();
            saved += before.saturating_sub(entry.tokens);
            shrunk_any = true;
        }
        true
    }

    fn drop_last(&mut self) -> bool {
        if self.entries.pop().is_some() {
            self.dropped += 1;
            true
        } else {
            self.missing.take().is_some()
        }
    }
}

impl Entry<'_> {
    fn refresh(&mut self) {
        if let Some(variable) = self.variable {
            let (line, truncated) = render_variable(self.expressions[0], variable, self.detail);
            self.tokens = token_count(&line);
            self.line = line;
            self.truncated = truncated;
        }
    }

    fn can_shrink(&self) -> bool {
        self.variable.is_some() && self.detail.level != Level::TypeOnly
    }

    fn shrink(&mut self) {
        let Some(variable) = self.variable else {
            return;
        };
        let longest = longest_list(variable);
        self.detail = match (self.detail.level, self.detail.items) {
            (Level::Full, items) if self.truncated || longest > 1 => {
                let shown = items.unwrap_or(longest).min(longest);
                if shown > 1 {
                    Detail {
                        items: Some(shown / 2),
                        level: Level::Full,
                    }
                } else {
                    Detail {
                        items: Some(1),
                        level: Level::NoValues,
                    }
                }
            }
            (Level::Full, _) => Detail {
                items: Some(1),
                level: Level::NoValues,
            },
            (Level::NoValues, _) => Detail {
                items: Some(1),
                level: Level::Structure,
            },
            (Level::Structure, _) | (Level::TypeOnly, _) => Detail {
                items: Some(0),
                level: Level::TypeOnly,
            },
        };
        let before = self.tokens;
        self.refresh();
        if self.tokens >= before && self.detail.level != Level::TypeOnly {
            self.shrink();
        }
    }
}

/// Longest list the rendering of a variable shows (columns, examples, keys, values).
fn longest_list(variable: &Variable) -> usize {
    fn longest(value: &Value) -> usize {
        match value {
            Value::Array(items) => items
                .len()
                .max(items.iter().map(longest).max().unwrap_or(0)),
            Value::Object(map) => map.len().max(map.values().map(longest).max().unwrap_or(0)),
            _ => 0,
        }
    }
    Section::ALL
        .iter()
        .flat_map(|section| variable.section(*section).values())
        .map(longest)
        .max()
        .unwrap_or(0)
}

/// No facts worth a line of its own: shares a line with others of the same type.
fn is_bare(variable: &Variable) -> bool {
    variable.s.is_empty()
        && variable.r.is_empty()
        && variable.v.is_empty()
        && variable.origin.is_none()
        && variable.error.is_none()
        && !variable.sampled
}

fn type_label(variable: &Variable) -> String {
    match variable.kind {
        Kind::Function => "function".into(),
        Kind::Builtin => "builtin function".into(),
        Kind::Method => "method".into(),
        Kind::Class => "class".into(),
        Kind::Pymodule => "module".into(),
        Kind::NoneType => "None".into(),
        Kind::Absent => "absent".into(),
        _ if variable.type_name.is_empty() => "unknown type".into(),
        _ => variable.short_type().to_owned(),
    }
}

/// Keys rendered in a fixed order ahead of the others of their section.
const S_ORDER: [&str; 4] = ["shape", "len", "ndim", "size"];
const R_ORDER: [&str; 1] = ["dtype"];
/// Rendered by a dedicated piece of the line, or not at all (a callable's parameters reach a
/// prompt through the API docs).
const SPECIAL: [&str; 17] = [
    "call_signature",
    "call_signature_unknown",
    "columns",
    "columns_truncated",
    "keys_truncated",
    "value_truncated",
    "value_kind",
    "min",
    "max",
    "has_nan",
    "has_inf",
    "value",
    "fitted",
    "owner_type",
    "key",
    "keys",
    "examples",
];
