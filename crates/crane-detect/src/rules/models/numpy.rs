//! numpy: NP001-NP009, NB003 for an attribute an ndarray does not have, and how array shapes
//! flow through the cell.

use std::ops::Range;

use crane_analysis::Constant;
use crane_runtime::{Kind, Variable};
use ruff_python_ast::{Expr, Operator};
use serde_json::Value as Json;

use super::attributes::NDARRAY_ATTRIBUTES;
use super::facts::{array, full_shape, shape_text};
use crate::rules::contracts::numpy::axis_of;
use crate::rules::core::cell::constant;
use crate::rules::core::interp::{Args, Effect, Interp};
use crate::rules::core::value::{Obj, Sequence, Value};
use crate::rules::RuleCode;

const NDARRAY_TYPE: &str = "numpy.ndarray";

/// `x.shape` as a tuple value (unknown dimensions unknown).
pub(crate) fn shape_value(var: &Variable) -> Option<Value> {
    let shape = var.shape()?;
    Some(Value::Seq {
        items: shape
            .iter()
            .map(|d| d.map(|d| Value::Const(Constant::Int(d as i64))))
            .collect(),
        of: Sequence::Tuple,
    })
}

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

/// An integer index (a bool is not one: numpy reads it as a mask).
fn plain_int(value: Option<&Value>) -> Option<i64> {
    match value?.python()? {
        Constant::Int(i) => Some(i),
        _ => None,
    }
}

fn is_array(obj: &Obj) -> bool {
    obj.kind() == Kind::Ndarray
}

fn shape_of(value: &Value) -> Option<Vec<Option<u64>>> {
    let obj = value.obj()?;
    if !is_array(obj) {
        return None;
    }
    obj.var.shape()
}

fn derive_array(interp: &mut Interp, from: &Obj, shape: &[Option<u64>], text: String) -> Value {
    let mut var = array(shape, from.var.dtype());
    if let Some(has_nan) = from.var.has_nan() {
        if has_nan || from.exact_v() {
            var.v.insert("has_nan".to_owned(), Json::Bool(has_nan));
        }
    }
    var.sampled = from.var.sampled;
    interp.derived(Some(from), var, text)
}

// Attributes and methods

pub(crate) fn attribute(
    interp: &mut Interp,
    obj: &Obj,
    attr: &str,
    line: u32,
    present: bool,
) -> Option<Value> {
    match attr {
        "shape" => shape_value(&obj.var),
        "ndim" => obj
            .var
            .ndim()
            .map(|n| Value::Const(Constant::Int(n as i64))),
        "size" => {
            let shape = full_shape(&obj.var)?;
            Some(Value::Const(Constant::Int(
                shape.iter().product::<u64>() as i64
            )))
        }
        "T" => {
            let mut shape = obj.var.shape()?;
            shape.reverse();
            Some(derive_array(
                interp,
                obj,
                &shape,
                format!("{}.T", obj.label),
            ))
        }
        "dtype" => obj
            .var
            .dtype()
            .map(|d| Value::Const(Constant::Str(d.to_owned()))),
        _ => {
            if !present
                && obj.var.type_name == NDARRAY_TYPE
                && !attr.starts_with('_')
                && !NDARRAY_ATTRIBUTES.contains(&attr)
            {
                interp.report(
                    RuleCode::MissingAttribute,
                    line,
                    format!(
                        "`{}` is a numpy ndarray, which has no attribute `{attr}`.",
                        obj.label
                    ),
                    vec![format!("{}: numpy.ndarray", obj.label)],
                );
            }
            None
        }
    }
}

pub(crate) fn method(interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Effect {
    let line = args.line;
    match name {
        "reshape" => {
            let dims: Vec<Option<&Value>> = match args.positional.as_slice() {
                [single] => match &single.value {
                    Some(Value::Seq { items, .. }) => items.iter().map(Option::as_ref).collect(),
                    Some(other) => vec![Some(other)],
                    None => return Effect::Pure(None),
                },
                many => many.iter().map(|a| a.value.as_ref()).collect(),
            };
            if args.star || args.keyword("shape").is_some() {
                return Effect::Pure(None);
            }
            Effect::Pure(reshape(interp, obj, &dims, line))
        }
        "astype" | "copy" => {
            let shape = obj.var.shape().unwrap_or_default();
            let mut value = derive_array(interp, obj, &shape, format!("{}.{name}(...)", obj.label));
            if name == "astype" {
                if let Value::Object(new) = &mut value {
                    let mut var = (*new.var).clone();
                    var.r.remove("dtype");
                    new.var = std::rc::Rc::new(var);
                }
            }
            Effect::Pure(Some(value))
        }
        "flatten" | "ravel" => {
            let size = full_shape(&obj.var).map(|s| s.iter().product::<u64>());
            Effect::Pure(Some(derive_array(
                interp,
                obj,
                &[size],
                format!("{}.{name}()", obj.label),
            )))
        }
        "dot" => {
            if let Some(other) = args.value(0, "b") {
                matmul(interp, &Value::Object(obj.clone()), other, line, "dot");
            }
            Effect::Pure(None)
        }
        _ if axis_of(name).is_some_and(|row| row.method_position.is_some()) => {
            let position = axis_of(name)
                .and_then(|row| row.method_position)
                .unwrap_or(0);
            if let Some(axis) = args.value(position, "axis") {
                axis_bounds(interp, obj, axis, line, name, false);
            }
            if name == "sort" {
                Effect::Pure(Some(Value::Const(Constant::None)))
            } else {
                Effect::Pure(None)
            }
        }
        "fill" | "resize" | "put" | "setflags" | "itemset" => Effect::ForgetReceiver(None),
        _ if NDARRAY_ATTRIBUTES.contains(&name) => Effect::Pure(None),
        _ => Effect::ForgetReceiver(None),
    }
}

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
fn reshape(interp: &mut Interp, obj: &Obj, dims: &[Option<&Value>], line: u32) -> Option<Value> {
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
fn axis_bounds(
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

// Subscripts

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

// Operators

/// Element-wise arithmetic between arrays (NP005) and matrix products (NP002).
pub(crate) fn binary(
    interp: &mut Interp,
    op: Operator,
    left: &Value,
    right: &Value,
    line: u32,
) -> Option<Value> {
    if op == Operator::MatMult {
        return matmul(interp, left, right, line, "@");
    }
    let left_shape = shape_of(left);
    let right_shape = shape_of(right);
    let (from, shape) = match (&left_shape, &right_shape) {
        (Some(a), Some(b)) => {
            let shape = broadcast(a, b);
            if shape.is_none() {
                let (l, r) = (left.obj()?, right.obj()?);
                interp.report(
                    RuleCode::BroadcastMismatch,
                    line,
                    format!(
                        "`{}` {} `{}`: shapes {} and {} do not broadcast.",
                        l.label,
                        operator_text(op),
                        r.label,
                        shape_text(a),
                        shape_text(b)
                    ),
                    vec![
                        format!("{} shape: {}", l.label, shape_text(a)),
                        format!("{} shape: {}", r.label, shape_text(b)),
                    ],
                );
                return None;
            }
            (left.obj()?, shape?)
        }
        (Some(a), None) if is_number(right) => (left.obj()?, a.clone()),
        (None, Some(b)) if is_number(left) => (right.obj()?, b.clone()),
        _ => return None,
    };
    let from = from.clone();
    let mut var = array(&shape, None);
    var.sampled = from.var.sampled;
    Some(interp.derived(Some(&from), var, "an array expression"))
}

fn is_number(value: &Value) -> bool {
    matches!(value, Value::Const(Constant::Int(_) | Constant::Float(_)))
}

/// The broadcast shape, or `None` when a pair of known dimensions conflicts.
fn broadcast(a: &[Option<u64>], b: &[Option<u64>]) -> Option<Vec<Option<u64>>> {
    let len = a.len().max(b.len());
    let mut shape = vec![None; len];
    for i in 0..len {
        let da = if i < len - a.len() {
            Some(1)
        } else {
            a[i - (len - a.len())]
        };
        let db = if i < len - b.len() {
            Some(1)
        } else {
            b[i - (len - b.len())]
        };
        shape[i] = match (da, db) {
            (Some(x), Some(y)) if x == y => Some(x),
            (Some(1), other) | (other, Some(1)) => other,
            (Some(_), Some(_)) => return None,
            _ => None,
        };
    }
    Some(shape)
}

fn operator_text(op: Operator) -> &'static str {
    match op {
        Operator::Add => "+",
        Operator::Sub => "-",
        Operator::Mult => "*",
        Operator::MatMult => "@",
        Operator::Div => "/",
        Operator::Mod => "%",
        Operator::Pow => "**",
        Operator::LShift => "<<",
        Operator::RShift => ">>",
        Operator::BitOr => "|",
        Operator::BitXor => "^",
        Operator::BitAnd => "&",
        Operator::FloorDiv => "//",
    }
}

/// NP002: inner dimensions of a matrix product.
fn matmul(interp: &mut Interp, left: &Value, right: &Value, line: u32, how: &str) -> Option<Value> {
    let a = shape_of(left)?;
    let b = shape_of(right)?;
    if a.is_empty() || b.is_empty() || (how == "dot" && (a.len() > 2 || b.len() > 2)) {
        return None;
    }
    let inner_a = a[a.len() - 1];
    let inner_b = if b.len() == 1 { b[0] } else { b[b.len() - 2] };
    let (Some(x), Some(y)) = (inner_a, inner_b) else {
        return None;
    };
    let (l, r) = (left.obj()?.clone(), right.obj()?.clone());
    if x != y {
        interp.report(
            RuleCode::MatmulDimensionMismatch,
            line,
            format!(
                "Matrix product `{}` {how} `{}`: inner dimensions {x} and {y} differ (shapes {} and {}).",
                l.label,
                r.label,
                shape_text(&a),
                shape_text(&b)
            ),
            vec![
                format!("{} shape: {}", l.label, shape_text(&a)),
                format!("{} shape: {}", r.label, shape_text(&b)),
            ],
        );
        return None;
    }
    if a.len() == 2 && b.len() == 2 {
        let shape = [a[0], b[1]];
        return Some(derive_array(
            interp,
            &l,
            &shape,
            format!("{} @ {}", l.label, r.label),
        ));
    }
    None
}

// Functions

pub(crate) fn function(interp: &mut Interp, name: &str, args: &Args) -> Option<Effect> {
    let function = name.strip_prefix("numpy.")?;
    let line = args.line;
    Some(match function {
        "reshape" => {
            let (Some(Value::Object(obj)), Some(shape)) = (
                args.value(0, "a"),
                args.value(1, "newshape")
                    .or_else(|| args.keyword_value("shape")),
            ) else {
                return Some(Effect::Pure(None));
            };
            let obj = obj.clone();
            let dims: Vec<Option<&Value>> = match shape {
                Value::Seq { items, .. } => items.iter().map(Option::as_ref).collect(),
                other => vec![Some(other)],
            };
            if !is_array(&obj) {
                return Some(Effect::Pure(None));
            }
            Effect::Pure(reshape(interp, &obj, &dims, line))
        }
        "concatenate" | "vstack" | "hstack" | "stack" | "column_stack" | "row_stack" => {
            Effect::Pure(join(interp, function, args, line))
        }
        "dot" | "matmul" => {
            if let (Some(a), Some(b)) = (
                args.value(0, "a").or_else(|| args.keyword_value("x1")),
                args.value(1, "b").or_else(|| args.keyword_value("x2")),
            ) {
                let (a, b) = (a.clone(), b.clone());
                let how = if function == "dot" { "dot" } else { "@" };
                return Some(Effect::Pure(matmul(interp, &a, &b, line, how)));
            }
            Effect::Pure(None)
        }
        _ if axis_of(function).is_some() => {
            let Some(row) = axis_of(function) else {
                return Some(Effect::Pure(None));
            };
            if let (Some(Value::Object(obj)), Some(axis)) = (
                args.value(0, "a"),
                args.value(row.function_position, "axis"),
            ) {
                let (obj, axis) = (obj.clone(), axis.clone());
                axis_bounds(
                    interp,
                    &obj,
                    &axis,
                    line,
                    &format!("np.{function}"),
                    row.inserts,
                );
            }
            Effect::Pure(None)
        }
        "savetxt" => {
            if let Some(Value::Object(obj)) = args.value(1, "X") {
                let obj = obj.clone();
                savetxt_dimensions(interp, &obj, line);
            }
            Effect::Pure(None)
        }
        "zeros" | "ones" | "empty" | "full" => {
            let shape = args.value(0, "shape").and_then(shape_constant);
            Effect::Pure(shape.map(|shape| {
                let var = array(&shape, None);
                interp.derived(None, var, format!("np.{function}(...)"))
            }))
        }
        "arange" => {
            let count = match args.positional.as_slice() {
                [stop] if !args.star && args.keywords.is_empty() => stop
                    .value
                    .as_ref()
                    .and_then(Value::int)
                    .map(|n| n.max(0) as u64),
                _ => None,
            };
            Effect::Pure(count.map(|n| {
                let var = array(&[Some(n)], None);
                interp.derived(None, var, "np.arange(...)")
            }))
        }
        "array" | "asarray" => {
            let from = args.value(0, "object").and_then(Value::obj).cloned();
            Effect::Pure(from.filter(is_array).map(|obj| {
                let shape = obj.var.shape().unwrap_or_default();
                derive_array(
                    interp,
                    &obj,
                    &shape,
                    format!("np.{function}({})", obj.label),
                )
            }))
        }
        _ => Effect::Pure(None),
    })
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

/// NP008: `np.savetxt` writes rows of text, so it takes only 1-D or 2-D arrays.
fn savetxt_dimensions(interp: &mut Interp, obj: &Obj, line: u32) {
    if !is_array(obj) {
        return;
    }
    let Some(ndim) = obj.var.ndim() else {
        return;
    };
    if (1..=2).contains(&ndim) {
        return;
    }
    let shape = obj.var.shape().map_or_else(
        || format!("ndim {ndim}"),
        |s| format!("shape {}", shape_text(&s)),
    );
    interp.report(
        RuleCode::SavetxtDimensions,
        line,
        format!(
            "`np.savetxt` on `{}`, which has {ndim} dimensions: savetxt writes only 1-D or 2-D arrays.",
            obj.label
        ),
        vec![format!("{} {shape}", obj.label)],
    );
}

fn shape_constant(value: &Value) -> Option<Vec<Option<u64>>> {
    match value.constant()? {
        Constant::Int(n) if n >= 0 => Some(vec![Some(n as u64)]),
        Constant::Tuple(items) | Constant::List(items) => items
            .iter()
            .map(|i| match i {
                Constant::Int(n) if *n >= 0 => Some(Some(*n as u64)),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// NP003: joining arrays whose dimensions off the joining axis differ.
fn join(interp: &mut Interp, function: &str, args: &Args, line: u32) -> Option<Value> {
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
