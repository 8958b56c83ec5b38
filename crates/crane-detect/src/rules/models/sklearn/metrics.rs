//! Metric targets: the kind of target a value is (binary, multiclass, continuous, ...) as
//! `type_of_target` decides it, and SK014 for a metric given targets of kinds it does not take
//! or of different kinds.

use crane_analysis::Constant;
use crane_runtime::Kind;
use serde_json::Value as Json;

use crate::rules::contracts::sklearn::Targets;
use crate::rules::core::interp::Interp;
use crate::rules::core::value::Value;
use crate::rules::RuleCode;

/// What `type_of_target` makes of a metric argument, as far as the facts decide it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TargetKind {
    /// One column of labels (binary or multiclass).
    Labels,
    /// One column holding a float that is not an integer.
    Continuous,
    /// A 2-D target of this many (two or more) columns.
    Columns(u64),
}

impl TargetKind {
    fn describe(self) -> String {
        match self {
            TargetKind::Labels => "1-D labels".to_owned(),
            TargetKind::Continuous => "continuous values".to_owned(),
            TargetKind::Columns(width) => format!("a 2-D target of {width} columns"),
        }
    }
}

fn is_fractional(value: &Json) -> bool {
    value
        .as_f64()
        .is_some_and(|v| v.is_finite() && v.fract() != 0.0)
}

fn target_kind(value: &Value) -> Option<TargetKind> {
    if let Some(constant) = value.constant() {
        let items = match constant {
            Constant::List(items) | Constant::Tuple(items) => items,
            _ => return None,
        };
        return if items
            .iter()
            .any(|i| matches!(i, Constant::Float(f) if f.is_finite() && f.fract() != 0.0))
        {
            Some(TargetKind::Continuous)
        } else if items
            .iter()
            .all(|i| matches!(i, Constant::Int(_) | Constant::Str(_)))
        {
            Some(TargetKind::Labels)
        } else {
            None
        };
    }
    let obj = value.obj()?;
    if !matches!(obj.kind(), Kind::Ndarray | Kind::Series) {
        return None;
    }
    let shape = obj.var.shape();
    match shape.as_deref() {
        Some([_, Some(width)]) if *width >= 2 => return Some(TargetKind::Columns(*width)),
        Some([_]) | Some([_, Some(1)]) => {}
        None if obj.kind() == Kind::Series => {}
        _ => return None,
    }
    let dtype = obj.var.r.get("dtype").and_then(Json::as_str)?;
    if dtype.starts_with("int") || dtype.starts_with("uint") || dtype == "bool" {
        return Some(TargetKind::Labels);
    }
    if !dtype.starts_with("float") {
        return None;
    }
    let v = &obj.var.v;
    let seen_fraction = ["min", "max"]
        .iter()
        .any(|key| v.get(*key).is_some_and(is_fractional))
        || v.get("unique_values")
            .and_then(Json::as_array)
            .is_some_and(|values| values.iter().any(is_fractional));
    seen_fraction.then_some(TargetKind::Continuous)
}

/// SK014: targets a metric cannot compare, as `type_of_target` classifies them.
pub(super) fn metric_targets(
    interp: &mut Interp,
    function: &str,
    targets: Targets,
    truth: &Value,
    predicted: &Value,
    line: u32,
) {
    let (Some(a), Some(b)) = (target_kind(truth), target_kind(predicted)) else {
        return;
    };
    let rejected = match targets {
        Targets::Labels => {
            a == TargetKind::Continuous
                || b == TargetKind::Continuous
                || matches!(
                    (a, b),
                    (TargetKind::Columns(_), TargetKind::Labels)
                        | (TargetKind::Labels, TargetKind::Columns(_))
                )
        }
        Targets::Values => {
            let outputs = |kind| match kind {
                TargetKind::Columns(width) => width,
                _ => 1,
            };
            outputs(a) != outputs(b)
        }
    };
    if !rejected {
        return;
    }
    let label = |value: &Value| {
        value
            .obj()
            .map_or_else(|| "the list".to_owned(), |o| o.label.clone())
    };
    let why = match targets {
        Targets::Labels => "a classification metric compares labels",
        Targets::Values => "y_true and y_pred must have the same number of outputs",
    };
    interp.report(
        RuleCode::MetricTargetMismatch,
        line,
        format!(
            "`{function}`: y_true is {} and y_pred is {}; {why}.",
            a.describe(),
            b.describe()
        ),
        vec![
            format!("y_true {}: {}", label(truth), a.describe()),
            format!("y_pred {}: {}", label(predicted), b.describe()),
        ],
    );
}
