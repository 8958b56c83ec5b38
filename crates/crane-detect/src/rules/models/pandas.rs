//! pandas: PD001, PD003-PD009 (PD002, a frame's missing column attribute, is `objects.rs`'s),
//! NB003 for a method a frame or series does not have, and how frames and series flow through
//! the cell.

use crane_analysis::{Constant, Indexer};
use crane_runtime::{Column, ColumnName, Kind, Variable};
use ruff_python_ast::Expr;
use serde_json::{json, Value as Json};

use super::attributes::{
    CATEGORICAL_ATTRIBUTES, FRAME_ATTRIBUTES, PANDAS_EXTENSIONS, SERIES_ATTRIBUTES,
};
use super::facts::{
    column_json, column_series, columns_evidence, columns_ordered, frame_with_columns,
    known_columns, labels, rows,
};
use super::keys;
use super::objects;
use crate::rules::core::cell::constant;
use crate::rules::core::interp::{Args, Effect, Interp};
use crate::rules::core::value::{constant_text, name_list, Obj, Sequence, Value};
use crate::rules::RuleCode;

pub(crate) fn is_frame_attribute(attr: &str) -> bool {
    FRAME_ATTRIBUTES.contains(&attr) || PANDAS_EXTENSIONS.contains(&attr)
}

const FRAME_TYPE: &str = "pandas.core.frame.DataFrame";
const SERIES_TYPE: &str = "pandas.core.series.Series";
const CATEGORICAL_TYPE: &str = "pandas.core.arrays.categorical.Categorical";

/// Whether `label` names `column`. Lenient: a label and a column whose printed forms agree are
/// the same (recorded facts may carry integer names as strings), and names that are neither
/// strings nor integers match anything.
fn same_label(column: &ColumnName, label: &Constant) -> bool {
    if let (ColumnName::Str(name), Constant::Str(label)) = (column, label) {
        // A long name shortened by the facts matches every label it starts.
        if let Some(prefix) = shortened(name) {
            return label.starts_with(prefix);
        }
    }
    match (column, label) {
        (ColumnName::Str(a), Constant::Str(b)) => a == b,
        (ColumnName::Int(a), Constant::Int(b)) => a == b,
        (ColumnName::Str(a), Constant::Int(b)) => *a == b.to_string(),
        (ColumnName::Int(a), Constant::Str(b)) => a.to_string() == *b,
        (ColumnName::Other(_), _) => true,
        _ => true,
    }
}

/// The columns of a frame when they are all known and plain (no MultiIndex columns).
pub(crate) fn plain_columns(var: &Variable) -> Option<Vec<Column>> {
    if var
        .r
        .get("columns_nlevels")
        .and_then(Json::as_u64)
        .is_some_and(|n| n > 1)
    {
        return None;
    }
    let columns = known_columns(var)?;
    let multi = columns.iter().any(|column| match &column.name {
        ColumnName::Str(name) => name.starts_with('(') && name.ends_with(')') && name.contains(','),
        ColumnName::Other(Json::Array(_)) => true,
        _ => false,
    });
    (!multi).then_some(columns)
}

/// The labels that are not columns of the frame (`None` when the columns are not all known).
fn missing_labels(var: &Variable, wanted: &[Constant]) -> Option<Vec<Constant>> {
    let columns = plain_columns(var)?;
    Some(
        wanted
            .iter()
            .filter(|label| !columns.iter().any(|c| same_label(&c.name, label)))
            .cloned()
            .collect(),
    )
}

/// The column a label names, when present.
fn find_column(columns: &[Column], label: &Constant) -> Option<Column> {
    columns.iter().find(|c| same_label(&c.name, label)).cloned()
}

fn label_list(labels: &[Constant]) -> String {
    let texts: Vec<String> = labels.iter().map(constant_text).collect();
    if texts.len() == 1 {
        texts[0].clone()
    } else {
        name_list(&texts)
    }
}

/// Labels given by an argument that is a constant label or list of labels.
fn arg_labels(value: Option<&Value>) -> Option<Vec<Constant>> {
    labels(&value?.constant()?)
}

/// Whether a label that is not a column could still be an index level of the frame.
fn index_may_hold(interp: &Interp, obj: &Obj, missing: &[Constant]) -> bool {
    if let Some(index) = obj.var.r.get("index").and_then(Json::as_object) {
        let nlevels = index.get("nlevels").and_then(Json::as_u64).unwrap_or(1);
        if nlevels > 1 {
            return true;
        }
        return match index.get("name") {
            Some(Json::Null) => false,
            Some(Json::String(name)) => missing.iter().any(|m| m == &Constant::Str(name.clone())),
            Some(_) => true,
            None => true,
        };
    }
    match &obj.source {
        Some(source) => interp.kernel.named_index.contains(source),
        None => true,
    }
}

fn report_missing(
    interp: &mut Interp,
    rule: RuleCode,
    obj: &Obj,
    missing: &[Constant],
    line: u32,
    context: &str,
) {
    let Some(columns) = plain_columns(&obj.var) else {
        return;
    };
    let noun = if missing.len() == 1 {
        "column"
    } else {
        "columns"
    };
    interp.report(
        rule,
        line,
        format!(
            "{context}: `{}` has no {noun} {}.",
            obj.label,
            label_list(missing)
        ),
        vec![columns_evidence(&obj.label, &columns)],
    );
}

/// Check that constant labels are columns; report `rule` for the missing ones.
/// Returns whether all of them are columns (`None`: not known).
fn check_columns(
    interp: &mut Interp,
    rule: RuleCode,
    obj: &Obj,
    wanted: &[Constant],
    line: u32,
    context: &str,
    index_levels_count: bool,
) -> Option<bool> {
    let missing = missing_labels(&obj.var, wanted)?;
    if missing.is_empty() {
        return Some(true);
    }
    if index_levels_count && index_may_hold(interp, obj, &missing) {
        return None;
    }
    report_missing(interp, rule, obj, &missing, line, context);
    Some(false)
}

fn is_frame(obj: &Obj) -> bool {
    obj.kind() == Kind::Dataframe
}

/// The frame restricted to these labels, in this order.
fn select(var: &Variable, wanted: &[Constant]) -> Option<Variable> {
    let columns = plain_columns(var)?;
    let selected = wanted
        .iter()
        .map(|label| find_column(&columns, label))
        .collect::<Option<Vec<_>>>()?;
    Some(frame_with_columns(var, selected))
}

fn without(var: &Variable, dropped: &[Constant]) -> Option<Variable> {
    let columns = plain_columns(var)?;
    let kept = columns
        .into_iter()
        .filter(|c| !dropped.iter().any(|label| same_label(&c.name, label)))
        .collect();
    Some(frame_with_columns(var, kept))
}

/// A frame with the same columns, whose rows and values are no longer known.
fn same_columns(var: &Variable) -> Option<Variable> {
    let columns = plain_columns(var)?;
    let mut frame = frame_with_columns(var, columns);
    frame
        .s
        .insert("shape".to_owned(), json!([null, frame_width(&frame)]));
    frame.v.clear();
    Some(frame)
}

/// A frame with the same columns, rows, and NaN facts (the values may change otherwise).
fn same_shape(var: &Variable) -> Option<Variable> {
    let columns = plain_columns(var)?;
    let mut frame = frame_with_columns(var, columns);
    let has_nan = frame.v.get("has_nan").cloned();
    frame.v.clear();
    if let Some(has_nan) = has_nan {
        frame.v.insert("has_nan".to_owned(), has_nan);
    }
    Some(frame)
}

fn frame_width(var: &Variable) -> usize {
    var.columns().map_or(0, |c| c.len())
}

fn series_of(obj: &Obj, column: &Column) -> Variable {
    let mut series = column_series(&obj.var, column);
    if obj.var.type_name != FRAME_TYPE {
        series.type_name = "unknown".to_owned();
    }
    series
}

// Attributes

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
        "shape" => return super::numpy::shape_value(&obj.var),
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
        "shape" => return super::numpy::shape_value(&obj.var),
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

fn to_numpy(interp: &mut Interp, obj: &Obj) -> Value {
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
    let mut array = super::facts::array(&shape, dtype.as_deref());
    if let Some(has_nan) = obj.var.has_nan() {
        if has_nan || obj.exact_v() {
            array.v.insert("has_nan".to_owned(), Json::Bool(has_nan));
        }
    }
    array.sampled = obj.var.sampled;
    interp.derived(Some(obj), array, format!("{}.values", obj.label))
}

// Subscripts

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

fn groupby_subscript(
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
                        super::numpy::slice_range(columns_key, columns.len() as u64)?.count()
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
                    let range = super::numpy::slice_range(columns_key, columns.len() as u64)?;
                    let picked: Vec<Column> = range.map(|i| columns[i as usize].clone()).collect();
                    let frame = frame_with_columns(&obj.var, picked);
                    Some(interp.derived(Some(obj), frame, text))
                }
                other => match constant(other)? {
                    Constant::Int(position) => {
                        let index = super::numpy::normalize_index(position, columns.len() as u64)?;
                        let series = series_of(obj, &columns[index as usize]);
                        Some(interp.derived(Some(obj), series, text))
                    }
                    Constant::List(items) => {
                        let picked = items
                            .iter()
                            .map(|item| match item {
                                Constant::Int(p) => {
                                    super::numpy::normalize_index(*p, columns.len() as u64)
                                        .map(|i| columns[i as usize].clone())
                                }
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
        if super::numpy::normalize_index(position, size).is_none() {
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
                    super::facts::shape_text(&shape)
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

// Methods

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

pub(crate) fn method(interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Effect {
    match obj.kind() {
        Kind::Dataframe => frame_method(interp, obj, name, args),
        Kind::Series => series_method(interp, obj, name, args),
        Kind::Groupby => groupby_method(interp, obj, name, args),
        _ => Effect::Unknown,
    }
}

fn call_text(obj: &Obj, name: &str) -> String {
    format!("{}.{name}(...)", obj.label)
}

fn frame_method(interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Effect {
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
            super::plots::frame_plot(interp, obj, name, args);
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

/// PD005: keys of `merge` that are not columns of the side they come from.
pub(crate) fn merge_keys(
    interp: &mut Interp,
    left: Option<&Obj>,
    right: Option<&Obj>,
    args: &Args,
    line: u32,
) {
    if args.has_keyword("left_index") || args.has_keyword("right_index") {
        return;
    }
    // pandas validates how the keys are given before it looks them up: `on` with `left_on` or
    // `right_on`, one of these alone, or lists of different lengths raise other errors first.
    let (left_on, right_on) = (args.keyword("left_on"), args.keyword("right_on"));
    if left_on.is_some() || right_on.is_some() {
        let count = |arg: Option<&crate::rules::core::interp::Arg>| key_count(arg?.value.as_ref()?);
        if args.keyword("on").is_some()
            || count(left_on).is_none()
            || count(left_on) != count(right_on)
        {
            return;
        }
    }
    let context = "`merge`";
    if let Some(on) = arg_labels(args.keyword_value("on")) {
        for side in [left, right].into_iter().flatten() {
            if is_frame(side)
                && check_columns(
                    interp,
                    RuleCode::MissingMergeKey,
                    side,
                    &on,
                    line,
                    context,
                    true,
                ) == Some(false)
            {
                return;
            }
        }
    }
    for (keyword, side) in [("left_on", left), ("right_on", right)] {
        let (Some(side), Some(wanted)) = (side, arg_labels(args.keyword_value(keyword))) else {
            continue;
        };
        if is_frame(side)
            && check_columns(
                interp,
                RuleCode::MissingMergeKey,
                side,
                &wanted,
                line,
                context,
                true,
            ) == Some(false)
        {
            return;
        }
    }
}

/// How many keys a `merge` key argument gives (`com.maybe_make_list`: a list or tuple its
/// items, anything else one).
fn key_count(value: &Value) -> Option<usize> {
    match value {
        Value::Seq {
            items,
            of: Sequence::List | Sequence::Tuple,
        } => Some(items.len()),
        Value::Const(Constant::List(items) | Constant::Tuple(items)) => Some(items.len()),
        Value::Object(obj) if matches!(obj.kind(), Kind::List | Kind::Tuple) => {
            obj.var.len().and_then(|len| usize::try_from(len).ok())
        }
        Value::Const(_) | Value::Seq { .. } | Value::Object(_) => Some(1),
        _ => None,
    }
}

/// PD007 and PD005 for `join`.
fn join(interp: &mut Interp, left: &Obj, args: &Args, line: u32) {
    // `on` is matched with the other frame's index levels: a count that differs raises
    // `ValueError` before any key is looked up.
    let right_levels = args
        .value(0, "other")
        .and_then(Value::obj)
        .filter(|right| matches!(right.kind(), Kind::Dataframe | Kind::Series))
        .and_then(|right| right.var.r.get("index")?.get("nlevels")?.as_u64());
    let on = args.keyword_value("on");
    let levels_agree = on
        .and_then(key_count)
        .is_some_and(|count| Some(count as u64) == right_levels);
    if let Some(on) = arg_labels(on).filter(|_| levels_agree) {
        let context = format!("`{}.join(..., on=...)`", left.label);
        if check_columns(
            interp,
            RuleCode::MissingMergeKey,
            left,
            &on,
            line,
            &context,
            true,
        ) == Some(false)
        {
            return;
        }
    }
    if args.has_keyword("lsuffix") || args.has_keyword("rsuffix") {
        return;
    }
    let Some(right) = args.value(0, "other").and_then(Value::obj) else {
        return;
    };
    let right_names: Vec<ColumnName> = match right.kind() {
        Kind::Dataframe => match plain_columns(&right.var) {
            Some(columns) => columns.into_iter().map(|c| c.name).collect(),
            None => return,
        },
        _ => return,
    };
    let Some(left_columns) = plain_columns(&left.var) else {
        return;
    };
    let overlap: Vec<String> = left_columns
        .iter()
        .filter(|c| right_names.iter().any(|r| r == &c.name))
        .map(|c| c.name.to_string())
        .collect();
    if overlap.is_empty() {
        return;
    }
    let right_columns = plain_columns(&right.var).unwrap_or_default();
    interp.report(
        RuleCode::JoinOverlappingColumns,
        line,
        format!(
            "`{}.join({})` without lsuffix/rsuffix: both frames have the columns {}.",
            left.label,
            right.label,
            name_list(&overlap)
        ),
        vec![
            columns_evidence(&left.label, &left_columns),
            columns_evidence(&right.label, &right_columns),
        ],
    );
}

fn series_method(interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Effect {
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

fn groupby_method(interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Effect {
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

// Functions

pub(crate) fn function(interp: &mut Interp, name: &str, args: &Args) -> Option<Effect> {
    let function = name.strip_prefix("pandas.")?;
    Some(match function {
        "merge" => {
            let left = args.value(0, "left").and_then(Value::obj).cloned();
            let right = args.value(1, "right").and_then(Value::obj).cloned();
            merge_keys(interp, left.as_ref(), right.as_ref(), args, args.line);
            Effect::Pure(None)
        }
        "DataFrame" => Effect::Pure(frame_literal(interp, args)),
        "to_numeric" => {
            let errors = args.keyword_value("errors").and_then(Value::str);
            if errors.is_none_or(|e| e == "raise") && !args.star {
                if let Some(series) = args.value(0, "arg").and_then(Value::obj).cloned() {
                    if series.kind() == Kind::Series {
                        let target = NumericTarget::Float;
                        conversion(
                            interp,
                            &series,
                            &series.var,
                            None,
                            target,
                            args.line,
                            "pd.to_numeric",
                        );
                    }
                }
            }
            Effect::Pure(None)
        }
        "Categorical" => {
            let mut var = Variable::new(CATEGORICAL_TYPE, Kind::Categorical);
            if let Some(length) = args.value(0, "values").and_then(super::length_of) {
                var.s.insert("len".to_owned(), json!(length));
            }
            Effect::Pure(Some(interp.derived(None, var, "pd.Categorical(...)")))
        }
        _ => Effect::Pure(None),
    })
}

/// `pd.DataFrame({'a': [...], 'b': [...]})` with constant data: its columns and rows.
fn frame_literal(interp: &mut Interp, args: &Args) -> Option<Value> {
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
enum NumericTarget {
    Int,
    Float,
}

fn numeric_target(value: &Value) -> Option<NumericTarget> {
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
fn conversion(
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
fn numeric_index(var: &Variable) -> bool {
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

/// The text a name or value was shortened to (`'Total Gross (mi…'`), without the mark.
pub(crate) fn shortened(text: &str) -> Option<&str> {
    text.strip_suffix('\u{2026}')
        .or_else(|| text.strip_suffix("..."))
}

/// A string value seen whole (not shortened, not a `<type>` placeholder of a non-string).
pub(crate) fn seen_text(value: &Json) -> Option<&str> {
    let text = value.as_str()?;
    let placeholder = text.starts_with('<') && text.ends_with('>');
    (shortened(text).is_none() && !placeholder).then_some(text)
}

/// Whether the values' element types, when the facts list them, are all `str`.
pub(crate) fn holds_only_strings(facts: &Variable) -> bool {
    match facts.v.get("element_types").and_then(Json::as_array) {
        Some(types) => types.iter().all(|t| t.as_str() == Some("builtins.str")),
        None => true,
    }
}
