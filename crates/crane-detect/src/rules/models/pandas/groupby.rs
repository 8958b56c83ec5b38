//! Groupby: selecting columns of a `groupby` object and its aggregation methods, with PD004
//! for a grouping or aggregated label that is not a column.

use crane_analysis::Constant;
use serde_json::{json, Value as Json};

use super::labels::{check_columns, frame_width, label_list, plain_columns};
use super::methods::call_text;
use crate::rules::core::interp::{Args, Effect, Interp};
use crate::rules::core::value::{Obj, Value};
use crate::rules::models::facts::{frame_with_columns, labels};
use crate::rules::RuleCode;

pub(super) fn groupby_subscript(
    interp: &mut Interp,
    obj: &Obj,
    key: Option<Value>,
    line: u32,
) -> Option<Value> {
    let key = key?.constant()?;
    // A tuple of several labels is refused with `ValueError` (pandas 2 and later), not looked up.
    if matches!(&key, Constant::Tuple(items) if items.len() > 1) {
        return None;
    }
    let wanted = labels(&key)?;
    let context = format!("`{}[{}]`", obj.label, label_list(&wanted));
    check_columns(
        interp,
        RuleCode::MissingColumnArgument,
        obj,
        &wanted,
        line,
        &context,
        false,
    );
    None
}

pub(super) fn groupby_method(interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Effect {
    if matches!(
        name,
        "get_group" | "head" | "tail" | "nth" | "filter" | "sample"
    ) {
        // One group's rows (or a selection of rows): the frame's columns.
        let frame = plain_columns(&obj.var).map(|columns| {
            let mut frame = frame_with_columns(&obj.var, columns);
            frame.type_name = obj
                .var
                .r
                .get("frame_type")
                .and_then(Json::as_str)
                .unwrap_or("unknown")
                .to_owned();
            frame
                .s
                .insert("shape".to_owned(), json!([null, frame_width(&frame)]));
            frame.v.clear();
            frame
        });
        return Effect::Pure(frame.map(|f| interp.derived(Some(obj), f, call_text(obj, name))));
    }
    if matches!(name, "agg" | "aggregate") {
        if let Some(Value::Dict(items)) = args.value(0, "func") {
            let keys: Option<Vec<Constant>> =
                items.iter().map(|(k, _)| k.as_ref()?.constant()).collect();
            if let Some(keys) = keys {
                let context = format!("`{}.{name}({{...}})`", obj.label);
                check_columns(
                    interp,
                    RuleCode::MissingColumnArgument,
                    obj,
                    &keys,
                    args.line,
                    &context,
                    false,
                );
            }
        }
    }
    Effect::Pure(None)
}
