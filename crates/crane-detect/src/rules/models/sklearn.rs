//! scikit-learn: SK001-SK014, and how estimators get fitted in the cell.

use crane_analysis::Constant;
use crane_runtime::{AttrPresence, ColumnName, Kind, Variable};
use serde_json::{json, Value as Json};

use super::facts::{columns_ordered, known_columns, rows};
use crate::rules::contracts::sklearn::{
    metric, raises_unfitted, InputChecks, Targets, COMPOSITE, INPUT_CHECKS, NEED_FIT, NEVER_FITTED,
    SAME_WIDTH, SOLVER_PENALTIES,
};
use crate::rules::core::interp::{Args, Effect, Interp};
use crate::rules::core::value::{name_list, Obj, Sequence, Value};
use crate::rules::RuleCode;

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
fn metric_targets(
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

/// SK011: arrays that must hold one row per sample.
pub(crate) fn consistent_samples(interp: &mut Interp, call: &str, values: &[&Value], line: u32) {
    let counted: Vec<(u64, String)> = values
        .iter()
        .filter_map(|value| {
            let obj = value.obj()?;
            if !matches!(obj.kind(), Kind::Dataframe | Kind::Series | Kind::Ndarray) {
                return None;
            }
            Some((rows(&obj.var)?, obj.label.clone()))
        })
        .collect();
    if counted.len() < 2 || counted.iter().all(|(n, _)| *n == counted[0].0) {
        return;
    }
    let listing: Vec<String> = counted
        .iter()
        .map(|(n, label)| format!("{label}: {n}"))
        .collect();
    interp.report(
        RuleCode::InconsistentSamples,
        line,
        format!(
            "`{call}`: the inputs have different numbers of samples ({}).",
            listing.join(", ")
        ),
        counted
            .iter()
            .map(|(n, label)| format!("{label} rows: {n}"))
            .collect(),
    );
}

/// SK002, SK003: X against what the estimator was fitted on.
fn check_features(interp: &mut Interp, estimator: &Obj, x: &Value, line: u32, method: &str) {
    let Some(x_obj) = x.obj() else {
        return;
    };
    // A column transformer selects columns of a frame by name and ignores the others.
    let selects_by_name = x_obj.kind() == Kind::Dataframe
        && class_name(estimator).is_none_or(|class| COMPOSITE.contains(&class.as_str()));
    if selects_by_name {
        return;
    }
    if let (Some(fitted_names), Some(names)) = (estimator.var.feature_names_in(), feature_names(x))
    {
        // Names listed out of the frame's order differ from the fitted ones only as a set.
        let differ = if columns_ordered(&x_obj.var) {
            fitted_names != names
        } else {
            fitted_names.iter().any(|n| !names.contains(n))
                || names.iter().any(|n| !fitted_names.contains(n))
        };
        if differ && !names_truncated(&estimator.var) {
            let unseen: Vec<&String> = names.iter().filter(|n| !fitted_names.contains(n)).collect();
            let missing: Vec<&String> =
                fitted_names.iter().filter(|n| !names.contains(n)).collect();
            let how = if unseen.is_empty() && missing.is_empty() {
                "in a different order".to_owned()
            } else {
                let mut parts = Vec::new();
                if !unseen.is_empty() {
                    parts.push(format!("unseen at fit: {}", name_list(&unseen)));
                }
                if !missing.is_empty() {
                    parts.push(format!("missing: {}", name_list(&missing)));
                }
                parts.join("; ")
            };
            interp.report(
                RuleCode::FeatureNamesMismatch,
                line,
                format!(
                    "`{}.{method}({})`: the frame's column names differ from those seen at fit ({how}).",
                    estimator.label, x_obj.label
                ),
                vec![
                    format!("{} feature_names_in: {}", estimator.label, name_list(&fitted_names)),
                    format!("{} columns: {}", x_obj.label, name_list(&names)),
                ],
            );
            return;
        }
    }
    if let (Some(expected), Some(actual)) = (estimator.var.n_features_in(), width(x)) {
        if expected != actual {
            interp.report(
                RuleCode::FeatureCountMismatch,
                line,
                format!(
                    "`{}.{method}({})`: X has {actual} features, but the estimator was fitted on {expected}.",
                    estimator.label, x_obj.label
                ),
                vec![
                    format!("{} n_features_in: {expected}", estimator.label),
                    format!("{} features: {actual}", x_obj.label),
                ],
            );
        }
    }
}

fn names_truncated(var: &Variable) -> bool {
    var.r.get("feature_names_truncated").is_some()
        || var
            .n_features_in()
            .zip(var.feature_names_in())
            .is_some_and(|(n, names)| names.len() as u64 != n)
}

/// SK004, SK005, SK010 on X (or y) of a numeric-only estimator.
fn check_input(
    interp: &mut Interp,
    estimator: &Obj,
    class: &str,
    x: &Value,
    role: &str,
    line: u32,
    method: &str,
) {
    if input_checks(class).numeric_only {
        check_strings(interp, estimator, class, x, role, line, method);
        if is_one_dimensional(x) && role == "X" {
            let obj = x.obj().cloned();
            if let Some(obj) = obj {
                interp.report(
                    RuleCode::OneDimensionalInput,
                    line,
                    format!(
                        "`{}.{method}({})`: {class} expects a 2-D X, but `{}` is one-dimensional.",
                        estimator.label, obj.label, obj.label
                    ),
                    vec![format!(
                        "{} shape: {}",
                        obj.label,
                        obj.var
                            .shape()
                            .map_or("1-D".to_owned(), |s| super::facts::shape_text(&s))
                    )],
                );
                return;
            }
        }
    }
    check_nan(interp, estimator, class, x, role, line, method);
}

fn check_nan(
    interp: &mut Interp,
    estimator: &Obj,
    class: &str,
    x: &Value,
    role: &str,
    line: u32,
    method: &str,
) {
    let Some(obj) = x.obj() else {
        return;
    };
    // The estimator's own tags decide when the facts have them (scikit-learn's common tests
    // hold every estimator without `allow_nan` to raising on NaN); the table otherwise.
    let allow_nan = estimator
        .var
        .r
        .get("tags")
        .and_then(|tags| tags.get("allow_nan"))
        .and_then(Json::as_bool);
    if role == "X" && allow_nan.unwrap_or(!input_checks(class).rejects_nan) {
        return;
    }
    if !matches!(obj.kind(), Kind::Dataframe | Kind::Ndarray | Kind::Series) {
        return;
    }
    if obj.var.has_nan() != Some(true) {
        return;
    }
    if let Some(dtype) = obj.var.dtype() {
        if dtype == "object" {
            return;
        }
    }
    interp.report(
        RuleCode::NanInput,
        line,
        format!(
            "`{}.{method}`: {role} (`{}`) contains NaN, which {class} does not accept.",
            estimator.label, obj.label
        ),
        match allow_nan {
            Some(_) => vec![
                format!("{}: has_nan = true", obj.label),
                format!("{}: tags allow_nan = false", estimator.label),
            ],
            None => vec![format!("{}: has_nan = true", obj.label)],
        },
    );
}

/// SK005: a frame column (or series) holding strings that are not numbers.
fn check_strings(
    interp: &mut Interp,
    estimator: &Obj,
    class: &str,
    x: &Value,
    role: &str,
    line: u32,
    method: &str,
) {
    let Some(obj) = x.obj() else {
        return;
    };
    let offending: Option<(String, String)> = match obj.kind() {
        Kind::Dataframe => known_columns(&obj.var).and_then(|columns| {
            columns.iter().find_map(|column| {
                let facts = obj.var.column_values(&column.name.key())?;
                let only_strings = facts
                    .get("element_types")
                    .and_then(Json::as_array)
                    .is_none_or(|types| types.iter().all(|t| t.as_str() == Some("builtins.str")));
                if !only_strings {
                    return None;
                }
                let text = non_numeric_example(facts.get("examples")?)?;
                Some((column.name.to_string(), text))
            })
        }),
        Kind::Series | Kind::Ndarray if super::pandas::holds_only_strings(&obj.var) => obj
            .var
            .examples()
            .and_then(|examples| non_numeric_example(&Json::Array(examples.clone())))
            .map(|text| (obj.label.clone(), text)),
        _ => None,
    };
    let Some((column, example)) = offending else {
        return;
    };
    interp.report(
        RuleCode::NonNumericInput,
        line,
        format!(
            "`{}.{method}`: {role} (`{}`) holds strings such as '{example}' in `{column}`, which {class} cannot convert to numbers.",
            estimator.label, obj.label
        ),
        vec![format!("{} `{column}` examples include '{example}'", obj.label)],
    );
}

/// A string example that Python's `float()` would not parse.
fn non_numeric_example(examples: &Json) -> Option<String> {
    examples.as_array()?.iter().find_map(|example| {
        let text = super::pandas::seen_text(example)?;
        let trimmed = text.trim();
        let lower = trimmed.to_ascii_lowercase();
        let numeric = trimmed.parse::<f64>().is_ok()
            || matches!(
                lower.as_str(),
                "nan" | "inf" | "-inf" | "+inf" | "infinity" | "-infinity" | "+nan" | "-nan"
            )
            || trimmed.replace('_', "").parse::<f64>().is_ok();
        // A value shortened by the facts (`...`) is still a string, but say only what was seen.
        (!numeric && !trimmed.is_empty()).then(|| text.to_owned())
    })
}

/// SK008 (and empty data, SK009) at fit time.
fn check_sizes(interp: &mut Interp, estimator: &Obj, class: &str, x: &Value, line: u32) {
    let Some(obj) = x.obj() else {
        return;
    };
    let Some(samples) = rows(&obj.var) else {
        return;
    };
    if samples == 0 && matches!(obj.kind(), Kind::Dataframe | Kind::Ndarray) {
        interp.report(
            RuleCode::EmptyInput,
            line,
            format!("`{}.fit({})`: X has 0 samples.", estimator.label, obj.label),
            vec![format!("{} rows: 0", obj.label)],
        );
        return;
    }
    let features = width(x);
    let (parameter, limit, what) = match class {
        "KMeans" | "MiniBatchKMeans" => ("n_clusters", Some(samples), "samples"),
        "GaussianMixture" => ("n_components", Some(samples), "samples"),
        "PCA" => (
            "n_components",
            features.map(|f| f.min(samples)),
            "min(samples, features)",
        ),
        _ => return,
    };
    let (Some(limit), Some(requested)) =
        (limit, param(estimator, parameter).and_then(|p| p.as_u64()))
    else {
        return;
    };
    if requested > limit {
        interp.report(
            RuleCode::TooManyComponents,
            line,
            format!(
                "`{}` asks for {parameter}={requested}, but X (`{}`) allows at most {limit} ({what}).",
                estimator.label, obj.label
            ),
            vec![format!(
                "{} shape: {}",
                obj.label,
                obj.var.shape().map_or("?".to_owned(), |s| super::facts::shape_text(&s))
            )],
        );
    }
}

// Functions

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

/// SK007 and SK009 for `train_test_split`, and the split parts (columns kept, rows unknown).
fn train_test_split(interp: &mut Interp, args: &Args) -> Option<Value> {
    let line = args.line;
    if args.star {
        return None;
    }
    for arg in &args.positional {
        let Some(obj) = arg.value.as_ref().and_then(Value::obj) else {
            continue;
        };
        if rows(&obj.var) == Some(0)
            && matches!(obj.kind(), Kind::Dataframe | Kind::Ndarray | Kind::Series)
        {
            let obj = obj.clone();
            interp.report(
                RuleCode::EmptyInput,
                line,
                format!(
                    "`train_test_split({}, ...)`: `{}` has 0 samples.",
                    obj.label, obj.label
                ),
                vec![format!("{} rows: 0", obj.label)],
            );
            return None;
        }
    }
    let arrays: Vec<&Value> = args
        .positional
        .iter()
        .filter_map(|a| a.value.as_ref())
        .collect();
    consistent_samples(interp, "train_test_split", &arrays, line);
    if let Some(stratify) = args.keyword_value("stratify").and_then(Value::obj).cloned() {
        stratify_check(interp, &stratify, args, line);
    }
    let mut items = Vec::new();
    for arg in &args.positional {
        let part = arg.value.as_ref().and_then(Value::obj).and_then(|obj| {
            let mut var = (*obj.var).clone();
            let shape = var.shape()?;
            let mut shape: Vec<Json> = shape
                .iter()
                .map(|d| d.map_or(Json::Null, |d| json!(d)))
                .collect();
            if shape.is_empty() {
                return None;
            }
            shape[0] = Json::Null;
            var.s.insert("shape".to_owned(), Json::Array(shape));
            var.s.remove("len");
            let has_nan = var.has_nan();
            var.v.clear();
            if has_nan == Some(false) {
                var.v.insert("has_nan".to_owned(), Json::Bool(false));
            }
            Some((obj.clone(), var))
        });
        for which in ["train", "test"] {
            items.push(part.clone().map(|(obj, var)| {
                interp.derived(Some(&obj), var, format!("{} ({which} part)", obj.label))
            }));
        }
    }
    Some(Value::Seq {
        items,
        of: Sequence::List,
    })
}

/// SK007: a class with a single member cannot be stratified.
fn stratify_check(interp: &mut Interp, labels: &Obj, args: &Args, line: u32) {
    let samples = match labels.kind() {
        Kind::Series | Kind::Ndarray => rows(&labels.var),
        _ => None,
    };
    let classes = labels.var.n_unique().filter(|_| labels.exact_v());
    let (Some(samples), Some(classes)) = (samples, classes) else {
        return;
    };
    if classes * 2 > samples && classes > 0 {
        interp.report(
            RuleCode::StratifySingletonClass,
            line,
            format!(
                "Stratified split on `{}`: {classes} classes among {samples} samples, so some class has a single member.",
                labels.label
            ),
            vec![format!("{}: {samples} values, {classes} unique", labels.label)],
        );
        return;
    }
    let test_size = args
        .keyword_value("test_size")
        .and_then(|v| match v.constant()? {
            Constant::Float(f) if f > 0.0 && f < 1.0 => Some((f * samples as f64).ceil() as u64),
            Constant::Int(n) if n > 0 => Some(n as u64),
            _ => None,
        });
    if let Some(test_count) = test_size {
        if test_count < classes {
            interp.report(
                RuleCode::StratifySingletonClass,
                line,
                format!(
                    "Stratified split on `{}`: the test set of {test_count} samples cannot hold all {classes} classes.",
                    labels.label
                ),
                vec![format!("{}: {samples} values, {classes} unique", labels.label)],
            );
        }
    }
}

/// SK006: `LabelEncoder.transform` on known values outside `classes_`.
fn label_encoder_transform(interp: &mut Interp, encoder: &Obj, args: &Args) {
    let Some(classes) = encoder.var.classes() else {
        return;
    };
    if encoder
        .var
        .n_classes()
        .is_some_and(|n| n as usize != classes.len())
        || !encoder.exact_v()
    {
        return;
    }
    let Some(values) = args.value(0, "y") else {
        return;
    };
    let known: Vec<Json> = match values.constant() {
        Some(Constant::List(items)) | Some(Constant::Tuple(items)) => {
            items.iter().map(constant_json).collect()
        }
        _ => return,
    };
    let unseen: Vec<String> = known
        .iter()
        .filter(|value| !classes.contains(value))
        .map(|value| value.to_string())
        .collect();
    if unseen.is_empty() {
        return;
    }
    let seen: Vec<String> = classes.iter().map(|c| c.to_string()).collect();
    interp.report(
        RuleCode::UnseenLabels,
        args.line,
        format!(
            "`{}.transform`: labels {} were not seen at fit.",
            encoder.label,
            name_list(&unseen)
        ),
        vec![format!("{} classes: {}", encoder.label, name_list(&seen))],
    );
}
