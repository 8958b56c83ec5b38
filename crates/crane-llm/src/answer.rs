//! The answer schema and its reader: `detection` and `reasoning` as in the paper, plus crane's
//! optional `exception`, `line`, `confidence` and `evidence`. Providers with structured output
//! get the JSON schema; other answers are read with repair of near-JSON (code fences, text
//! around the object, Python literals and quotes, trailing commas). An answer that still cannot
//! be read is an [`AnswerError`] holding the raw text, never a silent `false`.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// One model answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// True when the model predicts that the target cell crashes.
    pub detection: bool,
    pub reasoning: String,
    /// Predicted exception class, e.g. `KeyError`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
    /// Predicted crashing line, 1-based within the target cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The model's confidence in `detection`, in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// The runtime facts the model relied on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    /// The repairs that were needed to read the raw text; empty for well-formed JSON.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<Repair>,
}

/// A correction applied to near-JSON before it could be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Repair {
    /// The object was wrapped in a Markdown code fence.
    CodeFence,
    /// Text stood before or after the object.
    SurroundingText,
    /// The answer was a JSON string holding the object.
    DoubleEncoded,
    /// Python `True`/`False`/`None` instead of JSON literals.
    PythonLiterals,
    /// Python single-quoted strings.
    SingleQuotes,
    /// A comma before a closing bracket.
    TrailingComma,
    /// `detection` given as a string such as `"True"` or `"yes"`.
    DetectionAsString,
    /// `evidence` given as one string instead of a list.
    EvidenceAsString,
}

/// Which fields an answer is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerSchema {
    /// The paper's `{reasoning, detection}`.
    Paper,
    /// The paper's fields plus `exception`, `line`, `confidence`, `evidence`.
    Crane,
}

impl AnswerSchema {
    /// The JSON schema sent to providers with structured output. Every property is required
    /// and optional facts are nullable, as OpenAI's strict mode demands.
    pub fn json_schema(self) -> Value {
        match self {
            AnswerSchema::Paper => json!({
                "type": "object",
                "properties": {
                    "reasoning": {"type": "string"},
                    "detection": {"type": "boolean"}
                },
                "required": ["reasoning", "detection"],
                "additionalProperties": false
            }),
            AnswerSchema::Crane => json!({
                "type": "object",
                "properties": {
                    "reasoning": {"type": "string"},
                    "detection": {"type": "boolean"},
                    "exception": {"type": ["string", "null"]},
                    "line": {"type": ["integer", "null"]},
                    "confidence": {"type": ["number", "null"]},
                    "evidence": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["reasoning", "detection", "exception", "line", "confidence", "evidence"],
                "additionalProperties": false
            }),
        }
    }

    /// The schema's name in structured-output requests (OpenAI allows `[A-Za-z0-9_-]`).
    pub fn name(self) -> &'static str {
        match self {
            AnswerSchema::Paper => "crash_detection",
            AnswerSchema::Crane => "crane_crash_detection",
        }
    }
}

/// An answer that could not be read even after repair.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unreadable answer: {kind} (raw answer: {})", Excerpt(raw))]
pub struct AnswerError {
    /// The text exactly as the model returned it.
    pub raw: String,
    pub kind: AnswerErrorKind,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnswerErrorKind {
    #[error("the answer is empty")]
    Empty,
    #[error("no JSON object could be read ({0})")]
    NotJson(String),
    #[error("the JSON does not follow the answer schema: {0}")]
    SchemaViolation(String),
}

struct Excerpt<'a>(&'a str);

impl fmt::Display for Excerpt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const LIMIT: usize = 300;
        match self.0.char_indices().nth(LIMIT) {
            Some((cut, _)) => write!(f, "{:?}… ({} bytes)", &self.0[..cut], self.0.len()),
            None => write!(f, "{:?}", self.0),
        }
    }
}

/// Reads one answer, repairing near-JSON where needed.
pub fn parse_answer(raw: &str) -> Result<Answer, AnswerError> {
    let mut repairs = Vec::new();
    read_answer(raw, &mut repairs, true)
        .map(|mut answer| {
            answer.repairs = repairs;
            answer
        })
        .map_err(|kind| AnswerError {
            raw: raw.to_string(),
            kind,
        })
}

fn read_answer(
    text: &str,
    repairs: &mut Vec<Repair>,
    may_unwrap_string: bool,
) -> Result<Answer, AnswerErrorKind> {
    let text = text.trim();
    if text.is_empty() {
        return Err(AnswerErrorKind::Empty);
    }
    let value = match serde_json::from_str::<Value>(text) {
        Ok(value) => value,
        Err(_) => read_near_json(text, repairs)?,
    };
    match value {
        Value::Object(fields) => validate(fields, repairs),
        Value::String(inner) if may_unwrap_string => {
            repairs.push(Repair::DoubleEncoded);
            read_answer(&inner, repairs, false)
        }
        other => Err(AnswerErrorKind::SchemaViolation(format!(
            "expected a JSON object, found {}",
            json_kind(&other)
        ))),
    }
}

fn read_near_json(text: &str, repairs: &mut Vec<Repair>) -> Result<Value, AnswerErrorKind> {
    let mut text = text;
    if let Some(inner) = fenced_block(text) {
        repairs.push(Repair::CodeFence);
        text = inner;
    }
    let (object, surrounded) = balanced_object(text)
        .ok_or_else(|| AnswerErrorKind::NotJson("no `{...}` object in the text".to_string()))?;
    if surrounded {
        repairs.push(Repair::SurroundingText);
    }
    if let Ok(value) = serde_json::from_str(object) {
        return Ok(value);
    }
    let normalised = normalise_python_like(object);
    repairs.extend(normalised.repairs);
    serde_json::from_str(&normalised.text).map_err(|err| AnswerErrorKind::NotJson(err.to_string()))
}

/// The body of the first Markdown code fence, if the text has one.
fn fenced_block(text: &str) -> Option<&str> {
    let start = text.find("```")?;
    let after_ticks = &text[start + 3..];
    let body_start = after_ticks.find('\n')? + 1;
    let body = &after_ticks[body_start..];
    let end = body.find("```").unwrap_or(body.len());
    Some(&body[..end])
}

/// The first balanced `{...}` in `text` (quotes of both kinds respected), and whether other
/// non-blank text surrounds it.
fn balanced_object(text: &str) -> Option<(&str, bool)> {
    let start = text.find('{')?;
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (offset, c) in text[start..].char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    let end = start + offset + 1;
                    let surrounded =
                        !text[..start].trim().is_empty() || !text[end..].trim().is_empty();
                    return Some((&text[start..end], surrounded));
                }
            }
            _ => {}
        }
    }
    None
}

struct Normalised {
    text: String,
    repairs: Vec<Repair>,
}

/// Rewrites a Python-dict-like object as JSON: single-quoted strings, `True`/`False`/`None`,
/// trailing commas.
fn normalise_python_like(object: &str) -> Normalised {
    let mut out = String::with_capacity(object.len());
    let mut repairs = Vec::new();
    let note = |repair: Repair, repairs: &mut Vec<Repair>| {
        if !repairs.contains(&repair) {
            repairs.push(repair);
        }
    };
    let chars: Vec<char> = object.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' => {
                let end = string_end(&chars, i, '"');
                out.extend(&chars[i..end]);
                i = end;
            }
            '\'' => {
                note(Repair::SingleQuotes, &mut repairs);
                let end = string_end(&chars, i, '\'');
                out.push('"');
                let body_end = if end > i + 1 && chars[end - 1] == '\'' {
                    end - 1
                } else {
                    end
                };
                let mut j = i + 1;
                while j < body_end {
                    match chars[j] {
                        '\\' if j + 1 < body_end && chars[j + 1] == '\'' => {
                            out.push('\'');
                            j += 2;
                            continue;
                        }
                        '\\' if j + 1 < body_end => {
                            out.push('\\');
                            out.push(chars[j + 1]);
                            j += 2;
                            continue;
                        }
                        '"' => out.push_str("\\\""),
                        other => out.push(other),
                    }
                    j += 1;
                }
                out.push('"');
                i = end;
            }
            ',' => {
                let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
                if matches!(next, Some('}') | Some(']')) {
                    note(Repair::TrailingComma, &mut repairs);
                } else {
                    out.push(',');
                }
                i += 1;
            }
            c if c.is_ascii_alphabetic() => {
                let end = (i..chars.len())
                    .find(|&j| !chars[j].is_ascii_alphanumeric() && chars[j] != '_')
                    .unwrap_or(chars.len());
                let word: String = chars[i..end].iter().collect();
                let replacement = match word.as_str() {
                    "True" => Some("true"),
                    "False" => Some("false"),
                    "None" => Some("null"),
                    _ => None,
                };
                match replacement {
                    Some(json_word) => {
                        note(Repair::PythonLiterals, &mut repairs);
                        out.push_str(json_word);
                    }
                    None => out.push_str(&word),
                }
                i = end;
            }
            other => {
                out.push(other);
                i += 1;
            }
        }
    }
    Normalised { text: out, repairs }
}

/// Index just past the string literal opening at `start`.
fn string_end(chars: &[char], start: usize, quote: char) -> usize {
    let mut j = start + 1;
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 2,
            c if c == quote => return j + 1,
            _ => j += 1,
        }
    }
    chars.len()
}

fn validate(
    mut fields: Map<String, Value>,
    repairs: &mut Vec<Repair>,
) -> Result<Answer, AnswerErrorKind> {
    let violation = |message: String| AnswerErrorKind::SchemaViolation(message);
    let detection = match fields.remove("detection") {
        Some(Value::Bool(detection)) => detection,
        Some(Value::String(text)) => {
            let detection = match text.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" => true,
                "false" | "no" => false,
                _ => {
                    return Err(violation(format!(
                        "`detection` is the string {text:?}, not a boolean"
                    )))
                }
            };
            repairs.push(Repair::DetectionAsString);
            detection
        }
        Some(other) => {
            return Err(violation(format!(
                "`detection` is {}, not a boolean",
                json_kind(&other)
            )))
        }
        None => return Err(violation("`detection` is missing".to_string())),
    };
    let reasoning = match fields.remove("reasoning") {
        Some(Value::String(reasoning)) => reasoning,
        Some(other) => {
            return Err(violation(format!(
                "`reasoning` is {}, not a string",
                json_kind(&other)
            )))
        }
        None => return Err(violation("`reasoning` is missing".to_string())),
    };
    let exception = match fields.remove("exception") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) if name.trim().is_empty() => None,
        Some(Value::String(name)) => Some(name.trim().to_string()),
        Some(other) => {
            return Err(violation(format!(
                "`exception` is {}, not a string",
                json_kind(&other)
            )))
        }
    };
    let line = match fields.remove("line") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(line) if line >= 1 => Some(line),
            _ => {
                return Err(violation(format!(
                    "`line` is {n}, not a line number (1 or more)"
                )))
            }
        },
        Some(other) => {
            return Err(violation(format!(
                "`line` is {}, not an integer",
                json_kind(&other)
            )))
        }
    };
    let confidence = match fields.remove("confidence") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(c) if (0.0..=1.0).contains(&c) => Some(c),
            _ => return Err(violation(format!("`confidence` is {n}, outside [0, 1]"))),
        },
        Some(other) => {
            return Err(violation(format!(
                "`confidence` is {}, not a number",
                json_kind(&other)
            )))
        }
    };
    let evidence = match fields.remove("evidence") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(fact)) => {
            repairs.push(Repair::EvidenceAsString);
            vec![fact]
        }
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                Value::String(fact) => Ok(fact),
                other => Err(violation(format!(
                    "an `evidence` item is {}, not a string",
                    json_kind(&other)
                ))),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(violation(format!(
                "`evidence` is {}, not a list of strings",
                json_kind(&other)
            )))
        }
    };
    Ok(Answer {
        detection,
        reasoning,
        exception,
        line,
        confidence,
        evidence,
        repairs: Vec::new(),
    })
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_well_formed_answers_without_repair() {
        let answer =
            parse_answer(r#"{"reasoning": "df has no column 'x'", "detection": true}"#).unwrap();
        assert!(answer.detection);
        assert_eq!(answer.reasoning, "df has no column 'x'");
        assert!(answer.repairs.is_empty());

        let full = parse_answer(
            r#"{"reasoning":"r","detection":true,"exception":"KeyError","line":3,"confidence":0.9,"evidence":["df columns: a, b"]}"#,
        )
        .unwrap();
        assert_eq!(full.exception.as_deref(), Some("KeyError"));
        assert_eq!(full.line, Some(3));
        assert_eq!(full.confidence, Some(0.9));
        assert_eq!(full.evidence, vec!["df columns: a, b".to_string()]);
    }

    #[test]
    fn repairs_fences_text_and_python_literals() {
        let answer = parse_answer(
            "Here is my answer:\n```json\n{'reasoning': 'it\\'s fine, \"ok\"', 'detection': False, 'exception': None,}\n```\nThanks",
        )
        .unwrap();
        assert!(!answer.detection);
        assert_eq!(answer.reasoning, "it's fine, \"ok\"");
        assert_eq!(answer.exception, None);
        for repair in [
            Repair::CodeFence,
            Repair::SingleQuotes,
            Repair::PythonLiterals,
            Repair::TrailingComma,
        ] {
            assert!(
                answer.repairs.contains(&repair),
                "{repair:?} in {:?}",
                answer.repairs
            );
        }

        let trailing =
            parse_answer(r#"{"reasoning": "x", "detection": "True"} I hope this helps."#).unwrap();
        assert!(trailing.detection);
        assert_eq!(
            trailing.repairs,
            vec![Repair::SurroundingText, Repair::DetectionAsString]
        );

        let encoded = parse_answer(r#""{\"reasoning\": \"x\", \"detection\": false}""#).unwrap();
        assert_eq!(encoded.repairs, vec![Repair::DoubleEncoded]);
    }

    #[test]
    fn python_literal_words_inside_strings_are_kept() {
        let answer =
            parse_answer("{'reasoning': 'returns None when True', 'detection': True}").unwrap();
        assert_eq!(answer.reasoning, "returns None when True");
        assert!(answer.detection);
    }

    #[test]
    fn unreadable_answers_keep_the_raw_text() {
        let cases = [
            ("   ", "empty"),
            ("I think it crashes.", "no JSON object"),
            (
                "{\"reasoning\": \"x\", \"detection\": tru",
                "no JSON object",
            ),
            (r#"{"reasoning": "x"}"#, "`detection` is missing"),
            (
                r#"{"reasoning": "x", "detection": "maybe"}"#,
                "not a boolean",
            ),
            (
                r#"{"reasoning": 3, "detection": true}"#,
                "`reasoning` is a number",
            ),
            (
                r#"{"reasoning": "x", "detection": true, "confidence": 1.5}"#,
                "outside [0, 1]",
            ),
            (
                r#"{"reasoning": "x", "detection": true, "line": 0}"#,
                "not a line number",
            ),
            ("[true]", "expected a JSON object"),
        ];
        for (raw, message) in cases {
            let err = parse_answer(raw).unwrap_err();
            assert_eq!(err.raw, raw);
            assert!(
                err.to_string().contains(message),
                "{err} should mention {message}"
            );
        }
    }

    #[test]
    fn schemas_require_their_fields() {
        let paper = AnswerSchema::Paper.json_schema();
        assert_eq!(paper["required"], json!(["reasoning", "detection"]));
        let crane = AnswerSchema::Crane.json_schema();
        assert_eq!(crane["required"].as_array().unwrap().len(), 6);
        assert_eq!(crane["additionalProperties"], json!(false));
    }
}
