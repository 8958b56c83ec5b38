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
    let wanted = match key {
        crane_analysis::Constant::Str(text) => text.clone(),
        crane_analysis::Constant::Int(value) => value.to_string(),
        _ => return,
    };
    let printed: Vec<String> = keys
        .iter()
        .map(|k| match k {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect();
    if printed.contains(&wanted) {
        return;
    }
    interp.report(
        RuleCode::MissingKey,
        line,
        format!("`{}` has no key {}.", obj.label, constant_text(key)),
        vec![format!("{} keys: {}", obj.label, name_list(&printed))],
    );
}

/// All keys of a dict, when the facts list them completely.
fn known_keys(var: &Variable) -> Option<Vec<serde_json::Value>> {
    if var.kind != Kind::Dict {
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
    (length.is_some() && complete(keys)).then(|| keys.clone())
}
