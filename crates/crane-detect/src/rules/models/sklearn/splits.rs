//! `train_test_split` and label encoding: the split's parts and their rows (SK009 for splitting
//! zero rows), SK007 for a stratified split the classes do not allow (a one-member class, a test
//! set smaller than the classes), and SK006 for labels a `LabelEncoder` did not see when it was
//! fitted.

use crane_analysis::Constant;
use crane_runtime::Kind;
use serde_json::{json, Value as Json};

use super::constant_json;
use super::inputs::consistent_samples;
use crate::rules::core::interp::{Args, Interp};
use crate::rules::core::value::{name_list, Obj, Sequence, Value};
use crate::rules::models::facts::rows;
use crate::rules::RuleCode;

/// SK007 and SK009 for `train_test_split`, and the split parts (columns kept, rows unknown).
pub(super) fn train_test_split(interp: &mut Interp, args: &Args) -> Option<Value> {
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
pub(super) fn label_encoder_transform(interp: &mut Interp, encoder: &Obj, args: &Args) {
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
