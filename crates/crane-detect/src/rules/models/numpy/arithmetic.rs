//! Operators: the shape of element-wise arithmetic by numpy's broadcasting rules (NP005 when the
//! shapes do not broadcast) and of matrix products (`@`, `dot`, `matmul`: NP002 when the inner
//! dimensions differ).

use crane_analysis::Constant;
use ruff_python_ast::Operator;

use super::{derive_array, shape_of};
use crate::rules::core::interp::Interp;
use crate::rules::core::value::Value;
use crate::rules::models::facts::{array, shape_text};
use crate::rules::RuleCode;

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
pub(super) fn matmul(
    interp: &mut Interp,
    left: &Value,
    right: &Value,
    line: u32,
    how: &str,
) -> Option<Value> {
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
