//! Joining arrays: the shape `concatenate`, `stack`, `vstack`, `hstack` and their kin give, and
//! NP003 when the arrays' dimensions off the joining axis differ.

use crane_analysis::Constant;

use super::shapes::axis_bounds;
use super::{derive_array, is_array};
use crate::rules::core::interp::{Args, Interp};
use crate::rules::core::value::{Obj, Value};
use crate::rules::models::facts::shape_text;
use crate::rules::RuleCode;

/// NP003: joining arrays whose dimensions off the joining axis differ.
pub(super) fn join(interp: &mut Interp, function: &str, args: &Args, line: u32) -> Option<Value> {
    let Some(Value::Seq { items, .. }) = args.value(0, "arrays").or_else(|| args.value(0, "tup"))
    else {
        return None;
    };
    let mut arrays: Vec<(Obj, Vec<Option<u64>>)> = Vec::new();
    for item in items {
        let obj = item.as_ref()?.obj()?;
        if !is_array(obj) {
            return None;
        }
        arrays.push((obj.clone(), obj.var.shape()?));
    }
    if arrays.len() < 2 {
        return None;
    }
    let axis = match args.value(1, "axis") {
        None if args.has_keyword("axis") => return None,
        None => 0,
        Some(value) => value.int()?,
    };
    let shapes: Vec<Vec<Option<u64>>> = arrays
        .iter()
        .map(|(_, shape)| match function {
            "vstack" | "row_stack" if shape.len() == 1 => vec![Some(1), shape[0]],
            "column_stack" if shape.len() == 1 => vec![shape[0], Some(1)],
            _ => shape.clone(),
        })
        .collect();
    if shapes.iter().any(|s| s.is_empty()) {
        return None;
    }
    let axis = match function {
        "vstack" | "row_stack" => 0,
        "hstack" => {
            if shapes[0].len() == 1 {
                0
            } else {
                1
            }
        }
        "column_stack" => 1,
        _ => axis,
    };
    let evidence: Vec<String> = arrays
        .iter()
        .map(|(obj, shape)| format!("{} shape: {}", obj.label, shape_text(shape)))
        .collect();
    let labels: Vec<&str> = arrays.iter().map(|(obj, _)| obj.label.as_str()).collect();
    let ndim = shapes[0].len();
    // numpy checks the axis against the first array before comparing the arrays (stack only
    // after: its result has one more dimension).
    if function != "stack" && (axis >= ndim as i64 || axis < -(ndim as i64)) {
        let first = arrays[0].0.clone();
        axis_bounds(
            interp,
            &first,
            &Value::Const(Constant::Int(axis)),
            line,
            &format!("np.{function}"),
            false,
        );
        return None;
    }
    if shapes.iter().any(|s| s.len() != ndim) {
        interp.report(
            RuleCode::ConcatenateDimensionMismatch,
            line,
            format!(
                "`np.{function}` of arrays with different numbers of dimensions ({}).",
                labels.join(", ")
            ),
            evidence,
        );
        return None;
    }
    if function == "stack" {
        for dim in 0..ndim {
            let sizes: Vec<u64> = shapes.iter().filter_map(|s| s[dim]).collect();
            if sizes.len() == shapes.len() && sizes.iter().any(|&s| s != sizes[0]) {
                interp.report(
                    RuleCode::ConcatenateDimensionMismatch,
                    line,
                    format!(
                        "`np.stack` needs arrays of one shape; {} differ.",
                        labels.join(", ")
                    ),
                    evidence,
                );
                return None;
            }
        }
        // The arrays are stacked along a new axis of the result.
        let limit = ndim as i64 + 1;
        if axis >= limit || axis < -limit {
            return None;
        }
        let axis = if axis < 0 { axis + limit } else { axis } as usize;
        let mut shape = shapes[0].clone();
        if shapes.iter().any(|s| s != &shape) {
            return None;
        }
        shape.insert(axis, Some(shapes.len() as u64));
        let first = arrays[0].0.clone();
        return Some(derive_array(
            interp,
            &first,
            &shape,
            "np.stack(...)".to_owned(),
        ));
    }
    let axis = if axis < 0 { axis + ndim as i64 } else { axis };
    if axis < 0 || axis >= ndim as i64 {
        return None;
    }
    let axis = axis as usize;
    for dim in (0..ndim).filter(|&d| d != axis) {
        let sizes: Vec<u64> = shapes.iter().filter_map(|s| s[dim]).collect();
        if sizes.len() == shapes.len() && sizes.iter().any(|&s| s != sizes[0]) {
            interp.report(
                RuleCode::ConcatenateDimensionMismatch,
                line,
                format!(
                    "`np.{function}` joins along axis {axis}, but {} differ in dimension {dim}.",
                    labels.join(", ")
                ),
                evidence,
            );
            return None;
        }
    }
    let mut shape = shapes[0].clone();
    shape[axis] = shapes.iter().map(|s| s[axis]).sum::<Option<u64>>();
    let (first, _) = &arrays[0];
    let first = first.clone();
    Some(derive_array(
        interp,
        &first,
        &shape,
        format!("np.{function}(...)"),
    ))
}
