//! Column labels: whether a label names a column of the facts (lenient where the facts print
//! or shorten names), PD001/PD003/PD004's report of labels that are not columns (unless the
//! index may hold them), and the frames derived by selecting or dropping labelled columns. Every
//! other pandas file asks here, so what "this label is a column" means is decided once.

use crane_analysis::Constant;
use crane_runtime::{Column, ColumnName, Kind, Variable};
use serde_json::{json, Value as Json};

use super::FRAME_TYPE;
use crate::rules::core::interp::Interp;
use crate::rules::core::value::{constant_text, name_list, Obj, Value};
use crate::rules::models::facts::{
    column_series, columns_evidence, frame_with_columns, known_columns, labels,
};
use crate::rules::RuleCode;

/// Whether `label` names `column`. Lenient: a label and a column whose printed forms agree are
/// the same (recorded facts may carry integer names as strings), and names that are neither
/// strings nor integers match anything.
pub(super) fn same_label(column: &ColumnName, label: &Constant) -> bool {
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
pub(super) fn find_column(columns: &[Column], label: &Constant) -> Option<Column> {
    columns.iter().find(|c| same_label(&c.name, label)).cloned()
}

pub(super) fn label_list(labels: &[Constant]) -> String {
    let texts: Vec<String> = labels.iter().map(constant_text).collect();
    if texts.len() == 1 {
        texts[0].clone()
    } else {
        name_list(&texts)
    }
}

/// Labels given by an argument that is a constant label or list of labels.
pub(super) fn arg_labels(value: Option<&Value>) -> Option<Vec<Constant>> {
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
pub(super) fn check_columns(
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

pub(super) fn is_frame(obj: &Obj) -> bool {
    obj.kind() == Kind::Dataframe
}

/// The frame restricted to these labels, in this order.
pub(super) fn select(var: &Variable, wanted: &[Constant]) -> Option<Variable> {
    let columns = plain_columns(var)?;
    let selected = wanted
        .iter()
        .map(|label| find_column(&columns, label))
        .collect::<Option<Vec<_>>>()?;
    Some(frame_with_columns(var, selected))
}

pub(super) fn without(var: &Variable, dropped: &[Constant]) -> Option<Variable> {
    let columns = plain_columns(var)?;
    let kept = columns
        .into_iter()
        .filter(|c| !dropped.iter().any(|label| same_label(&c.name, label)))
        .collect();
    Some(frame_with_columns(var, kept))
}

/// A frame with the same columns, whose rows and values are no longer known.
pub(super) fn same_columns(var: &Variable) -> Option<Variable> {
    let columns = plain_columns(var)?;
    let mut frame = frame_with_columns(var, columns);
    frame
        .s
        .insert("shape".to_owned(), json!([null, frame_width(&frame)]));
    frame.v.clear();
    Some(frame)
}

/// A frame with the same columns, rows, and NaN facts (the values may change otherwise).
pub(super) fn same_shape(var: &Variable) -> Option<Variable> {
    let columns = plain_columns(var)?;
    let mut frame = frame_with_columns(var, columns);
    let has_nan = frame.v.get("has_nan").cloned();
    frame.v.clear();
    if let Some(has_nan) = has_nan {
        frame.v.insert("has_nan".to_owned(), has_nan);
    }
    Some(frame)
}

pub(super) fn frame_width(var: &Variable) -> usize {
    var.columns().map_or(0, |c| c.len())
}

pub(super) fn series_of(obj: &Obj, column: &Column) -> Variable {
    let mut series = column_series(&obj.var, column);
    if obj.var.type_name != FRAME_TYPE {
        series.type_name = "unknown".to_owned();
    }
    series
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
