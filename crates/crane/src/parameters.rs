//! papermill's notebook parameters: `-p NAME VALUE` (typed as papermill types it), `-r NAME
//! VALUE` (always a string), `-b BASE64`, `-f FILE` and `-y YAML` (YAML mappings), merged in
//! papermill's order (base64, files, YAML strings, `-p`, `-r`; later names win, first
//! position kept), rendered as the
//! Python cell papermill injects (`# Parameters` then `name = value` lines, values translated as
//! papermill's PythonTranslator does) and placed where papermill places it: replacing an
//! `injected-parameters` cell, else after the first cell tagged `parameters`, else first.

use std::path::Path;

use anyhow::{anyhow, Context};
use crane_notebook::{CellKind, NewCell, Notebook};
use serde_json::{json, Map, Value};
use yaml_rust2::{Yaml, YamlLoader};

/// A parameter value, as Python will see it.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    None,
    Bool(bool),
    /// The canonical decimal digits of an int of any size.
    Int(String),
    Float(f64),
    Str(String),
    List(Vec<Param>),
    Dict(Vec<(String, Param)>),
}

/// The parameters in the order their names first appeared.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parameters(Vec<(String, Param)>);

impl Parameters {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn set(&mut self, name: String, value: Param) {
        match self.0.iter_mut().find(|(known, _)| *known == name) {
            Some((_, slot)) => *slot = value,
            None => self.0.push((name, value)),
        }
    }

    /// Merges the command line's parameters in papermill's order.
    pub fn from_cli(
        typed: &[String],
        raw: &[String],
        base64: &[String],
        files: &[impl AsRef<Path>],
        yaml: &[String],
    ) -> anyhow::Result<Self> {
        use base64::Engine;
        let mut parameters = Parameters::default();
        for encoded in base64 {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .map_err(|err| anyhow!("-b {encoded} is not base64: {err}"))?;
            let text = String::from_utf8(bytes)
                .map_err(|_| anyhow!("-b {encoded} does not decode to UTF-8 text"))?;
            parameters.merge_yaml(&text, "-b")?;
        }
        for file in files {
            let file = file.as_ref();
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read parameters file {}", file.display()))?;
            parameters.merge_yaml(&text, &file.display().to_string())?;
        }
        for text in yaml {
            parameters.merge_yaml(text, "-y")?;
        }
        for pair in typed.chunks(2) {
            if let [name, value] = pair {
                parameters.set(name.clone(), resolve_type(value));
            }
        }
        for pair in raw.chunks(2) {
            if let [name, value] = pair {
                parameters.set(name.clone(), Param::Str(value.clone()));
            }
        }
        Ok(parameters)
    }

    fn merge_yaml(&mut self, text: &str, origin: &str) -> anyhow::Result<()> {
        let documents = YamlLoader::load_from_str(text)
            .map_err(|err| anyhow!("parameters in {origin} are not YAML: {err}"))?;
        match documents.into_iter().next() {
            None | Some(Yaml::Null) => Ok(()),
            Some(Yaml::Hash(hash)) => {
                for (key, value) in hash {
                    self.set(yaml_key(&key, origin)?, from_yaml(value, origin)?);
                }
                Ok(())
            }
            Some(_) => Err(anyhow!(
                "parameters in {origin} must be a YAML mapping of names to values"
            )),
        }
    }

    /// The injected cell's source, as papermill's PythonTranslator writes it (without Black,
    /// which papermill applies only when it is installed).
    pub fn python_source(&self) -> String {
        let mut source = String::from("# Parameters\n");
        for (name, value) in &self.0 {
            source.push_str(&format!("{name} = {}\n", translate(value)));
        }
        source
    }

    /// The parameters as JSON, for the output notebook's metadata.
    pub fn to_json(&self) -> Value {
        Value::Object(
            self.0
                .iter()
                .map(|(name, value)| (name.clone(), param_json(value)))
                .collect(),
        )
    }

    /// Puts the injected-parameters cell where papermill puts it.
    pub fn inject(&self, notebook: &mut Notebook) -> anyhow::Result<()> {
        let tagged = |tag: &str| {
            notebook
                .code_cells()
                .iter()
                .find(|cell| cell.tags.iter().any(|t| t == tag))
                .map(|cell| cell.position)
        };
        let position = match (tagged("injected-parameters"), tagged("parameters")) {
            (Some(injected), _) => {
                notebook.remove_cell(injected)?;
                injected
            }
            (None, Some(parameters)) => parameters + 1,
            (None, None) => 0,
        };
        let mut metadata = Map::new();
        metadata.insert("tags".into(), json!(["injected-parameters"]));
        notebook.insert_cell(
            position,
            NewCell {
                kind: CellKind::Code,
                source: self.python_source(),
                metadata,
            },
        )?;
        Ok(())
    }
}

/// papermill's `_resolve_type`: `True`, `False`, `None`, then whatever `int()`, then
/// `float()` accepts, else the string itself.
fn resolve_type(value: &str) -> Param {
    match value {
        "True" => return Param::Bool(true),
        "False" => return Param::Bool(false),
        "None" => return Param::None,
        _ => {}
    }
    if let Some(digits) = python_int(value) {
        return Param::Int(digits);
    }
    if let Some(float) = python_float(value) {
        return Param::Float(float);
    }
    Param::Str(value.to_owned())
}

/// What Python's `int(text)` reads, as canonical digits: surrounding whitespace, a sign,
/// and digits with single underscores between them.
fn python_int(text: &str) -> Option<String> {
    let text = text.trim();
    let (negative, digits) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let digits = without_digit_underscores(digits)?;
    let trimmed = digits.trim_start_matches('0');
    let canonical = if trimmed.is_empty() { "0" } else { trimmed };
    Some(if negative && canonical != "0" {
        format!("-{canonical}")
    } else {
        canonical.to_owned()
    })
}

/// `text` without the underscores Python allows between digits; `None` unless it is all
/// ASCII digits once they are gone.
fn without_digit_underscores(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    if bytes.is_empty() || !bytes[0].is_ascii_digit() || !bytes[bytes.len() - 1].is_ascii_digit() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    for (i, &byte) in bytes.iter().enumerate() {
        match byte {
            b'0'..=b'9' => out.push(byte as char),
            b'_' if bytes[i - 1].is_ascii_digit() && bytes[i + 1].is_ascii_digit() => {}
            _ => return None,
        }
    }
    Some(out)
}

/// What Python's `float(text)` reads (decimal and exponent forms, `inf`, `infinity`, `nan`
/// in any case, underscores between digits).
fn python_float(text: &str) -> Option<f64> {
    let text = text.trim();
    let lowered = text.to_ascii_lowercase();
    let unsigned = lowered.trim_start_matches(['+', '-']);
    if matches!(unsigned, "inf" | "infinity" | "nan") {
        return lowered.parse().ok();
    }
    let bytes = text.as_bytes();
    let mut cleaned = String::with_capacity(text.len());
    for (i, &byte) in bytes.iter().enumerate() {
        match byte {
            b'_' => {
                let between = i > 0
                    && i + 1 < bytes.len()
                    && bytes[i - 1].is_ascii_digit()
                    && bytes[i + 1].is_ascii_digit();
                if !between {
                    return None;
                }
            }
            b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-' => cleaned.push(byte as char),
            _ => return None,
        }
    }
    cleaned.parse().ok()
}

fn yaml_key(key: &Yaml, origin: &str) -> anyhow::Result<String> {
    match key {
        Yaml::String(text) | Yaml::Real(text) => Ok(text.clone()),
        Yaml::Integer(number) => Ok(number.to_string()),
        Yaml::Boolean(flag) => Ok(if *flag { "True" } else { "False" }.into()),
        _ => Err(anyhow!("a parameter name in {origin} is not a plain value")),
    }
}

fn from_yaml(value: Yaml, origin: &str) -> anyhow::Result<Param> {
    Ok(match value {
        Yaml::Null => Param::None,
        Yaml::Boolean(flag) => Param::Bool(flag),
        Yaml::Integer(number) => Param::Int(number.to_string()),
        Yaml::Real(text) => match value_of_real(&text) {
            Some(float) => Param::Float(float),
            None => Param::Str(text),
        },
        Yaml::String(text) => Param::Str(text),
        Yaml::Array(items) => Param::List(
            items
                .into_iter()
                .map(|item| from_yaml(item, origin))
                .collect::<anyhow::Result<_>>()?,
        ),
        Yaml::Hash(hash) => Param::Dict(
            hash.into_iter()
                .map(|(key, value)| Ok((yaml_key(&key, origin)?, from_yaml(value, origin)?)))
                .collect::<anyhow::Result<_>>()?,
        ),
        Yaml::Alias(_) | Yaml::BadValue => {
            return Err(anyhow!(
                "a parameter in {origin} has a value YAML cannot read"
            ))
        }
    })
}

/// A YAML float (`1.5`, `1e3`, `.inf`, `-.inf`, `.nan`).
fn value_of_real(text: &str) -> Option<f64> {
    match text.to_ascii_lowercase().as_str() {
        ".inf" | "+.inf" => Some(f64::INFINITY),
        "-.inf" => Some(f64::NEG_INFINITY),
        ".nan" => Some(f64::NAN),
        other => other.parse().ok(),
    }
}

/// PythonTranslator.translate.
fn translate(value: &Param) -> String {
    match value {
        Param::None => "None".into(),
        Param::Bool(flag) => if *flag { "True" } else { "False" }.into(),
        Param::Int(digits) => digits.clone(),
        Param::Float(float) if float.is_nan() => "float('nan')".into(),
        Param::Float(float) if float.is_infinite() => if *float < 0.0 {
            "float('-inf')"
        } else {
            "float('inf')"
        }
        .into(),
        Param::Float(float) => crane_analysis::python_float_repr(*float),
        Param::Str(text) => translate_str(text),
        Param::List(items) => format!(
            "[{}]",
            items.iter().map(translate).collect::<Vec<_>>().join(", ")
        ),
        Param::Dict(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(key, value)| format!("{}: {}", translate_str(key), translate(value)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `'"' + text.encode('unicode_escape').decode('utf-8').replace('"', '\\"') + '"'`.
fn translate_str(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '"' => out.push_str("\\\""),
            ' '..='~' => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

fn param_json(value: &Param) -> Value {
    match value {
        Param::None => Value::Null,
        Param::Bool(flag) => json!(flag),
        Param::Int(digits) => digits
            .parse::<i64>()
            .map_or_else(|_| json!(digits), |number| json!(number)),
        Param::Float(float) => serde_json::Number::from_f64(*float)
            .map_or_else(|| json!(translate(value)), Value::Number),
        Param::Str(text) => json!(text),
        Param::List(items) => Value::Array(items.iter().map(param_json).collect()),
        Param::Dict(entries) => Value::Object(
            entries
                .iter()
                .map(|(key, value)| (key.clone(), param_json(value)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_values_are_typed_as_papermill_types_them() {
        assert_eq!(resolve_type("True"), Param::Bool(true));
        assert_eq!(resolve_type("None"), Param::None);
        assert_eq!(resolve_type(" 0_07 "), Param::Int("7".into()));
        assert_eq!(resolve_type("-0"), Param::Int("0".into()));
        assert_eq!(resolve_type("1e3"), Param::Float(1000.0));
        assert_eq!(resolve_type("1_0"), Param::Int("10".into()));
        assert_eq!(resolve_type("1__0"), Param::Str("1__0".into()));
        assert_eq!(resolve_type("true"), Param::Str("true".into()));
        assert_eq!(translate(&resolve_type("-Infinity")), "float('-inf')");
        assert_eq!(translate(&resolve_type("0.1")), "0.1");
    }

    #[test]
    fn strings_are_escaped_as_unicode_escape_then_quotes() {
        assert_eq!(translate_str("a\"b\\c\n"), r#""a\"b\\c\n""#);
        assert_eq!(translate_str("é€😀'"), r#""\xe9\u20ac\U0001f600'""#);
    }
}
