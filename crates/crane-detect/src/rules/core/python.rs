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

/// The exception `a <op> b` certainly raises: a zero divisor, or operand types for which no
/// builtin type defines the operator (these are builtin values: no user method takes part).
pub(crate) fn binary_raises(op: Operator, a: &Constant, b: &Constant) -> Option<&'static str> {
    use Constant::{Bytes, List, Str, Tuple};
    let zero = matches!(b, Constant::Int(0) | Constant::Bool(false))
        || matches!(b, Constant::Float(f) if *f == 0.0);
    if matches!(op, Operator::Div | Operator::FloorDiv | Operator::Mod) && is_number(a) && zero {
        return Some("ZeroDivisionError");
    }
    let numbers = is_number(a) && is_number(b);
    let defined = match op {
        Operator::Add => {
            numbers
                || matches!(
                    (a, b),
                    (Str(_), Str(_))
                        | (Bytes(_), Bytes(_))
                        | (List(_), List(_))
                        | (Tuple(_), Tuple(_))
                )
        }
        Operator::Mult => numbers || (is_sequence(a) && is_int(b)) || (is_int(a) && is_sequence(b)),
        // `text % values` formats.
        Operator::Mod => numbers || matches!(a, Str(_) | Bytes(_)),
        Operator::Sub | Operator::Div | Operator::FloorDiv | Operator::Pow => numbers,
        Operator::BitAnd
        | Operator::BitOr
        | Operator::BitXor
        | Operator::LShift
        | Operator::RShift => is_int(a) && is_int(b),
        Operator::MatMult => false,
    };
    (!defined).then_some("TypeError")
}

/// The exception `value[index]` certainly raises on a `str`, list or tuple: a position out of
/// range, or an index that is neither an int nor a slice.
pub(crate) fn index_raises(c: &Constant, index: &Constant) -> Option<&'static str> {
    let length = len(c)?;
    match index {
        Constant::Int(_) | Constant::Bool(_) => {
            let position = truth_int(index)?;
            (position >= length || position < -length).then_some("IndexError")
        }
        Constant::BigInt(_) => Some("IndexError"),
        Constant::Float(_) | Constant::Str(_) | Constant::None | Constant::List(_) => {
            Some("TypeError")
        }
        Constant::Bytes(_) | Constant::Tuple(_) => Some("TypeError"),
    }
}

/// The exception unpacking the value into `count` targets certainly raises.
pub(crate) fn unpack_raises(c: &Constant, count: usize) -> Option<&'static str> {
    match c {
        Constant::None
        | Constant::Bool(_)
        | Constant::Int(_)
        | Constant::BigInt(_)
        | Constant::Float(_) => Some("TypeError"),
        other => {
            let length = usize::try_from(len(other)?).ok()?;
            (length != count).then_some("ValueError")
        }
    }
}

/// The exception a builtin certainly raises on these known arguments (positional only).
pub(crate) fn builtin_raises(name: &str, args: &[Constant]) -> Option<&'static str> {
    let not_a_number = |c: &Constant| {
        matches!(c, Constant::None | Constant::List(_) | Constant::Tuple(_)).then_some("TypeError")
    };
    match (name, args) {
        ("len", [value]) => (!is_sequence(value)).then_some("TypeError"),
        ("int", [Constant::Float(f)]) if f.is_nan() => Some("ValueError"),
        ("int", [Constant::Float(f)]) if f.is_infinite() => Some("OverflowError"),
        ("int", [Constant::Str(text)]) => {
            let text = text.trim_matches(is_space);
            let invalid = text.is_empty()
                || text.chars().any(|c| {
                    !(c.is_ascii_digit() || matches!(c, '_' | '+' | '-') || !c.is_ascii())
                });
            invalid.then_some("ValueError")
        }
        ("float", [Constant::Str(text)]) => {
            let text = text.trim_matches(is_space);
            let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
            let special = matches!(
                unsigned.to_ascii_lowercase().as_str(),
                "inf" | "infinity" | "nan"
            );
            let invalid = text.is_empty()
                || (!special
                    && text.chars().any(|c| {
                        !(c.is_ascii_digit()
                            || matches!(c, '_' | '+' | '-' | '.' | 'e' | 'E')
                            || !c.is_ascii())
                    }));
            invalid.then_some("ValueError")
        }
        ("int" | "float", [value]) => not_a_number(value),
        _ => None,
    }
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

fn holds_nan(c: &Constant) -> bool {
    match c {
        Constant::Float(f) => f.is_nan(),
        Constant::List(items) | Constant::Tuple(items) => items.iter().any(holds_nan),
        _ => false,
    }
}

/// The order of two numbers; `None` for NaN (every ordering comparison with NaN is false,
/// handled by the caller) or inexact conversions.
fn numeric_order(a: Num, b: Num) -> Option<Ordering> {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => Some(x.cmp(&y)),
        _ => {
            let (x, y) = floats(a, b)?;
            x.partial_cmp(&y)
        }
    }
}

/// The result of an ordering comparison (`<`, `<=`, `>`, `>=`), or `None` if Python raises.
fn order(op: CmpOp, a: &Constant, b: &Constant) -> Option<bool> {
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

/// `repr(value)`.
pub(crate) fn repr(c: &Constant) -> Option<String> {
    Some(match c {
        Constant::None => "None".to_owned(),
        Constant::Bool(true) => "True".to_owned(),
        Constant::Bool(false) => "False".to_owned(),
        Constant::Int(i) => i.to_string(),
        Constant::BigInt(text) => text.clone(),
        Constant::Float(f) => python_float_repr(*f),
        Constant::Str(text) => python_repr(text),
        Constant::Bytes(_) => return None,
        Constant::List(items) => format!("[{}]", reprs(items)?.join(", ")),
        Constant::Tuple(items) => match items.as_slice() {
            [single] => format!("({},)", repr(single)?),
            items => format!("({})", reprs(items)?.join(", ")),
        },
    })
}

fn reprs(items: &[Constant]) -> Option<Vec<String>> {
    items.iter().map(repr).collect()
}

/// `str(value)`.
pub(crate) fn str_of(c: &Constant) -> Option<String> {
    match c {
        Constant::Str(text) => Some(text.clone()),
        other => repr(other),
    }
}

/// Whether the value can be a dict key or set member (lists cannot).
pub(crate) fn hashable(c: &Constant) -> bool {
    match c {
        Constant::List(_) => false,
        Constant::Tuple(items) => items.iter().all(hashable),
        _ => true,
    }
}

/// `len(value)`.
pub(crate) fn len(c: &Constant) -> Option<i64> {
    let n = match c {
        Constant::Str(text) => text.chars().count(),
        Constant::List(items) | Constant::Tuple(items) => items.len(),
        Constant::Bytes(bytes) => bytes.len(),
        _ => return None,
    };
    i64::try_from(n).ok()
}

/// The items iterating a value yields (a string yields its characters).
pub(crate) fn items(c: &Constant) -> Option<Vec<Constant>> {
    match c {
        Constant::List(items) | Constant::Tuple(items) => Some(items.clone()),
        Constant::Str(text) => Some(
            text.chars()
                .map(|ch| Constant::Str(ch.to_string()))
                .collect(),
        ),
        _ => None,
    }
}

/// `value[index]` for an integer index.
pub(crate) fn index(c: &Constant, index: &Constant) -> Option<Constant> {
    let position = truth_int(index)?;
    let items = items(c)?;
    let length = i64::try_from(items.len()).ok()?;
    let position = if position < 0 {
        position + length
    } else {
        position
    };
    items.get(usize::try_from(position).ok()?).cloned()
}

/// The positions `slice(lower, upper, step)` selects from a sequence of `length` items
/// (`PySlice_AdjustIndices`).
pub(crate) fn slice_positions(
    length: i64,
    lower: Option<i64>,
    upper: Option<i64>,
    step: Option<i64>,
) -> Option<Vec<i64>> {
    let step = step.unwrap_or(1);
    if step == 0 || step == i64::MIN {
        return None;
    }
    let (start, stop) = slice_bounds(length, lower, upper, step);
    let mut positions = Vec::new();
    let mut at = start;
    while (step > 0 && at < stop) || (step < 0 && at > stop) {
        positions.push(at);
        at += step;
    }
    Some(positions)
}

/// How many items `slice(lower, upper, step)` selects from a sequence of `length` items, without
/// listing them (`PySlice_AdjustIndices`).
pub(crate) fn slice_length(
    length: i64,
    lower: Option<i64>,
    upper: Option<i64>,
    step: Option<i64>,
) -> Option<i64> {
    let step = step.unwrap_or(1);
    if step == 0 || step == i64::MIN {
        return None;
    }
    let (start, stop) = slice_bounds(length, lower, upper, step);
    Some(if step > 0 && start < stop {
        (stop - start - 1) / step + 1
    } else if step < 0 && stop < start {
        (start - stop - 1) / (-step) + 1
    } else {
        0
    })
}

fn slice_bounds(length: i64, lower: Option<i64>, upper: Option<i64>, step: i64) -> (i64, i64) {
    let adjust = |bound: Option<i64>, default: i64| match bound {
        None => default,
        Some(b) if b < 0 => {
            let b = b.saturating_add(length);
            if b < 0 {
                if step < 0 {
                    -1
                } else {
                    0
                }
            } else {
                b
            }
        }
        Some(b) if b >= length => {
            if step < 0 {
                length - 1
            } else {
                length
            }
        }
        Some(b) => b,
    };
    if step > 0 {
        (adjust(lower, 0), adjust(upper, length))
    } else {
        (adjust(lower, length - 1), adjust(upper, -1))
    }
}

/// A slice bound: an int, a bool, or None.
pub(crate) fn slice_bound(c: &Constant) -> Option<Option<i64>> {
    match c {
        Constant::None => Some(None),
        other => truth_int(other).map(Some),
    }
}

/// `value[lower:upper:step]`.
pub(crate) fn slice(
    c: &Constant,
    lower: Option<i64>,
    upper: Option<i64>,
    step: Option<i64>,
) -> Option<Constant> {
    let all = items(c)?;
    let positions = slice_positions(i64::try_from(all.len()).ok()?, lower, upper, step)?;
    let picked = positions
        .into_iter()
        .map(|p| all[p as usize].clone())
        .collect::<Vec<_>>();
    Some(match c {
        Constant::Str(_) => Constant::Str(
            picked
                .iter()
                .filter_map(|p| match p {
                    Constant::Str(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect(),
        ),
        Constant::Tuple(_) => Constant::Tuple(picked),
        _ => Constant::List(picked),
    })
}

/// Python's `str.isspace` characters (Rust's whitespace lacks the separators \x1c-\x1f).
fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// A builtin function applied to known arguments (positional only).
pub(crate) fn builtin(name: &str, args: &[Constant]) -> Option<Constant> {
    match (name, args) {
        ("len", [value]) => len(value).map(int),
        ("abs", [value]) => match num(value)? {
            Num::Int(i) => i.checked_abs().map(int),
            Num::Float(f) => Some(float(f.abs())),
        },
        ("bool", [value]) => truth(value).map(Constant::Bool),
        ("str", [value]) => str_of(value).map(Constant::Str),
        ("repr", [value]) => repr(value).map(Constant::Str),
        ("int", [value]) => to_int(value).map(int),
        ("float", [value]) => to_float(value).map(float),
        ("list", [value]) => items(value).map(Constant::List),
        ("tuple", [value]) => items(value).map(Constant::Tuple),
        ("min" | "max", [sequence]) => extreme(name == "max", &items(sequence)?),
        ("min" | "max", values) if values.len() >= 2 => extreme(name == "max", values),
        ("sum", [sequence]) => {
            let mut total: i64 = 0;
            for item in items(sequence)? {
                // Float sums differ between Python versions (3.12 compensates rounding).
                total = total.checked_add(match item {
                    Constant::Int(i) => i,
                    Constant::Bool(b) => i64::from(b),
                    _ => return None,
                })?;
            }
            Some(int(total))
        }
        ("sorted", [sequence]) => {
            let mut all = items(sequence)?;
            let mut failed = false;
            all.sort_by(|a, b| match order(CmpOp::Lt, a, b) {
                Some(true) => Ordering::Less,
                Some(false) => match order(CmpOp::Lt, b, a) {
                    Some(true) => Ordering::Greater,
                    Some(false) => Ordering::Equal,
                    None => {
                        failed = true;
                        Ordering::Equal
                    }
                },
                None => {
                    failed = true;
                    Ordering::Equal
                }
            });
            // NaN has no place in an order: Python's result depends on its sort algorithm.
            (!failed && !all.iter().any(holds_nan)).then_some(Constant::List(all))
        }
        ("round", [value]) => match num(value)? {
            Num::Int(i) => Some(int(i)),
            Num::Float(f) => {
                let r = f.round_ties_even();
                (r.is_finite() && r.abs() < EXACT_FLOAT_INT as f64).then(|| int(r as i64))
            }
        },
        ("divmod", [a, b]) => match (num(a)?, num(b)?) {
            (Num::Int(x), Num::Int(y)) => Some(Constant::Tuple(vec![
                int(floor_div(x, y)?),
                int(modulo(x, y)?),
            ])),
            (x, y) => {
                let (x, y) = floats(x, y)?;
                let (q, m) = float_divmod(x, y)?;
                Some(Constant::Tuple(vec![float(q), float(m)]))
            }
        },
        _ => None,
    }
}

fn extreme(max: bool, values: &[Constant]) -> Option<Constant> {
    let mut best = values.first()?.clone();
    if values.iter().any(holds_nan) {
        return None;
    }
    for value in &values[1..] {
        let better = if max {
            order(CmpOp::Gt, value, &best)?
        } else {
            order(CmpOp::Lt, value, &best)?
        };
        if better {
            best = value.clone();
        }
    }
    Some(best)
}

fn to_int(c: &Constant) -> Option<i64> {
    match c {
        Constant::Bool(b) => Some(i64::from(*b)),
        Constant::Int(i) => Some(*i),
        Constant::Float(f) if f.is_finite() && f.abs() < 9.0e18 => Some(f.trunc() as i64),
        Constant::Str(text) => {
            let text = text.trim_matches(is_space);
            let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            text.parse().ok()
        }
        _ => None,
    }
}

fn to_float(c: &Constant) -> Option<f64> {
    match c {
        Constant::Bool(b) => Some(f64::from(u8::from(*b))),
        // int -> float rounds to nearest, as Python does.
        Constant::Int(i) => Some(*i as f64),
        Constant::Float(f) => Some(*f),
        Constant::Str(text) => {
            let text = text.trim_matches(is_space);
            let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
            let negative = text.starts_with('-');
            let special = match unsigned.to_ascii_lowercase().as_str() {
                "inf" | "infinity" => Some(f64::INFINITY),
                "nan" => Some(f64::NAN),
                _ => None,
            };
            if let Some(special) = special {
                return Some(if negative { -special } else { special });
            }
            // Plain decimal notation only: Python's and Rust's spellings of the special
            // values and underscores differ.
            if text.is_empty()
                || !text
                    .bytes()
                    .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
                || !text.bytes().any(|b| b.is_ascii_digit())
            {
                return None;
            }
            text.parse().ok()
        }
        _ => None,
    }
}

/// `text.name(*args)` for the `str` methods whose result is certain.
pub(crate) fn str_method(text: &str, name: &str, args: &[Constant]) -> Option<Constant> {
    let s = |value: String| Some(Constant::Str(value));
    let b = |value: bool| Some(Constant::Bool(value));
    // Case mappings and character classes are compared on ASCII text only: Unicode tables of
    // Rust and of the running Python may differ.
    let ascii = text.is_ascii();
    match (name, args) {
        ("upper", []) if ascii => s(text.to_ascii_uppercase()),
        ("lower", []) if ascii => s(text.to_ascii_lowercase()),
        ("strip", []) => s(text.trim_matches(is_space).to_owned()),
        ("lstrip", []) => s(text.trim_start_matches(is_space).to_owned()),
        ("rstrip", []) => s(text.trim_end_matches(is_space).to_owned()),
        ("strip" | "lstrip" | "rstrip", [Constant::Str(chars)]) => {
            let set = |c: char| chars.contains(c);
            s(match name {
                "strip" => text.trim_matches(set),
                "lstrip" => text.trim_start_matches(set),
                _ => text.trim_end_matches(set),
            }
            .to_owned())
        }
        ("split", []) => Some(Constant::List(
            text.split(is_space)
                .filter(|part| !part.is_empty())
                .map(|part| Constant::Str(part.to_owned()))
                .collect(),
        )),
        ("split", [Constant::Str(separator)]) if !separator.is_empty() => Some(Constant::List(
            text.split(separator.as_str())
                .map(|part| Constant::Str(part.to_owned()))
                .collect(),
        )),
        ("join", [sequence]) => {
            let parts = items(sequence)?
                .into_iter()
                .map(|item| match item {
                    Constant::Str(part) => Some(part),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            let joined = parts.join(text);
            (joined.len() <= MAX_ITEMS).then_some(Constant::Str(joined))
        }
        ("replace", [Constant::Str(old), Constant::Str(new)]) => {
            let replaced = text.replace(old.as_str(), new);
            (replaced.len() <= MAX_ITEMS).then_some(Constant::Str(replaced))
        }
        ("startswith", [Constant::Str(prefix)]) => b(text.starts_with(prefix.as_str())),
        ("endswith", [Constant::Str(suffix)]) => b(text.ends_with(suffix.as_str())),
        ("find" | "index", [Constant::Str(part)]) => match text.find(part.as_str()) {
            Some(at) => Some(int(i64::try_from(text[..at].chars().count()).ok()?)),
            None if name == "find" => Some(int(-1)),
            None => None,
        },
        ("count", [Constant::Str(part)]) => {
            let count = if part.is_empty() {
                text.chars().count() + 1
            } else {
                text.matches(part.as_str()).count()
            };
            Some(int(i64::try_from(count).ok()?))
        }
        ("isdigit", []) if ascii => b(!text.is_empty() && text.bytes().all(|c| c.is_ascii_digit())),
        ("isalpha", []) if ascii => {
            b(!text.is_empty() && text.bytes().all(|c| c.is_ascii_alphabetic()))
        }
        ("isupper" | "islower", []) if ascii => {
            let cased = text.bytes().any(|c| c.is_ascii_alphabetic());
            b(cased
                && if name == "isupper" {
                    !text.bytes().any(|c| c.is_ascii_lowercase())
                } else {
                    !text.bytes().any(|c| c.is_ascii_uppercase())
                })
        }
        ("zfill", [width]) if ascii => {
            let width = usize::try_from(truth_int(width)?).unwrap_or(0);
            if width > MAX_ITEMS {
                return None;
            }
            let (sign, digits) = match text.strip_prefix(['+', '-']) {
                Some(rest) => (&text[..1], rest),
                None => ("", text),
            };
            let pad = width.saturating_sub(text.len());
            s(format!("{sign}{}{digits}", "0".repeat(pad)))
        }
        _ => None,
    }
}
