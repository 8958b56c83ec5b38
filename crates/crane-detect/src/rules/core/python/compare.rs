//! Equality, order and membership as Python decides them for these values (`1 == 1.0 ==
//! True`, NaN never equal, `[1] != (1,)`).

use super::*;

/// `a == b`, as Python decides it for these values (`1 == 1.0 == True`, `[1] != (1,)`).
pub(crate) fn equal(a: &Constant, b: &Constant) -> Option<bool> {
    use Constant::{List, None as PyNone, Str, Tuple};
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        if matches!(x, Num::Float(f) if f.is_nan()) || matches!(y, Num::Float(f) if f.is_nan()) {
            return Some(false);
        }
        return Some(numeric_order(x, y)? == Ordering::Equal);
    }
    match (a, b) {
        (PyNone, PyNone) => Some(true),
        (Str(x), Str(y)) => Some(x == y),
        (List(x), List(y)) | (Tuple(x), Tuple(y)) => {
            // Containers compare items by identity first: a NaN item equals itself there.
            if x.iter().chain(y).any(holds_nan) {
                return None;
            }
            if x.len() != y.len() {
                return Some(false);
            }
            for (p, q) in x.iter().zip(y) {
                if !equal(p, q)? {
                    return Some(false);
                }
            }
            Some(true)
        }
        (Constant::BigInt(_), _) | (_, Constant::BigInt(_)) => None,
        (Constant::Bytes(x), Constant::Bytes(y)) => Some(x == y),
        // Values of different types are unequal (numbers aside).
        _ => Some(false),
    }
}

pub(super) fn holds_nan(c: &Constant) -> bool {
    match c {
        Constant::Float(f) => f.is_nan(),
        Constant::List(items) | Constant::Tuple(items) => items.iter().any(holds_nan),
        _ => false,
    }
}

/// The order of two numbers; `None` for NaN (every ordering comparison with NaN is false,
/// handled by the caller) or inexact conversions.
pub(super) fn numeric_order(a: Num, b: Num) -> Option<Ordering> {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => Some(x.cmp(&y)),
        _ => {
            let (x, y) = floats(a, b)?;
            x.partial_cmp(&y)
        }
    }
}

/// The result of an ordering comparison (`<`, `<=`, `>`, `>=`), or `None` if Python raises.
pub(super) fn order(op: CmpOp, a: &Constant, b: &Constant) -> Option<bool> {
    use Constant::{List, Str, Tuple};
    let ordering = if let (Some(x), Some(y)) = (num(a), num(b)) {
        match numeric_order(x, y) {
            Some(ordering) => ordering,
            // A comparison with NaN is false.
            None if matches!((x, y), (Num::Float(f), _) | (_, Num::Float(f)) if f.is_nan()) => {
                return Some(false)
            }
            None => return None,
        }
    } else {
        match (a, b) {
            (Str(x), Str(y)) => x.as_str().cmp(y.as_str()),
            (List(x), List(y)) | (Tuple(x), Tuple(y)) => {
                if x.iter().chain(y).any(holds_nan) {
                    return None;
                }
                // The first unequal pair decides; else the lengths.
                for (p, q) in x.iter().zip(y) {
                    if !equal(p, q)? {
                        return order(op, p, q);
                    }
                }
                x.len().cmp(&y.len())
            }
            _ => return None,
        }
    };
    Some(match op {
        CmpOp::Lt => ordering == Ordering::Less,
        CmpOp::LtE => ordering != Ordering::Greater,
        CmpOp::Gt => ordering == Ordering::Greater,
        CmpOp::GtE => ordering != Ordering::Less,
        _ => return None,
    })
}

/// `a <op> b` for one comparison operator.
pub(crate) fn compare(op: CmpOp, a: &Constant, b: &Constant) -> Option<bool> {
    match op {
        CmpOp::Eq => equal(a, b),
        CmpOp::NotEq => equal(a, b).map(|e| !e),
        CmpOp::Lt | CmpOp::LtE | CmpOp::Gt | CmpOp::GtE => order(op, a, b),
        CmpOp::In => contains(b, a),
        CmpOp::NotIn => contains(b, a).map(|c| !c),
        // Identity is only certain for None (ints and strings may or may not be cached).
        CmpOp::Is | CmpOp::IsNot => {
            let same = match (a, b) {
                (Constant::None, Constant::None) => true,
                (Constant::None, _) | (_, Constant::None) => false,
                _ => return None,
            };
            Some(same == (op == CmpOp::Is))
        }
    }
}

/// `item in container`.
pub(crate) fn contains(container: &Constant, item: &Constant) -> Option<bool> {
    match (container, item) {
        (Constant::Str(text), Constant::Str(part)) => Some(text.contains(part.as_str())),
        (Constant::List(items) | Constant::Tuple(items), _) => {
            if holds_nan(item) || items.iter().any(holds_nan) {
                return None;
            }
            for candidate in items {
                if equal(candidate, item)? {
                    return Some(true);
                }
            }
            Some(false)
        }
        _ => None,
    }
}
