//! Attributes and subscripts, dispatched by the kind of the object: an attribute the facts list
//! or record as absent, `obj[key]` on frames, series, arrays and plain values, and the stores
//! and deletes of `obj[key] = value` and `del obj[key]`.

use crane_analysis::Constant;
use crane_runtime::{Kind, Variable};
use ruff_python_ast::Expr;

use super::{numpy, objects, pandas, sklearn};
use crate::rules::core::interp::Interp;
use crate::rules::core::value::{Obj, Sequence, Value};

/// What an attribute of a data object is, from the object's own facts. `present`: the runtime
/// facts show the attribute exists (no missing-attribute rule may fire).
pub(crate) fn attribute(
    interp: &mut Interp,
    obj: &Obj,
    attr: &str,
    line: u32,
    called: bool,
    present: bool,
) -> Option<Value> {
    match obj.kind() {
        Kind::Dataframe | Kind::Series | Kind::Categorical => {
            pandas::attribute(interp, obj, attr, line, called, present)
        }
        Kind::Ndarray => numpy::attribute(interp, obj, attr, line, present),
        Kind::Estimator => {
            sklearn::attribute(interp, obj, attr, line, present);
            None
        }
        Kind::Tensor => match attr {
            "shape" => numpy::shape_value(&obj.var),
            _ => None,
        },
        _ => None,
    }
}

pub(crate) fn subscript(
    interp: &mut Interp,
    base: &Value,
    slice: &Expr,
    key: Option<Value>,
    line: u32,
) -> Option<Value> {
    let sequence = match base {
        Value::Object(obj) => matches!(obj.kind(), Kind::List | Kind::Tuple | Kind::Str),
        Value::Seq { of, .. } => *of != Sequence::Labels,
        Value::Const(Constant::Str(_)) => true,
        _ => false,
    };
    if sequence {
        if let Some(Value::Object(index)) = &key {
            let index = index.clone();
            if numpy::array_as_sequence_index(interp, base, &index, slice, line) {
                return None;
            }
        }
    }
    match base {
        Value::Object(obj) => match obj.kind() {
            Kind::Dataframe | Kind::Groupby => pandas::subscript(interp, obj, slice, key, line),
            Kind::Ndarray => numpy::subscript(interp, obj, slice, key.as_ref(), line),
            Kind::Dict => {
                if let Some(constant) = key.as_ref().and_then(Value::constant) {
                    let obj = obj.clone();
                    objects::dict_key(interp, &obj, &constant, line);
                }
                None
            }
            _ => None,
        },
        Value::Indexer(obj, indexer) => {
            pandas::indexer_subscript(interp, obj, *indexer, slice, line)
        }
        Value::Seq { items, of } => match key? {
            Value::Slice { lower, upper, step } => {
                let positions = crate::rules::core::python::slice_positions(
                    i64::try_from(items.len()).ok()?,
                    lower,
                    upper,
                    step,
                )?;
                Some(Value::Seq {
                    items: positions
                        .into_iter()
                        .map(|p| items[p as usize].clone())
                        .collect(),
                    of: *of,
                })
            }
            key => {
                let index = key.int()?;
                let len = items.len() as i64;
                let index = if index < 0 { index + len } else { index };
                items.get(usize::try_from(index).ok()?).cloned().flatten()
            }
        },
        Value::Const(constant) => match key? {
            Value::Slice { lower, upper, step } => {
                crate::rules::core::python::slice(constant, lower, upper, step)
                    .map(Value::from_python)
            }
            key => {
                crate::rules::core::python::index(constant, &key.python()?).map(Value::from_python)
            }
        },
        Value::Dict(items) => {
            // The last entry with an equal key wins, as in a dict display.
            let key = key?.python()?;
            if !crate::rules::core::python::hashable(&key) {
                return None;
            }
            let mut found = None;
            for (candidate, value) in items {
                if crate::rules::core::python::equal(&candidate.as_ref()?.python()?, &key)? {
                    found = Some(value.clone());
                }
            }
            found.flatten()
        }
        _ => None,
    }
}

/// A subscript the runtime facts record as absent.
pub(crate) fn absent_subscript(
    interp: &mut Interp,
    base: &Value,
    slice: &Expr,
    facts: &Variable,
    line: u32,
) {
    match base {
        Value::Object(obj) if obj.kind() == Kind::Dict => {
            let obj = obj.clone();
            if let Some(key) = crate::rules::core::cell::constant(slice) {
                objects::dict_key(interp, &obj, &key, line);
            }
        }
        _ => pandas::absent_key(interp, base, facts, line),
    }
}

pub(crate) fn store_subscript(
    interp: &mut Interp,
    base: &Value,
    _slice: &Expr,
    key: Option<Value>,
    value: Option<Value>,
    _line: u32,
) {
    let Value::Object(obj) = base else {
        if let Value::Indexer(obj, _) = base {
            let obj = (**obj).clone();
            interp.forget(&obj);
        }
        return;
    };
    let obj = obj.clone();
    if pandas::store_column(interp, &obj, key, value.as_ref()) {
        return;
    }
    if obj.kind() == Kind::Ndarray {
        // Element assignment keeps the shape; the values are no longer known.
        let mut var = (*obj.var).clone();
        var.v.clear();
        interp.replace_object(&obj, var, obj.label.clone());
        return;
    }
    interp.forget(&obj);
}

pub(crate) fn delete_subscript(interp: &mut Interp, base: &Value, slice: &Expr, line: u32) {
    let Value::Object(obj) = base else {
        return;
    };
    let obj = obj.clone();
    if !pandas::delete_column(interp, &obj, slice, line) {
        interp.forget(&obj);
    }
}
