//! torch: TO001-TO007, modules applied to tensors, and tensors made in the cell.

use crane_analysis::Constant;
use crane_runtime::{Kind, Variable};
use serde_json::{json, Value as Json};

use super::facts::shape_text;
use crate::rules::contracts::torch::{Layer, Loss, Target, LAYERS, LOSSES};
use crate::rules::core::interp::{Args, Effect, Interp};
use crate::rules::core::value::{Obj, Value};
use crate::rules::RuleCode;

/// Module types whose first child is the first layer applied to the input.
const SEQUENTIAL: &str = "torch.nn.modules.container.Sequential";

fn first_layer(module: &Obj) -> Option<serde_json::Map<String, Json>> {
    let own = module.var.type_name.rsplit('.').next().unwrap_or_default();
    if matches!(own, "Linear" | "Conv1d" | "Conv2d" | "Conv3d")
        && module.var.type_name.starts_with("torch.nn.")
    {
        let mut layer = serde_json::Map::new();
        layer.insert("type".to_owned(), json!(own));
        for key in ["in_features", "in_channels"] {
            if let Some(value) = module.var.s.get(key).or_else(|| module.var.r.get(key)) {
                layer.insert(key.to_owned(), value.clone());
            }
        }
        if let Some(first) = module.var.s.get("first_layer").and_then(Json::as_object) {
            for (key, value) in first {
                layer.entry(key.clone()).or_insert(value.clone());
            }
        }
        return Some(layer);
    }
    if module.var.type_name != SEQUENTIAL {
        return None;
    }
    module.var.s.get("first_layer")?.as_object().cloned()
}

fn is_integer_dtype(dtype: &str) -> bool {
    let dtype = dtype.trim_start_matches("torch.");
    matches!(
        dtype,
        "int64" | "long" | "int32" | "int" | "int16" | "short" | "int8" | "uint8" | "bool"
    )
}

/// `module(x)`: TO001, TO002, TO003, TO004.
pub(crate) fn call_module(interp: &mut Interp, module: &Obj, args: &Args) -> Effect {
    let line = args.line;
    let Some(input) = args
        .positional
        .first()
        .and_then(|a| a.value.as_ref())
        .and_then(Value::obj)
        .cloned()
    else {
        return Effect::Unknown;
    };
    if input.kind() != Kind::Tensor {
        return Effect::Pure(None);
    }
    if let (Some(module_device), Some(input_device)) = (module.var.device(), input.var.device()) {
        if device_kind(module_device) != device_kind(input_device) {
            interp.report(
                RuleCode::DeviceMismatch,
                line,
                format!(
                    "`{}` is on {module_device} but its input `{}` is on {input_device}.",
                    module.label, input.label
                ),
                vec![
                    format!("{} device: {module_device}", module.label),
                    format!("{} device: {input_device}", input.label),
                ],
            );
            return Effect::Pure(None);
        }
    }
    if let Some(loss) = loss_contract(module) {
        loss_target(interp, module, loss, &input, args);
        return Effect::Pure(None);
    }
    if layer_input(interp, module, &input, line) {
        return Effect::Pure(None);
    }
    let Some(layer) = first_layer(module) else {
        return Effect::Pure(None);
    };
    let layer_type = layer
        .get("type")
        .and_then(Json::as_str)
        .unwrap_or_default()
        .rsplit('.')
        .next()
        .unwrap_or_default()
        .to_owned();
    if let Some(dtype) = input.var.dtype() {
        if is_integer_dtype(dtype)
            && matches!(
                layer_type.as_str(),
                "Linear" | "Conv1d" | "Conv2d" | "Conv3d"
            )
        {
            interp.report(
                RuleCode::DtypeMismatch,
                line,
                format!(
                    "`{}` feeds {dtype} values into a {layer_type} layer, which computes in floating point.",
                    input.label
                ),
                vec![format!("{} dtype: {dtype}", input.label), format!("{} first layer: {layer_type}", module.label)],
            );
            return Effect::Pure(None);
        }
    }
    let Some(shape) = input.var.shape() else {
        return Effect::Pure(None);
    };
    // The facts name the first layer with shape parameters: a Flatten or pooling before it
    // would be skipped, so a Linear is judged only on 2-D input (which a Flatten keeps).
    let own_linear = module.var.type_name.ends_with(".Linear");
    match layer_type.as_str() {
        "Linear" if own_linear || shape.len() == 2 => {
            let (Some(expected), Some(Some(actual))) = (
                layer.get("in_features").and_then(Json::as_u64),
                shape.last(),
            ) else {
                return Effect::Pure(None);
            };
            if expected != *actual {
                interp.report(
                    RuleCode::LinearInFeatures,
                    line,
                    format!(
                        "`{}` starts with Linear(in_features={expected}), but the input `{}` has last dimension {actual}.",
                        module.label, input.label
                    ),
                    vec![
                        format!("{} first layer: Linear(in_features={expected})", module.label),
                        format!("{} shape: {}", input.label, shape_text(&shape)),
                    ],
                );
            }
        }
        "Conv1d" | "Conv2d" | "Conv3d" => {
            let spatial = match layer_type.as_str() {
                "Conv1d" => 1,
                "Conv2d" => 2,
                _ => 3,
            };
            let channel_axis = if shape.len() == spatial + 2 {
                1
            } else if shape.len() == spatial + 1 {
                0
            } else {
                return Effect::Pure(None);
            };
            let (Some(expected), Some(Some(actual))) = (
                layer.get("in_channels").and_then(Json::as_u64),
                shape.get(channel_axis),
            ) else {
                return Effect::Pure(None);
            };
            if expected != *actual {
                interp.report(
                    RuleCode::ConvInChannels,
                    line,
                    format!(
                        "`{}` starts with {layer_type}(in_channels={expected}), but the input `{}` has {actual} channels (dimension {channel_axis}).",
                        module.label, input.label
                    ),
                    vec![
                        format!("{} first layer: {layer_type}(in_channels={expected})", module.label),
                        format!("{} shape: {}", input.label, shape_text(&shape)),
                    ],
                );
            }
        }
        _ => {}
    }
    Effect::Pure(None)
}

/// The class name of a module of torch's own (`torch.nn.modules.loss.MSELoss` -> `MSELoss`).
fn torch_class(module: &Obj) -> Option<&str> {
    let name = module.var.type_name.strip_prefix("torch.nn.")?;
    name.rsplit('.').next()
}

fn loss_contract(module: &Obj) -> Option<&'static Loss> {
    let class = torch_class(module)?;
    LOSSES.iter().find(|loss| loss.class == class)
}

/// The full shape of a tensor, when every dimension is known.
fn known_shape(obj: &Obj) -> Option<Vec<u64>> {
    obj.var.shape()?.into_iter().collect()
}

fn broadcasts(a: &[u64], b: &[u64]) -> bool {
    a.iter()
        .rev()
        .zip(b.iter().rev())
        .all(|(x, y)| x == y || *x == 1 || *y == 1)
}

/// TO005: `loss(input, target)` against the loss's contract.
fn loss_target(interp: &mut Interp, module: &Obj, loss: &Loss, input: &Obj, args: &Args) {
    let Some(target) = args
        .positional
        .get(1)
        .and_then(|a| a.value.as_ref())
        .and_then(Value::obj)
        .filter(|target| target.kind() == Kind::Tensor)
        .cloned()
    else {
        return;
    };
    let (Some(input_shape), Some(target_shape)) = (known_shape(input), known_shape(&target)) else {
        return;
    };
    let Some(target_dtype) = target
        .var
        .dtype()
        .map(|d| d.trim_start_matches("torch.").to_owned())
    else {
        return;
    };
    let floating = target_dtype.starts_with("float")
        || matches!(target_dtype.as_str(), "half" | "double" | "bfloat16");
    let integer = is_integer_dtype(&target_dtype);
    let violation: Option<(&str, String)> = match loss.target {
        Target::ClassIndices { .. } if input_shape.len() == 2 => {
            let batch = input_shape[0];
            match target_shape.as_slice() {
                [n] if *n != batch && (integer && (target_dtype == "int64" || target_dtype == "uint8")) => Some((
                    "ValueError",
                    format!("the input's batch size is {batch} but the target's is {n}"),
                )),
                [n] if *n == batch && (floating || (integer && target_dtype != "int64" && target_dtype != "uint8")) => Some((
                    "RuntimeError",
                    format!("class indices must be int64 (Long), but the target is {target_dtype}"),
                )),
                [_, _] if integer => Some((
                    "RuntimeError",
                    format!(
                        "an integer target must hold one class index per sample (1-D), but it has shape {}",
                        shape_text(&target.var.shape().unwrap_or_default())
                    ),
                )),
                _ => None,
            }
        }
        Target::ClassIndices { .. } => None,
        Target::SameShape if input_shape != target_shape => Some((
            "ValueError",
            format!(
                "the target's shape {} differs from the input's {}",
                shape_text(&target.var.shape().unwrap_or_default()),
                shape_text(&input.var.shape().unwrap_or_default())
            ),
        )),
        Target::SameShape if integer => Some((
            "RuntimeError",
            format!("the target must be floating point, but it is {target_dtype}"),
        )),
        Target::SameShape => None,
        Target::Broadcast if !broadcasts(&input_shape, &target_shape) => Some((
            "RuntimeError",
            format!(
                "the shapes {} and {} do not broadcast",
                shape_text(&input.var.shape().unwrap_or_default()),
                shape_text(&target.var.shape().unwrap_or_default())
            ),
        )),
        Target::Broadcast => None,
    };
    let Some((exception, why)) = violation else {
        return;
    };
    interp.report_raising(
        RuleCode::LossTargetMismatch,
        exception,
        args.line,
        format!(
            "`{}({}, {})`: {why}.",
            module.label, input.label, target.label
        ),
        vec![
            format!("contract {}", loss.id),
            format!(
                "{} shape: {}; {} shape: {}, dtype {target_dtype}",
                input.label,
                shape_text(&input.var.shape().unwrap_or_default()),
                target.label,
                shape_text(&target.var.shape().unwrap_or_default())
            ),
        ],
    );
}

/// The layer a module applies first to its input, with its constructor facts: the module
/// itself when it is one of torch's layers, or the first leaf of a `Sequential`.
fn applied_layer(module: &Obj) -> Option<(&'static Layer, serde_json::Map<String, Json>)> {
    let facts = if module.var.type_name == SEQUENTIAL {
        module
            .var
            .s
            .get("layers")?
            .as_array()?
            .first()?
            .as_object()?
            .clone()
    } else {
        torch_class(module)?;
        module.var.s.get("layer")?.as_object()?.clone()
    };
    let class = facts.get("type")?.as_str()?.rsplit('.').next()?.to_owned();
    let layer = LAYERS.iter().find(|layer| layer.class == class)?;
    Some((layer, facts))
}

/// A layer of the contract table built in the cell (`nn.BatchNorm1d(3)`, `nn.LSTM(10, 4)`), with
/// the constructor fact its contract reads when the argument is a constant.
fn contract_layer(function: &str, args: &Args) -> Option<Variable> {
    let class = function.strip_prefix("nn.")?;
    let layer = LAYERS.iter().find(|layer| layer.class == class)?;
    let mut facts = serde_json::Map::new();
    facts.insert("type".to_owned(), json!(class));
    if let Some((fact, _)) = layer.features {
        if let Some(value) = args.value(0, fact).and_then(Value::int) {
            facts.insert(fact.to_owned(), json!(value));
        }
    }
    let mut var = Variable::new(format!("torch.nn.modules.{class}"), Kind::TorchModule);
    var.s.insert("layer".to_owned(), Json::Object(facts));
    var.r.insert("device".to_owned(), json!("cpu"));
    Some(var)
}

/// TO006: a layer applied to a tensor of a rank, feature size or dtype it does not take.
/// Whether it reported.
fn layer_input(interp: &mut Interp, module: &Obj, input: &Obj, line: u32) -> bool {
    let Some((layer, facts)) = applied_layer(module) else {
        return false;
    };
    let Some(shape) = input.var.shape() else {
        return false;
    };
    let dtype = input
        .var
        .dtype()
        .map(|d| d.trim_start_matches("torch.").to_owned());
    let violation: Option<(&str, String)> = if layer.integer_input
        && dtype
            .as_deref()
            .is_some_and(|d| !matches!(d, "int64" | "int32" | "long" | "int"))
    {
        Some((
            "RuntimeError",
            format!(
                "{} takes integer indices (Long or Int), but `{}` is {}",
                layer.class,
                input.label,
                dtype.unwrap_or_default()
            ),
        ))
    } else if !layer.ranks.is_empty() && !layer.ranks.contains(&shape.len()) {
        let ranks: Vec<String> = layer.ranks.iter().map(|r| format!("{r}-D")).collect();
        Some((
            layer.rank_exception,
            format!(
                "{} takes {} input, but `{}` is {}-D",
                layer.class,
                ranks.join(" or "),
                input.label,
                shape.len()
            ),
        ))
    } else if let Some((fact, dim)) = layer.features {
        let index = if dim < 0 {
            shape.len().checked_sub(dim.unsigned_abs())
        } else {
            Some(dim.unsigned_abs())
        };
        match (facts.get(fact).and_then(Json::as_u64), index.and_then(|i| shape.get(i)).copied().flatten()) {
            (Some(expected), Some(actual)) if expected != actual => Some((
                "RuntimeError",
                format!(
                    "{}({fact}={expected}) is applied to `{}` whose size at dimension {dim} is {actual}",
                    layer.class, input.label
                ),
            )),
            _ => None,
        }
    } else {
        None
    };
    let Some((exception, why)) = violation else {
        return false;
    };
    interp.report_raising(
        RuleCode::LayerInputMismatch,
        exception,
        line,
        format!("`{}({})`: {why}.", module.label, input.label),
        vec![
            format!("contract {}", layer.id),
            format!("{} shape: {}", input.label, shape_text(&shape)),
        ],
    );
    true
}

fn device_kind(device: &str) -> &str {
    match device {
        "cuda" => "cuda:0",
        other => other,
    }
}

/// TO003 for element-wise operations and products between tensors.
pub(crate) fn binary(interp: &mut Interp, left: &Obj, right: &Obj, line: u32) {
    let (Some(a), Some(b)) = (left.var.device(), right.var.device()) else {
        return;
    };
    let scalar = |obj: &Obj| obj.var.shape().is_some_and(|s| s.is_empty());
    if device_kind(a) == device_kind(b) || scalar(left) || scalar(right) {
        return;
    }
    interp.report(
        RuleCode::DeviceMismatch,
        line,
        format!(
            "`{}` is on {a} and `{}` on {b}: one operation cannot mix devices.",
            left.label, right.label
        ),
        vec![
            format!("{} device: {a}", left.label),
            format!("{} device: {b}", right.label),
        ],
    );
}

/// The integers a shape method is given: `view(2, -1)`, `view((2, -1))`, `view([2, -1])`.
fn wanted_dims(args: &Args) -> Option<Vec<i64>> {
    if args.star || !args.keywords.is_empty() {
        return None;
    }
    match args.positional.as_slice() {
        [single] => match single.value.as_ref()? {
            Value::Seq { items, .. } => items.iter().map(|i| i.as_ref()?.int()).collect(),
            other => Some(vec![other.int()?]),
        },
        many => many.iter().map(|a| a.value.as_ref()?.int()).collect(),
    }
}

fn with_shape(var: &Variable, shape: &[Option<u64>]) -> Variable {
    let mut var = var.clone();
    var.s.insert(
        "shape".to_owned(),
        Json::Array(
            shape
                .iter()
                .map(|d| d.map_or(Json::Null, |d| json!(d)))
                .collect(),
        ),
    );
    var.s.remove("ndim");
    var.s.remove("size");
    var.s.remove("len");
    var
}

/// `view`/`reshape` (TO007), `unsqueeze`, `flatten`, `size`: what the tensor's shape becomes.
/// `view` of a size that fits may still fail on a tensor that is not contiguous, so only its
/// failure is known.
fn shape_method(interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Option<Effect> {
    if obj.kind() != Kind::Tensor {
        return None;
    }
    let shape = obj.var.shape()?;
    match name {
        "view" | "reshape" => {
            let wanted = wanted_dims(args)?;
            let full: Vec<u64> = shape.iter().copied().collect::<Option<_>>()?;
            match super::numpy::reshaped(&full, &wanted) {
                Ok(Some(new)) if name == "reshape" => {
                    let new: Vec<Option<u64>> = new.into_iter().map(Some).collect();
                    let var = with_shape(&obj.var, &new);
                    Some(Effect::Pure(Some(interp.derived(
                        Some(obj),
                        var,
                        format!("{}.{name}(...)", obj.label),
                    ))))
                }
                Ok(_) => Some(Effect::Pure(None)),
                Err(why) => {
                    let wanted_text: Vec<String> = wanted.iter().map(i64::to_string).collect();
                    interp.report(
                        RuleCode::ViewSizeMismatch,
                        args.line,
                        format!(
                            "`{}.{name}({})`: the tensor of shape {} cannot take that shape: {why}.",
                            obj.label,
                            wanted_text.join(", "),
                            shape_text(&shape)
                        ),
                        vec![format!("{} shape: {}", obj.label, shape_text(&shape))],
                    );
                    Some(Effect::Pure(None))
                }
            }
        }
        "unsqueeze" => {
            let dim = match args.positional.as_slice() {
                [dim] if args.keywords.is_empty() && !args.star => dim.value.as_ref()?.int()?,
                _ => return None,
            };
            let rank = shape.len() as i64 + 1;
            if dim < -rank || dim >= rank {
                return None;
            }
            let at = if dim < 0 { dim + rank } else { dim } as usize;
            let mut new = shape.clone();
            new.insert(at, Some(1));
            let var = with_shape(&obj.var, &new);
            Some(Effect::Pure(Some(interp.derived(
                Some(obj),
                var,
                format!("{}.unsqueeze({dim})", obj.label),
            ))))
        }
        "flatten" if args.positional.is_empty() && args.keywords.is_empty() && !args.star => {
            let size = shape
                .iter()
                .copied()
                .try_fold(1u64, |acc, d| Some(acc * d?));
            let var = with_shape(&obj.var, &[size]);
            Some(Effect::Pure(Some(interp.derived(
                Some(obj),
                var,
                format!("{}.flatten()", obj.label),
            ))))
        }
        "size" if args.keywords.is_empty() && !args.star => match args.positional.as_slice() {
            [] => Some(Effect::Pure(Some(Value::Seq {
                items: shape
                    .iter()
                    .map(|d| d.map(|d| Value::Const(Constant::Int(d as i64))))
                    .collect(),
                of: crate::rules::core::value::Sequence::Tuple,
            }))),
            [dim] => {
                let dim = dim.value.as_ref()?.int()?;
                let rank = shape.len() as i64;
                if dim < -rank || dim >= rank {
                    return None;
                }
                let at = if dim < 0 { dim + rank } else { dim } as usize;
                let size = shape[at]?;
                Some(Effect::Pure(Some(Value::Const(Constant::Int(size as i64)))))
            }
            _ => None,
        },
        _ => None,
    }
}

pub(crate) fn tensor_method(interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Effect {
    if let Some(effect) = shape_method(interp, obj, name, args) {
        return effect;
    }
    let converted = |dtype: &str| {
        let mut var = (*obj.var).clone();
        var.r.insert("dtype".to_owned(), json!(dtype));
        var
    };
    let var = match name {
        "cuda" => Some(with_device(&obj.var, "cuda:0")),
        "cpu" => Some(with_device(&obj.var, "cpu")),
        "to" => match args
            .positional
            .first()
            .and_then(|a| a.value.as_ref())
            .and_then(Value::str)
        {
            Some(device) if device.starts_with("cuda") || device == "cpu" => {
                Some(with_device(&obj.var, &device))
            }
            _ => None,
        },
        "float" => Some(converted("torch.float32")),
        "double" => Some(converted("torch.float64")),
        "long" => Some(converted("torch.int64")),
        "int" => Some(converted("torch.int32")),
        "half" => Some(converted("torch.float16")),
        _ => None,
    };
    match (obj.kind(), var) {
        (Kind::TorchModule, Some(var)) if matches!(name, "cuda" | "cpu" | "to") => {
            Effect::Replace {
                receiver: Box::new(var),
                label: obj.label.clone(),
                result: None,
            }
        }
        (Kind::TorchModule, _) => Effect::ForgetReceiver(None),
        (_, Some(var)) => Effect::Pure(Some(interp.derived(
            Some(obj),
            var,
            format!("{}.{name}(...)", obj.label),
        ))),
        (_, None)
            if matches!(
                name,
                "add_"
                    | "mul_"
                    | "sub_"
                    | "div_"
                    | "zero_"
                    | "fill_"
                    | "requires_grad_"
                    | "resize_"
            ) =>
        {
            Effect::ForgetReceiver(None)
        }
        _ => Effect::Pure(None),
    }
}

fn with_device(var: &Variable, device: &str) -> Variable {
    let mut var = var.clone();
    var.r.insert("device".to_owned(), json!(device));
    var
}

/// Tensors and layers made in the cell: `torch.randn(32, 10)`, `nn.Linear(10, 2)`.
pub(crate) fn function(interp: &mut Interp, name: &str, args: &Args) -> Option<Effect> {
    let function = name.strip_prefix("torch.")?;
    let dims = || -> Option<Vec<Option<u64>>> {
        if args.star {
            return None;
        }
        // The shape is given as integers, one sequence, or the keyword `size`.
        let single = match args.positional.as_slice() {
            [] => Some(args.keyword_value("size")?),
            [single] => Some(single.value.as_ref()?),
            _ => None,
        };
        match (single, args.positional.as_slice()) {
            (Some(single), _) => match single.constant()? {
                Constant::Int(n) if n >= 0 => Some(vec![Some(n as u64)]),
                Constant::Tuple(items) | Constant::List(items) => items
                    .iter()
                    .map(|i| match i {
                        Constant::Int(n) if *n >= 0 => Some(Some(*n as u64)),
                        _ => None,
                    })
                    .collect(),
                _ => None,
            },
            (None, many) => many
                .iter()
                .map(|a| {
                    a.value
                        .as_ref()?
                        .int()
                        .filter(|n| *n >= 0)
                        .map(|n| Some(n as u64))
                })
                .collect(),
        }
    };
    let layer = |kind: &str, first: &str, value: Option<i64>| -> Option<Variable> {
        let value = value?;
        let mut var = Variable::new(
            format!(
                "torch.nn.modules.{}.{kind}",
                if kind == "Linear" { "linear" } else { "conv" }
            ),
            Kind::TorchModule,
        );
        var.s.insert(
            "first_layer".to_owned(),
            json!({"type": kind, first: value}),
        );
        var.s
            .insert("layer".to_owned(), json!({"type": kind, first: value}));
        var.r.insert("device".to_owned(), json!("cpu"));
        Some(var)
    };
    let var = match function {
        "randn" | "rand" | "zeros" | "ones" | "empty" => dims().map(|shape| {
            let mut var = super::facts::array(&shape, Some("torch.float32"));
            var.type_name = "torch.Tensor".to_owned();
            var.kind = Kind::Tensor;
            let device = args
                .keyword_value("device")
                .and_then(Value::str)
                .unwrap_or_else(|| "cpu".to_owned());
            var.r.insert("device".to_owned(), json!(device));
            if let Some(dtype) = args.keyword("dtype").map(|a| interp.cell.text(a.expr)) {
                var.r.insert(
                    "dtype".to_owned(),
                    json!(dtype
                        .replace("torch.long", "torch.int64")
                        .replace("torch.float", "torch.float32")
                        .replace("torch.float3232", "torch.float32")),
                );
            }
            var
        }),
        "nn.Linear" => layer(
            "Linear",
            "in_features",
            args.value(0, "in_features").and_then(Value::int),
        ),
        "nn.Conv1d" | "nn.Conv2d" | "nn.Conv3d" => layer(
            &function[3..],
            "in_channels",
            args.value(0, "in_channels").and_then(Value::int),
        ),
        "nn.Sequential" => {
            let first = args
                .positional
                .first()
                .and_then(|a| a.value.as_ref())
                .and_then(Value::obj);
            first
                .filter(|f| f.kind() == Kind::TorchModule)
                .map(|first| {
                    let mut var = Variable::new(SEQUENTIAL, Kind::TorchModule);
                    if let Some(layer) = first_layer(first) {
                        var.s.insert("first_layer".to_owned(), Json::Object(layer));
                    }
                    // The first leaf, as the probe lists a Sequential's layers.
                    if let Some(own) = first.var.s.get("layer") {
                        var.s
                            .insert("layers".to_owned(), Json::Array(vec![own.clone()]));
                    }
                    var.r.insert("device".to_owned(), json!("cpu"));
                    var
                })
        }
        _ => contract_layer(function, args),
    };
    Some(Effect::Pure(var.map(|var| {
        interp.derived(None, var, format!("torch.{function}(...)"))
    })))
}
