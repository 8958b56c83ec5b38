//! Indexing: normalizing a position and a slice against a length as Python does, `a[...]` on
//! an array (NP004 for an index past a dimension or too many indices, NP007 for a column name on
//! an array whose dtype has no fields), and NP009 for a list, tuple or str indexed by an array
//! that is not 0-d. Positions and slices are shared with pandas' `iloc`, so their arithmetic
//! lives here once.

use std::ops::Range;

use crane_analysis::Constant;
use crane_runtime::Kind;
use ruff_python_ast::Expr;

use super::{derive_array, is_array, plain_int};
use crate::rules::core::cell::constant;
use crate::rules::core::interp::Interp;
use crate::rules::core::value::{Obj, Sequence, Value};
use crate::rules::models::facts::shape_text;
use crate::rules::RuleCode;

/// A position normalized to `0..size` (negative counts from the end); `None` when out of bounds.
pub(crate) fn normalize_index(position: i64, size: u64) -> Option<u64> {
    let size = i64::try_from(size).ok()?;
    let index = if position < 0 {
        position + size
    } else {
        position
    };
    (0..size).contains(&index).then_some(index as u64)
}

/// The positions a constant slice with step 1 selects from `len` items.
pub(crate) fn slice_range(expr: &Expr, len: u64) -> Option<Range<u64>> {
    let Expr::Slice(slice) = expr else {
        return None;
    };
    if let Some(step) = &slice.step {
        if constant(step)? != Constant::Int(1) {
            return None;
        }
    }
    let len = i64::try_from(len).ok()?;
    let bound = |expr: &Option<Box<Expr>>, default: i64| -> Option<i64> {
        match expr {
            None => Some(default),
            Some(expr) => match constant(expr)? {
                Constant::Int(value) => {
                    let value = if value < 0 { value + len } else { value };
                    Some(value.clamp(0, len))
                }
                Constant::None => Some(default),
                _ => None,
            },
        }
    };
    let start = bound(&slice.lower, 0)?;
    let stop = bound(&slice.upper, len)?;
    Some(start as u64..stop.max(start) as u64)
}

/// How many positions a constant slice (any step) selects from `len` items.
fn slice_len(expr: &Expr, len: u64) -> Option<u64> {
    let Expr::Slice(slice) = expr else {
        return None;
    };
    let bound = |expr: &Option<Box<Expr>>| -> Option<Option<i64>> {
        match expr {
            None => Some(None),
            Some(expr) => crate::rules::core::python::slice_bound(&constant(expr)?),
        }
    };
    let count = crate::rules::core::python::slice_length(
        i64::try_from(len).ok()?,
        bound(&slice.lower)?,
        bound(&slice.upper)?,
        bound(&slice.step)?,
    )?;
    u64::try_from(count).ok()
}

/// Whether an array dtype (as the facts print it) has fields or is raw bytes: a structured or
/// record dtype, or a void one.
pub(crate) fn is_structured(dtype: &str) -> bool {
    dtype.contains('(')
        || dtype.contains('[') && !dtype.starts_with("datetime") && !dtype.starts_with("timedelta")
        || dtype.starts_with('V')
        || dtype.contains("void")
        || dtype.contains("record")
}

pub(crate) fn subscript(
    interp: &mut Interp,
    obj: &Obj,
    slice: &Expr,
    key: Option<&Value>,
    line: u32,
) -> Option<Value> {
    if !is_array(obj) {
        return None;
    }
    if let Some(Constant::Str(field)) = key.and_then(Value::constant) {
        let dtype = obj.var.dtype()?;
        if !is_structured(dtype) {
            interp.report(
                RuleCode::StringIndexOnArray,
                line,
                format!(
                    "`{}['{field}']`: `{}` is a numpy array of dtype {dtype}, which cannot be indexed by a string.",
                    obj.label, obj.label
                ),
                vec![format!("{}: numpy.ndarray, dtype {dtype}", obj.label)],
            );
        }
        return None;
    }
    let shape = obj.var.shape()?;
    if let Some(Value::Ints { low, high }) = key {
        let Some(Some(size)) = shape.first().copied() else {
            return None;
        };
        // Every value of the index selects a row of the same shape.
        let row = (*high < size as i64 && *low >= -(size as i64) && shape.len() > 1)
            .then(|| shape[1..].to_vec());
        let size = size as i64;
        if *high >= size || *low < -size {
            let reached = if *high >= size { *high } else { *low };
            interp.report(
                RuleCode::IndexOutOfBounds,
                line,
                format!(
                    "`{}[{}]`: the loop index reaches {reached}, but axis 0 of `{}` has size {size}.",
                    obj.label,
                    interp.cell.text(slice),
                    obj.label
                ),
                vec![
                    format!("{} shape: {}", obj.label, shape_text(&shape)),
                    format!("{} takes every value from {low} to {high}", interp.cell.text(slice)),
                ],
            );
        }
        let text = format!("{}[{}]", obj.label, interp.cell.text(slice));
        return row.map(|row| derive_array(interp, obj, &row, text));
    }
    let items: Vec<&Expr> = match slice {
        Expr::Tuple(tuple) if !tuple.parenthesized => tuple.elts.iter().collect(),
        other => vec![other],
    };
    // The value each index item evaluates to (`x[k]` with `k` known), by position.
    let item_values: Vec<Option<&Value>> = match (key, slice) {
        (Some(Value::Seq { items: values, .. }), Expr::Tuple(tuple))
            if !tuple.parenthesized && values.len() == items.len() =>
        {
            values.iter().map(Option::as_ref).collect()
        }
        (key, _) if items.len() == 1 => vec![key],
        _ => vec![None; items.len()],
    };
    let item_ints: Vec<Option<i64>> = item_values.iter().map(|v| plain_int(*v)).collect();
    // `None` adds an axis however it is spelt (`np.newaxis` is `None`).
    let new_axis: Vec<bool> = items
        .iter()
        .zip(&item_values)
        .map(|(item, value)| {
            matches!(item, Expr::NoneLiteral(_))
                || matches!(value, Some(Value::Const(Constant::None)))
                || matches!(value, Some(Value::Qual { name, .. }) if name == "numpy.newaxis")
        })
        .collect();
    if items
        .iter()
        .any(|item| matches!(item, Expr::EllipsisLiteral(_)))
    {
        return None;
    }
    let consumed = new_axis.iter().filter(|added| !**added).count();
    let mut new_shape = Vec::new();
    let mut axis = 0;
    let mut all_basic = true;
    for (index, item) in items.iter().enumerate() {
        if new_axis[index] {
            new_shape.push(Some(1));
            continue;
        }
        match item {
            Expr::Slice(_) => {
                let Some(dim) = shape.get(axis) else {
                    break;
                };
                new_shape.push(dim.and_then(|d| slice_len(item, d)));
                axis += 1;
            }
            other => {
                let Some(dim) = shape.get(axis).copied() else {
                    // Past the last axis, an item not known to be an integer may be one that
                    // takes no axis (`Ellipsis`, a name holding `None`).
                    all_basic &= item_ints[index].is_some() || constant(other).is_some();
                    break;
                };
                let known = item_ints[index].map(Constant::Int);
                match known.or_else(|| constant(other)) {
                    Some(Constant::Int(position)) => {
                        if let Some(size) = dim {
                            if normalize_index(position, size).is_none() {
                                interp.report(
                                    RuleCode::IndexOutOfBounds,
                                    line,
                                    format!(
                                        "`{}[{}]`: index {position} is out of bounds for axis {axis} of size {size}.",
                                        obj.label,
                                        interp.cell.text(slice)
                                    ),
                                    vec![format!("{} shape: {}", obj.label, shape_text(&shape))],
                                );
                                return None;
                            }
                        }
                    }
                    _ => all_basic = false,
                }
                axis += 1;
            }
        }
    }
    if consumed > shape.len()
        && items
            .iter()
            .zip(&new_axis)
            .all(|(item, added)| *added || is_basic_index(item))
    {
        interp.report(
            RuleCode::IndexOutOfBounds,
            line,
            format!(
                "`{}[{}]` uses {consumed} indices, but `{}` has {} dimension{}.",
                obj.label,
                interp.cell.text(slice),
                obj.label,
                shape.len(),
                if shape.len() == 1 { "" } else { "s" }
            ),
            vec![format!("{} shape: {}", obj.label, shape_text(&shape))],
        );
        return None;
    }
    if !all_basic {
        return None;
    }
    new_shape.extend(shape.iter().skip(axis).copied());
    if new_shape.is_empty() {
        // A single element, not an array.
        return None;
    }
    let text = format!("{}[{}]", obj.label, interp.cell.text(slice));
    Some(derive_array(interp, obj, &new_shape, text))
}

/// An index item that takes one axis for sure: a constant integer or a slice.
fn is_basic_index(item: &Expr) -> bool {
    matches!(item, Expr::Slice(_) | Expr::NoneLiteral(_))
        || matches!(constant(item), Some(Constant::Int(_)))
}

/// NP009: a Python list, tuple or str indexed by an array of one or more dimensions. Sequences
/// take integers through `__index__`, which numpy allows only for 0-d integer arrays. Whether it
/// reported.
pub(crate) fn array_as_sequence_index(
    interp: &mut Interp,
    sequence: &Value,
    index: &Obj,
    slice: &Expr,
    line: u32,
) -> bool {
    if !is_array(index) {
        return false;
    }
    let Some(shape) = index.var.shape() else {
        return false;
    };
    if shape.is_empty() {
        return false;
    }
    let (subject, what) = match sequence {
        Value::Object(obj) => {
            let what = match obj.kind() {
                Kind::Tuple => "tuple",
                Kind::Str => "str",
                _ => "list",
            };
            (format!("`{}`, a Python {what},", obj.label), what)
        }
        Value::Seq {
            of: Sequence::Tuple,
            ..
        } => ("A Python tuple".to_owned(), "tuple"),
        Value::Seq { .. } => ("A Python list".to_owned(), "list"),
        _ => ("A Python string".to_owned(), "str"),
    };
    interp.report(
        RuleCode::ArrayAsSequenceIndex,
        line,
        format!(
            "{subject} is indexed by `{}`, a numpy array of shape {}: only integer scalars can index a {what}.",
            interp.cell.text(slice),
            shape_text(&shape)
        ),
        vec![
            format!("{} shape: {}", index.label, shape_text(&shape)),
            format!("indexed: a Python {what}"),
        ],
    );
    true
}
