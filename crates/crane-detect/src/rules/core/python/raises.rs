//! The exceptions Python certainly raises for these values, whatever its version: a zero
//! divisor, operand types no builtin type defines an operator for, an index out of range, an
//! unpacking of the wrong length, a builtin given what it refuses.

use super::*;

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
