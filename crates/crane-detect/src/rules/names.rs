//! Names and attributes: NB001 undefined-name, NB002 missing-module-attribute,
//! NB003 missing-attribute (and PD002 for a frame's missing column attribute).

use crane_runtime::{Kind, Variable};

use super::interp::Interp;
use super::value::{columns_evidence, known_columns, Value};
use super::{pandas, RuleCode};

pub(crate) use crane_analysis::is_builtin;

/// NB001: a name read where it is bound nowhere. `deleted`: the cell deleted it earlier.
pub(crate) fn undefined_name(interp: &mut Interp, name: &str, line: u32, deleted: bool) {
    if deleted {
        interp.report(
            RuleCode::UndefinedName,
            line,
            format!("`{name}` is read on line {line} after the cell deleted it with `del`."),
            vec![format!("`del {name}` earlier in the cell")],
        );
        return;
    }
    let in_kernel_missing = interp.runtime.missing.iter().any(|m| m == name);
    // Facts from crane's probe (they carry their cost) say what the live kernel lacks; the
    // executed cells may not be all the kernel has run. Recorded facts list only some names, so
    // there the executed cells decide.
    let from_probe = interp.runtime.cost.is_some();
    let kernel = interp.kernel;
    let bound_somewhere = kernel.bound.contains(name) || kernel.dynamic_names;
    if !in_kernel_missing && (from_probe || bound_somewhere) {
        return;
    }
    let evidence = if in_kernel_missing {
        vec![format!("kernel: no variable `{name}`")]
    } else {
        vec![format!(
            "executed cells: none binds `{name}`, no star import"
        )]
    };
    interp.report(
        RuleCode::UndefinedName,
        line,
        format!(
            "`{name}` is not defined: it is not a builtin, no executed cell binds it and the cell does not bind it before line {line}."
        ),
        evidence,
    );
}

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
pub(crate) fn frame_attribute_missing(
    interp: &mut Interp,
    obj: &super::value::Obj,
    attr: &str,
    line: u32,
) {
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
pub(crate) fn dict_key(
    interp: &mut Interp,
    obj: &super::value::Obj,
    key: &crane_analysis::Constant,
    line: u32,
) {
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
        format!(
            "`{}` has no key {}.",
            obj.label,
            super::value::constant_text(key)
        ),
        vec![format!(
            "{} keys: {}",
            obj.label,
            super::value::name_list(&printed)
        )],
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
