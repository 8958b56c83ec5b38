//! scikit-learn: SK001-SK014, and how estimators get fitted in the cell. This module is the
//! model's entry points the `Library` calls: constructing an estimator, its methods (SK001 for
//! a method that needs a fit, SK012 for a fit whose solver does not support the penalty) and
//! attributes (SK013 for a fitted attribute it does not have), what fitting, transforming and
//! predicting leave, and the `sklearn.*` functions. The checks are split by job: the data given
//! to `fit`/`predict` (`inputs.rs`), metric targets (`metrics.rs`), and `train_test_split` and
//! label encoding (`splits.rs`).

use crane_analysis::Constant;
use crane_runtime::{AttrPresence, ColumnName, Kind, Variable};
use serde_json::{json, Value as Json};

use super::facts::{known_columns, rows};
use crate::rules::contracts::sklearn::{
    metric, raises_unfitted, InputChecks, INPUT_CHECKS, NEED_FIT, NEVER_FITTED, SAME_WIDTH,
    SOLVER_PENALTIES,
};
use crate::rules::core::interp::{Args, Effect, Interp};
use crate::rules::core::value::{Obj, Value};
use crate::rules::RuleCode;

mod inputs;
mod metrics;
mod splits;

use inputs::{
    check_features, check_input, check_nan, check_sizes, check_strings, consistent_samples,
};
use metrics::metric_targets;
use splits::{label_encoder_transform, train_test_split};

fn input_checks(class: &str) -> InputChecks {
    INPUT_CHECKS
        .iter()
        .find(|(name, _)| *name == class)
        .map(|(_, checks)| *checks)
        .unwrap_or_default()
}

fn class_name(obj: &Obj) -> Option<String> {
    if obj.kind() != Kind::Estimator {
        return None;
    }
    obj.var
        .r
        .get("estimator")
        .and_then(Json::as_str)
        .map(str::to_owned)
        .or_else(|| {
            obj.var
                .type_name
                .starts_with("sklearn.")
                .then(|| obj.short_type().to_owned())
        })
}

impl Obj {
    fn short_type(&self) -> &str {
        self.var.short_type()
    }
}

fn is_supervised(class: &str) -> bool {
    [
        "Classifier",
        "Regressor",
        "Regression",
        "SVC",
        "SVR",
        "NB",
        "Ridge",
        "Lasso",
        "ElasticNet",
    ]
    .iter()
    .any(|suffix| class.ends_with(suffix) || class.ends_with(&format!("{suffix}CV")))
        || matches!(
            class,
            "LinearDiscriminantAnalysis" | "QuadraticDiscriminantAnalysis" | "Perceptron"
        )
}

/// An estimator constructed in the cell from a scikit-learn class (`LogisticRegression(C=2)`).
pub(crate) fn construct(interp: &mut Interp, name: &str, args: &Args) -> Option<Value> {
    let class = name.rsplit('.').next()?;
    if !name.starts_with("sklearn.") || !class.starts_with(|c: char| c.is_ascii_uppercase()) {
        return None;
    }
    let module = name.split('.').nth(1).unwrap_or_default();
    if matches!(
        module,
        "model_selection" | "metrics" | "datasets" | "utils" | "inspection"
    ) && !class.ends_with("CV")
    {
        return None;
    }
    let mut var = Variable::new(name, Kind::Estimator);
    var.r
        .insert("estimator".to_owned(), Json::String(class.to_owned()));
    let mut params = serde_json::Map::new();
    for (keyword, arg) in &args.keywords {
        if let Some(constant) = arg.value.as_ref().and_then(Value::constant) {
            params.insert((*keyword).to_owned(), constant_json(&constant));
        }
    }
    let all_constant = params.len() == args.keywords.len();
    var.r.insert("params".to_owned(), Json::Object(params));
    if all_constant && !args.star {
        // Every parameter not in `params` keeps its default.
        var.r.insert("params_complete".to_owned(), Json::Bool(true));
    }
    if !args.positional.is_empty() || args.star {
        var.r
            .insert("positional_params".to_owned(), Json::Bool(true));
    }
    var.v.insert("fitted".to_owned(), Json::Bool(false));
    Some(interp.derived(None, var, format!("{class}(...)")))
}

fn constant_json(constant: &Constant) -> Json {
    match constant {
        Constant::None => Json::Null,
        Constant::Bool(b) => json!(b),
        Constant::Int(i) => json!(i),
        Constant::Float(f) => json!(f),
        Constant::Str(s) => json!(s),
        Constant::List(items) | Constant::Tuple(items) => {
            Json::Array(items.iter().map(constant_json).collect())
        }
        Constant::BigInt(text) => json!(text),
        Constant::Bytes(_) => Json::Null,
    }
}

/// A library's `major.minor` version, when the facts record it.
fn library_version(interp: &Interp, library: &str) -> Option<(u64, u64)> {
    let version = interp.runtime.libraries.get(library)?;
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

fn param(obj: &Obj, name: &str) -> Option<Json> {
    obj.var
        .r
        .get("params")
        .and_then(Json::as_object)
        .and_then(|params| params.get(name))
        .cloned()
}

/// The number of features of X, when X is 2-D and its width is known.
fn width(value: &Value) -> Option<u64> {
    let obj = value.obj()?;
    match obj.kind() {
        Kind::Dataframe => known_columns(&obj.var).map(|c| c.len() as u64).or_else(|| {
            match obj.var.shape()?.as_slice() {
                [_, Some(width)] => Some(*width),
                _ => None,
            }
        }),
        Kind::Ndarray => match obj.var.shape()?.as_slice() {
            [_, Some(width)] => Some(*width),
            _ => None,
        },
        _ => None,
    }
}

fn is_one_dimensional(value: &Value) -> bool {
    value.obj().is_some_and(|obj| match obj.kind() {
        Kind::Series => true,
        Kind::Ndarray => obj.var.shape().is_some_and(|s| s.len() == 1),
        _ => false,
    })
}

/// String column names of a frame, when all of them are strings. The columns of a MultiIndex
/// are tuples, which scikit-learn does not take as feature names (it only warns).
fn feature_names(value: &Value) -> Option<Vec<String>> {
    let obj = value.obj()?;
    if obj.kind() != Kind::Dataframe {
        return None;
    }
    super::pandas::plain_columns(&obj.var)?
        .into_iter()
        .map(|c| match c.name {
            ColumnName::Str(name) => Some(name),
            _ => None,
        })
        .collect()
}

pub(crate) fn method(interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Effect {
    let class = class_name(obj);
    let line = args.line;
    let x = args.value(0, "X").cloned();
    match name {
        "fit" | "fit_transform" | "fit_predict" | "partial_fit" => {
            let Some(class) = class else {
                return Effect::ForgetReceiver(None);
            };
            check_solver_penalty(interp, obj, &class, line);
            if obj.var.type_name.starts_with("sklearn.") {
                if let Some(params) = obj.var.r.get("params").and_then(Json::as_object) {
                    let version = library_version(interp, "sklearn");
                    super::domains::estimator_fit(interp, obj, &class, params, version, line);
                }
            }
            if let Some(x) = &x {
                check_input(interp, obj, &class, x, "X", line, name);
                check_sizes(interp, obj, &class, x, line);
            }
            if let Some(y) = args.value(1, "y").cloned() {
                if is_supervised(&class) {
                    if let Some(x) = &x {
                        consistent_samples(
                            interp,
                            &format!("{}.{name}", obj.label),
                            &[x, &y],
                            line,
                        );
                    }
                    check_nan(interp, obj, &class, &y, "y", line, name);
                    if class.ends_with("Regressor")
                        || class.ends_with("Regression") && class != "LogisticRegression"
                    {
                        check_strings(interp, obj, &class, &y, "y", line, name);
                    }
                }
            }
            let fitted = x.as_ref().map(|x| fitted_state(obj, x));
            let result = if name == "fit_transform" && SAME_WIDTH.contains(&class.as_str()) {
                x.as_ref().and_then(|x| transformed(interp, obj, x))
            } else {
                None
            };
            match fitted {
                Some(var) if name != "partial_fit" => Effect::Replace {
                    receiver: Box::new(var),
                    label: obj.label.clone(),
                    result,
                },
                _ => Effect::ForgetReceiver(result),
            }
        }
        _ if NEED_FIT.contains(&name) => {
            let class = class.unwrap_or_default();
            if class == "LabelEncoder" && name == "transform" {
                label_encoder_transform(interp, obj, args);
                return Effect::Pure(None);
            }
            // Other libraries' estimators may say "not fitted" in their own way.
            let scikit_learn = obj.var.type_name.starts_with("sklearn.");
            if scikit_learn && obj.var.fitted() == Some(false) && raises_unfitted(&class, name) {
                interp.report(
                    RuleCode::EstimatorNotFitted,
                    line,
                    format!("`{}.{name}` on an estimator that is not fitted.", obj.label),
                    vec![format!(
                        "{} ({}): fitted = false",
                        obj.label,
                        if class.is_empty() {
                            obj.var.type_name.clone()
                        } else {
                            class.clone()
                        }
                    )],
                );
                return Effect::Pure(None);
            }
            if let Some(x) = &x {
                // inverse_transform takes what transform gives, whose width is the input's
                // only for the transformers that keep it.
                let input_width =
                    name != "inverse_transform" || SAME_WIDTH.contains(&class.as_str());
                if obj.var.fitted() == Some(true) && input_width {
                    check_features(interp, obj, x, line, name);
                }
                if !class.is_empty() && name != "inverse_transform" {
                    check_input(interp, obj, &class, x, "X", line, name);
                }
            }
            if name == "score" && is_supervised(&class) {
                if let (Some(x), Some(y)) = (&x, args.value(1, "y")) {
                    let y = y.clone();
                    consistent_samples(interp, &format!("{}.score", obj.label), &[x, &y], line);
                }
            }
            let result = match name {
                "transform" if SAME_WIDTH.contains(&class.as_str()) => {
                    x.as_ref().and_then(|x| transformed(interp, obj, x))
                }
                "predict" if is_supervised(&class) => {
                    x.as_ref().and_then(|x| predictions(interp, obj, x))
                }
                "predict_proba" => x.as_ref().and_then(|x| probabilities(interp, obj, x)),
                _ => None,
            };
            Effect::Pure(result)
        }
        "get_params" | "set_output" | "get_feature_names_out" => Effect::Pure(None),
        _ => Effect::ForgetReceiver(None),
    }
}

/// SK012: `LogisticRegression` fitted with a penalty its solver does not support.
fn check_solver_penalty(interp: &mut Interp, estimator: &Obj, class: &str, line: u32) {
    if !matches!(class, "LogisticRegression" | "LogisticRegressionCV") {
        return;
    }
    let Some(Json::String(penalty)) = param(estimator, "penalty") else {
        return;
    };
    let (solver, accepted): (String, &[&str]) = match param(estimator, "solver") {
        Some(Json::String(solver)) => {
            let Some((_, accepted)) = SOLVER_PENALTIES.iter().find(|(name, _)| *name == solver)
            else {
                return;
            };
            (solver, accepted)
        }
        // The default solver was liblinear before 0.22 and lbfgs since: neither takes
        // elasticnet.
        None if estimator.var.r.get("params_complete") == Some(&Json::Bool(true)) => (
            "the default (lbfgs, or liblinear before 0.22)".to_owned(),
            &["l1", "l2"],
        ),
        _ => return,
    };
    let rejected = if penalty == "none" {
        solver == "liblinear"
    } else {
        ["l1", "l2", "elasticnet"].contains(&penalty.as_str())
            && !accepted.contains(&penalty.as_str())
    };
    if rejected {
        interp.report(
            RuleCode::SolverPenaltyMismatch,
            line,
            format!(
                "`{}.fit`: {class} with solver {solver} does not support penalty='{penalty}'.",
                estimator.label
            ),
            vec![format!(
                "{}: {class}(penalty='{penalty}', solver={solver})",
                estimator.label
            )],
        );
    }
}

/// SK013: an attribute read on a scikit-learn estimator whose class never has it.
pub(crate) fn attribute(interp: &mut Interp, obj: &Obj, attr: &str, line: u32, present: bool) {
    if present
        || !obj.var.type_name.starts_with("sklearn.")
        || obj
            .var
            .attribute(attr)
            .is_some_and(|p| p != AttrPresence::Absent)
        || interp.kernel.assigned_attributes.contains(attr)
    {
        return;
    }
    let Some(class) = class_name(obj) else {
        return;
    };
    let never = NEVER_FITTED
        .iter()
        .any(|(name, classes)| *name == attr && classes.contains(&class.as_str()));
    if never {
        interp.report(
            RuleCode::MissingEstimatorAttribute,
            line,
            format!(
                "`{}` ({class}) has no attribute `{attr}`: no scikit-learn version gives {class} one.",
                obj.label
            ),
            vec![format!("{}: {}", obj.label, obj.var.type_name)],
        );
    }
}

/// The estimator after `fit(X)`: fitted, with X's width and feature names.
fn fitted_state(obj: &Obj, x: &Value) -> Variable {
    let mut var = (*obj.var).clone();
    var.v.insert("fitted".to_owned(), Json::Bool(true));
    var.s.remove("n_features_in");
    var.r.remove("feature_names_in");
    var.v.remove("classes");
    if let Some(width) = width(x) {
        var.s.insert("n_features_in".to_owned(), json!(width));
    }
    if let Some(names) = feature_names(x) {
        var.r.insert("feature_names_in".to_owned(), json!(names));
    }
    var
}

/// The output of a same-width transformer: an ndarray of X's shape.
fn transformed(interp: &mut Interp, estimator: &Obj, x: &Value) -> Option<Value> {
    if interp.kernel.frames_from_transformers {
        return None;
    }
    let obj = x.obj()?;
    let shape = match obj.kind() {
        Kind::Dataframe | Kind::Ndarray => obj.var.shape()?,
        _ => return None,
    };
    if shape.len() != 2 {
        return None;
    }
    let mut var = super::facts::array(&shape, Some("float64"));
    if obj.var.has_nan() == Some(false) {
        var.v.insert("has_nan".to_owned(), Json::Bool(false));
    }
    Some(interp.derived(
        Some(obj),
        var,
        format!("{}.transform({})", estimator.label, obj.label),
    ))
}

/// The samples of a 2-D X given to a single-output estimator (one prediction per row).
fn predicted_rows(estimator: &Obj, x: &Value) -> Option<(u64, String)> {
    let obj = x.obj()?;
    if !matches!(obj.kind(), Kind::Dataframe | Kind::Ndarray) || obj.var.shape()?.len() != 2 {
        return None;
    }
    if estimator
        .var
        .s
        .get("n_outputs")
        .and_then(Json::as_u64)
        .is_some_and(|n| n != 1)
    {
        return None;
    }
    Some((rows(&obj.var)?, obj.label.clone()))
}

/// `predict(X)` of a single-output supervised estimator: one prediction per row of X.
fn predictions(interp: &mut Interp, estimator: &Obj, x: &Value) -> Option<Value> {
    let (samples, label) = predicted_rows(estimator, x)?;
    let var = super::facts::array(&[Some(samples)], None);
    Some(interp.derived(None, var, format!("{}.predict({label})", estimator.label)))
}

/// `predict_proba(X)` of a fitted classifier: one row per sample, one column per class.
fn probabilities(interp: &mut Interp, estimator: &Obj, x: &Value) -> Option<Value> {
    let (samples, label) = predicted_rows(estimator, x)?;
    let classes = estimator.var.n_classes()?;
    let var = super::facts::array(&[Some(samples), Some(classes)], Some("float64"));
    Some(interp.derived(
        None,
        var,
        format!("{}.predict_proba({label})", estimator.label),
    ))
}

pub(crate) fn function(interp: &mut Interp, name: &str, args: &Args) -> Option<Effect> {
    if !name.starts_with("sklearn.") {
        return None;
    }
    let function = name.rsplit('.').next()?;
    if function == "train_test_split" {
        return Some(Effect::Pure(train_test_split(interp, args)));
    }
    if let Some(targets) = metric(function).filter(|_| name.starts_with("sklearn.metrics.")) {
        if args.star {
            return Some(Effect::Pure(None));
        }
        if let (Some(truth), Some(predicted)) = (args.value(0, "y_true"), args.value(1, "y_pred")) {
            let (truth, predicted) = (truth.clone(), predicted.clone());
            consistent_samples(interp, function, &[&truth, &predicted], args.line);
            metric_targets(interp, function, targets, &truth, &predicted, args.line);
        }
        return Some(Effect::Pure(None));
    }
    if function == "make_pipeline" {
        let mut var = Variable::new("sklearn.pipeline.Pipeline", Kind::Estimator);
        var.r.insert("estimator".to_owned(), json!("Pipeline"));
        var.v.insert("fitted".to_owned(), Json::Bool(false));
        return Some(Effect::Pure(Some(interp.derived(
            None,
            var,
            "make_pipeline(...)",
        ))));
    }
    if let Some(value) = construct(interp, name, args) {
        return Some(Effect::Pure(Some(value)));
    }
    Some(Effect::Pure(None))
}
