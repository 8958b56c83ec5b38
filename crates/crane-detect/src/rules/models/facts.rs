//! Facts of library objects read and made in the library's own terms: a frame's columns, an
//! array's shape, a frame or array derived inside the cell.

use crane_analysis::Constant;
use crane_runtime::{Column, ColumnName, Kind, Variable};
use serde_json::{json, Value as Json};

use crate::rules::core::value::name_list;

/// Column labels a constant names: one label, or each label of a list/tuple.
pub(crate) fn labels(constant: &Constant) -> Option<Vec<Constant>> {
    match constant {
        Constant::Str(_) | Constant::Int(_) => Some(vec![constant.clone()]),
        Constant::List(items) | Constant::Tuple(items) => {
            if items
                .iter()
                .all(|item| matches!(item, Constant::Str(_) | Constant::Int(_)))
            {
                Some(items.clone())
            } else {
                None
            }
        }
        _ => None,
    }
}

pub(crate) fn column_json(name: &ColumnName) -> Json {
    match name {
        ColumnName::Str(text) => Json::String(text.clone()),
        ColumnName::Int(value) => json!(value),
        ColumnName::Other(value) => value.clone(),
    }
}

/// The columns of a frame when all of them are known: listed completely, without duplicates,
/// as many as the shape says.
pub(crate) fn known_columns(var: &Variable) -> Option<Vec<Column>> {
    if !matches!(var.kind, Kind::Dataframe | Kind::Groupby)
        || var
            .r
            .get("columns_truncated")
            .and_then(Json::as_u64)
            .is_some_and(|n| n > 0)
        || var
            .r
            .get("duplicated_columns")
            .and_then(Json::as_array)
            .is_some_and(|d| !d.is_empty())
    {
        return None;
    }
    let columns = var.columns()?;
    if let Some(Some(width)) = var.shape().as_deref().and_then(|s| s.get(1).copied()) {
        if width != columns.len() as u64 {
            return None;
        }
    }
    Some(columns)
}

/// Whether `R.columns` lists the columns in the frame's order: facts whose source cannot
/// guarantee it (recorded ones) say `columns_ordered: false`, and then positions, first
/// columns and loops that may stop at a column are not known.
pub(crate) fn columns_ordered(var: &Variable) -> bool {
    var.r.get("columns_ordered").and_then(Json::as_bool) != Some(false)
}

/// `S.shape` when every dimension is known.
pub(crate) fn full_shape(var: &Variable) -> Option<Vec<u64>> {
    var.shape()?.into_iter().collect()
}

/// The number of rows (first dimension), from `S.shape` or, for 1-D objects, `S.len`.
pub(crate) fn rows(var: &Variable) -> Option<u64> {
    match var.shape().as_deref().map(<[Option<u64>]>::first) {
        Some(Some(Some(rows))) => Some(*rows),
        Some(_) => None,
        None => match var.kind {
            Kind::Series | Kind::Ndarray | Kind::List | Kind::Tuple | Kind::Index => var.len(),
            _ => None,
        },
    }
}

/// A frame with a new list of columns, keeping the facts that stay true: the rows, and the
/// per-column facts of the kept columns.
pub(crate) fn frame_with_columns(source: &Variable, columns: Vec<Column>) -> Variable {
    let mut frame = Variable::new(source.type_name.clone(), Kind::Dataframe);
    frame.sampled = source.sampled;
    let shape = json!([
        rows(source).map_or(Json::Null, |rows| json!(rows)),
        columns.len()
    ]);
    frame.s.insert("shape".to_owned(), shape);
    let names: Vec<ColumnName> = columns.iter().map(|c| c.name.clone()).collect();
    frame.r.insert(
        "columns".to_owned(),
        Json::Array(
            columns
                .iter()
                .map(|column| {
                    let mut entry = serde_json::Map::new();
                    entry.insert("name".to_owned(), column_json(&column.name));
                    if let Some(dtype) = &column.dtype {
                        entry.insert("dtype".to_owned(), Json::String(dtype.clone()));
                    }
                    Json::Object(entry)
                })
                .collect(),
        ),
    );
    if let Some(index) = source.r.get("index") {
        frame.r.insert("index".to_owned(), index.clone());
    }
    if !columns_ordered(source) {
        frame
            .r
            .insert("columns_ordered".to_owned(), Json::Bool(false));
    }
    if let Some(values) = source.v.get("columns").and_then(Json::as_object) {
        let kept: serde_json::Map<String, Json> = names
            .iter()
            .filter_map(|name| {
                let key = name.key();
                values.get(&key).map(|facts| (key, facts.clone()))
            })
            .collect();
        frame.v.insert("columns".to_owned(), Json::Object(kept));
    }
    // A subset of a frame without NaN has none; with NaN it may or may not.
    match source.has_nan() {
        Some(false) => {
            frame.v.insert("has_nan".to_owned(), Json::Bool(false));
        }
        Some(true) => {
            if let Some(has_nan) = columns_have_nan(&frame, &names) {
                frame.v.insert("has_nan".to_owned(), Json::Bool(has_nan));
            }
        }
        None => {}
    }
    frame
}

/// Whether some of these columns hold NaN, from the per-column null counts (exact only).
fn columns_have_nan(frame: &Variable, names: &[ColumnName]) -> Option<bool> {
    let mut any = false;
    for name in names {
        let nulls = frame.column_values(&name.key())?.get("nulls")?.as_u64()?;
        any |= nulls > 0;
    }
    if any || !frame.sampled {
        Some(any)
    } else {
        None
    }
}

/// A 1-D series holding one column of a frame.
pub(crate) fn column_series(frame: &Variable, column: &Column) -> Variable {
    let mut series = Variable::new("pandas.core.series.Series", Kind::Series);
    series.sampled = frame.sampled;
    series.s.insert(
        "shape".to_owned(),
        json!([rows(frame).map_or(Json::Null, |rows| json!(rows))]),
    );
    if let Some(dtype) = &column.dtype {
        series
            .r
            .insert("dtype".to_owned(), Json::String(dtype.clone()));
    }
    series
        .r
        .insert("name".to_owned(), column_json(&column.name));
    if let Some(index) = frame.r.get("index") {
        series.r.insert("index".to_owned(), index.clone());
    }
    if let Some(values) = frame.column_values(&column.name.key()) {
        for (key, value) in values {
            series.v.insert(key.clone(), value.clone());
        }
        if let Some(nulls) = values.get("nulls").and_then(Json::as_u64) {
            if nulls > 0 || !frame.sampled {
                series.v.insert("has_nan".to_owned(), Json::Bool(nulls > 0));
            }
        }
    }
    if frame.has_nan() == Some(false) {
        series.v.insert("has_nan".to_owned(), Json::Bool(false));
    }
    series
}

/// An ndarray of this shape (unknown dimensions `None`), with an optional dtype.
pub(crate) fn array(shape: &[Option<u64>], dtype: Option<&str>) -> Variable {
    let mut array = Variable::new("numpy.ndarray", Kind::Ndarray);
    array.s.insert(
        "shape".to_owned(),
        Json::Array(
            shape
                .iter()
                .map(|d| d.map_or(Json::Null, |d| json!(d)))
                .collect(),
        ),
    );
    if let Some(dtype) = dtype {
        array
            .r
            .insert("dtype".to_owned(), Json::String(dtype.to_owned()));
    }
    array
}

/// `[a, b, c]` of a frame's columns, for evidence.
pub(crate) fn columns_evidence(label: &str, columns: &[Column]) -> String {
    let names: Vec<String> = columns.iter().map(|c| c.name.to_string()).collect();
    format!("{label} columns: {}", name_list(&names))
}

/// `(3, 4)` as Python prints a shape; unknown dimensions as `?`.
pub(crate) fn shape_text(shape: &[Option<u64>]) -> String {
    let dims: Vec<String> = shape
        .iter()
        .map(|d| d.map_or("?".to_owned(), |d| d.to_string()))
        .collect();
    if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    }
}
