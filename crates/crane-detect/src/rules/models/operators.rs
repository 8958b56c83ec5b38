//! Operators, by the kinds of the operands: binary arithmetic (a loop index shifted by a
//! constant, torch tensors, numpy arrays, plain values by Python's rules in `core/python/`),
//! unary operators, and comparisons (a series compared is a boolean mask of its length).

use crane_analysis::Constant;
use crane_runtime::{Kind, Variable};
use ruff_python_ast::{CmpOp, Operator, UnaryOp};

use super::{numpy, torch};
use crate::rules::core::interp::Interp;
use crate::rules::core::value::Value;

pub(crate) fn binary(
    interp: &mut Interp,
    op: Operator,
    left: Option<Value>,
    right: Option<Value>,
    line: u32,
) -> Option<Value> {
    let (left, right) = (left?, right?);
    // A loop index shifted by a constant still takes every value of its range.
    if let (Value::Ints { low, high }, Some(shift)) = (&left, right.int()) {
        let shift = match op {
            Operator::Add => Some(shift),
            Operator::Sub => shift.checked_neg(),
            _ => None,
        };
        return shift.and_then(|shift| {
            Some(Value::Ints {
                low: low.checked_add(shift)?,
                high: high.checked_add(shift)?,
            })
        });
    }
    if let (Some(shift), Value::Ints { low, high }, Operator::Add) = (left.int(), &right, op) {
        return Some(Value::Ints {
            low: low.checked_add(shift)?,
            high: high.checked_add(shift)?,
        });
    }
    if let (Value::Object(l), Value::Object(r)) = (&left, &right) {
        if l.kind() == Kind::Tensor && r.kind() == Kind::Tensor {
            let (l, r) = (l.clone(), r.clone());
            torch::binary(interp, &l, &r, line);
            return None;
        }
    }
    if left.kind() == Some(Kind::Ndarray) || right.kind() == Some(Kind::Ndarray) {
        return numpy::binary(interp, op, &left, &right, line);
    }
    crate::rules::core::python::binary(op, &left.python()?, &right.python()?)
        .map(Value::from_python)
}

pub(super) fn unary(op: UnaryOp, operand: Option<Value>) -> Option<Value> {
    let operand = operand?;
    if let Some(constant) = operand.python() {
        return crate::rules::core::python::unary(op, &constant).map(Value::from_python);
    }
    match op {
        UnaryOp::Not => operand.truth().map(|t| Value::Const(Constant::Bool(!t))),
        _ => None,
    }
}

/// Comparisons: a series compared with something is a boolean mask of the same length.
pub(crate) fn compare(
    interp: &mut Interp,
    ops: &[CmpOp],
    operands: &[Option<Value>],
) -> Option<Value> {
    if ops.len() != 1 || matches!(ops[0], CmpOp::In | CmpOp::NotIn | CmpOp::Is | CmpOp::IsNot) {
        return None;
    }
    let series = operands
        .iter()
        .flatten()
        .find_map(|v| v.obj().filter(|o| o.kind() == Kind::Series))?
        .clone();
    let mut mask = Variable::new("pandas.core.series.Series", Kind::Series);
    if let Some(shape) = series.var.s.get("shape") {
        mask.s.insert("shape".to_owned(), shape.clone());
    }
    mask.r.insert("dtype".to_owned(), serde_json::json!("bool"));
    Some(interp.derived(Some(&series), mask, "a boolean mask"))
}
