//! How long a cell's Keras training takes, predicted from its syntax and the runtime facts of
//! the model and data it reads, so that a brief fit is not run ahead in the replica: there it
//! costs the fit again plus rebuilding the model, to save at most the fit's own seconds.
//!
//! The prediction is an upper bound, or nothing. It covers only a cell whose one long-looking
//! shape is `model.fit(...)` calls (no loop, search or looping function), on a built model
//! whose every layer is of a kind whose work per sample is bounded by its parameters and its
//! output (dense stacks, embeddings, normalisation, pooling, dropout), on arrays of known
//! length, with only cheap callbacks. A step of `b` samples then does at most
//! `3 · b · (2 · params + 10 · activations)` floating-point operations (forward, and a backward
//! pass twice as dear); the bound takes 1 GFLOP/s, a slow processor's rate, and 20 ms of
//! per-step overhead, above Keras's own on a processor even when run eagerly for small models.

use std::collections::BTreeSet;
use std::time::Duration;

use crane_analysis::ParsedCell;
use crane_runtime::{Kind, RuntimeInfo, Variable};
use ruff_python_ast::{Expr, ExprCall, Number};

use crate::abridge::{long_shape, LongShape};

/// The floating-point rate the bound assumes.
const FLOPS_PER_SECOND: f64 = 1e9;
/// What a training or evaluation step costs beyond its arithmetic, at most.
const STEP_OVERHEAD: Duration = Duration::from_millis(20);
/// The batch size `fit` uses when none is given.
const DEFAULT_BATCH_SIZE: u64 = 32;

/// Layers whose work per sample is at most a few operations per parameter and per output
/// value (no convolution, recurrence or attention, whose work grows with what they slide over).
const BOUNDED_LAYERS: &[&str] = &[
    "InputLayer",
    "Dense",
    "Dropout",
    "Activation",
    "Flatten",
    "Reshape",
    "BatchNormalization",
    "LayerNormalization",
    "Normalization",
    "Rescaling",
    "Embedding",
    "GlobalAveragePooling1D",
    "GlobalAveragePooling2D",
    "GlobalMaxPooling1D",
    "GlobalMaxPooling2D",
];

/// Keras's own callbacks that only read the epoch's logs and set a flag or a rate (a subclass
/// the notebook defines may do anything).
const CHEAP_CALLBACKS: &[&str] = &[
    "EarlyStopping",
    "ReduceLROnPlateau",
    "TerminateOnNaN",
    "History",
    "ProgbarLogger",
];

/// Keywords of `fit` the bound understands; any other (`steps_per_epoch`, a generator's
/// settings) leaves the time unknown.
const KNOWN_KEYWORDS: &[&str] = &[
    "x",
    "y",
    "epochs",
    "batch_size",
    "verbose",
    "validation_split",
    "validation_data",
    "shuffle",
    "callbacks",
    "class_weight",
    "sample_weight",
    "initial_epoch",
];

/// An upper bound on the time of a cell's training, when it is all Keras fits that can be
/// bounded (see the module documentation); `None` when the cell is anything else or a fact the
/// bound needs is missing.
pub fn training_time_bound(
    cell: &ParsedCell,
    looping: &BTreeSet<String>,
    runtime: &RuntimeInfo,
) -> Option<Duration> {
    let module = cell.plain_python()?;
    let LongShape::FitsOnly(fits) = long_shape(&module.body, looping) else {
        return None;
    };
    fits.iter()
        .map(|fit| fit_bound(fit, runtime))
        .sum::<Option<Duration>>()
}

fn fit_bound(call: &ExprCall, runtime: &RuntimeInfo) -> Option<Duration> {
    let Expr::Attribute(method) = call.func.as_ref() else {
        return None;
    };
    let model = variable(runtime, &method.value)?;
    if model.kind != Kind::KerasModel {
        return None;
    }
    let per_sample = work_per_sample(model)?;
    if call.arguments.args.len() > 2
        || call
            .arguments
            .args
            .iter()
            .chain(call.arguments.keywords.iter().map(|keyword| &keyword.value))
            .any(|argument| matches!(argument, Expr::Starred(_)))
    {
        return None;
    }
    let keyword = |name: &str| {
        call.arguments
            .keywords
            .iter()
            .find(|keyword| keyword.arg.as_ref().is_some_and(|arg| arg == name))
            .map(|keyword| &keyword.value)
    };
    if call.arguments.keywords.iter().any(|keyword| {
        keyword
            .arg
            .as_ref()
            .is_none_or(|arg| !KNOWN_KEYWORDS.contains(&arg.as_str()))
    }) {
        return None;
    }
    let x = call.arguments.args.first().or_else(|| keyword("x"))?;
    let samples = rows(variable(runtime, x)?)?;
    let epochs = match keyword("epochs") {
        Some(epochs) => integer(epochs)?,
        None => 1,
    };
    let batch = match keyword("batch_size") {
        Some(Expr::NoneLiteral(_)) | None => DEFAULT_BATCH_SIZE,
        Some(batch) => integer(batch)?.max(1),
    };
    let validation = match keyword("validation_data") {
        None | Some(Expr::NoneLiteral(_)) => 0,
        Some(Expr::Tuple(data)) => rows(variable(runtime, data.elts.first()?)?)?,
        Some(_) => return None,
    };
    if let Some(callbacks) = keyword("callbacks") {
        let Expr::List(callbacks) = callbacks else {
            return None;
        };
        for callback in &callbacks.elts {
            let (module, class) = variable(runtime, callback)?.type_name.rsplit_once('.')?;
            let library = ["keras.", "tf_keras.", "tensorflow."]
                .iter()
                .any(|prefix| module.starts_with(prefix));
            if !library || !CHEAP_CALLBACKS.contains(&class) {
                return None;
            }
        }
    }
    let step = |samples_per_step: u64, passes: f64| {
        STEP_OVERHEAD.as_secs_f64()
            + passes * samples_per_step as f64 * per_sample / FLOPS_PER_SECOND
    };
    let epoch = samples.div_ceil(batch) as f64 * step(batch, 3.0)
        + validation.div_ceil(batch) as f64 * step(batch, 1.0);
    Duration::try_from_secs_f64(epoch * epochs as f64).ok()
}

/// Floating-point operations of one sample's forward pass through `model`, at most.
fn work_per_sample(model: &Variable) -> Option<f64> {
    if model.s.contains_key("layers_truncated") {
        return None;
    }
    let params = model.s.get("n_params")?.as_u64()?;
    let mut activations = 0u64;
    for layer in model.s.get("layers")?.as_array()? {
        let class = layer.get("type")?.as_str()?.rsplit('.').next()?;
        if !BOUNDED_LAYERS.contains(&class) {
            return None;
        }
        let shape = layer.get("output_shape")?.as_array()?;
        let mut size = 1u64;
        for dimension in shape.iter().skip(1) {
            size = size.checked_mul(dimension.as_u64()?)?;
        }
        activations = activations.checked_add(size)?;
    }
    Some(2.0 * params as f64 + 10.0 * activations as f64)
}

/// The facts of the name (or attribute chain) `expr`.
fn variable<'r>(runtime: &'r RuntimeInfo, expr: &Expr) -> Option<&'r Variable> {
    let key = match expr {
        Expr::Name(name) => name.id.to_string(),
        Expr::Attribute(attribute) => {
            let Expr::Name(base) = attribute.value.as_ref() else {
                return None;
            };
            format!("{}.{}", base.id, attribute.attr)
        }
        _ => return None,
    };
    runtime.variables.get(&key)
}

/// The number of samples in an array or frame: the first of its shape.
fn rows(data: &Variable) -> Option<u64> {
    if !matches!(data.kind, Kind::Ndarray | Kind::Dataframe | Kind::Tensor) {
        return None;
    }
    data.shape()?.first().copied().flatten()
}

fn integer(expr: &Expr) -> Option<u64> {
    match expr {
        Expr::NumberLiteral(literal) => match &literal.value {
            Number::Int(value) => value.as_u64(),
            _ => None,
        },
        _ => None,
    }
}
