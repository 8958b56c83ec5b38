//! Iteration: the items a `for` loop or an unpacking takes from a value when they are known,
//! its first item, its length, and a loop over consecutive integers (`range`, `enumerate`), so
//! the core can follow a loop pass by pass.

use crane_analysis::Constant;
use crane_runtime::Kind;

use super::facts;
use crate::rules::core::value::Value;

/// The items iterating a value yields, when how many is known (each item may be unknown);
/// bounded, so a long sequence is not expanded.
pub(crate) fn iteration_items(value: &Value) -> Option<Vec<Option<Value>>> {
    const LIMIT: usize = 1_000;
    let items: Vec<Option<Value>> = match value {
        Value::Seq { items, .. } => items.clone(),
        Value::Const(constant) => crate::rules::core::python::items(constant)?
            .into_iter()
            .map(|item| Some(Value::Const(item)))
            .collect(),
        Value::Object(obj) if obj.kind() == Kind::Range => {
            let len = usize::try_from(obj.var.len()?).ok()?;
            let start = obj.var.v.get("start")?.as_i64()?;
            if len > LIMIT {
                return None;
            }
            (0..len as i64)
                .map(|offset| Some(Value::Const(Constant::Int(start + offset))))
                .collect()
        }
        _ => return None,
    };
    (items.len() <= LIMIT).then_some(items)
}

/// Whether iterating the value yields at least one item, and the first item when known.
pub(super) fn first_item(value: &Value) -> Option<Option<Value>> {
    if let Some(obj) = value.obj() {
        if obj.var.type_name == "builtins.enumerate" {
            return (length_of(value)? > 0).then_some(None);
        }
    }
    match value {
        Value::Seq { items, .. } => items.first().cloned(),
        Value::Const(Constant::List(items) | Constant::Tuple(items)) => {
            items.first().map(|c| Some(Value::Const(c.clone())))
        }
        Value::Const(Constant::Str(text)) => text
            .chars()
            .next()
            .map(|c| Some(Value::Const(Constant::Str(c.to_string())))),
        Value::Object(obj) => {
            let len = match obj.kind() {
                Kind::Range => {
                    let len = obj.var.len()?;
                    let start = obj.var.v.get("start").and_then(|s| s.as_i64());
                    return (len > 0).then(|| start.map(|s| Value::Const(Constant::Int(s))));
                }
                Kind::Dataframe => {
                    return facts::known_columns(&obj.var).and_then(|c| c.first().map(|_| None))
                }
                Kind::List | Kind::Tuple | Kind::Dict | Kind::Set => obj.var.len(),
                Kind::Ndarray | Kind::Series | Kind::Tensor => facts::rows(&obj.var),
                Kind::Dataloader => obj.var.n_batches().or_else(|| obj.var.len()),
                _ => None,
            }?;
            (len > 0).then_some(None)
        }
        _ => None,
    }
}

/// The items of a value unpacked into `count` targets, when known.
pub(super) fn unpack(value: &Value, count: usize) -> Option<Vec<Option<Value>>> {
    match value {
        Value::Seq { items, .. } if items.len() == count => Some(items.clone()),
        Value::Const(Constant::List(items) | Constant::Tuple(items)) if items.len() == count => {
            Some(
                items
                    .iter()
                    .map(|c| Some(Value::Const(c.clone())))
                    .collect(),
            )
        }
        _ => None,
    }
}

/// How many items iterating the value yields, when known (a frame yields its column names).
pub(crate) fn length_of(value: &Value) -> Option<u64> {
    match value {
        Value::Seq { items, .. } => Some(items.len() as u64),
        Value::Const(Constant::List(items) | Constant::Tuple(items)) => Some(items.len() as u64),
        Value::Const(Constant::Str(text)) => Some(text.chars().count() as u64),
        Value::Object(obj) => match obj.kind() {
            Kind::Dataframe => facts::known_columns(&obj.var).map(|c| c.len() as u64),
            Kind::Series | Kind::Ndarray | Kind::Tensor => facts::rows(&obj.var),
            Kind::List
            | Kind::Tuple
            | Kind::Dict
            | Kind::Str
            | Kind::Set
            | Kind::Range
            | Kind::Index => obj.var.len(),
            Kind::Dataloader => obj.var.n_batches().or_else(|| obj.var.len()),
            Kind::Other if obj.var.type_name == "builtins.enumerate" => obj.var.len(),
            _ => None,
        },
        _ => None,
    }
}

/// The integers a loop index takes over every pass of `for target in value`, for `range(...)`
/// and `enumerate(...)`: `(low, high, enumerate)`.
pub(crate) fn loop_index(value: &Value) -> Option<(i64, i64, bool)> {
    let obj = value.obj()?;
    let enumerate = match (obj.kind(), obj.var.type_name.as_str()) {
        (Kind::Range, _) => false,
        (Kind::Other, "builtins.enumerate") => true,
        _ => return None,
    };
    let length = i64::try_from(obj.var.len()?).ok()?;
    let start = obj.var.v.get("start")?.as_i64()?;
    (length > 0).then(|| (start, start + length - 1, enumerate))
}
