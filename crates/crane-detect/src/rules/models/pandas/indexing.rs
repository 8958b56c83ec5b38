//! Indexing: `df[...]` column selection, `df.loc[...]`/`df.iloc[...]` (PD001 for a missing
//! label, PD008 for a position past the rows or columns), a key the facts record as absent, and
//! the frame a column assignment (`df['c'] = ...`) or `del df['c']` leaves.

use crane_analysis::{Constant, Indexer};
use crane_runtime::{Column, ColumnName, Kind, Variable};
use ruff_python_ast::Expr;
use serde_json::{json, Value as Json};

use super::groupby::groupby_subscript;
use super::labels::{
    check_columns, find_column, is_frame, plain_columns, same_columns, same_label, select,
    series_of, without,
};
use crate::rules::core::cell::constant;
use crate::rules::core::interp::Interp;
use crate::rules::core::value::{Obj, Value};
use crate::rules::models::facts::{
    columns_evidence, columns_ordered, frame_with_columns, labels, rows,
};
use crate::rules::RuleCode;

pub(crate) fn subscript(
    interp: &mut Interp,
    obj: &Obj,
    slice: &Expr,
    key: Option<Value>,
    line: u32,
) -> Option<Value> {
    match obj.kind() {
        Kind::Dataframe => frame_subscript(interp, obj, slice, key, line),
        Kind::Groupby => groupby_subscript(interp, obj, key, line),
        _ => None,
    }
}

fn frame_subscript(
    interp: &mut Interp,
    obj: &Obj,
    slice: &Expr,
    key: Option<Value>,
    line: u32,
) -> Option<Value> {
    let key = key?;
    if let Some(constant) = key.constant() {
        let wanted = labels(&constant)?;
        let context = format!("`{}[{}]`", obj.label, interp.cell.text(slice));
        if check_columns(
            interp,
            RuleCode::MissingColumn,
            obj,
            &wanted,
            line,
            &context,
            false,
        ) != Some(true)
        {
            return None;
        }
        let label = format!("{}[{}]", obj.label, interp.cell.text(slice));
        let list = matches!(constant, Constant::List(_) | Constant::Tuple(_));
        return column_selection(interp, obj, list, &constant, &wanted, label);
    }
    // A boolean mask or a slice of rows keeps the columns.
    let mask = match &key {
        Value::Object(mask) => mask.kind() == Kind::Series && mask.var.dtype() == Some("bool"),
        _ => false,
    };
    if mask || matches!(slice, Expr::Slice(_)) {
        let frame = same_columns(&obj.var)?;
        return Some(interp.derived(Some(obj), frame, format!("{}[...]", obj.label)));
    }
    None
}

/// What selecting columns of a frame gives: the frame of the `wanted` columns for a `list` key,
/// else the one column `key` names, known as `label`.
fn column_selection(
    interp: &mut Interp,
    obj: &Obj,
    list: bool,
    key: &Constant,
    wanted: &[Constant],
    label: String,
) -> Option<Value> {
    let selected = if list {
        select(&obj.var, wanted)?
    } else {
        series_of(obj, &find_column(&plain_columns(&obj.var)?, key)?)
    };
    Some(interp.derived(Some(obj), selected, label))
}

/// `df.loc[...]`, `df.iloc[...]`.
pub(crate) fn indexer_subscript(
    interp: &mut Interp,
    obj: &Obj,
    indexer: Indexer,
    slice: &Expr,
    line: u32,
) -> Option<Value> {
    let (rows_key, columns_key) = match slice {
        Expr::Tuple(tuple) if !tuple.parenthesized && tuple.elts.len() == 2 => {
            (&tuple.elts[0], Some(&tuple.elts[1]))
        }
        other => (other, None),
    };
    match indexer {
        Indexer::Loc => {
            let columns_key = columns_key?;
            if !is_frame(obj) {
                return None;
            }
            let wanted = labels(&constant(columns_key)?)?;
            let context = format!("`{}.loc[{}]`", obj.label, interp.cell.text(slice));
            if check_columns(
                interp,
                RuleCode::MissingColumn,
                obj,
                &wanted,
                line,
                &context,
                false,
            ) != Some(true)
            {
                return None;
            }
            let whole_rows = matches!(rows_key, Expr::Slice(s) if s.lower.is_none() && s.upper.is_none() && s.step.is_none());
            if !whole_rows {
                return None;
            }
            let key = constant(columns_key)?;
            let label = format!("{}.loc[{}]", obj.label, interp.cell.text(slice));
            let list = matches!(key, Constant::List(_));
            column_selection(interp, obj, list, &key, &wanted, label)
        }
        Indexer::Iloc | Indexer::Iat => {
            iloc_bounds(interp, obj, indexer, rows_key, columns_key, line);
            let columns_key = columns_key?;
            if !is_frame(obj) {
                return None;
            }
            let whole_rows = matches!(rows_key, Expr::Slice(s) if s.lower.is_none() && s.upper.is_none() && s.step.is_none());
            if !whole_rows {
                return None;
            }
            let columns = plain_columns(&obj.var)?;
            let text = format!("{}.iloc[{}]", obj.label, interp.cell.text(slice));
            if !columns_ordered(&obj.var) {
                // Positions pick unknown columns; only how many is known.
                let count = match columns_key {
                    Expr::Slice(_) => {
                        crate::rules::models::numpy::slice_range(columns_key, columns.len() as u64)?
                            .count()
                    }
                    _ => return None,
                };
                let mut frame = frame_with_columns(&obj.var, Vec::new());
                frame.r.remove("columns");
                frame.v.clear();
                frame
                    .s
                    .insert("shape".to_owned(), json!([rows(&obj.var), count]));
                return Some(interp.derived(Some(obj), frame, text));
            }
            match columns_key {
                Expr::Slice(_) => {
                    let range = crate::rules::models::numpy::slice_range(
                        columns_key,
                        columns.len() as u64,
                    )?;
                    let picked: Vec<Column> = range.map(|i| columns[i as usize].clone()).collect();
                    let frame = frame_with_columns(&obj.var, picked);
                    Some(interp.derived(Some(obj), frame, text))
                }
                other => match constant(other)? {
                    Constant::Int(position) => {
                        let index = crate::rules::models::numpy::normalize_index(
                            position,
                            columns.len() as u64,
                        )?;
                        let series = series_of(obj, &columns[index as usize]);
                        Some(interp.derived(Some(obj), series, text))
                    }
                    Constant::List(items) => {
                        let picked = items
                            .iter()
                            .map(|item| match item {
                                Constant::Int(p) => crate::rules::models::numpy::normalize_index(
                                    *p,
                                    columns.len() as u64,
                                )
                                .map(|i| columns[i as usize].clone()),
                                _ => None,
                            })
                            .collect::<Option<Vec<_>>>()?;
                        let frame = frame_with_columns(&obj.var, picked);
                        Some(interp.derived(Some(obj), frame, text))
                    }
                    _ => None,
                },
            }
        }
        Indexer::At => None,
    }
}

/// PD008: a constant position beyond the rows (or columns) of a frame or series.
fn iloc_bounds(
    interp: &mut Interp,
    obj: &Obj,
    indexer: Indexer,
    rows_key: &Expr,
    columns_key: Option<&Expr>,
    line: u32,
) {
    let Some(shape) = obj.var.shape() else {
        return;
    };
    let mut checks: Vec<(&Expr, usize, &str)> = vec![(rows_key, 0, "rows")];
    if let Some(columns_key) = columns_key {
        checks.push((columns_key, 1, "columns"));
    }
    for (key, axis, what) in checks {
        let (Some(Constant::Int(position)), Some(Some(size))) = (constant(key), shape.get(axis))
        else {
            continue;
        };
        let size = *size;
        if crate::rules::models::numpy::normalize_index(position, size).is_none() {
            let name = crate::rules::core::value::indexer_name(indexer);
            interp.report(
                RuleCode::IlocOutOfBounds,
                line,
                format!(
                    "`{}.{name}[...]` asks for position {position}, but `{}` has {size} {what}.",
                    obj.label, obj.label
                ),
                vec![format!(
                    "{} shape: {}",
                    obj.label,
                    crate::rules::models::facts::shape_text(&shape)
                )],
            );
            return;
        }
    }
}

/// A subscript the runtime facts record as absent (`df['c']` with `kind: absent`).
pub(crate) fn absent_key(interp: &mut Interp, base: &Value, facts: &Variable, line: u32) {
    let Value::Object(obj) = base else {
        return;
    };
    if obj.kind() != Kind::Dataframe {
        return;
    }
    let key = facts.r.get("key").cloned().unwrap_or(Json::Null);
    let mut evidence = vec![format!("{}[{key}]: absent", obj.label)];
    if let Some(columns) = plain_columns(&obj.var) {
        evidence.insert(0, columns_evidence(&obj.label, &columns));
    }
    interp.report(
        RuleCode::MissingColumn,
        line,
        format!("`{}` has no column {key}.", obj.label),
        evidence,
    );
}

/// `df['c'] = value`: the frame gains (or replaces) a column.
pub(crate) fn store_column(
    interp: &mut Interp,
    obj: &Obj,
    key: Option<Value>,
    value: Option<&Value>,
) -> bool {
    if !is_frame(obj) {
        return false;
    }
    let Some(Constant::Str(name)) = key.and_then(|k| k.constant()) else {
        return false;
    };
    let Some(mut columns) = plain_columns(&obj.var) else {
        return false;
    };
    let label = Constant::Str(name.clone());
    let dtype = value
        .and_then(|v| v.obj())
        .and_then(|v| v.var.dtype())
        .map(str::to_owned);
    let rows_match = value
        .and_then(|v| v.obj())
        .and_then(|v| rows(&v.var))
        .is_some_and(|r| Some(r) == rows(&obj.var));
    if let Some(existing) = columns.iter_mut().find(|c| same_label(&c.name, &label)) {
        existing.dtype = dtype;
    } else {
        columns.push(Column {
            name: ColumnName::Str(name.clone()),
            dtype,
        });
    }
    let mut frame = frame_with_columns(&obj.var, columns);
    // The new values are not known: drop what depended on them.
    if let Some(map) = frame.v.get_mut("columns").and_then(Json::as_object_mut) {
        map.remove(&name);
    }
    frame.v.remove("has_nan");
    if !rows_match {
        frame.v.remove("has_nan");
    }
    interp.replace_object(obj, frame, obj.label.clone());
    true
}

/// `del df['c']`.
pub(crate) fn delete_column(interp: &mut Interp, obj: &Obj, slice: &Expr, line: u32) -> bool {
    if !is_frame(obj) {
        return false;
    }
    let Some(wanted) = constant(slice).as_ref().and_then(labels) else {
        return false;
    };
    let context = format!("`del {}[{}]`", obj.label, interp.cell.text(slice));
    if check_columns(
        interp,
        RuleCode::MissingColumn,
        obj,
        &wanted,
        line,
        &context,
        false,
    ) != Some(true)
    {
        return false;
    }
    match without(&obj.var, &wanted) {
        Some(frame) => {
            interp.replace_object(obj, frame, obj.label.clone());
            true
        }
        None => false,
    }
}
