//! numpy: NP001-NP009, NB003 for an attribute an ndarray does not have, and how array shapes
//! flow through the cell. This module is the model's entry points the `Library` calls (array
//! attributes, methods, `numpy.*` functions, with NP008 for `savetxt` of an array that is not
//! 1-D or 2-D) and the shape helpers they share; the rules are split by job: indexing
//! (`indexing.rs`), reshaping and axes (`shapes.rs`), operators and broadcasting
//! (`arithmetic.rs`), and joining arrays (`joins.rs`).

use crane_analysis::Constant;
use crane_runtime::{Kind, Variable};
use serde_json::Value as Json;

use super::attributes::NDARRAY_ATTRIBUTES;
use super::facts::{array, full_shape, shape_text};
use crate::rules::contracts::numpy::axis_of;
use crate::rules::core::interp::{Args, Effect, Interp};
use crate::rules::core::value::{Obj, Sequence, Value};
use crate::rules::RuleCode;

mod arithmetic;
mod indexing;
mod joins;
mod shapes;

pub(crate) use arithmetic::binary;
use arithmetic::matmul;
pub(crate) use indexing::{
    array_as_sequence_index, is_structured, normalize_index, slice_range, subscript,
};
use joins::join;
pub(crate) use shapes::reshaped;
use shapes::{axis_bounds, reshape};

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
