//! `repr` and `str`, hashing, lengths, items, indexing and slicing of strings, lists and
//! tuples.

use super::*;

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

pub(super) fn reprs(items: &[Constant]) -> Option<Vec<String>> {
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

pub(super) fn slice_bounds(
    length: i64,
    lower: Option<i64>,
    upper: Option<i64>,
    step: i64,
) -> (i64, i64) {
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
