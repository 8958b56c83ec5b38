//! Argument contracts (`crate::rules::contracts`) applied to calls: a constant argument outside
//! what the callee accepts is CT001, two arguments whose sizes disagree CT002, an array of a
//! number of dimensions the callee does not take CT003.

use crane_runtime::Kind;

use crate::rules::contracts::{self, Accepts, Callee, Domain, Rank, Size};
use crate::rules::core::interp::{Args, Interp};
use crate::rules::core::value::{constant_text, Obj, Sequence, Value};
use crate::rules::RuleCode;

/// Whether a qualified function name (`pandas.core.reshape.merge.merge`) is the contract's
/// function of that library.
fn names_function(qualified: &str, library: &str, function: &str) -> bool {
    qualified.split('.').next() == Some(library) && qualified.rsplit('.').next() == Some(function)
}

/// A call of a library function.
pub(crate) fn function(interp: &mut Interp, qualified: &str, args: &Args) {
    let calls = |callee: Callee| match callee {
        Callee::Function(library, name) => names_function(qualified, library, name),
        _ => false,
    };
    let rows = contracts::domains().filter(|row| calls(row.callee));
    check(interp, rows, qualified, args);
    if args.star {
        return;
    }
    for row in contracts::dimensions().filter(|row| calls(row.callee)) {
        let value = match row.position {
            Some(position) => args.value(position, row.param),
            None => args.keyword_value(row.param),
        };
        let Some(obj) = value.and_then(Value::obj) else {
            continue;
        };
        if !matches!(obj.kind(), Kind::Ndarray | Kind::Tensor) {
            continue;
        }
        let Some(shape) = obj.var.shape() else {
            continue;
        };
        let rank_fits = match row.rank {
            Rank::AtLeast(low) => shape.len() >= low,
            Rank::OneOf(ranks) => ranks.contains(&shape.len()),
        };
        let square_fits = !row.square
            || match shape.as_slice() {
                [.., Some(rows), Some(columns)] => rows == columns,
                _ => true,
            };
        if rank_fits && square_fits {
            continue;
        }
        let wanted = match row.rank {
            Rank::AtLeast(low) => format!("at least {low} dimensions"),
            Rank::OneOf(ranks) => {
                let ranks: Vec<String> = ranks.iter().map(|r| format!("{r}-D")).collect();
                ranks.join(" or ")
            }
        };
        let why = if rank_fits {
            "its last two dimensions must be equal (square matrices)".to_owned()
        } else {
            format!("it takes {wanted}")
        };
        interp.report_raising(
            RuleCode::ArgumentRankMismatch,
            row.exception,
            args.line,
            format!(
                "`{qualified}({})`: `{}` has shape {}; {why}.",
                obj.label,
                obj.label,
                super::facts::shape_text(&shape)
            ),
            vec![format!("contract {}", row.id)],
        );
        return;
    }
    for row in contracts::size_relations().filter(|row| calls(row.callee)) {
        let size = |(param, position, size): (&str, Option<usize>, Size)| {
            let value = match position {
                Some(position) => args.value(position, param),
                None => args.keyword_value(param),
            }?;
            match size {
                Size::Length => rows_of(value),
                Size::AxisLabels => axis_length(value),
                Size::ArrayWidth => {
                    let obj = value.obj()?;
                    if !matches!(obj.kind(), Kind::Ndarray | Kind::Tensor) {
                        return None;
                    }
                    // A structured array's fields are the columns `columns` selects among.
                    if super::numpy::is_structured(obj.var.dtype()?) {
                        return None;
                    }
                    match obj.var.shape()?.as_slice() {
                        [_] => Some(1),
                        [_, width] => *width,
                        _ => None,
                    }
                }
            }
        };
        let (Some(first), Some(second)) = (size(row.first), size(row.second)) else {
            continue;
        };
        if first != second {
            let describe = |(param, _, size): (&str, Option<usize>, Size)| match size {
                Size::Length | Size::AxisLabels => format!("len({param})"),
                Size::ArrayWidth => format!("the columns of {param}"),
            };
            interp.report_raising(
                RuleCode::SizeMismatch,
                row.exception,
                args.line,
                format!(
                    "`{qualified}`: {} is {first} but {} is {second}; they must agree.",
                    describe(row.first),
                    describe(row.second)
                ),
                vec![format!("contract {}", row.id)],
            );
            return;
        }
    }
}

/// A method call on a pandas frame or series.
pub(crate) fn frame_method(interp: &mut Interp, obj: &Obj, method: &str, args: &Args) {
    let rows = contracts::domains()
        .filter(|row| matches!(row.callee, Callee::FrameMethod(name) if name == method));
    check(interp, rows, &format!("{}.{method}", obj.label), args);
}

fn check<'r>(interp: &mut Interp, rows: impl Iterator<Item = &'r Domain>, call: &str, args: &Args) {
    for row in rows {
        let value = match row.position {
            Some(position) if !args.star => args.value(position, row.param),
            // Without a known position, only a keyword is read: `*args` cannot supply it.
            _ => args.keyword_value(row.param),
        };
        let Some(constant) = value.and_then(|value| value.constant()) else {
            continue;
        };
        let rejected = match row.accepts {
            Accepts::Registered(registry) => {
                match (&constant, interp.runtime.registries.get(registry)) {
                    (crane_analysis::Constant::Str(name), Some(names)) => !names.contains(name),
                    _ => false,
                }
            }
            accepts => accepts.rejects(&constant) == Some(true),
        };
        if rejected {
            let given = constant_text(&constant);
            let accepted = match row.accepts {
                Accepts::Registered(registry) => {
                    let names = interp.runtime.registries.get(registry);
                    let quoted: Vec<String> = names
                        .into_iter()
                        .flatten()
                        .map(|n| format!("'{n}'"))
                        .collect();
                    format!(
                        "one of {} (the kernel's `{registry}` registry)",
                        quoted.join(", ")
                    )
                }
                accepts => accepts.describe(),
            };
            interp.report_raising(
                RuleCode::RejectedArgumentValue,
                row.exception,
                args.line,
                format!(
                    "`{call}`: {}={given} is not accepted; it must be {accepted}.",
                    row.param,
                ),
                vec![format!("contract {}: {accepted}", row.id)],
            );
            return;
        }
    }
}

/// The defaults scikit-learn gives a parameter it is deprecating or changing (its deprecation
/// convention): validation always accepts them, and `get_params()` shows them for an estimator
/// built without the parameter.
const DEPRECATION_SENTINELS: &[&str] = &["deprecated", "warn"];

/// How many items a sequence or array argument holds, as a constructor counts rows: a frame,
/// series or dict given as data is aligned or read by keys instead, so it has none here.
fn rows_of(value: &Value) -> Option<u64> {
    match value {
        Value::Seq { items, .. } => Some(items.len() as u64),
        Value::Const(
            crane_analysis::Constant::List(items) | crane_analysis::Constant::Tuple(items),
        ) => Some(items.len() as u64),
        Value::Object(obj) if matches!(obj.kind(), Kind::Ndarray | Kind::Tensor | Kind::Index) => {
            super::facts::rows(&obj.var)
        }
        _ => None,
    }
}

/// The length of the axis pandas builds from an `index=` or `columns=` argument, read as
/// `ensure_index` reads it: an Index, Series, range or 1-D array by its length; a list or tuple
/// of labels (scalars, or tuples that are each one label) by its items; a non-empty list whose
/// items are all lists, arrays, Series or Indexes of one length is the levels of a MultiIndex,
/// as long as each of them. Anything else (a scalar, a mixture of labels and levels, a tuple of
/// levels, levels of unknown or unequal lengths, a kernel list whose items are not known) is
/// not judged.
fn axis_length(value: &Value) -> Option<u64> {
    use crane_analysis::Constant;
    match value {
        Value::Seq {
            items,
            of: Sequence::Labels,
        } => Some(items.len() as u64),
        Value::Seq { items, of } => {
            let kinds: Vec<AxisItem> = items
                .iter()
                .map(|item| item.as_ref().map_or(AxisItem::Other, axis_item))
                .collect();
            axis_of_items(&kinds, *of == Sequence::List)
        }
        Value::Const(Constant::List(items) | Constant::Tuple(items)) => {
            let kinds: Vec<AxisItem> = items.iter().map(constant_axis_item).collect();
            axis_of_items(&kinds, matches!(value, Value::Const(Constant::List(_))))
        }
        Value::Object(obj) => match obj.kind() {
            Kind::Index | Kind::Series => super::facts::rows(&obj.var),
            Kind::Range => obj.var.len(),
            Kind::Ndarray if obj.var.shape()?.len() == 1 => super::facts::rows(&obj.var),
            _ => None,
        },
        _ => None,
    }
}

/// What an item of a list given as `index=`/`columns=` is to pandas.
#[derive(Debug, Clone, Copy, PartialEq)]
enum AxisItem {
    /// One label.
    Label,
    /// Array-like (a list, array, Series or Index): a level of a MultiIndex, of this length.
    Level(Option<u64>),
    /// Not known.
    Other,
}

fn constant_axis_item(constant: &crane_analysis::Constant) -> AxisItem {
    use crane_analysis::Constant;
    match constant {
        Constant::List(items) => AxisItem::Level(Some(items.len() as u64)),
        Constant::Tuple(items) => {
            if items
                .iter()
                .all(|item| constant_axis_item(item) == AxisItem::Label)
            {
                AxisItem::Label
            } else {
                AxisItem::Other
            }
        }
        _ => AxisItem::Label,
    }
}

fn axis_item(value: &Value) -> AxisItem {
    match value {
        Value::Const(constant) => constant_axis_item(constant),
        Value::Seq {
            items,
            of: Sequence::List | Sequence::Labels,
        } => AxisItem::Level(Some(items.len() as u64)),
        Value::Seq { .. } => value
            .constant()
            .map_or(AxisItem::Other, |constant| constant_axis_item(&constant)),
        Value::Object(obj) => match obj.kind() {
            Kind::Index | Kind::Series => AxisItem::Level(super::facts::rows(&obj.var)),
            Kind::Ndarray if obj.var.shape().is_some_and(|shape| shape.len() == 1) => {
                AxisItem::Level(super::facts::rows(&obj.var))
            }
            _ => AxisItem::Other,
        },
        _ => AxisItem::Other,
    }
}

/// The axis length of a list (`list`) or tuple of items: as many as its labels, or as long as
/// its levels when it is a non-empty list of levels of one known length.
fn axis_of_items(items: &[AxisItem], list: bool) -> Option<u64> {
    if items.iter().all(|item| *item == AxisItem::Label) {
        return Some(items.len() as u64);
    }
    if !list {
        return None;
    }
    let mut lengths = items.iter().map(|item| match item {
        AxisItem::Level(length) => *length,
        _ => None,
    });
    let first = lengths.next()??;
    lengths.all(|length| length == Some(first)).then_some(first)
}

/// An estimator's parameters, when it is fitted: scikit-learn validates them then.
/// `version`: scikit-learn's `major.minor`, when the facts know it.
pub(crate) fn estimator_fit(
    interp: &mut Interp,
    estimator: &Obj,
    class: &str,
    params: &serde_json::Map<String, serde_json::Value>,
    version: Option<(u64, u64)>,
    line: u32,
) {
    for row in contracts::domains() {
        if !matches!(row.callee, Callee::Estimator(name) if name == class) {
            continue;
        }
        let Some(value) = params.get(row.param) else {
            continue;
        };
        let constant = match value {
            serde_json::Value::String(text) if DEPRECATION_SENTINELS.contains(&text.as_str()) => {
                continue
            }
            serde_json::Value::String(text) => crane_analysis::Constant::Str(text.clone()),
            serde_json::Value::Number(number) if number.is_i64() => {
                crane_analysis::Constant::Int(number.as_i64().unwrap_or_default())
            }
            _ => continue,
        };
        if row.accepts.rejects(&constant) != Some(true) {
            continue;
        }
        // Parameters are validated by `InvalidParameterError` (a ValueError) since 1.2.
        let exception = match version {
            Some(version) if version >= (1, 2) => row.exception,
            _ => "ValueError",
        };
        interp.report_raising(
            RuleCode::RejectedArgumentValue,
            exception,
            line,
            format!(
                "`{}.fit`: {class}({}={}) is not accepted; it must be {}.",
                estimator.label,
                row.param,
                constant_text(&constant),
                row.accepts.describe()
            ),
            vec![format!("contract {}: {}", row.id, row.accepts.describe())],
        );
        return;
    }
}
