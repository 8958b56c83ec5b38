//! Merges and joins: PD005 for a `merge`/`join` key that is not a column of its side, and PD007
//! for a `join` without suffixes whose frames share columns.

use crane_analysis::Constant;
use crane_runtime::{ColumnName, Kind};

use super::labels::{arg_labels, check_columns, is_frame, plain_columns};
use crate::rules::core::interp::{Args, Interp};
use crate::rules::core::value::{name_list, Obj, Sequence, Value};
use crate::rules::models::facts::columns_evidence;
use crate::rules::RuleCode;

/// PD005: keys of `merge` that are not columns of the side they come from.
pub(crate) fn merge_keys(
    interp: &mut Interp,
    left: Option<&Obj>,
    right: Option<&Obj>,
    args: &Args,
    line: u32,
) {
    if args.has_keyword("left_index") || args.has_keyword("right_index") {
        return;
    }
    // pandas validates how the keys are given before it looks them up: `on` with `left_on` or
    // `right_on`, one of these alone, or lists of different lengths raise other errors first.
    let (left_on, right_on) = (args.keyword("left_on"), args.keyword("right_on"));
    if left_on.is_some() || right_on.is_some() {
        let count = |arg: Option<&crate::rules::core::interp::Arg>| key_count(arg?.value.as_ref()?);
        if args.keyword("on").is_some()
            || count(left_on).is_none()
            || count(left_on) != count(right_on)
        {
            return;
        }
    }
    let context = "`merge`";
    if let Some(on) = arg_labels(args.keyword_value("on")) {
        for side in [left, right].into_iter().flatten() {
            if is_frame(side)
                && check_columns(
                    interp,
                    RuleCode::MissingMergeKey,
                    side,
                    &on,
                    line,
                    context,
                    true,
                ) == Some(false)
            {
                return;
            }
        }
    }
    for (keyword, side) in [("left_on", left), ("right_on", right)] {
        let (Some(side), Some(wanted)) = (side, arg_labels(args.keyword_value(keyword))) else {
            continue;
        };
        if is_frame(side)
            && check_columns(
                interp,
                RuleCode::MissingMergeKey,
                side,
                &wanted,
                line,
                context,
                true,
            ) == Some(false)
        {
            return;
        }
    }
}

/// How many keys a `merge` key argument gives (`com.maybe_make_list`: a list or tuple its
/// items, anything else one).
fn key_count(value: &Value) -> Option<usize> {
    match value {
        Value::Seq {
            items,
            of: Sequence::List | Sequence::Tuple,
        } => Some(items.len()),
        Value::Const(Constant::List(items) | Constant::Tuple(items)) => Some(items.len()),
        Value::Object(obj) if matches!(obj.kind(), Kind::List | Kind::Tuple) => {
            obj.var.len().and_then(|len| usize::try_from(len).ok())
        }
        Value::Const(_) | Value::Seq { .. } | Value::Object(_) => Some(1),
        _ => None,
    }
}

/// PD007 and PD005 for `join`.
pub(super) fn join(interp: &mut Interp, left: &Obj, args: &Args, line: u32) {
    // `on` is matched with the other frame's index levels: a count that differs raises
    // `ValueError` before any key is looked up.
    let right_levels = args
        .value(0, "other")
        .and_then(Value::obj)
        .filter(|right| matches!(right.kind(), Kind::Dataframe | Kind::Series))
        .and_then(|right| right.var.r.get("index")?.get("nlevels")?.as_u64());
    let on = args.keyword_value("on");
    let levels_agree = on
        .and_then(key_count)
        .is_some_and(|count| Some(count as u64) == right_levels);
    if let Some(on) = arg_labels(on).filter(|_| levels_agree) {
        let context = format!("`{}.join(..., on=...)`", left.label);
        if check_columns(
            interp,
            RuleCode::MissingMergeKey,
            left,
            &on,
            line,
            &context,
            true,
        ) == Some(false)
        {
            return;
        }
    }
    if args.has_keyword("lsuffix") || args.has_keyword("rsuffix") {
        return;
    }
    let Some(right) = args.value(0, "other").and_then(Value::obj) else {
        return;
    };
    let right_names: Vec<ColumnName> = match right.kind() {
        Kind::Dataframe => match plain_columns(&right.var) {
            Some(columns) => columns.into_iter().map(|c| c.name).collect(),
            None => return,
        },
        _ => return,
    };
    let Some(left_columns) = plain_columns(&left.var) else {
        return;
    };
    let overlap: Vec<String> = left_columns
        .iter()
        .filter(|c| right_names.iter().any(|r| r == &c.name))
        .map(|c| c.name.to_string())
        .collect();
    if overlap.is_empty() {
        return;
    }
    let right_columns = plain_columns(&right.var).unwrap_or_default();
    interp.report(
        RuleCode::JoinOverlappingColumns,
        line,
        format!(
            "`{}.join({})` without lsuffix/rsuffix: both frames have the columns {}.",
            left.label,
            right.label,
            name_list(&overlap)
        ),
        vec![
            columns_evidence(&left.label, &left_columns),
            columns_evidence(&right.label, &right_columns),
        ],
    );
}
