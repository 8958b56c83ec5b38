//! Calls, dispatched to the library that owns them: a function by its qualified name (builtins
//! evaluated by Python's rules first, then each library's model, then library roots known to
//! keep their arguments' structure), a method by its receiver's kind or on a plain value (`str`
//! methods computed, list and dict methods that change their container), and a call of a data
//! object itself (a torch module).

use crane_analysis::Constant;
use crane_runtime::{Kind, Variable};

use super::iteration::length_of;
use super::{domains, facts, keras, numpy, pandas, plots, sklearn, torch};
use crate::rules::core::interp::{Args, Effect, Interp};
use crate::rules::core::value::{Obj, Sequence, Value};

/// Library roots whose functions never change their arguments' structure.
const LIBRARIES: &[&str] = &[
    "numpy",
    "pandas",
    "sklearn",
    "scipy",
    "matplotlib",
    "seaborn",
    "statsmodels",
    "torch",
    "torchvision",
    "tensorflow",
    "keras",
    "math",
    "os",
    "sys",
    "re",
    "json",
    "time",
    "datetime",
    "collections",
    "itertools",
    "functools",
    "pathlib",
    "warnings",
    "PIL",
    "cv2",
    "xgboost",
    "lightgbm",
    "catboost",
    "plotly",
    "tqdm",
    "IPython",
    "nltk",
    "transformers",
    "string",
    "random",
    "glob",
    "pickle",
    "joblib",
    "shutil",
    "builtins",
    "missingno",
    "wordcloud",
    "sklearn_pandas",
    "imblearn",
    "optuna",
    "statistics",
    "csv",
    "copy",
    "operator",
];

pub(crate) fn function(interp: &mut Interp, name: &str, args: &Args) -> Effect {
    if let Some(effect) = builtin(interp, name, args) {
        return effect;
    }
    domains::function(interp, name, args);
    let dispatched = pandas::function(interp, name, args)
        .or_else(|| numpy::function(interp, name, args))
        .or_else(|| sklearn::function(interp, name, args))
        .or_else(|| plots::function(interp, name, args))
        .or_else(|| keras::function(interp, name, args))
        .or_else(|| torch::function(interp, name, args));
    if let Some(effect) = dispatched {
        return effect;
    }
    let root = name.split('.').next().unwrap_or_default();
    if LIBRARIES.contains(&root) {
        // Library functions keep the structure of data objects, but may reorder or fill a
        // Python list or dict they are given (`random.shuffle`).
        let unknown = args
            .positional
            .iter()
            .chain(args.keywords.iter().map(|(_, arg)| arg))
            .any(|arg| arg.value.is_none());
        if args.star || unknown || args.values().any(crate::rules::core::interp::holds_mutable) {
            interp.forget_mutable();
        }
        Effect::Pure(None)
    } else {
        Effect::Unknown
    }
}

/// Builtins whose result on known plain values is computed by Python's semantics.
const EVALUATED_BUILTINS: &[&str] = &[
    "len", "abs", "bool", "str", "repr", "int", "float", "list", "tuple", "min", "max", "sum",
    "sorted", "round", "divmod",
];

fn builtin(interp: &mut Interp, name: &str, args: &Args) -> Option<Effect> {
    let function = name.strip_prefix("builtins.")?;
    if EVALUATED_BUILTINS.contains(&function) && !args.star && args.keywords.is_empty() {
        let known = args
            .positional
            .iter()
            .map(|arg| arg.value.as_ref()?.python())
            .collect::<Option<Vec<_>>>();
        if let Some(known) = known {
            if let Some(result) = crate::rules::core::python::builtin(function, &known) {
                return Some(Effect::Pure(Some(Value::from_python(result))));
            }
            if let Some(exception) = crate::rules::core::python::builtin_raises(function, &known) {
                interp.raises(Some(exception));
                return Some(Effect::Pure(None));
            }
        }
    }
    Some(match function {
        "len" => {
            let length = args
                .positional
                .first()
                .and_then(|a| a.value.as_ref())
                .and_then(|v| match v {
                    Value::Object(obj) if obj.kind() == Kind::Dataframe => facts::rows(&obj.var),
                    other => length_of(other),
                });
            Effect::Pure(length.map(|n| Value::Const(Constant::Int(n as i64))))
        }
        "list" | "tuple" => match args.positional.first().and_then(|a| a.value.clone()) {
            Some(Value::Seq { items, .. }) => Effect::Pure(Some(Value::Seq {
                items,
                of: if function == "tuple" {
                    Sequence::Tuple
                } else {
                    Sequence::List
                },
            })),
            _ => Effect::Pure(None),
        },
        "range" => {
            let count = match args.positional.as_slice() {
                [stop] => stop.value.as_ref().and_then(Value::int),
                [start, stop] => start
                    .value
                    .as_ref()
                    .and_then(Value::int)
                    .zip(stop.value.as_ref().and_then(Value::int))
                    .map(|(a, b)| b - a),
                _ => None,
            };
            let start = match args.positional.as_slice() {
                [_, ..] if args.positional.len() >= 2 => {
                    args.positional[0].value.as_ref().and_then(Value::int)
                }
                _ => Some(0),
            };
            Effect::Pure(count.zip(start).map(|(count, start)| {
                let mut var = Variable::new("builtins.range", Kind::Range);
                var.s
                    .insert("len".to_owned(), serde_json::json!(count.max(0)));
                var.v.insert("start".to_owned(), serde_json::json!(start));
                interp.derived(None, var, "range(...)")
            }))
        }
        "enumerate" => {
            let length = args
                .positional
                .first()
                .and_then(|a| a.value.as_ref())
                .and_then(length_of);
            let start = match args.value(1, "start") {
                Some(value) => value.int(),
                None => Some(0),
            };
            Effect::Pure(length.zip(start).map(|(length, start)| {
                let mut var = Variable::new("builtins.enumerate", Kind::Other);
                var.s.insert("len".to_owned(), serde_json::json!(length));
                var.v.insert("start".to_owned(), serde_json::json!(start));
                interp.derived(None, var, "enumerate(...)")
            }))
        }
        "print" | "display" | "isinstance" | "type" | "str" | "repr" | "int" | "float"
        | "sorted" | "zip" | "sum" | "min" | "max" | "abs" | "round" | "set" | "dict" | "any"
        | "all" | "format" | "hasattr" | "getattr" | "id" | "hash" | "bool" | "map" | "filter"
        | "reversed" | "open" | "iter" | "next" | "input" | "help" | "dir" | "callable" => {
            Effect::Pure(None)
        }
        _ => Effect::Unknown,
    })
}

pub(crate) fn method(interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Effect {
    match obj.kind() {
        Kind::Dataframe | Kind::Series => {
            domains::frame_method(interp, obj, name, args);
            pandas::method(interp, obj, name, args)
        }
        Kind::Groupby => pandas::method(interp, obj, name, args),
        Kind::Ndarray => numpy::method(interp, obj, name, args),
        Kind::Estimator => sklearn::method(interp, obj, name, args),
        Kind::KerasModel => keras::method(interp, obj, name, args),
        Kind::Tensor | Kind::TorchModule => torch::tensor_method(interp, obj, name, args),
        Kind::Figure => {
            if name == "add_subplot" {
                plots::subplot(interp, "fig.add_subplot", args);
            }
            Effect::Pure(None)
        }
        Kind::Axes => {
            plots::xy_plot(interp, name, args);
            if name.starts_with("set_")
                || matches!(
                    name,
                    "plot"
                        | "scatter"
                        | "bar"
                        | "barh"
                        | "hist"
                        | "legend"
                        | "grid"
                        | "axis"
                        | "imshow"
                        | "text"
                        | "annotate"
                )
            {
                Effect::Pure(None)
            } else {
                Effect::ForgetReceiver(None)
            }
        }
        Kind::Str
        | Kind::Int
        | Kind::Float
        | Kind::Bool
        | Kind::NoneType
        | Kind::Function
        | Kind::Builtin
        | Kind::Method
        | Kind::Class
        | Kind::Pymodule => Effect::Pure(None),
        _ => Effect::Unknown,
    }
}

/// Methods of literals (`'a,b'.split(',')`, `cols.copy()`).
pub(super) fn value_method(_interp: &mut Interp, value: &Value, name: &str, args: &Args) -> Effect {
    match (value, name) {
        // A tuple has no `copy`; only a pandas Index has `tolist`.
        (Value::Seq { of, .. }, "copy") if *of != Sequence::Tuple => {
            Effect::Pure(Some(value.clone()))
        }
        (
            Value::Seq {
                items,
                of: Sequence::Labels,
            },
            "tolist" | "to_list",
        ) => Effect::Pure(Some(Value::Seq {
            items: items.clone(),
            of: Sequence::List,
        })),
        (Value::Const(Constant::Str(text)), _) => Effect::Pure(str_method(text, name, args)),
        (Value::Const(_) | Value::Seq { .. } | Value::Dict(_), _) => Effect::Pure(None),
        _ => Effect::Unknown,
    }
}

/// A `str` method of a constant string with known plain arguments, as Python computes it.
fn str_method(text: &str, name: &str, args: &Args) -> Option<Value> {
    if args.star || !args.keywords.is_empty() {
        return None;
    }
    let known = args
        .positional
        .iter()
        .map(|arg| arg.value.as_ref()?.python())
        .collect::<Option<Vec<_>>>()?;
    crate::rules::core::python::str_method(text, name, &known).map(Value::from_python)
}

/// Whether a list or dict method changes the container in place.
pub(crate) fn mutates_container(value: &Value, name: &str) -> bool {
    matches!(value, Value::Seq { .. } | Value::Dict(_))
        && matches!(
            name,
            "append"
                | "extend"
                | "insert"
                | "remove"
                | "pop"
                | "clear"
                | "sort"
                | "reverse"
                | "update"
                | "setdefault"
                | "popitem"
        )
}

pub(crate) fn call_object(interp: &mut Interp, obj: &Obj, args: &Args) -> Effect {
    match obj.kind() {
        Kind::TorchModule => torch::call_module(interp, obj, args),
        Kind::KerasModel => Effect::Pure(None),
        _ => Effect::Unknown,
    }
}
