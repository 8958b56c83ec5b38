//! Frame and series methods: what each common method leaves (`drop` with PD003, `rename`,
//! `set_index`, `sort_values`, `pivot_table`, `melt`, `fillna` and the other structure-preserving
//! ones, PD001 and PD004 for labels they take), in place or not, and the calls it hands to
//! merges, joins, conversions and plots. One file because the frame methods are one dispatch
//! over the method's name.

use crane_analysis::Constant;
use crane_runtime::{Column, ColumnName, Kind, Variable};
use serde_json::{json, Value as Json};

use super::access::to_numpy;
use super::conversions::{conversion, numeric_target};
use super::is_frame_attribute;
use super::labels::{
    arg_labels, check_columns, find_column, plain_columns, same_columns, same_label, same_shape,
    series_of, without,
};
use super::merges::{join, merge_keys};
use crate::rules::core::interp::{Args, Effect, Interp};
use crate::rules::core::value::{Obj, Value};
use crate::rules::models::attributes::SERIES_ATTRIBUTES;
use crate::rules::models::facts::{frame_with_columns, rows};
use crate::rules::models::keys;
use crate::rules::RuleCode;

fn axis_is_columns(value: Option<&Value>) -> Option<bool> {
    match value?.constant()? {
        Constant::Int(1) => Some(true),
        Constant::Int(0) => Some(false),
        Constant::Str(axis) if axis == "columns" => Some(true),
        Constant::Str(axis) if axis == "index" || axis == "rows" => Some(false),
        _ => None,
    }
}

fn in_place(args: &Args) -> Option<bool> {
    match args.keyword("inplace") {
        None if !args.star => Some(false),
        None => None,
        Some(arg) => arg.value.as_ref()?.bool(),
    }
}

/// The effect of a frame method producing `frame` (or unknown), in place or not.
fn frame_result(
    interp: &mut Interp,
    obj: &Obj,
    args: &Args,
    frame: Option<Variable>,
    text: String,
) -> Effect {
    match in_place(args) {
        Some(false) => Effect::Pure(frame.map(|frame| interp.derived(Some(obj), frame, text))),
        Some(true) => match frame {
            Some(frame) => Effect::Replace {
                receiver: Box::new(frame),
                label: obj.label.clone(),
                result: Some(Value::Const(Constant::None)),
            },
            None => Effect::ForgetReceiver(Some(Value::Const(Constant::None))),
        },
        None => Effect::ForgetReceiver(None),
    }
}

pub(super) fn call_text(obj: &Obj, name: &str) -> String {
    format!("{}.{name}(...)", obj.label)
}

pub(super) fn frame_method(interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Effect {
    let line = args.line;
    let context = format!("`{}.{name}(...)`", obj.label);
    match name {
        "drop" => {
            let (dropped, on_columns) = match args.keyword_value("columns") {
                Some(columns) => (keys::label_or_list_like(Some(columns)), Some(true)),
                None => {
                    let labels_value = args.value(0, "labels");
                    let axis = axis_is_columns(args.value(1, "axis")).or_else(|| {
                        (!args.has_keyword("axis") && args.positional.len() < 2).then_some(false)
                    });
                    (keys::label_or_list_like(labels_value), axis)
                }
            };
            if args.has_keyword("index") && args.keyword("columns").is_none()
                || args.has_keyword("level")
            {
                return frame_result(interp, obj, args, None, call_text(obj, name));
            }
            let ignore = args
                .keyword_value("errors")
                .and_then(Value::str)
                .is_some_and(|e| e == "ignore");
            let frame = match (dropped, on_columns) {
                (Some(dropped), Some(true)) => {
                    if !ignore {
                        check_columns(
                            interp,
                            RuleCode::DropMissingColumn,
                            obj,
                            &dropped,
                            line,
                            &context,
                            false,
                        );
                    }
                    without(&obj.var, &dropped)
                }
                (_, Some(false)) => same_columns(&obj.var),
                _ => None,
            };
            frame_result(interp, obj, args, frame, call_text(obj, name))
        }
        "groupby" => {
            if args.has_keyword("level")
                || axis_is_columns(args.keyword_value("axis")) == Some(true)
            {
                return Effect::Pure(None);
            }
            if let Some(by) = keys::grouping_keys(args.value(0, "by"), rows(&obj.var)) {
                check_columns(
                    interp,
                    RuleCode::MissingColumnArgument,
                    obj,
                    &by,
                    line,
                    &context,
                    true,
                );
            }
            let columns = plain_columns(&obj.var);
            let groupby = columns.map(|columns| {
                let mut groupby = frame_with_columns(&obj.var, columns);
                groupby.kind = Kind::Groupby;
                groupby
                    .r
                    .insert("frame_type".to_owned(), json!(obj.var.type_name));
                groupby.type_name = "pandas.core.groupby.generic.DataFrameGroupBy".to_owned();
                groupby.s.clear();
                groupby.v.clear();
                groupby
            });
            Effect::Pure(groupby.map(|g| interp.derived(Some(obj), g, call_text(obj, name))))
        }
        "sort_values" => {
            if axis_is_columns(args.value(1, "axis")) != Some(true) {
                if let Some(by) = keys::label_or_list(args.value(0, "by")) {
                    check_columns(
                        interp,
                        RuleCode::MissingColumnArgument,
                        obj,
                        &by,
                        line,
                        &context,
                        true,
                    );
                }
            }
            let frame = same_shape(&obj.var);
            frame_result(interp, obj, args, frame, call_text(obj, name))
        }
        "set_index" => {
            let keys = keys::label_or_list(args.value(0, "keys"));
            let mut frame = None;
            if let Some(keys) = &keys {
                if check_columns(
                    interp,
                    RuleCode::MissingColumnArgument,
                    obj,
                    keys,
                    line,
                    &context,
                    false,
                ) == Some(true)
                {
                    let drop = args.keyword_value("drop").map_or(Some(true), Value::bool);
                    if drop == Some(true) && !args.has_keyword("append") {
                        frame = without(&obj.var, keys).map(|mut frame| {
                            if let [Constant::Str(key)] = keys.as_slice() {
                                frame
                                    .r
                                    .insert("index".to_owned(), json!({"name": key, "nlevels": 1}));
                            } else {
                                frame
                                    .r
                                    .insert("index".to_owned(), json!({"nlevels": keys.len()}));
                            }
                            frame
                        });
                    }
                }
            }
            frame_result(interp, obj, args, frame, call_text(obj, name))
        }
        "pivot_table" => {
            // The values must be columns; the index and columns are grouped by.
            if let Some(values) = arg_labels(args.value(0, "values")) {
                if check_columns(
                    interp,
                    RuleCode::MissingColumnArgument,
                    obj,
                    &values,
                    line,
                    &context,
                    false,
                ) == Some(false)
                {
                    return Effect::Pure(None);
                }
            }
            let given = |position, keyword| args.arg(position, keyword).map(|a| a.value.as_ref());
            let keys =
                keys::pivot_table_keys(given(1, "index"), given(2, "columns"), rows(&obj.var));
            if let Some(keys) = keys {
                check_columns(
                    interp,
                    RuleCode::MissingColumnArgument,
                    obj,
                    &keys,
                    line,
                    &context,
                    true,
                );
            }
            Effect::Pure(None)
        }
        "pivot" => {
            for keyword in ["index", "columns", "values"] {
                if let Some(wanted) = arg_labels(args.keyword_value(keyword)) {
                    if check_columns(
                        interp,
                        RuleCode::MissingColumnArgument,
                        obj,
                        &wanted,
                        line,
                        &context,
                        true,
                    ) == Some(false)
                    {
                        break;
                    }
                }
            }
            Effect::Pure(None)
        }
        "dropna" | "drop_duplicates" | "duplicated" | "value_counts" => {
            let on_rows = name != "dropna" || axis_is_columns(args.value(0, "axis")) != Some(true);
            let position = if name == "dropna" { usize::MAX } else { 0 };
            // `value_counts` groups by its subset, as `groupby` reads it.
            let subset = if name == "value_counts" {
                keys::grouping_keys(args.value(position, "subset"), rows(&obj.var))
            } else {
                arg_labels(args.value(position, "subset"))
            };
            if on_rows {
                if let Some(subset) = subset {
                    check_columns(
                        interp,
                        RuleCode::MissingColumnArgument,
                        obj,
                        &subset,
                        line,
                        &context,
                        name == "value_counts",
                    );
                }
            }
            match name {
                "dropna" => {
                    let frame = if on_rows {
                        same_columns(&obj.var).map(|mut frame| {
                            let any = args
                                .keyword_value("how")
                                .and_then(Value::str)
                                .is_none_or(|h| h == "any");
                            if any && !args.has_keyword("subset") && !args.has_keyword("thresh") {
                                frame.v.insert("has_nan".to_owned(), Json::Bool(false));
                            }
                            frame
                        })
                    } else {
                        None
                    };
                    frame_result(interp, obj, args, frame, call_text(obj, name))
                }
                "drop_duplicates" => {
                    let frame = same_columns(&obj.var);
                    frame_result(interp, obj, args, frame, call_text(obj, name))
                }
                _ => Effect::Pure(None),
            }
        }
        "melt" => {
            for (keyword, position) in [("id_vars", 0), ("value_vars", 1)] {
                if let Some(wanted) = arg_labels(args.value(position, keyword)) {
                    if check_columns(
                        interp,
                        RuleCode::MissingColumnArgument,
                        obj,
                        &wanted,
                        line,
                        &context,
                        false,
                    ) == Some(false)
                    {
                        break;
                    }
                }
            }
            Effect::Pure(None)
        }
        "nlargest" | "nsmallest" => {
            if let Some(wanted) = keys::label_or_list_like(args.value(1, "columns")) {
                check_columns(
                    interp,
                    RuleCode::MissingColumnArgument,
                    obj,
                    &wanted,
                    line,
                    &context,
                    false,
                );
            }
            Effect::Pure(
                same_columns(&obj.var).map(|f| interp.derived(Some(obj), f, call_text(obj, name))),
            )
        }
        "explode" => {
            // A list naming a column twice is refused (`ValueError`) before any is looked up.
            let unique = |labels: &Vec<Constant>| {
                labels
                    .iter()
                    .enumerate()
                    .all(|(i, label)| !labels[..i].contains(label))
            };
            if let Some(wanted) = keys::label_or_list(args.value(0, "column")).filter(unique) {
                check_columns(
                    interp,
                    RuleCode::MissingColumnArgument,
                    obj,
                    &wanted,
                    line,
                    &context,
                    false,
                );
            }
            frame_result(
                interp,
                obj,
                args,
                same_columns(&obj.var),
                call_text(obj, name),
            )
        }
        "astype" => {
            if let Some(target) = args.value(0, "dtype").and_then(numeric_target) {
                if args.keyword_value("errors").and_then(Value::str).as_deref() != Some("ignore") {
                    if let Some(columns) = plain_columns(&obj.var) {
                        for column in columns {
                            let series = series_of(obj, &column);
                            let name = column.name.to_string();
                            if conversion(interp, obj, &series, Some(&name), target, line, "astype")
                            {
                                break;
                            }
                        }
                    }
                }
            }
            if let Some(Value::Dict(items)) = args.value(0, "dtype") {
                let keys: Option<Vec<Constant>> =
                    items.iter().map(|(k, _)| k.as_ref()?.constant()).collect();
                if let Some(keys) = keys {
                    check_columns(
                        interp,
                        RuleCode::MissingColumnArgument,
                        obj,
                        &keys,
                        line,
                        &context,
                        false,
                    );
                }
            }
            let frame = plain_columns(&obj.var).map(|columns| {
                let columns = columns
                    .into_iter()
                    .map(|c| Column {
                        name: c.name,
                        dtype: None,
                    })
                    .collect();
                let mut frame = frame_with_columns(&obj.var, columns);
                frame.v.clear();
                frame
            });
            Effect::Pure(frame.map(|f| interp.derived(Some(obj), f, call_text(obj, name))))
        }
        "merge" => {
            let right = args.value(0, "right").and_then(Value::obj).cloned();
            merge_keys(interp, Some(obj), right.as_ref(), args, line);
            Effect::Pure(None)
        }
        "join" => {
            join(interp, obj, args, line);
            Effect::Pure(None)
        }
        "rename" => {
            let mapping = args.keyword_value("columns").or_else(|| {
                (axis_is_columns(args.keyword_value("axis")) == Some(true))
                    .then(|| args.value(0, "mapper"))
                    .flatten()
            });
            let frame = match mapping {
                Some(Value::Dict(items)) => rename_columns(&obj.var, items),
                _ if args.keyword("columns").is_none()
                    && !args.has_keyword("axis")
                    && !args.has_keyword("mapper")
                    && args.positional.is_empty() =>
                {
                    same_shape(&obj.var)
                }
                _ => None,
            };
            frame_result(interp, obj, args, frame, call_text(obj, name))
        }
        "pop" => {
            if let Some(wanted) = arg_labels(args.value(0, "item")) {
                if check_columns(
                    interp,
                    RuleCode::MissingColumn,
                    obj,
                    &wanted,
                    line,
                    &context,
                    false,
                ) == Some(true)
                {
                    let column = plain_columns(&obj.var)
                        .and_then(|columns| find_column(&columns, &wanted[0]));
                    let series = column.map(|c| series_of(obj, &c));
                    if let Some(frame) = without(&obj.var, &wanted) {
                        let result =
                            series.map(|s| interp.derived(Some(obj), s, call_text(obj, name)));
                        return Effect::Replace {
                            receiver: Box::new(frame),
                            label: obj.label.clone(),
                            result,
                        };
                    }
                }
            }
            Effect::ForgetReceiver(None)
        }
        "insert" => {
            let position = args.value(0, "loc").and_then(Value::int);
            let column = args.value(1, "column").and_then(Value::str);
            match (position, column, plain_columns(&obj.var)) {
                (Some(position), Some(column), Some(mut columns))
                    if position >= 0
                        && position as usize <= columns.len()
                        && !columns
                            .iter()
                            .any(|c| same_label(&c.name, &Constant::Str(column.clone()))) =>
                {
                    columns.insert(
                        position as usize,
                        Column {
                            name: ColumnName::Str(column),
                            dtype: None,
                        },
                    );
                    let mut frame = frame_with_columns(&obj.var, columns);
                    frame.v.remove("has_nan");
                    Effect::Replace {
                        receiver: Box::new(frame),
                        label: obj.label.clone(),
                        result: Some(Value::Const(Constant::None)),
                    }
                }
                _ => Effect::ForgetReceiver(None),
            }
        }
        "plot" | "hist" | "boxplot" => {
            crate::rules::models::plots::frame_plot(interp, obj, name, args);
            Effect::Pure(None)
        }
        "copy" => Effect::Pure(Some(interp.derived(
            Some(obj),
            (*obj.var).clone(),
            call_text(obj, name),
        ))),
        "head" | "tail" | "sample" | "sort_index" | "reset_index" | "query" | "fillna"
        | "replace" | "round" | "abs" | "clip" | "interpolate" | "ffill" | "bfill" | "shift"
        | "diff" => {
            let frame = match name {
                "reset_index" => {
                    if args.keyword_value("drop").and_then(Value::bool) == Some(true) {
                        same_shape(&obj.var)
                    } else {
                        None
                    }
                }
                "head" | "tail" | "sample" | "query" => same_columns(&obj.var),
                "fillna" => {
                    let scalar = matches!(
                        args.value(0, "value"),
                        Some(Value::Const(
                            Constant::Int(_)
                                | Constant::Float(_)
                                | Constant::Str(_)
                                | Constant::Bool(_)
                        ))
                    );
                    same_shape(&obj.var).map(|mut frame| {
                        if scalar && !args.has_keyword("limit") {
                            frame.v.insert("has_nan".to_owned(), Json::Bool(false));
                        } else {
                            frame.v.remove("has_nan");
                        }
                        frame
                    })
                }
                "replace" | "shift" | "diff" | "interpolate" | "ffill" | "bfill" => {
                    same_shape(&obj.var).map(|mut frame| {
                        frame.v.remove("has_nan");
                        frame
                    })
                }
                _ => same_shape(&obj.var),
            };
            frame_result(interp, obj, args, frame, call_text(obj, name))
        }
        "to_numpy" => Effect::Pure(Some(to_numpy(interp, obj))),
        "update" | "isetitem" | "set_flags" => Effect::ForgetReceiver(None),
        _ if args.keyword("inplace").is_some() || args.star => Effect::ForgetReceiver(None),
        _ if is_frame_attribute(name) => Effect::Pure(None),
        _ => Effect::ForgetReceiver(None),
    }
}

fn rename_columns(var: &Variable, items: &[(Option<Value>, Option<Value>)]) -> Option<Variable> {
    let mut mapping = Vec::new();
    for (key, value) in items {
        let key = key.as_ref()?.constant()?;
        let value = value.as_ref()?.constant()?;
        mapping.push((key, value));
    }
    let columns = plain_columns(var)?
        .into_iter()
        .map(|column| {
            match mapping
                .iter()
                .find(|(from, _)| same_label(&column.name, from))
            {
                Some((_, Constant::Str(to))) => Some(Column {
                    name: ColumnName::Str(to.clone()),
                    dtype: column.dtype,
                }),
                Some((_, Constant::Int(to))) => Some(Column {
                    name: ColumnName::Int(*to),
                    dtype: column.dtype,
                }),
                Some(_) => None,
                None => Some(column),
            }
        })
        .collect::<Option<Vec<_>>>()?;
    let mut frame = frame_with_columns(var, columns);
    frame.v.remove("columns");
    Some(frame)
}

pub(super) fn series_method(interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Effect {
    match name {
        "astype" => {
            if let Some(target) = args.value(0, "dtype").and_then(numeric_target) {
                if args.keyword_value("errors").and_then(Value::str).as_deref() != Some("ignore") {
                    conversion(interp, obj, &obj.var, None, target, args.line, "astype");
                }
            }
            Effect::Pure(None)
        }
        "to_numpy" => Effect::Pure(Some(to_numpy(interp, obj))),
        "copy" => Effect::Pure(Some(interp.derived(
            Some(obj),
            (*obj.var).clone(),
            call_text(obj, name),
        ))),
        "plot" | "hist" => Effect::Pure(None),
        "update" | "pop" => Effect::ForgetReceiver(None),
        _ if args.keyword("inplace").is_some() || args.star => Effect::ForgetReceiver(None),
        _ if SERIES_ATTRIBUTES.contains(&name) => Effect::Pure(None),
        _ => Effect::ForgetReceiver(None),
    }
}
