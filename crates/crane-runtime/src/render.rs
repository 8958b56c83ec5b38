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

impl RuntimeInfo {
    /// The same information with example values hidden as `redact` says.
    pub fn redacted(&self, redact: Redact) -> RuntimeInfo {
        let mut info = self.clone();
        if redact == Redact::None {
            return info;
        }
        for variable in info.variables.values_mut() {
            match redact {
                Redact::None => {}
                Redact::Strings => redact_strings(variable),
                Redact::Values => redact_values(variable),
            }
        }
        info
    }
}

const EXAMPLE_KEYS: [&str; 4] = ["examples", "unique_values", "classes", "value"];

fn redact_strings(variable: &mut Variable) {
    for key in EXAMPLE_KEYS {
        if let Some(value) = variable.v.get_mut(key) {
            hide_strings(value);
        }
    }
    for column in column_stats_mut(&mut variable.v) {
        for key in EXAMPLE_KEYS {
            if let Some(value) = column.get_mut(key) {
                hide_strings(value);
            }
        }
    }
}

fn hide_strings(value: &mut Value) {
    match value {
        Value::String(text) => *text = REDACTED_STR.to_owned(),
        Value::Array(items) => items.iter_mut().for_each(hide_strings),
        Value::Object(map) => map.values_mut().for_each(hide_strings),
        _ => {}
    }
}

/// What `--redact values` keeps: types, shapes, dtypes, counts, flags and column names, by an
/// allow-list (a fact not listed here is dropped, so a new fact that carries a value, such as
/// an object's repr, never slips through).
mod kept {
    /// R facts: types, dtypes, devices, column and layer names, library settings.
    pub(super) const R: &[&str] = &[
        "attributes",
        "best_estimator",
        "bits",
        "categories_dtype",
        "classes_dtype",
        "columns",
        "columns_nlevels",
        "columns_truncated",
        "dataset_type",
        "device",
        "drop_last",
        "dtype",
        "dtype_counts",
        "duplicated_columns",
        "element_types",
        "element_types_scanned",
        "estimator",
        "feature_names_in",
        "feature_names_truncated",
        "index",
        "inner_estimator",
        "iterable",
        "iterator",
        "last_activation",
        "layout",
        "len_unknown",
        "library",
        "library_bases",
        "loss",
        "masked",
        "memmap",
        "metrics",
        "module",
        "name",
        "num_workers",
        "obj_type",
        "optimizer",
        "ordered",
        "owner_fitted",
        "owner_type",
        "param_dtype",
        "raises",
        "requires_grad",
        "sampler",
        "shuffle",
        "steps",
        "tensors",
        "trainable",
        "training",
        "version",
    ];
    /// Keys inside the R facts kept above (an index, a step, a column, a tensor).
    pub(super) const NESTED: &[&str] = &[
        "type",
        "dtype",
        "nlevels",
        "name",
        "names",
        "range",
        "fitted",
        "n_features_in",
        "n_features_out",
        "columns",
        "shape",
    ];
    /// V facts: counts and flags.
    pub(super) const V: &[&str] = &[
        "built",
        "columns",
        "columns_skipped",
        "compiled",
        "categories_sizes",
        "fitted",
        "has_inf",
        "has_nan",
        "index_unique",
        "n_classes",
        "n_masked",
        "n_true",
        "n_unique",
        "nulls",
        "skipped",
        "unique",
    ];
}

fn redact_values(variable: &mut Variable) {
    variable.s.retain(|_, value| carries_no_text(value));
    variable.r.retain(|key, _| kept::R.contains(&key.as_str()));
    for value in variable.r.values_mut() {
        keep_nested(value);
    }
    variable.v.retain(|key, _| kept::V.contains(&key.as_str()));
    for column in column_stats_mut(&mut variable.v) {
        column.retain(|key, _| kept::V.contains(&key.as_str()));
    }
    // "raises KeyError: 'secret'": the exception's message may quote a value.
    if let Some(error) = &mut variable.error {
        if let Some((kind, _)) = error.split_once(':') {
            *error = kind.to_owned();
        }
    }
}

/// Structure facts are numbers (shapes, counts); a layer summary may also name its type.
fn carries_no_text(value: &Value) -> bool {
    match value {
        Value::String(_) => false,
        Value::Array(items) => items.iter().all(carries_no_text),
        Value::Object(map) => map
            .iter()
            .all(|(key, value)| key == "type" || key == "activation" || carries_no_text(value)),
        _ => true,
    }
}

fn keep_nested(value: &mut Value) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(keep_nested),
        Value::Object(map) => {
            map.retain(|key, _| kept::NESTED.contains(&key.as_str()));
            map.values_mut().for_each(keep_nested);
        }
        _ => {}
    }
}

fn column_stats_mut(v: &mut Facts) -> impl Iterator<Item = &mut Facts> {
    v.get_mut("columns")
        .and_then(Value::as_object_mut)
        .into_iter()
        .flat_map(|columns| columns.values_mut())
        .filter_map(Value::as_object_mut)
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

fn render_variable(expression: &str, variable: &Variable, detail: Detail) -> (String, bool) {
    let mut out = Line {
        text: String::new(),
        items: detail.items,
        truncated: false,
    };
    out.text.push_str(expression);
    if let Some(origin) = variable.origin {
        out.text
            .push_str(&format!(" (cell {}, line {})", origin.cell, origin.line));
    }
    out.text.push_str(": ");
    out.text.push_str(&type_label(variable));
    if variable.kind == Kind::Absent {
        if let Some(owner) = variable.r.get("owner_type").and_then(Value::as_str) {
            out.text
                .push_str(&format!(", no such attribute of {owner}"));
        }
        if let Some(key) = variable.r.get("key") {
            out.text
                .push_str(&format!(", no such key {}", scalar(key, Strings::Quoted)));
        }
    }
    if let Some(error) = &variable.error {
        out.text.push_str(&format!(" (not summarized: {error})"));
    }
    if detail.level == Level::TypeOnly {
        let has_facts = Section::ALL
            .iter()
            .any(|section| !variable.section(*section).is_empty());
        if has_facts {
            out.text.push_str(" …");
            out.truncated = true;
        }
        return (out.text, out.truncated);
    }
    if let (Some(Value::String(kind)), true) = (
        variable.r.get("value_kind"),
        detail.level < Level::Structure,
    ) {
        out.text.push(' ');
        out.text.push_str(kind);
    }
    out.facts(variable, Section::S, &S_ORDER);
    if detail.level == Level::Structure {
        if !variable.r.is_empty() || !variable.v.is_empty() {
            out.text.push_str(" …");
            out.truncated = true;
        }
        return (out.text, out.truncated);
    }
    out.facts(variable, Section::R, &R_ORDER);
    if detail.level == Level::Full {
        out.value_facts(variable);
    } else if !variable.v.is_empty() || variable.r.contains_key("keys") {
        out.text.push_str(" …");
        out.truncated = true;
    }
    out.columns(variable, detail.level);
    (out.text, out.truncated)
}

/// How strings print: names and descriptions (S, R) bare, values (V) as Python literals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strings {
    Bare,
    Quoted,
}

struct Line {
    text: String,
    items: Option<usize>,
    truncated: bool,
}

impl Line {
    fn facts(&mut self, variable: &Variable, section: Section, order: &[&str]) {
        let facts = variable.section(section);
        let strings = if section == Section::V {
            Strings::Quoted
        } else {
            Strings::Bare
        };
        let ordered = order
            .iter()
            .filter_map(|key| Some((*key, facts.get(*key)?)));
        let rest = facts
            .iter()
            .map(|(key, value)| (key.as_str(), value))
            .filter(|(key, _)| !order.contains(key));
        for (key, value) in ordered.chain(rest) {
            if SPECIAL.contains(&key) || redundant(variable, key, value) {
                continue;
            }
            let rendered = self.value(value, Some(key), strings);
            self.text.push_str(&format!(" {key}={rendered}"));
        }
    }

    fn value_facts(&mut self, variable: &Variable) {
        let v = &variable.v;
        if let Some(value) = v.get("value") {
            let rendered = match number(value) {
                Some(f) if value.is_string() && is_numeric(variable.kind) => python_float_repr(f),
                _ => self.value(value, Some("value"), Strings::Quoted),
            };
            self.text.push_str(&format!(" = {rendered}"));
            if v.get("value_truncated") == Some(&Value::Bool(true)) {
                self.text.push('…');
            }
        }
        if let Some(range) = range(v) {
            self.text.push_str(&format!(" range={range}"));
        }
        match v.get("has_nan").and_then(Value::as_bool) {
            Some(true) => self.text.push_str(" has NaN"),
            Some(false) => self.text.push_str(" no NaN"),
            None => {}
        }
        if v.get("has_inf").and_then(Value::as_bool) == Some(true) {
            self.text.push_str(" has inf");
        }
        match v.get("fitted").and_then(Value::as_bool) {
            Some(true) => self.text.push_str(" fitted"),
            Some(false) => self.text.push_str(" not fitted"),
            None => {}
        }
        self.items(variable);
        self.facts(variable, Section::V, &[]);
        if variable.sampled {
            self.text.push_str(" (values from a sample)");
        }
    }

    /// A mapping's first items as `items={'a': 1, …}`, or its keys, or example values.
    fn items(&mut self, variable: &Variable) {
        let keys = variable.r.get("keys").and_then(Value::as_array);
        let examples = variable.v.get("examples").and_then(Value::as_array);
        let more = variable
            .r
            .get("keys_truncated")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        let limit = self.items.unwrap_or(usize::MAX).max(1);
        match (keys, examples) {
            (Some(keys), Some(examples)) if keys.len() == examples.len() => {
                let mut parts: Vec<String> = keys
                    .iter()
                    .zip(examples)
                    .take(limit)
                    .map(|(key, example)| {
                        format!(
                            "{}: {}",
                            scalar(key, Strings::Quoted),
                            self.value(example, None, Strings::Quoted)
                        )
                    })
                    .collect();
                self.more(&mut parts, keys.len().saturating_sub(limit) + more);
                self.text
                    .push_str(&format!(" items={{{}}}", parts.join(", ")));
            }
            (keys, examples) => {
                if let Some(keys) = keys {
                    let mut parts: Vec<String> = keys
                        .iter()
                        .take(limit)
                        .map(|key| scalar(key, Strings::Quoted))
                        .collect();
                    self.more(&mut parts, keys.len().saturating_sub(limit) + more);
                    self.text.push_str(&format!(" keys=[{}]", parts.join(", ")));
                }
                if let Some(examples) = examples {
                    let rendered =
                        self.value(&Value::Array(examples.clone()), None, Strings::Quoted);
                    self.text.push_str(&format!(" e.g. {rendered}"));
                }
            }
        }
    }

    fn more(&mut self, parts: &mut Vec<String>, more: usize) {
        if more > 0 {
            parts.push(format!("… {more} more"));
            self.truncated = true;
        }
    }

    /// `; columns: Age float64 nulls=177 [0.42..80.0], Name object …`.
    fn columns(&mut self, variable: &Variable, level: Level) {
        let schema = variable.r.get("columns").and_then(Value::as_array);
        let stats = variable.v.get("columns").and_then(Value::as_object);
        let names: Vec<(Value, Option<&Facts>)> = match (schema, stats) {
            (Some(schema), _) => schema
                .iter()
                .map(|column| {
                    let name = column.get("name").cloned().unwrap_or(Value::Null);
                    (name, column.as_object())
                })
                .collect(),
            (None, Some(stats)) => stats
                .keys()
                .map(|name| (Value::String(name.clone()), None))
                .collect(),
            (None, None) => return,
        };
        let omitted = variable
            .r
            .get("columns_truncated")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        let total = names.len() + omitted;
        if level != Level::Full && self.items.is_some_and(|n| n <= 1) {
            self.text.push_str(&format!("; {total} columns"));
            self.truncated = true;
            return;
        }
        let shown = self.items.unwrap_or(usize::MAX).min(names.len());
        self.text.push_str(&format!("; {total} columns: "));
        let mut rendered = Vec::with_capacity(shown);
        for (name, schema) in names.iter().take(shown) {
            let mut column = column_name(name);
            for key in ["dtype", "value_kind"] {
                if let Some(Value::String(text)) = schema.and_then(|schema| schema.get(key)) {
                    column.push(' ');
                    column.push_str(text);
                }
            }
            let key = match name {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            if level == Level::Full {
                if let Some(stats) = stats.and_then(|s| s.get(&key)?.as_object()) {
                    column.push_str(&self.column_stats(stats));
                }
            }
            rendered.push(column);
        }
        self.text.push_str(&rendered.join(", "));
        let more = total - shown;
        if more > 0 {
            self.text.push_str(&format!(", … {more} more columns"));
            self.truncated = true;
        }
    }

    /// Counts first, then the range, then values.
    fn column_stats(&mut self, stats: &Facts) -> String {
        let mut out = String::new();
        for key in ["nulls", "n_unique"] {
            if let Some(value) = stats.get(key) {
                out.push_str(&format!(
                    " {key}={}",
                    self.value(value, None, Strings::Quoted)
                ));
            }
        }
        if let Some(range) = range(stats) {
            out.push_str(&format!(" {range}"));
        }
        for (key, value) in stats {
            let rendered = match key.as_str() {
                "nulls" | "n_unique" | "min" | "max" => continue,
                "unique_values" => format!(" values={}", self.value(value, None, Strings::Quoted)),
                "examples" => format!(" e.g. {}", self.value(value, None, Strings::Quoted)),
                _ => format!(" {key}={}", self.value(value, None, Strings::Quoted)),
            };
            out.push_str(&rendered);
        }
        out
    }

    /// A JSON value as short Python-like text, lists cut to the detail's item count (shapes
    /// are never cut).
    fn value(&mut self, value: &Value, key: Option<&str>, strings: Strings) -> String {
        match value {
            Value::Array(items) => {
                let shape = key.is_some_and(is_shape_key);
                let tuple = shape && items.iter().all(|item| !item.is_array());
                let limit = if shape {
                    usize::MAX
                } else {
                    self.items.unwrap_or(usize::MAX).max(1)
                };
                let mut parts: Vec<String> = items
                    .iter()
                    .take(limit)
                    .map(|item| self.value(item, key.filter(|_| shape), strings))
                    .collect();
                self.more(&mut parts, items.len().saturating_sub(limit));
                match (tuple, parts.as_slice()) {
                    (true, [only]) => format!("({only},)"),
                    (true, _) => format!("({})", parts.join(", ")),
                    (false, _) => format!("[{}]", parts.join(", ")),
                }
            }
            Value::Object(map) => {
                if let (1, Some(Value::String(type_name))) = (map.len(), map.get("type")) {
                    return short_builtin(type_name).to_owned();
                }
                let limit = self.items.unwrap_or(usize::MAX).max(1);
                let shape = key.is_some_and(is_shape_key);
                let mut parts: Vec<String> = map
                    .iter()
                    .take(limit)
                    .map(|(k, v)| {
                        let child_key = if shape { key } else { Some(k.as_str()) };
                        let name = column_name(&Value::String(k.clone()));
                        format!("{name}: {}", self.value(v, child_key, strings))
                    })
                    .collect();
                self.more(&mut parts, map.len().saturating_sub(limit));
                format!("{{{}}}", parts.join(", "))
            }
            Value::String(text) if strings == Strings::Bare => short_builtin(text).to_owned(),
            scalar_value => scalar(scalar_value, strings),
        }
    }
}

/// Facts that repeat what the line already says.
fn redundant(variable: &Variable, key: &str, value: &Value) -> bool {
    match key {
        "estimator" => value.as_str() == Some(variable.short_type()),
        _ => false,
    }
}

fn is_numeric(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Float | Kind::Int | Kind::NumpyScalar | Kind::Other
    )
}

fn short_builtin(type_name: &str) -> &str {
    type_name.strip_prefix("builtins.").unwrap_or(type_name)
}

fn is_shape_key(key: &str) -> bool {
    key.contains("shape") || key == "target_size" || key == "grid"
}

/// `[min..max]` when both ends are known.
fn range(facts: &Facts) -> Option<String> {
    let (min, max) = (facts.get("min")?, facts.get("max")?);
    let end = |value: &Value| match number(value) {
        Some(f) if value.is_string() => python_float_repr(f),
        _ => scalar(value, Strings::Quoted),
    };
    Some(format!("[{}..{}]", end(min), end(max)))
}

fn scalar(value: &Value, strings: Strings) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => short_float(f),
            _ => n.to_string(),
        },
        Value::String(text) if text == REDACTED_STR => REDACTED_STR.into(),
        Value::String(text) => {
            let text = shorten(&without_address(text), 60);
            match strings {
                Strings::Bare => text,
                Strings::Quoted => python_repr(&text),
            }
        }
        other => other.to_string(),
    }
}

/// `<Foo object at 0x7f..>` and `<function f at 0x7f..>` without the address, which only
/// costs tokens and changes from run to run.
fn without_address(text: &str) -> String {
    let Some(start) = text.find(" at 0x") else {
        return text.to_owned();
    };
    let digits = &text[start + 6..];
    let end = digits
        .find(|c: char| !c.is_ascii_hexdigit())
        .unwrap_or(digits.len());
    let head = text[..start]
        .strip_suffix(" object")
        .unwrap_or(&text[..start]);
    format!("{head}{}", &digits[end..])
}

fn shorten(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        text.to_owned()
    } else {
        let mut short: String = text.chars().take(max_chars).collect();
        short.push('…');
        short
    }
}

/// A column or key name: bare when it reads unambiguously, else quoted.
fn column_name(name: &Value) -> String {
    match name {
        Value::String(text)
            if !text.is_empty()
                && !text
                    .chars()
                    .any(|c| c.is_whitespace() || ",:;'\"[]{}()=…".contains(c)) =>
        {
            text.clone()
        }
        other => scalar(other, Strings::Quoted),
    }
}

/// A float with at most 6 significant digits (`1720.2`, `0.42`, `80.0`, `1.5e-07`).
fn short_float(f: f64) -> String {
    if !f.is_finite() {
        return python_float_repr(f);
    }
    if f == 0.0 {
        return "0.0".into();
    }
    let magnitude = f.abs().log10().floor() as i32;
    if !(-5..16).contains(&magnitude) {
        let text = format!("{f:.5e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        return format!("{mantissa}e{exponent}");
    }
    let decimals = (5 - magnitude).max(0) as usize;
    let text = format!("{f:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').to_owned()
    } else {
        text
    };
    if text.ends_with('.') || !text.contains('.') {
        format!("{}.0", text.trim_end_matches('.'))
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_short() {
        assert_eq!(short_float(1720.2008799963187), "1720.2");
        assert_eq!(short_float(0.42), "0.42");
        assert_eq!(short_float(80.0), "80.0");
        assert_eq!(short_float(-0.9344020153282238), "-0.934402");
        assert_eq!(short_float(0.9999999999999999), "1.0");
        assert_eq!(short_float(1.5e-7), "1.5e-7");
        assert_eq!(short_float(123456789.0), "123456789.0");
    }
}
