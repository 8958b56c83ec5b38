//! The builtins and `str` methods whose result is fully determined by their arguments.

use super::*;

/// Python's `str.isspace` characters (Rust's whitespace lacks the separators \x1c-\x1f).
pub(super) fn is_space(c: char) -> bool {
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

pub(super) fn extreme(max: bool, values: &[Constant]) -> Option<Constant> {
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

pub(super) fn to_int(c: &Constant) -> Option<i64> {
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

pub(super) fn to_float(c: &Constant) -> Option<f64> {
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
