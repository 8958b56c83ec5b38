//! One expression's line: its type, shape, dtype and facts in a fixed order, numbers and
//! strings written short, at the detail the budget leaves.

use super::*;

pub(super) fn render_variable(
    expression: &str,
    variable: &Variable,
    detail: Detail,
) -> (String, bool) {
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
