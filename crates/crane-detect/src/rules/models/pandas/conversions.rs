//! Literals and conversions: the frame a constant `pd.DataFrame({...})` builds (its columns,
//! rows and dtypes), and PD009 for a numeric conversion (`astype(int)`, `pd.to_numeric`) of a
//! series holding a value Python's `int()`/`float()` rejects.

use crane_analysis::Constant;
use crane_runtime::{Column, ColumnName, Kind, Variable};
use serde_json::{json, Value as Json};

use super::labels::{holds_only_strings, seen_text};
use super::FRAME_TYPE;
use crate::rules::core::interp::{Args, Interp};
use crate::rules::core::value::{Obj, Value};
use crate::rules::models::facts::column_json;
use crate::rules::RuleCode;

/// `pd.DataFrame({'a': [...], 'b': [...]})` with constant data: its columns and rows.
pub(super) fn frame_literal(interp: &mut Interp, args: &Args) -> Option<Value> {
    if args.arg(1, "index").is_some() || args.arg(2, "columns").is_some() || args.star {
        return None;
    }
    let Value::Dict(items) = args.value(0, "data")? else {
        return None;
    };
    let mut columns = Vec::new();
    let mut length = None;
    let mut nulls = serde_json::Map::new();
    for (key, value) in items {
        let Constant::Str(name) = key.as_ref()?.constant()? else {
            return None;
        };
        let (Constant::List(values) | Constant::Tuple(values)) = value.as_ref()?.constant()? else {
            return None;
        };
        if *length.get_or_insert(values.len()) != values.len() {
            return None;
        }
        let dtype = literal_dtype(&values);
        let none_count = values
            .iter()
            .filter(|v| matches!(v, Constant::None))
            .count();
        nulls.insert(name.clone(), json!({"nulls": none_count}));
        columns.push(Column {
            name: ColumnName::Str(name),
            dtype,
        });
    }
    let mut frame = Variable::new(FRAME_TYPE, Kind::Dataframe);
    frame.s.insert(
        "shape".to_owned(),
        json!([length.unwrap_or(0), columns.len()]),
    );
    frame.r.insert(
        "columns".to_owned(),
        Json::Array(
            columns
                .iter()
                .map(|c| {
                    let mut entry = serde_json::Map::new();
                    entry.insert("name".to_owned(), column_json(&c.name));
                    if let Some(dtype) = &c.dtype {
                        entry.insert("dtype".to_owned(), Json::String(dtype.clone()));
                    }
                    Json::Object(entry)
                })
                .collect(),
        ),
    );
    frame.r.insert(
        "index".to_owned(),
        json!({"type": "RangeIndex", "name": null, "nlevels": 1}),
    );
    let has_nan = nulls.values().any(|n| n["nulls"].as_u64().unwrap_or(0) > 0);
    frame.v.insert("columns".to_owned(), Json::Object(nulls));
    frame.v.insert("has_nan".to_owned(), Json::Bool(has_nan));
    Some(interp.derived(None, frame, "pd.DataFrame(...)"))
}

fn literal_dtype(values: &[Constant]) -> Option<String> {
    let all = |f: fn(&Constant) -> bool| values.iter().all(f);
    if values.is_empty() {
        return None;
    }
    Some(
        if all(|v| matches!(v, Constant::Int(_))) {
            "int64"
        } else if all(|v| matches!(v, Constant::Int(_) | Constant::Float(_) | Constant::None)) {
            "float64"
        } else if all(|v| matches!(v, Constant::Bool(_))) {
            "bool"
        } else if all(|v| matches!(v, Constant::Str(_) | Constant::None)) {
            "object"
        } else {
            return None;
        }
        .to_owned(),
    )
}

/// The numeric type a conversion asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NumericTarget {
    Int,
    Float,
}

pub(super) fn numeric_target(value: &Value) -> Option<NumericTarget> {
    let name = match value {
        Value::Const(Constant::Str(name)) => name.clone(),
        Value::Qual { name, .. } => name.rsplit('.').next()?.to_owned(),
        _ => return None,
    };
    match name.as_str() {
        "int" | "int64" | "int32" | "int16" | "int8" | "uint8" | "uint16" | "uint32" | "uint64" => {
            Some(NumericTarget::Int)
        }
        "float" | "float64" | "float32" | "float16" | "double" => Some(NumericTarget::Float),
        _ => None,
    }
}

/// PD009: a value of the series that the conversion cannot take. Returns whether it fired.
pub(super) fn conversion(
    interp: &mut Interp,
    owner: &Obj,
    series: &Variable,
    column: Option<&str>,
    target: NumericTarget,
    line: u32,
    how: &str,
) -> bool {
    let subject = match column {
        Some(column) => format!("`{}` column '{column}'", owner.label),
        None => format!("`{}`", owner.label),
    };
    let values: Vec<&Json> = ["examples", "unique_values"]
        .iter()
        .filter_map(|key| series.v.get(*key).and_then(Json::as_array))
        .flatten()
        .collect();
    if !holds_only_strings(series) {
        return false;
    }
    let bad = values.iter().find_map(|value| {
        let text = seen_text(value)?;
        (!parses(text, target)).then(|| text.to_owned())
    });
    if let Some(text) = bad {
        let wanted = if target == NumericTarget::Int {
            "an integer"
        } else {
            "a number"
        };
        interp.report(
            RuleCode::InvalidNumericConversion,
            line,
            format!("`{how}` on {subject}: the value '{text}' is not {wanted}."),
            vec![format!("{subject} holds '{text}'")],
        );
        return true;
    }
    let has_nan = series.has_nan() == Some(true) || series.nulls().is_some_and(|n| n > 0);
    if target == NumericTarget::Int && has_nan && how == "astype" {
        interp.report(
            RuleCode::InvalidNumericConversion,
            line,
            format!("`astype(int)` on {subject}, which holds missing values (NaN cannot be an integer)."),
            vec![format!("{subject}: has NaN")],
        );
        return true;
    }
    false
}

/// Whether Python's `int()`/`float()` (as pandas applies them) accepts the text.
fn parses(text: &str, target: NumericTarget) -> bool {
    let trimmed = text.trim().replace('_', "");
    match target {
        NumericTarget::Int => {
            let digits = trimmed.strip_prefix(['+', '-']).unwrap_or(&trimmed);
            !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
        }
        NumericTarget::Float => {
            let lower = trimmed.to_ascii_lowercase();
            let word = lower.strip_prefix(['+', '-']).unwrap_or(&lower);
            trimmed.parse::<f64>().is_ok() || matches!(word, "nan" | "inf" | "infinity")
        }
    }
}

/// Whether the object's index holds no strings (a RangeIndex or a numeric/datetime dtype).
pub(super) fn numeric_index(var: &Variable) -> bool {
    let Some(index) = var.r.get("index").and_then(Json::as_object) else {
        return false;
    };
    let kind = index.get("type").and_then(Json::as_str).unwrap_or_default();
    let dtype = index
        .get("dtype")
        .and_then(Json::as_str)
        .unwrap_or_default();
    kind == "RangeIndex"
        || ["int", "uint", "float", "datetime64"]
            .iter()
            .any(|prefix| dtype.starts_with(prefix))
}
