//! Python's `pprint.pformat` (width 80, sorted keys, not compact) of JSON values, to render
//! facts in CRANE-LLM's prompt format and compare sizes.

use serde_json::Value;

use crate::crane::to_crane;
use crate::model::RuntimeInfo;

/// Python's `repr` of a `str`, also for the compact rendering and the CRANE adapter.
use crane_analysis::{python_float_repr, python_repr};

const WIDTH: usize = 80;

/// A Python value as `pprint` sees it.
enum Py {
    Literal(String),
    Str(String),
    List(Vec<Py>),
    Tuple(Vec<Py>),
    Dict(Vec<(String, Py)>),
}

/// `pprint.pformat(value)` of a JSON value (objects as dicts, arrays as lists).
pub fn pformat(value: &Value) -> String {
    format_py(&plain(value))
}

/// The facts in the paper's format: `pprint` of CRANE-LLM's dict layout (see [`to_crane`]).
pub fn render_paper(info: &RuntimeInfo) -> String {
    pformat_crane(&to_crane(info))
}

/// `pprint.pformat` of a CRANE-LLM `crane_runtime_info` object, with the paper's Python types
/// restored where JSON lost them: tuples for shapes and ranges, `torch.Size` for batch shapes,
/// `nan`/`inf` for non-finite numbers.
pub fn pformat_crane(info: &Value) -> String {
    format_py(&crane_py(info, None, false))
}

fn format_py(py: &Py) -> String {
    let mut out = String::new();
    format(py, 0, 0, 0, &mut out);
    out
}

fn plain(value: &Value) -> Py {
    match value {
        Value::Array(items) => Py::List(items.iter().map(plain).collect()),
        Value::Object(map) => Py::Dict(
            map.iter()
                .map(|(key, value)| (key.clone(), plain(value)))
                .collect(),
        ),
        scalar => scalar_py(scalar),
    }
}

fn scalar_py(value: &Value) -> Py {
    match value {
        Value::Null => Py::Literal("None".into()),
        Value::Bool(true) => Py::Literal("True".into()),
        Value::Bool(false) => Py::Literal("False".into()),
        Value::Number(n) => Py::Literal(match n.as_f64() {
            Some(f) if n.is_f64() => python_float_repr(f),
            _ => n.to_string(),
        }),
        Value::String(s) => Py::Str(s.clone()),
        Value::Array(_) | Value::Object(_) => plain(value),
    }
}

const TUPLE_KEYS: [&str; 5] = [
    "value_range",
    "shape",
    "image_shape",
    "target_size",
    "dataset_shape",
];

fn crane_py(value: &Value, key: Option<&str>, numeric: bool) -> Py {
    match value {
        Value::Array(items) if key == Some("torch.Size") => Py::Literal(format!(
            "torch.Size([{}])",
            items
                .iter()
                .map(|item| repr(&scalar_py(item)))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Value::Array(items) => {
            let tuple = key.is_some_and(|key| TUPLE_KEYS.contains(&key));
            let numeric = key == Some("value_range");
            let items = items
                .iter()
                .map(|item| crane_py(item, None, numeric))
                .collect();
            if tuple {
                Py::Tuple(items)
            } else {
                Py::List(items)
            }
        }
        Value::Object(map) => {
            let float_value = map
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.contains("float"));
            Py::Dict(
                map.iter()
                    .map(|(k, v)| {
                        let child_key = match key {
                            Some("batch_shapes") => "torch.Size",
                            _ => k.as_str(),
                        };
                        let numeric = k == "value" && float_value;
                        (k.clone(), crane_py(v, Some(child_key), numeric))
                    })
                    .collect(),
            )
        }
        Value::String(s) if numeric => match s.as_str() {
            "NaN" => Py::Literal("nan".into()),
            "inf" | "-inf" => Py::Literal(s.clone()),
            _ => Py::Str(s.clone()),
        },
        scalar => scalar_py(scalar),
    }
}

fn repr(py: &Py) -> String {
    match py {
        Py::Literal(text) => text.clone(),
        Py::Str(s) => python_repr(s),
        Py::List(items) => format!("[{}]", join_reprs(items)),
        Py::Tuple(items) if items.len() == 1 => format!("({},)", repr(&items[0])),
        Py::Tuple(items) => format!("({})", join_reprs(items)),
        Py::Dict(entries) => {
            let items: Vec<String> = sorted(entries)
                .into_iter()
                .map(|(key, value)| format!("{}: {}", python_repr(key), repr(value)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

fn join_reprs(items: &[Py]) -> String {
    items.iter().map(repr).collect::<Vec<_>>().join(", ")
}

fn sorted(entries: &[(String, Py)]) -> Vec<&(String, Py)> {
    let mut entries: Vec<&(String, Py)> = entries.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries
}

fn width_of(text: &str) -> usize {
    text.chars().count()
}

fn format(py: &Py, indent: usize, allowance: usize, level: usize, out: &mut String) {
    let rep = repr(py);
    let max_width = WIDTH as isize - indent as isize - allowance as isize;
    if width_of(&rep) as isize <= max_width {
        out.push_str(&rep);
        return;
    }
    let level = level + 1;
    match py {
        Py::Dict(entries) => {
            out.push('{');
            format_dict_items(&sorted(entries), indent, allowance + 1, level, out);
            out.push('}');
        }
        Py::List(items) => {
            out.push('[');
            format_items(items, indent, allowance + 1, level, out);
            out.push(']');
        }
        Py::Tuple(items) => {
            let end = if items.len() == 1 { ",)" } else { ")" };
            out.push('(');
            format_items(items, indent, allowance + end.len(), level, out);
            out.push_str(end);
        }
        Py::Str(s) => format_str(s, indent, allowance, level, out),
        Py::Literal(_) => out.push_str(&rep),
    }
}

fn format_dict_items(
    entries: &[&(String, Py)],
    indent: usize,
    allowance: usize,
    level: usize,
    out: &mut String,
) {
    let indent = indent + 1;
    for (i, (key, value)) in entries.iter().enumerate() {
        let last = i + 1 == entries.len();
        let key_repr = python_repr(key);
        out.push_str(&key_repr);
        out.push_str(": ");
        let child_allowance = if last { allowance } else { 1 };
        format(
            value,
            indent + width_of(&key_repr) + 2,
            child_allowance,
            level,
            out,
        );
        if !last {
            out.push_str(",\n");
            out.push_str(&" ".repeat(indent));
        }
    }
}

fn format_items(items: &[Py], indent: usize, allowance: usize, level: usize, out: &mut String) {
    let indent = indent + 1;
    for (i, item) in items.iter().enumerate() {
        let last = i + 1 == items.len();
        if i > 0 {
            out.push_str(",\n");
            out.push_str(&" ".repeat(indent));
        }
        format(item, indent, if last { allowance } else { 1 }, level, out);
    }
}

/// `PrettyPrinter._pprint_str`: a long string as adjacent literals split after whitespace.
fn format_str(s: &str, indent: usize, allowance: usize, level: usize, out: &mut String) {
    let (indent, allowance) = if level == 1 {
        (indent + 1, allowance + 1)
    } else {
        (indent, allowance)
    };
    let max_width = WIDTH as isize - indent as isize;
    let lines = split_lines_keep_ends(s);
    let mut chunks: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let last_line = i + 1 == lines.len();
        let rep = python_repr(line);
        let max_width1 = if last_line {
            max_width - allowance as isize
        } else {
            max_width
        };
        if width_of(&rep) as isize <= max_width1 {
            chunks.push(rep);
            continue;
        }
        let parts = word_parts(line);
        let mut current = String::new();
        for (j, part) in parts.iter().enumerate() {
            let candidate = format!("{current}{part}");
            let max_width2 = if j + 1 == parts.len() && last_line {
                max_width - allowance as isize
            } else {
                max_width
            };
            if width_of(&python_repr(&candidate)) as isize > max_width2 {
                if !current.is_empty() {
                    chunks.push(python_repr(&current));
                }
                current = (*part).to_owned();
            } else {
                current = candidate;
            }
        }
        if !current.is_empty() {
            chunks.push(python_repr(&current));
        }
    }
    if chunks.len() == 1 {
        out.push_str(&chunks[0]);
        return;
    }
    if level == 1 {
        out.push('(');
    }
    for (i, chunk) in chunks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
        }
        out.push_str(chunk);
    }
    if level == 1 {
        out.push(')');
    }
}

/// `str.splitlines(keepends=True)`.
fn split_lines_keep_ends(s: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let is_break = matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !is_break {
            continue;
        }
        let mut end = i + c.len_utf8();
        if c == '\r' {
            if let Some(&(j, '\n')) = chars.peek() {
                end = j + 1;
                chars.next();
            }
        }
        lines.push(&s[start..end]);
        start = end;
    }
    if start < s.len() {
        lines.push(&s[start..]);
    }
    lines
}

/// `re.findall(r'\S*\s*', line)` without the final empty match.
fn word_parts(line: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    for (i, c) in line.char_indices() {
        let space = c.is_whitespace();
        if !space && in_space {
            parts.push(&line[start..i]);
            start = i;
        }
        in_space = space;
    }
    if start < line.len() {
        parts.push(&line[start..]);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_structures_wrap_at_80_columns() {
        let value = json!({"b": {"shape": [1, 2]}, "a": list_of(30)});
        let expected = "{'a': [0,\n       1,\n       2,";
        let text = pformat(&value);
        assert!(text.starts_with(expected), "{text}");
        assert!(
            text.ends_with("       29],\n 'b': {'shape': [1, 2]}}"),
            "{text}"
        );
        assert_eq!(pformat(&json!({"x": 1})), "{'x': 1}");
    }

    fn list_of(n: i64) -> Value {
        Value::Array((0..n).map(Value::from).collect())
    }
}
