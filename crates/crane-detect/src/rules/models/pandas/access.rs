//! Attributes of frames and series: columns as attributes, known attributes and accessors,
//! NB003 for a method the object's type does not have (unless the notebook sets it somewhere),
//! PD006 for a `.str`/`.dt` accessor on values of another dtype, and `to_numpy`'s array. Apart
//! from methods because an attribute is looked up before any call.

use crane_analysis::Constant;
use crane_runtime::{ColumnName, Kind};
use serde_json::Value as Json;

use super::conversions::numeric_index;
use super::labels::{find_column, plain_columns, series_of};
use super::{is_frame_attribute, CATEGORICAL_TYPE, FRAME_TYPE, SERIES_TYPE};
use crate::rules::core::interp::Interp;
use crate::rules::core::value::{Obj, Sequence, Value};
use crate::rules::models::attributes::{
    CATEGORICAL_ATTRIBUTES, PANDAS_EXTENSIONS, SERIES_ATTRIBUTES,
};
use crate::rules::models::facts::columns_ordered;
use crate::rules::models::objects;
use crate::rules::RuleCode;

pub(crate) fn attribute(
    interp: &mut Interp,
    obj: &Obj,
    attr: &str,
    line: u32,
    called: bool,
    present: bool,
) -> Option<Value> {
    // When the facts say the attribute exists, only its value is asked for.
    let report = !present;
    match obj.kind() {
        Kind::Dataframe => frame_attribute(interp, obj, attr, line, called, report),
        Kind::Series => series_attribute(interp, obj, attr, line, called, report),
        Kind::Categorical => {
            if !present
                && obj.var.type_name == CATEGORICAL_TYPE
                && !attr.starts_with('_')
                && !CATEGORICAL_ATTRIBUTES.contains(&attr)
                && !interp.kernel.extends_pandas
                && !attribute_set_anywhere(interp, attr)
            {
                missing_method(interp, obj, "pandas Categorical", attr, line);
            }
            None
        }
        _ => None,
    }
}

fn frame_attribute(
    interp: &mut Interp,
    obj: &Obj,
    attr: &str,
    line: u32,
    called: bool,
    report: bool,
) -> Option<Value> {
    if let Some(indexer) = crate::rules::core::interp::indexer_of(attr) {
        return Some(Value::Indexer(Box::new(obj.clone()), indexer));
    }
    match attr {
        "columns" => {
            let columns = plain_columns(&obj.var)?;
            // Which label sits at which position only when the facts guarantee the order.
            let ordered = columns_ordered(&obj.var);
            return Some(Value::Seq {
                items: columns
                    .iter()
                    .map(|c| match &c.name {
                        _ if !ordered => None,
                        ColumnName::Str(s) => Some(Value::Const(Constant::Str(s.clone()))),
                        ColumnName::Int(i) => Some(Value::Const(Constant::Int(*i))),
                        ColumnName::Other(_) => None,
                    })
                    .collect(),
                of: Sequence::Labels,
            });
        }
        "shape" => return crate::rules::models::numpy::shape_value(&obj.var),
        "values" => return Some(to_numpy(interp, obj)),
        "T" => return None,
        _ => {}
    }
    if let Some(columns) = plain_columns(&obj.var) {
        let label = Constant::Str(attr.to_owned());
        if let Some(column) = find_column(&columns, &label) {
            if !is_frame_attribute(attr) {
                let series = series_of(obj, &column);
                return Some(interp.derived(Some(obj), series, format!("{}.{attr}", obj.label)));
            }
        } else if report
            && !called
            && !attr.starts_with('_')
            && !is_frame_attribute(attr)
            && !interp.kernel.extends_pandas
            && obj.var.type_name == FRAME_TYPE
            && !attribute_set_anywhere(interp, attr)
        {
            objects::frame_attribute_missing(interp, obj, attr, line);
            return None;
        }
    }
    if report
        && called
        && obj.var.type_name == FRAME_TYPE
        && !is_frame_attribute(attr)
        && !attr.starts_with('_')
        && !interp.kernel.extends_pandas
        && !attribute_set_anywhere(interp, attr)
    {
        missing_method(interp, obj, "DataFrame", attr, line);
    }
    None
}

/// An attribute the notebook sets itself somewhere (`df.meta = ...`): it may exist.
fn attribute_set_anywhere(interp: &Interp, attr: &str) -> bool {
    interp.kernel.assigned_attributes.contains(attr)
}

fn missing_method(interp: &mut Interp, obj: &Obj, type_name: &str, attr: &str, line: u32) {
    interp.report(
        RuleCode::MissingAttribute,
        line,
        format!(
            "`{}` is a {type_name}, which has no attribute `{attr}`.",
            obj.label
        ),
        vec![format!("{}: {}", obj.label, obj.var.type_name)],
    );
}

fn series_attribute(
    interp: &mut Interp,
    obj: &Obj,
    attr: &str,
    line: u32,
    called: bool,
    report: bool,
) -> Option<Value> {
    match attr {
        "shape" => return crate::rules::models::numpy::shape_value(&obj.var),
        "values" => return Some(to_numpy(interp, obj)),
        "str" | "dt" => {
            accessor_dtype(interp, obj, attr, line);
            return None;
        }
        _ => {}
    }
    if !report {
        return None;
    }
    // `s.label` reads an index label; only a call proves that no attribute was meant.
    let labels_possible = !called && !numeric_index(&obj.var);
    if obj.var.type_name == SERIES_TYPE
        && !labels_possible
        && !attr.starts_with('_')
        && !SERIES_ATTRIBUTES.contains(&attr)
        && !PANDAS_EXTENSIONS.contains(&attr)
        && !interp.kernel.extends_pandas
        && !attribute_set_anywhere(interp, attr)
    {
        missing_method(interp, obj, "Series", attr, line);
    }
    None
}

/// PD006: `.str` needs strings, `.dt` datetime-like values.
fn accessor_dtype(interp: &mut Interp, obj: &Obj, accessor: &str, line: u32) {
    let Some(dtype) = obj.var.dtype().map(str::to_owned) else {
        return;
    };
    let fits = match accessor {
        "str" => {
            matches!(dtype.as_str(), "object" | "string" | "str" | "category")
                || dtype.starts_with("string")
        }
        _ => {
            dtype.starts_with("datetime64")
                || dtype.starts_with("timedelta64")
                || dtype.starts_with("period")
                || dtype == "category"
                || dtype == "object"
        }
    };
    if fits {
        return;
    }
    let needs = if accessor == "str" {
        "string values"
    } else {
        "datetime-like values"
    };
    interp.report(
        RuleCode::AccessorWrongDtype,
        line,
        format!(
            "`{}.{accessor}` needs {needs}, but `{}` has dtype {dtype}.",
            obj.label, obj.label
        ),
        vec![format!("{} dtype: {dtype}", obj.label)],
    );
}

pub(super) fn to_numpy(interp: &mut Interp, obj: &Obj) -> Value {
    let shape = obj.var.shape().unwrap_or_default();
    let dtype = match obj.kind() {
        Kind::Series => obj.var.dtype().map(str::to_owned),
        _ => {
            let dtypes: Vec<Option<String>> = obj
                .var
                .columns()
                .unwrap_or_default()
                .into_iter()
                .map(|c| c.dtype)
                .collect();
            match dtypes.first() {
                Some(Some(first)) if dtypes.iter().all(|d| d.as_ref() == Some(first)) => {
                    Some(first.clone())
                }
                _ => None,
            }
        }
    };
    let mut array = crate::rules::models::facts::array(&shape, dtype.as_deref());
    if let Some(has_nan) = obj.var.has_nan() {
        if has_nan || obj.exact_v() {
            array.v.insert("has_nan".to_owned(), Json::Bool(has_nan));
        }
    }
    array.sampled = obj.var.sampled;
    interp.derived(Some(obj), array, format!("{}.values", obj.label))
}
