//! Keras: KS001-KS004, and Sequential models built in the cell.

use crane_analysis::Constant;
use crane_runtime::{Kind, Variable};
use serde_json::{json, Value as Json};

use super::facts::shape_text;
use crate::rules::contracts::{
    self,
    keras::{Labels, STRICT_RANK_LAYERS},
};
use crate::rules::core::interp::{Args, Effect, Interp};
use crate::rules::core::value::{Obj, Value};
use crate::rules::RuleCode;

fn is_keras(name: &str) -> Option<&str> {
    let rest = name
        .strip_prefix("tensorflow.keras.")
        .or_else(|| name.strip_prefix("tensorflow.python.keras."))
        .or_else(|| name.strip_prefix("keras."))?;
    rest.rsplit('.').next()
}

/// Layers and Sequential models made in the cell.
pub(crate) fn function(interp: &mut Interp, name: &str, args: &Args) -> Option<Effect> {
    let class = is_keras(name)?;
    let var = match class {
        "Sequential" => {
            let mut model =
                Variable::new("keras.src.models.sequential.Sequential", Kind::KerasModel);
            model.v.insert("compiled".to_owned(), json!(false));
            model.r.insert("built_in_cell".to_owned(), json!(true));
            match args.value(0, "layers") {
                Some(Value::Seq { items, .. }) => {
                    let layers: Option<Vec<&Obj>> =
                        items.iter().map(|l| l.as_ref()?.obj()).collect();
                    match layers {
                        Some(layers) => {
                            for layer in layers {
                                add_layer(&mut model, layer);
                            }
                        }
                        None => {
                            model.r.insert("layers_unknown".to_owned(), json!(true));
                        }
                    }
                }
                None if args.positional.is_empty() && !args.star => {}
                _ => {
                    model.r.insert("layers_unknown".to_owned(), json!(true));
                }
            }
            Some(model)
        }
        _ if class.starts_with(|c: char| c.is_ascii_uppercase()) && name.contains(".layers.")
            || class == "Input" =>
        {
            let mut layer = Variable::new(format!("keras.layers.{class}"), Kind::KerasLayer);
            layer.r.insert("layer".to_owned(), json!(class));
            if class == "Dense" {
                if let Some(units) = args.value(0, "units").and_then(Value::int) {
                    layer.s.insert("units".to_owned(), json!(units));
                }
                if let Some(activation) = args.value(1, "activation").and_then(Value::str) {
                    layer.r.insert("activation".to_owned(), json!(activation));
                }
            }
            let input = if class == "Input" || class == "InputLayer" {
                args.value(0, "shape")
                    .or_else(|| args.keyword_value("input_shape"))
            } else {
                args.keyword_value("input_shape")
            };
            let input = input.and_then(Value::constant).and_then(|c| match c {
                Constant::Tuple(items) | Constant::List(items) => items
                    .iter()
                    .map(|i| match i {
                        Constant::Int(n) => Some(json!(n)),
                        Constant::None => Some(Json::Null),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>(),
                Constant::Int(n) => Some(vec![json!(n)]),
                _ => None,
            });
            if let Some(mut input) = input {
                input.insert(0, Json::Null);
                layer.s.insert("input_shape".to_owned(), Json::Array(input));
            } else if let Some(dim) = args.keyword_value("input_dim").and_then(Value::int) {
                layer.s.insert("input_shape".to_owned(), json!([null, dim]));
            }
            Some(layer)
        }
        _ => None,
    };
    Some(Effect::Pure(var.map(|var| {
        interp.derived(None, var, format!("{class}(...)"))
    })))
}

fn add_layer(model: &mut Variable, layer: &Obj) {
    let first = !model.r.contains_key("layer_count");
    let count = model
        .r
        .get("layer_count")
        .and_then(Json::as_u64)
        .unwrap_or(0);
    model.r.insert("layer_count".to_owned(), json!(count + 1));
    let kind = layer
        .var
        .r
        .get("layer")
        .and_then(Json::as_str)
        .unwrap_or_default();
    if first {
        if let Some(input) = layer.var.s.get("input_shape") {
            model.s.insert("input_shape".to_owned(), input.clone());
        }
        model
            .s
            .insert("first_layer".to_owned(), json!({"type": kind}));
    }
    let last = json!({
        "type": kind,
        "units": layer.var.s.get("units").cloned().unwrap_or(Json::Null),
    });
    model.s.insert("last_layer".to_owned(), last);
    if let Some(activation) = layer.var.r.get("activation") {
        model
            .r
            .insert("last_activation".to_owned(), activation.clone());
    } else {
        model.r.remove("last_activation");
    }
}

pub(crate) fn method(interp: &mut Interp, model: &Obj, name: &str, args: &Args) -> Effect {
    let line = args.line;
    match name {
        "add" => {
            let layer = args
                .value(0, "layer")
                .and_then(Value::obj)
                .filter(|l| l.kind() == Kind::KerasLayer);
            let mut var = (*model.var).clone();
            match layer {
                Some(layer) if model.var.r.get("built_in_cell").is_some() => {
                    add_layer(&mut var, layer)
                }
                _ => {
                    return Effect::ForgetReceiver(None);
                }
            }
            Effect::Replace {
                receiver: Box::new(var),
                label: model.label.clone(),
                result: None,
            }
        }
        "compile" => {
            let mut var = (*model.var).clone();
            var.v.insert("compiled".to_owned(), json!(true));
            // Compiling drops the step functions traced before.
            var.r.remove("traced");
            match args.value(1, "loss").and_then(Value::str) {
                Some(loss) => {
                    var.r.insert("loss".to_owned(), json!(loss));
                }
                None => {
                    var.r.remove("loss");
                }
            }
            Effect::Replace {
                receiver: Box::new(var),
                label: model.label.clone(),
                result: None,
            }
        }
        "fit" | "evaluate" | "predict" | "train_on_batch" | "test_on_batch" => {
            if matches!(
                name,
                "fit" | "evaluate" | "train_on_batch" | "test_on_batch"
            ) && model.var.v.get("compiled").and_then(Json::as_bool) == Some(false)
                && model.var.r.get("layers_unknown").is_none()
            {
                // Keras 3 raises ValueError, Keras 2 RuntimeError: the class of the kernel's
                // model tells which (a model built in the cell does not).
                let exception = match model.var.type_name.as_str() {
                    _ if model.var.r.contains_key("built_in_cell") => None,
                    type_name if type_name.contains(".src.models.") => Some("ValueError"),
                    type_name if type_name.contains(".engine.") => Some("RuntimeError"),
                    _ => None,
                };
                if let Some(exception) = exception {
                    interp.report_raising(
                        RuleCode::KerasNotCompiled,
                        exception,
                        line,
                        format!(
                            "`{}.{name}` on a model that was never compiled.",
                            model.label
                        ),
                        vec![
                            format!("{}: compiled = false", model.label),
                            format!("{}: {}", model.label, model.var.type_name),
                        ],
                    );
                }
                return Effect::ForgetReceiver(None);
            }
            let x = args.value(0, "x").and_then(Value::obj).cloned();
            if let Some(x) = &x {
                input_shape(interp, model, x, line, name);
            }
            if matches!(name, "fit" | "evaluate") {
                if let (Some(x), Some(y)) = (&x, args.value(1, "y").and_then(Value::obj)) {
                    let y = y.clone();
                    sample_counts(interp, model, x, &y, line, name);
                }
            }
            if matches!(
                name,
                "fit" | "evaluate" | "train_on_batch" | "test_on_batch"
            ) {
                let labels = labels_width(x.as_ref(), args.value(1, "y"));
                if let Some((width, source)) = labels {
                    output_units(interp, model, width, &source, line);
                }
            }
            // Training changes weights, not the structure, loss or compiled state; TensorFlow
            // keeps the step functions the call traced.
            let mut steps = vec![step_of(name)];
            let validates = ["validation_data", "validation_split"].iter().any(|key| {
                args.keyword_value(key).is_some_and(|value| {
                    // A literal that turns validation off: None, 0, 0.0, False.
                    !matches!(
                        value.constant(),
                        Some(Constant::None | Constant::Int(0) | Constant::Bool(false))
                    ) && !matches!(value.constant(), Some(Constant::Float(split)) if split == 0.0)
                })
            });
            if name == "fit" && validates {
                steps.push("test");
            }
            let traced = traced_steps(&model.var);
            if steps.iter().all(|step| traced.contains(step)) {
                return Effect::Pure(None);
            }
            let mut var = (*model.var).clone();
            let mut all: Vec<&str> = traced;
            all.extend(steps);
            all.sort_unstable();
            all.dedup();
            var.r.insert("traced".to_owned(), json!(all));
            Effect::Replace {
                receiver: Box::new(var),
                label: model.label.clone(),
                result: None,
            }
        }
        "summary" | "get_config" | "count_params" | "get_weights" | "save" | "save_weights"
        | "to_json" | "get_layer" | "predict_on_batch" | "plot_model" => Effect::Pure(None),
        _ => Effect::ForgetReceiver(None),
    }
}

/// The step function a method runs: `fit` trains, `evaluate` tests, `predict` predicts.
fn step_of(method: &str) -> &'static str {
    match method {
        "fit" | "train_on_batch" => "train",
        "evaluate" | "test_on_batch" => "test",
        _ => "predict",
    }
}

/// The step functions TensorFlow traced for the model: the probe's `traced` for a kernel's
/// model, and those the cell's calls traced.
fn traced_steps(model: &Variable) -> Vec<&str> {
    model
        .r
        .get("traced")
        .and_then(Json::as_array)
        .map(|steps| steps.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default()
}

/// Whether the model runs on TensorFlow: the probe says so of a kernel's Keras 3 model; one
/// built in the cell does in a kernel that has imported TensorFlow (Keras 3's default backend).
fn on_tensorflow(interp: &Interp, model: &Obj) -> bool {
    match model.var.r.get("backend").and_then(Json::as_str) {
        Some(backend) => backend == "tensorflow",
        None => {
            model.var.r.contains_key("built_in_cell")
                && interp.runtime.libraries.contains_key("tensorflow")
        }
    }
}

/// KS001: the data's feature (last) dimension against the model's input shape. Keras checks
/// it when TensorFlow first traces the step the call runs (`ValueError`); once that step was
/// traced for inputs of the model's width, a call with another retraces it with the last
/// dimension relaxed, Keras' check passes, and TensorFlow's kernel refuses the product
/// (`InvalidArgumentError`, "Matrix size-incompatible").
fn input_shape(interp: &mut Interp, model: &Obj, x: &Obj, line: u32, method: &str) {
    let Some(expected) = model.var.input_shape() else {
        return;
    };
    let actual: Vec<Option<u64>> = match x.kind() {
        Kind::Ndarray | Kind::TfTensor | Kind::Tensor => match x.var.shape() {
            Some(shape) => shape,
            None => return,
        },
        Kind::Dataframe => match x.var.shape() {
            Some(shape) => shape,
            None => return,
        },
        Kind::KerasIterator => match x.var.image_shape() {
            Some(image) => std::iter::once(None).chain(image).collect(),
            None => return,
        },
        _ => return,
    };
    let first = model
        .var
        .s
        .get("first_layer")
        .and_then(|l| l.get("type"))
        .and_then(Json::as_str)
        .unwrap_or_default();
    // Recurrent and convolution layers need inputs of exactly their rank.
    let strict_rank = STRICT_RANK_LAYERS.contains(&first);
    if strict_rank && expected.len() != actual.len() && actual.len() >= 2 {
        interp.report(
            RuleCode::KerasInputShape,
            line,
            format!(
                "`{}.{method}({})`: the model's first layer ({first}) expects {}-D inputs of shape {}, the data is {}-D with shape {}.",
                model.label,
                x.label,
                expected.len(),
                shape_text(&expected),
                actual.len(),
                shape_text(&actual)
            ),
            vec![
                format!("{} input_shape: {}", model.label, shape_text(&expected)),
                format!("{} shape: {}", x.label, shape_text(&actual)),
            ],
        );
        return;
    }
    let (Some(Some(want)), Some(Some(got))) = (expected.last(), actual.last()) else {
        return;
    };
    if want == got || expected.len() < 2 || actual.len() < 2 {
        return;
    }
    let step = step_of(method);
    let retraced = on_tensorflow(interp, model) && traced_steps(&model.var).contains(&step);
    let (exception, how) = if retraced {
        (
            "InvalidArgumentError",
            format!(" TensorFlow traced the model's {step} step for its own width before, so it retraces it with that dimension relaxed and its kernel refuses the product."),
        )
    } else {
        ("ValueError", String::new())
    };
    interp.report_raising(
        RuleCode::KerasInputShape,
        exception,
        line,
        format!(
            "`{}.{method}({})`: the model expects inputs of shape {}, the data has shape {} (last dimension {got}, not {want}).{how}",
            model.label,
            x.label,
            shape_text(&expected),
            shape_text(&actual)
        ),
        vec![
            format!("{} input_shape: {}", model.label, shape_text(&expected)),
            format!("{} shape: {}", x.label, shape_text(&actual)),
        ],
    );
}

/// The width of the labels (one-hot columns), and where it comes from.
fn labels_width(x: Option<&Obj>, y: Option<&Value>) -> Option<(u64, String)> {
    if let Some(iterator) = x.filter(|x| x.kind() == Kind::KerasIterator) {
        let mode = iterator.var.r.get("class_mode").and_then(Json::as_str)?;
        if mode != "categorical" {
            return None;
        }
        let classes = iterator.var.n_classes()?;
        return Some((
            classes,
            format!(
                "{} yields one-hot labels of {classes} classes",
                iterator.label
            ),
        ));
    }
    let y = y?.obj()?;
    match y.var.shape()?.as_slice() {
        [_, Some(width)] => Some((
            *width,
            format!("{} shape: {}", y.label, shape_text(&y.var.shape()?)),
        )),
        _ => None,
    }
}

/// KS002: the last layer's units against the labels under the compiled loss.
fn output_units(interp: &mut Interp, model: &Obj, width: u64, source: &str, line: u32) {
    let Some(last) = model.var.s.get("last_layer").and_then(Json::as_object) else {
        return;
    };
    if last.get("type").and_then(Json::as_str) != Some("Dense") {
        return;
    }
    let Some(units) = last.get("units").and_then(Json::as_u64) else {
        return;
    };
    let Some(loss) = model.var.r.get("loss").and_then(Json::as_str) else {
        return;
    };
    let Some(contract) = contracts::keras::loss(loss) else {
        return;
    };
    let loss = loss.to_ascii_lowercase();
    let fails = match contract.labels {
        Labels::SparseIndices => width > 1,
        Labels::OneHot => width != units,
        Labels::Elementwise => width != units && width != 1 && units != 1,
    };
    if !fails {
        return;
    }
    interp.report(
        RuleCode::KerasOutputUnits,
        line,
        format!(
            "`{}` ends in Dense({units}) with loss {loss}, but the labels have width {width}.",
            model.label
        ),
        vec![
            format!("contract {}", contract.id),
            format!("{} last layer: Dense({units}), loss: {loss}", model.label),
            source.to_owned(),
        ],
    );
}

/// KS004: inputs and labels must have one row per sample.
fn sample_counts(interp: &mut Interp, model: &Obj, x: &Obj, y: &Obj, line: u32, method: &str) {
    let counted = |obj: &Obj| match obj.kind() {
        Kind::Ndarray | Kind::Dataframe | Kind::Series | Kind::TfTensor => {
            super::facts::rows(&obj.var)
        }
        _ => None,
    };
    let (Some(inputs), Some(labels)) = (counted(x), counted(y)) else {
        return;
    };
    if inputs == labels {
        return;
    }
    interp.report(
        RuleCode::KerasSampleMismatch,
        line,
        format!(
            "`{}.{method}({}, {})`: {inputs} input samples but {labels} labels.",
            model.label, x.label, y.label
        ),
        vec![
            format!("{} rows: {inputs}", x.label),
            format!("{} rows: {labels}", y.label),
        ],
    );
}
