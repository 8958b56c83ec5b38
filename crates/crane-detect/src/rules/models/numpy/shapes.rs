//! Reshaping and axes: the shape `reshape` gives (`-1` inferred) with NP001 when the sizes
//! differ, and NP006 for a constant axis beyond the array's number of dimensions.

use crane_analysis::Constant;

use super::{derive_array, is_array};
use crate::rules::core::interp::Interp;
use crate::rules::core::value::{Obj, Value};
use crate::rules::models::facts::{full_shape, shape_text};
use crate::rules::RuleCode;

/// The shape `wanted` (with at most one `-1`) gives an array of this shape, or why it cannot
/// (`Ok(None)`: not judged). numpy and torch infer `-1` and refuse a size that differs alike.
pub(crate) fn reshaped(shape: &[u64], wanted: &[i64]) -> Result<Option<Vec<u64>>, String> {
    let size: u64 = shape.iter().product();
    let unknowns = wanted.iter().filter(|&&d| d == -1).count();
    let known: i64 = wanted.iter().filter(|&&d| d != -1).product();
    if wanted.iter().any(|&d| d < -1) {
        return Ok(None);
    }
    let fits = match unknowns {
        0 => known as u64 == size,
        // Neither can infer -1 next to a zero dimension, whatever the size.
        1 if known == 0 => return Ok(None),
        1 => known > 0 && size.is_multiple_of(known as u64),
        _ => false,
    };
    if !fits {
        let wanted_text = wanted
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        return Err(if unknowns > 1 {
            "it can only infer one dimension".to_owned()
        } else if unknowns == 1 {
            format!("{size} elements do not divide into rows of {known}")
        } else {
            format!("({wanted_text}) holds {known} elements, the array {size}")
        });
    }
    Ok(Some(
        wanted
            .iter()
            .map(|&d| {
                if d == -1 {
                    size / known as u64
                } else {
                    d as u64
                }
            })
            .collect(),
    ))
}

/// NP001: reshape to a shape whose size differs from the array's.
pub(super) fn reshape(
    interp: &mut Interp,
    obj: &Obj,
    dims: &[Option<&Value>],
    line: u32,
) -> Option<Value> {
    let wanted: Vec<i64> = dims
        .iter()
        .map(|d| d.and_then(|d| d.int()))
        .collect::<Option<_>>()?;
    let shape = full_shape(&obj.var)?;
    let wanted_text = wanted
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let new_shape = match reshaped(&shape, &wanted) {
        Ok(new_shape) => new_shape?,
        Err(why) => {
            interp.report(
                RuleCode::ReshapeSizeMismatch,
                line,
                format!(
                    "`{}` of shape {} cannot be reshaped to ({wanted_text}): {why}.",
                    obj.label,
                    shape_text(&shape.iter().map(|&d| Some(d)).collect::<Vec<_>>())
                ),
                vec![format!(
                    "{} shape: {}",
                    obj.label,
                    shape_text(&shape.iter().map(|&d| Some(d)).collect::<Vec<_>>())
                )],
            );
            return None;
        }
    };
    let new_shape: Vec<Option<u64>> = new_shape.into_iter().map(Some).collect();
    let text = format!("{}.reshape({wanted_text})", obj.label);
    Some(derive_array(interp, obj, &new_shape, text))
}

/// NP006: a constant axis outside the array's dimensions.
pub(super) fn axis_bounds(
    interp: &mut Interp,
    obj: &Obj,
    axis: &Value,
    line: u32,
    function: &str,
    insert: bool,
) {
    if !is_array(obj) {
        return;
    }
    let Some(ndim) = obj.var.ndim() else {
        return;
    };
    let axes: Vec<i64> = match axis.constant() {
        Some(Constant::Int(axis)) => vec![axis],
        Some(Constant::Tuple(items)) | Some(Constant::List(items)) => items
            .iter()
            .filter_map(|i| match i {
                Constant::Int(i) => Some(*i),
                _ => None,
            })
            .collect(),
        _ => return,
    };
    let limit = ndim as i64 + i64::from(insert);
    for axis in axes {
        if axis >= limit || axis < -limit {
            interp.report(
                RuleCode::AxisOutOfBounds,
                line,
                format!(
                    "`{function}` with axis={axis} on `{}`, which has {ndim} dimension{}.",
                    obj.label,
                    if ndim == 1 { "" } else { "s" }
                ),
                vec![format!(
                    "{} shape: {}",
                    obj.label,
                    obj.var.shape().map_or("?".to_owned(), |s| shape_text(&s))
                )],
            );
            return;
        }
    }
}
