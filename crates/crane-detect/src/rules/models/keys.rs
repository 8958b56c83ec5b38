//! How pandas reads an argument that may name columns: which of its items are labels the frame
//! must hold (a missing one is a `KeyError`, PD004) and which are values that name nothing (a
//! grouping array, a function, a mapping). The readings follow pandas' own resolution
//! (`get_grouper` for `groupby`, `_convert_by` for `pivot_table`, the `isinstance(x, list)`
//! tests of `set_index` and `sort_values`); an argument whose reading depends on what the facts
//! do not say is not read at all, so no label of it is judged.

use crane_analysis::Constant;
use crane_runtime::Kind;

use crate::rules::core::value::{Sequence, Value};

/// A label crane can compare with column names.
fn plain_label(value: &Value) -> Option<Constant> {
    match value.constant()? {
        constant @ (Constant::Str(_) | Constant::Int(_)) => Some(constant),
        _ => None,
    }
}

/// The items of a Python list (not a tuple, not a pandas Index): `None` items are unknown.
fn list_items(value: &Value) -> Option<Vec<Option<Value>>> {
    match value {
        Value::Seq {
            items,
            of: Sequence::List,
        } => Some(items.clone()),
        Value::Const(Constant::List(items)) => Some(
            items
                .iter()
                .map(|item| Some(Value::Const(item.clone())))
                .collect(),
        ),
        _ => None,
    }
}

/// Labels of an argument pandas reads as one label unless it is a list (`set_index` keys,
/// `sort_values` by, `explode` column): a string or integer, or a list of them. A tuple is one
/// label and an Index or array is values, so neither is read.
pub(crate) fn label_or_list(value: Option<&Value>) -> Option<Vec<Constant>> {
    let value = value?;
    if let Some(label) = plain_label(value) {
        return Some(vec![label]);
    }
    list_items(value)?
        .iter()
        .map(|item| plain_label(item.as_ref()?))
        .collect()
}

/// Labels of an argument pandas reads as one label when it is a scalar or a tuple and as
/// labels when it is any other list-like (`drop`, `nlargest` columns): a string or integer, or
/// a list or Index of them.
pub(crate) fn label_or_list_like(value: Option<&Value>) -> Option<Vec<Constant>> {
    let value = value?;
    if let Value::Seq {
        items,
        of: Sequence::Labels,
    } = value
    {
        return items
            .iter()
            .map(|item| plain_label(item.as_ref()?))
            .collect();
    }
    label_or_list(Some(value))
}

/// What one item of a list of grouping keys is to `get_grouper`.
enum Key {
    /// A string or integer: a column or index level name, or one value of a grouping array.
    Label(Constant),
    /// A list, tuple, array, Series, Index, function or dict: its presence makes every label
    /// of the list a key (no index replacement).
    Forcing,
    /// Anything else, or not known.
    Unknown,
}

fn key(item: Option<&Value>) -> Key {
    let Some(item) = item else {
        return Key::Unknown;
    };
    if let Some(label) = plain_label(item) {
        return Key::Label(label);
    }
    match item {
        Value::Const(Constant::List(_) | Constant::Tuple(_))
        | Value::Seq { .. }
        | Value::Dict(_)
        | Value::CellFunction(_) => Key::Forcing,
        Value::Object(obj)
            if matches!(
                obj.kind(),
                Kind::Series | Kind::Ndarray | Kind::Index | Kind::Dict
            ) =>
        {
            Key::Forcing
        }
        _ => Key::Unknown,
    }
}

/// The labels `get_grouper` reads as keys from a list of groupers on a frame of `rows` rows:
/// a list as long as the rows whose items are all scalars is one grouping array unless every
/// item is a column or index level name, so its labels are read only when its length is known
/// to differ; with a list, tuple, array, Series, function or dict among the items, every label
/// is a key. Labels among unknown items of an undecided list are not read.
fn keys_of_list(items: &[Option<Value>], rows: Option<u64>) -> Option<Vec<Constant>> {
    let keys: Vec<Key> = items.iter().map(|item| key(item.as_ref())).collect();
    let labels: Vec<Constant> = keys
        .iter()
        .filter_map(|key| match key {
            Key::Label(label) => Some(label.clone()),
            _ => None,
        })
        .collect();
    if keys.iter().any(|key| matches!(key, Key::Forcing)) {
        return Some(labels);
    }
    let all_labels = labels.len() == keys.len();
    (all_labels && rows.is_some_and(|rows| rows != keys.len() as u64)).then_some(labels)
}

/// The labels `DataFrame.groupby(by)` (and `value_counts(subset)`, which groups by it) reads as
/// keys, on a frame of `rows` rows: a string or integer is one key (a tuple is one label, not
/// read); a list as [`keys_of_list`] reads it; an Index, array, Series, function, dict or
/// `pd.Grouper` names no column here.
pub(crate) fn grouping_keys(by: Option<&Value>, rows: Option<u64>) -> Option<Vec<Constant>> {
    let by = by?;
    if let Some(label) = plain_label(by) {
        return Some(vec![label]);
    }
    keys_of_list(&list_items(by)?, rows)
}

/// The labels `pivot_table` reads as keys from its `index` and `columns` (`None` where absent):
/// each becomes a list as `_convert_by` makes it (a scalar, array, Index or Series is one item,
/// a list or tuple its items), and the two together are grouped by as `groupby` reads a list.
pub(crate) fn pivot_table_keys(
    index: Option<Option<&Value>>,
    columns: Option<Option<&Value>>,
    rows: Option<u64>,
) -> Option<Vec<Constant>> {
    let mut items = Vec::new();
    for argument in [index, columns].into_iter().flatten() {
        let Some(value) = argument else {
            items.push(None);
            continue;
        };
        match value {
            Value::Const(Constant::None) => {}
            Value::Const(Constant::List(values) | Constant::Tuple(values)) => {
                items.extend(values.iter().map(|value| Some(Value::Const(value.clone()))))
            }
            Value::Seq {
                items: values,
                of: Sequence::List | Sequence::Tuple,
            } => items.extend(values.iter().cloned()),
            other => items.push(Some(other.clone())),
        }
    }
    keys_of_list(&items, rows)
}
