//! The data an estimator is given: SK002/SK003 for features that differ from the fit's in count
//! or names, SK004 for NaN an estimator rejects, SK005 for non-numeric values, SK008 for more
//! components than samples or features, SK009 for empty input, SK010 for one-dimensional X, and
//! SK011 for arrays whose numbers of samples differ. Kept together because they are the input
//! checks of one contract table (`INPUT_CHECKS`).

use crane_runtime::{Kind, Variable};
use serde_json::Value as Json;

use super::{class_name, feature_names, input_checks, is_one_dimensional, param, width};
use crate::rules::contracts::sklearn::COMPOSITE;
use crate::rules::core::interp::Interp;
use crate::rules::core::value::{name_list, Obj, Value};
use crate::rules::models::facts::{columns_ordered, known_columns, rows};
use crate::rules::RuleCode;

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
pub(super) fn check_features(
    interp: &mut Interp,
    estimator: &Obj,
    x: &Value,
    line: u32,
    method: &str,
) {
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
pub(super) fn check_input(
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
                        obj.var.shape().map_or("1-D".to_owned(), |s| {
                            crate::rules::models::facts::shape_text(&s)
                        })
                    )],
                );
                return;
            }
        }
    }
    check_nan(interp, estimator, class, x, role, line, method);
}

pub(super) fn check_nan(
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
pub(super) fn check_strings(
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
        Kind::Series | Kind::Ndarray
            if crate::rules::models::pandas::holds_only_strings(&obj.var) =>
        {
            obj.var
                .examples()
                .and_then(|examples| non_numeric_example(&Json::Array(examples.clone())))
                .map(|text| (obj.label.clone(), text))
        }
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
        let text = crate::rules::models::pandas::seen_text(example)?;
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
pub(super) fn check_sizes(interp: &mut Interp, estimator: &Obj, class: &str, x: &Value, line: u32) {
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
                obj.var.shape().map_or("?".to_owned(), |s| crate::rules::models::facts::shape_text(&s))
            )],
        );
    }
}
