//! Objects the runtime facts describe, looked up where they lack something: NB002
//! missing-module-attribute, NB003 missing-attribute, PD002 for a frame's missing column
//! attribute, NB004 missing-key of a dict whose keys are all known.

use crane_runtime::{Kind, Variable};

use super::facts::{columns_evidence, known_columns};
use super::pandas;
use crate::rules::core::interp::Interp;
use crate::rules::core::value::{constant_text, name_list, Obj, Value};
use crate::rules::RuleCode;

/// An attribute the runtime facts record as absent on the object it is looked up on.
pub(crate) fn absent_attribute(
    interp: &mut Interp,
    base: &Value,
    attr: &str,
    facts: &Variable,
    line: u32,
) {
    let owner_type = facts
        .r
        .get("owner_type")
        .and_then(|t| t.as_str())
        .map(str::to_owned);
    match base {
        Value::Qual { name, .. } => {
            let module = name.clone();
            interp.report(
                RuleCode::MissingModuleAttribute,
                line,
                format!("Module `{module}` has no attribute `{attr}`."),
                vec![format!("{module}.{attr}: absent")],
            );
        }
        Value::Object(obj) if obj.kind() == Kind::Dataframe => {
            if let Some(columns) = known_columns(&obj.var) {
                let evidence = vec![
                    columns_evidence(&obj.label, &columns),
                    format!("{}.{attr}: absent", obj.label),
                ];
                interp.report(
                    RuleCode::MissingColumnAttribute,
                    line,
                    format!(
                        "`{}` has no column `{attr}` and DataFrame has no attribute `{attr}`.",
                        obj.label
                    ),
                    evidence,
                );
            } else {
                report_missing_attribute(interp, &obj.label, owner_type, attr, line);
            }
        }
        Value::Object(obj) => {
            // A fitted attribute (`coef_`) of an estimator not known to be fitted may be a
            // property that raises NotFittedError instead (a tree's `feature_importances_`).
            let fitted_attribute = attr.ends_with('_') && !attr.starts_with('_');
            if obj.kind() == Kind::Estimator
                && fitted_attribute
                && obj.var.v.get("fitted").and_then(|f| f.as_bool()) != Some(true)
            {
                return;
            }
            let owner = owner_type.or_else(|| Some(obj.var.type_name.clone()));
            report_missing_attribute(interp, &obj.label, owner, attr, line);
        }
        _ => {}
    }
}

fn report_missing_attribute(
    interp: &mut Interp,
    label: &str,
    owner_type: Option<String>,
    attr: &str,
    line: u32,
) {
    let type_name = owner_type.unwrap_or_else(|| "its type".to_owned());
    interp.report(
        RuleCode::MissingAttribute,
        line,
        format!("`{label}` ({type_name}) has no attribute `{attr}`."),
        vec![format!("{label}.{attr}: absent on {type_name}")],
    );
}

/// `df.name` on a frame whose columns are all known: a column, a DataFrame attribute, or an
/// AttributeError (PD002).
pub(crate) fn frame_attribute_missing(interp: &mut Interp, obj: &Obj, attr: &str, line: u32) {
    if attr.starts_with('_') || pandas::is_frame_attribute(attr) {
        return;
    }
    let Some(columns) = known_columns(&obj.var) else {
        return;
    };
    interp.report(
        RuleCode::MissingColumnAttribute,
        line,
        format!(
            "`{}.{attr}`: the frame has no column `{attr}` and DataFrame has no attribute `{attr}`.",
            obj.label
        ),
        vec![columns_evidence(&obj.label, &columns)],
    );
}

/// NB004: a constant key of a dict whose keys are all known.
pub(crate) fn dict_key(interp: &mut Interp, obj: &Obj, key: &crane_analysis::Constant, line: u32) {
    let Some(keys) = known_keys(&obj.var) else {
        return;
    };
    use crane_analysis::Constant;
    use serde_json::Value as Json;
    if !matches!(key, Constant::Str(_) | Constant::Int(_)) {
        return;
    }
    // `True == 1` and `hash(True) == hash(1)`: a bool key is found by its int value.
    let equal = |k: &Json| match (key, k) {
        (Constant::Str(text), Json::String(label)) => text == label,
        (Constant::Int(value), Json::Number(number)) => number.as_i64() == Some(*value),
        (Constant::Int(value), Json::Bool(flag)) => i64::from(*flag) == *value,
        _ => false,
    };
    if keys.iter().any(equal) {
        return;
    }
    let printed: Vec<String> = keys
        .iter()
        .map(|k| match k {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect();
    interp.report(
        RuleCode::MissingKey,
        line,
        format!("`{}` has no key {}.", obj.label, constant_text(key)),
        vec![format!("{} keys: {}", obj.label, name_list(&printed))],
    );
}

/// Key classes whose `__hash__` and `__eq__` are the builtin ones: a key of another class (one
/// defining `__eq__`, or a `str` subclass) may equal a constant its label does not show.
const PLAIN_KEY_TYPES: &[&str] = &["builtins.str", "builtins.int", "builtins.bool"];

/// Whether the facts show every key's class compares as the builtins do. Facts that do not name
/// the classes (recorded ones) are trusted only for keys recorded as text or integers.
fn plain_keys(var: &Variable, keys: &[serde_json::Value]) -> bool {
    match var.r.get("key_types").and_then(|t| t.as_array()) {
        Some(types) => types
            .iter()
            .all(|t| t.as_str().is_some_and(|t| PLAIN_KEY_TYPES.contains(&t))),
        None => keys.iter().all(|key| match key {
            serde_json::Value::String(text) => !(text.starts_with('<') && text.ends_with('>')),
            serde_json::Value::Number(number) => number.is_i64() || number.is_u64(),
            serde_json::Value::Bool(_) => true,
            _ => false,
        }),
    }
}

/// All keys of a dict, when the facts list them completely and their classes compare as the
/// builtins do (a `defaultdict` creates the keys it lacks).
fn known_keys(var: &Variable) -> Option<Vec<serde_json::Value>> {
    if var.kind != Kind::Dict || var.type_name.ends_with("defaultdict") {
        return None;
    }
    let length = var.len();
    let complete = |keys: &Vec<serde_json::Value>| length.is_none_or(|n| n as usize == keys.len());
    if let Some(keys) = var.v.get("history_keys").and_then(|k| k.as_array()) {
        if length.is_some() && complete(keys) {
            return Some(keys.clone());
        }
    }
    if var.r.get("keys_truncated").is_some() {
        return None;
    }
    let keys = var.keys()?;
    (length.is_some() && complete(keys) && plain_keys(var, keys)).then(|| keys.clone())
}
