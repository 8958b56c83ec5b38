//! Python's own semantics for the values a cell computes from literals (ints, floats, bools,
//! strings, None, lists, tuples): operators, comparisons, truth, `repr`/`str`, indexing and
//! slicing, and the builtins and `str` methods whose result is fully determined by their
//! arguments. This is the core of the interpreter: it knows no library.
//!
//! Every function answers `None` when Python would raise, when the result depends on the
//! Python version, or when crane cannot compute it exactly; a `Some` must equal what CPython
//! computes (checked by the differential tests in `tests/differential.rs`). Where `None` may mean
//! either, the `*_raises` functions tell the two apart: they name the exception CPython raises
//! for every version, and answer `None` when it may not raise (also checked there).

use std::cmp::Ordering;

use crane_analysis::{python_float_repr, python_repr, Constant};
use ruff_python_ast::{CmpOp, Operator, UnaryOp};

pub(crate) use builtins::*;
pub(crate) use compare::*;
pub(crate) use raises::*;
pub(crate) use sequences::*;

mod builtins;
mod compare;
mod raises;
mod sequences;

/// Longest string or sequence the evaluator builds (a repetition past it is unknown).
const MAX_ITEMS: usize = 10_000;
/// Integers beyond this are not exactly representable as floats.
const EXACT_FLOAT_INT: i64 = 1 << 53;

#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

fn num(c: &Constant) -> Option<Num> {
    match c {
        Constant::Bool(b) => Some(Num::Int(i64::from(*b))),
        Constant::Int(i) => Some(Num::Int(*i)),
        Constant::Float(f) => Some(Num::Float(*f)),
        _ => None,
    }
}

/// An int as a float, when the conversion is exact (as Python's mixed arithmetic needs).
fn exact_float(i: i64) -> Option<f64> {
    (-EXACT_FLOAT_INT..=EXACT_FLOAT_INT)
        .contains(&i)
        .then_some(i as f64)
}

fn floats(a: Num, b: Num) -> Option<(f64, f64)> {
    let f = |n: Num| match n {
        Num::Int(i) => exact_float(i),
        Num::Float(f) => Some(f),
    };
    Some((f(a)?, f(b)?))
}

fn int(i: i64) -> Constant {
    Constant::Int(i)
}

fn float(f: f64) -> Constant {
    Constant::Float(f)
}

/// `bool(value)`.
pub(crate) fn truth(c: &Constant) -> Option<bool> {
    Some(match c {
        Constant::None => false,
        Constant::Bool(b) => *b,
        Constant::Int(i) => *i != 0,
        Constant::BigInt(_) => true,
        Constant::Float(f) => *f != 0.0,
        Constant::Str(s) => !s.is_empty(),
        Constant::Bytes(b) => !b.is_empty(),
        Constant::List(items) | Constant::Tuple(items) => !items.is_empty(),
    })
}

/// Python's `//` of two ints (rounds toward negative infinity).
pub(crate) fn floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    Some(if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

/// Python's `%` of two ints (the result has the divisor's sign).
pub(crate) fn modulo(a: i64, b: i64) -> Option<i64> {
    let r = a.checked_rem(b)?;
    Some(if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    })
}

/// CPython's `float_divmod` (Objects/floatobject.c): `(a // b, a % b)` of floats.
fn float_divmod(vx: f64, wx: f64) -> Option<(f64, f64)> {
    if wx == 0.0 {
        return None;
    }
    let mut m = vx % wx;
    let mut div = (vx - m) / wx;
    if m != 0.0 {
        if (wx < 0.0) != (m < 0.0) {
            m += wx;
            div -= 1.0;
        }
    } else {
        m = 0.0_f64.copysign(wx);
    }
    let floordiv = if div != 0.0 {
        let mut f = div.floor();
        if div - f > 0.5 {
            f += 1.0;
        }
        f
    } else {
        0.0_f64.copysign(vx / wx)
    };
    Some((floordiv, m))
}

fn float_mod(vx: f64, wx: f64) -> Option<f64> {
    if wx == 0.0 {
        return None;
    }
    let mut m = vx % wx;
    if m != 0.0 {
        if (wx < 0.0) != (m < 0.0) {
            m += wx;
        }
    } else {
        m = 0.0_f64.copysign(wx);
    }
    Some(m)
}

fn float_pow(base: f64, exponent: f64) -> Option<f64> {
    if !base.is_finite() || !exponent.is_finite() {
        return None;
    }
    // A negative base to a fractional power is complex; zero to a negative power raises.
    if (base < 0.0 && exponent.fract() != 0.0) || (base == 0.0 && exponent < 0.0) {
        return None;
    }
    let result = base.powf(exponent);
    // Overflow raises OverflowError.
    result.is_finite().then_some(result)
}

fn arithmetic(op: Operator, a: Num, b: Num) -> Option<Constant> {
    if let (Num::Int(x), Num::Int(y)) = (a, b) {
        return Some(int(match op {
            Operator::Add => x.checked_add(y)?,
            Operator::Sub => x.checked_sub(y)?,
            Operator::Mult => x.checked_mul(y)?,
            Operator::FloorDiv => floor_div(x, y)?,
            Operator::Mod => modulo(x, y)?,
            Operator::Pow => {
                if y < 0 {
                    if x == 0 {
                        return None;
                    }
                    return float_pow(exact_float(x)?, exact_float(y)?).map(float);
                }
                x.checked_pow(u32::try_from(y).ok()?)?
            }
            Operator::Div => {
                if y == 0 {
                    return None;
                }
                return Some(float(exact_float(x)? / exact_float(y)?));
            }
            Operator::LShift => {
                if y < 0 {
                    return None;
                }
                let shifted =
                    i128::from(x).checked_shl(u32::try_from(y).ok().filter(|s| *s < 64)?)?;
                i64::try_from(shifted).ok().filter(|s| (*s >> y) == x)?
            }
            Operator::RShift => {
                if y < 0 {
                    return None;
                }
                x >> y.min(63)
            }
            Operator::BitAnd => x & y,
            Operator::BitOr => x | y,
            Operator::BitXor => x ^ y,
            Operator::MatMult => return None,
        }));
    }
    let (x, y) = floats(a, b)?;
    let result = match op {
        Operator::Add => x + y,
        Operator::Sub => x - y,
        Operator::Mult => x * y,
        Operator::Div => {
            if y == 0.0 {
                return None;
            }
            x / y
        }
        Operator::FloorDiv => float_divmod(x, y)?.0,
        Operator::Mod => float_mod(x, y)?,
        Operator::Pow => float_pow(x, y)?,
        _ => return None,
    };
    Some(float(result))
}

fn repeat(items: &[Constant], times: i64) -> Option<Vec<Constant>> {
    let times = usize::try_from(times.max(0)).ok()?;
    if items.len().checked_mul(times)? > MAX_ITEMS {
        return None;
    }
    Some(
        items
            .iter()
            .cloned()
            .cycle()
            .take(items.len() * times)
            .collect(),
    )
}

/// `a <op> b`.
pub(crate) fn binary(op: Operator, a: &Constant, b: &Constant) -> Option<Constant> {
    use Constant::{Bool, List, Str, Tuple};
    match (a, b) {
        (Bool(x), Bool(y)) => match op {
            Operator::BitAnd => return Some(Bool(*x & *y)),
            Operator::BitOr => return Some(Bool(*x | *y)),
            Operator::BitXor => return Some(Bool(*x ^ *y)),
            _ => {}
        },
        (Str(x), Str(y)) if op == Operator::Add => {
            if x.len() + y.len() > MAX_ITEMS {
                return None;
            }
            return Some(Str(format!("{x}{y}")));
        }
        (Str(text), times @ (Constant::Int(_) | Bool(_)))
        | (times @ (Constant::Int(_) | Bool(_)), Str(text))
            if op == Operator::Mult =>
        {
            let times = usize::try_from(truth_int(times)?.max(0)).ok()?;
            if text.len().checked_mul(times)? > MAX_ITEMS {
                return None;
            }
            return Some(Str(text.repeat(times)));
        }
        (List(x), List(y)) if op == Operator::Add => {
            return bounded([x.as_slice(), y].concat()).map(List)
        }
        (Tuple(x), Tuple(y)) if op == Operator::Add => {
            return bounded([x.as_slice(), y].concat()).map(Tuple)
        }
        (List(items), times @ (Constant::Int(_) | Bool(_)))
        | (times @ (Constant::Int(_) | Bool(_)), List(items))
            if op == Operator::Mult =>
        {
            return repeat(items, truth_int(times)?).map(List)
        }
        (Tuple(items), times @ (Constant::Int(_) | Bool(_)))
        | (times @ (Constant::Int(_) | Bool(_)), Tuple(items))
            if op == Operator::Mult =>
        {
            return repeat(items, truth_int(times)?).map(Tuple)
        }
        _ => {}
    }
    arithmetic(op, num(a)?, num(b)?)
}

fn is_int(c: &Constant) -> bool {
    matches!(
        c,
        Constant::Bool(_) | Constant::Int(_) | Constant::BigInt(_)
    )
}

fn is_number(c: &Constant) -> bool {
    is_int(c) || matches!(c, Constant::Float(_))
}

fn is_sequence(c: &Constant) -> bool {
    matches!(
        c,
        Constant::Str(_) | Constant::Bytes(_) | Constant::List(_) | Constant::Tuple(_)
    )
}

fn bounded(items: Vec<Constant>) -> Option<Vec<Constant>> {
    (items.len() <= MAX_ITEMS).then_some(items)
}

fn truth_int(c: &Constant) -> Option<i64> {
    match c {
        Constant::Int(i) => Some(*i),
        Constant::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

/// `<op> a`.
pub(crate) fn unary(op: UnaryOp, a: &Constant) -> Option<Constant> {
    match op {
        UnaryOp::Not => Some(Constant::Bool(!truth(a)?)),
        UnaryOp::USub => match num(a)? {
            Num::Int(i) => Some(int(i.checked_neg()?)),
            Num::Float(f) => Some(float(-f)),
        },
        UnaryOp::UAdd => match num(a)? {
            Num::Int(i) => Some(int(i)),
            Num::Float(f) => Some(float(f)),
        },
        // `~True` is deprecated and will raise in later versions.
        UnaryOp::Invert => match a {
            Constant::Int(i) => Some(int(!*i)),
            _ => None,
        },
    }
}
