//! The library models: what pandas, numpy, scikit-learn, torch, Keras, matplotlib, seaborn and
//! statsmodels objects and functions do, described by runtime facts and by the contract tables
//! (`crate::rules::contracts`), with the rules that prove a broken contract. [`Libraries`] is
//! the core's [`Library`]: it dispatches by the kind of the object or the qualified name of the
//! function.

pub(crate) mod attributes;
mod domains;
pub(crate) mod facts;
mod keras;
mod keys;
mod numpy;
mod objects;
pub(crate) mod pandas;
mod plots;
mod signatures;
mod sklearn;
mod torch;

use crane_analysis::Constant;
use crane_runtime::{Kind, Variable};
use ruff_python_ast::{CmpOp, Expr, Operator, UnaryOp};

use crate::rules::core::interp::{Args, Effect, Interp};
use crate::rules::core::value::{Obj, Sequence, Value};
use crate::rules::core::Library;

/// The models of every library crane knows, as the interpreter's [`Library`].
pub(crate) struct Libraries;

impl Library for Libraries {
    fn function(&self, interp: &mut Interp, name: &str, args: &Args) -> Effect {
        function(interp, name, args)
    }

    fn method(&self, interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Effect {
        method(interp, obj, name, args)
    }

    fn value_method(&self, interp: &mut Interp, value: &Value, name: &str, args: &Args) -> Effect {
        value_method(interp, value, name, args)
    }

    fn mutates_container(&self, value: &Value, name: &str) -> bool {
        mutates_container(value, name)
    }

    fn call_object(&self, interp: &mut Interp, obj: &Obj, args: &Args) -> Effect {
        call_object(interp, obj, args)
    }

    fn check_call(
        &self,
        interp: &mut Interp,
        func: &Expr,
        receiver: Option<&Value>,
        callee: Option<&Value>,
        args: &Args,
    ) {
        signatures::check(interp, func, receiver, callee, args);
    }

    fn attribute(
        &self,
        interp: &mut Interp,
        obj: &Obj,
        attr: &str,
        line: u32,
        called: bool,
        present: bool,
    ) -> Option<Value> {
        attribute(interp, obj, attr, line, called, present)
    }

    fn absent_attribute(
        &self,
        interp: &mut Interp,
        base: &Value,
        attr: &str,
        facts: &Variable,
        line: u32,
    ) {
        objects::absent_attribute(interp, base, attr, facts, line);
    }

    fn subscript(
        &self,
        interp: &mut Interp,
        base: &Value,
        slice: &Expr,
        key: Option<Value>,
        line: u32,
    ) -> Option<Value> {
        subscript(interp, base, slice, key, line)
    }

    fn absent_subscript(
        &self,
        interp: &mut Interp,
        base: &Value,
        slice: &Expr,
        facts: &Variable,
        line: u32,
    ) {
        absent_subscript(interp, base, slice, facts, line);
    }

    fn store_subscript(
        &self,
        interp: &mut Interp,
        base: &Value,
        slice: &Expr,
        key: Option<Value>,
        value: Option<Value>,
        line: u32,
    ) {
        store_subscript(interp, base, slice, key, value, line);
    }

    fn delete_subscript(&self, interp: &mut Interp, base: &Value, slice: &Expr, line: u32) {
        delete_subscript(interp, base, slice, line);
    }

    fn binary(
        &self,
        interp: &mut Interp,
        op: Operator,
        left: Option<Value>,
        right: Option<Value>,
        line: u32,
    ) -> Option<Value> {
        binary(interp, op, left, right, line)
    }

    fn unary(&self, _interp: &mut Interp, op: UnaryOp, operand: Option<Value>) -> Option<Value> {
        unary(op, operand)
    }

    fn compare(
        &self,
        interp: &mut Interp,
        ops: &[CmpOp],
        operands: &[Option<Value>],
    ) -> Option<Value> {
        compare(interp, ops, operands)
    }

    fn iteration_items(&self, value: &Value) -> Option<Vec<Option<Value>>> {
        iteration_items(value)
    }

    fn first_item(&self, _interp: &mut Interp, value: &Value) -> Option<Option<Value>> {
        first_item(value)
    }

    fn loop_index(&self, value: &Value) -> Option<(i64, i64, bool)> {
        loop_index(value)
    }

    fn unpack(
        &self,
        _interp: &mut Interp,
        value: &Value,
        count: usize,
    ) -> Option<Vec<Option<Value>>> {
        unpack(value, count)
    }

    fn column_count(&self, value: &Value) -> Option<usize> {
        let frame = value.obj()?;
        if frame.kind() != Kind::Dataframe {
            return None;
        }
        Some(facts::known_columns(&frame.var)?.len())
    }

    fn is_module_base(&self, qualified_name: &str) -> bool {
        matches!(
            qualified_name,
            "torch.nn.Module" | "torch.nn.modules.module.Module"
        )
    }
}

/// What the cells' code says about how libraries are set up: some library registers methods or
/// accessors on pandas objects (`tqdm.pandas()`, pandarallel), scikit-learn may output frames.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Extensions {
    pub extends_pandas: bool,
    pub frames_from_transformers: bool,
}

impl Extensions {
    pub(crate) fn of(source: &str) -> Extensions {
        Extensions {
            extends_pandas: attributes::PANDAS_EXTENDING_MODULES
                .iter()
                .any(|module| source.contains(module)),
            frames_from_transformers: source.contains("set_output")
                || source.contains("transform_output"),
        }
    }

    /// What these and the cell `source` say together.
    pub(crate) fn and(self, source: &str) -> Extensions {
        let other = Extensions::of(source);
        Extensions {
            extends_pandas: self.extends_pandas || other.extends_pandas,
            frames_from_transformers: self.frames_from_transformers
                || other.frames_from_transformers,
        }
    }
}

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
fn value_method(_interp: &mut Interp, value: &Value, name: &str, args: &Args) -> Effect {
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

/// What an attribute of a data object is, from the object's own facts. `present`: the runtime
/// facts show the attribute exists (no missing-attribute rule may fire).
pub(crate) fn attribute(
    interp: &mut Interp,
    obj: &Obj,
    attr: &str,
    line: u32,
    called: bool,
    present: bool,
) -> Option<Value> {
    match obj.kind() {
        Kind::Dataframe | Kind::Series | Kind::Categorical => {
            pandas::attribute(interp, obj, attr, line, called, present)
        }
        Kind::Ndarray => numpy::attribute(interp, obj, attr, line, present),
        Kind::Estimator => {
            sklearn::attribute(interp, obj, attr, line, present);
            None
        }
        Kind::Tensor => match attr {
            "shape" => numpy::shape_value(&obj.var),
            _ => None,
        },
        _ => None,
    }
}

pub(crate) fn subscript(
    interp: &mut Interp,
    base: &Value,
    slice: &Expr,
    key: Option<Value>,
    line: u32,
) -> Option<Value> {
    let sequence = match base {
        Value::Object(obj) => matches!(obj.kind(), Kind::List | Kind::Tuple | Kind::Str),
        Value::Seq { of, .. } => *of != Sequence::Labels,
        Value::Const(Constant::Str(_)) => true,
        _ => false,
    };
    if sequence {
        if let Some(Value::Object(index)) = &key {
            let index = index.clone();
            if numpy::array_as_sequence_index(interp, base, &index, slice, line) {
                return None;
            }
        }
    }
    match base {
        Value::Object(obj) => match obj.kind() {
            Kind::Dataframe | Kind::Groupby => pandas::subscript(interp, obj, slice, key, line),
            Kind::Ndarray => numpy::subscript(interp, obj, slice, key.as_ref(), line),
            Kind::Dict => {
                if let Some(constant) = key.as_ref().and_then(Value::constant) {
                    let obj = obj.clone();
                    objects::dict_key(interp, &obj, &constant, line);
                }
                None
            }
            _ => None,
        },
        Value::Indexer(obj, indexer) => {
            pandas::indexer_subscript(interp, obj, *indexer, slice, line)
        }
        Value::Seq { items, of } => match key? {
            Value::Slice { lower, upper, step } => {
                let positions = crate::rules::core::python::slice_positions(
                    i64::try_from(items.len()).ok()?,
                    lower,
                    upper,
                    step,
                )?;
                Some(Value::Seq {
                    items: positions
                        .into_iter()
                        .map(|p| items[p as usize].clone())
                        .collect(),
                    of: *of,
                })
            }
            key => {
                let index = key.int()?;
                let len = items.len() as i64;
                let index = if index < 0 { index + len } else { index };
                items.get(usize::try_from(index).ok()?).cloned().flatten()
            }
        },
        Value::Const(constant) => match key? {
            Value::Slice { lower, upper, step } => {
                crate::rules::core::python::slice(constant, lower, upper, step)
                    .map(Value::from_python)
            }
            key => {
                crate::rules::core::python::index(constant, &key.python()?).map(Value::from_python)
            }
        },
        Value::Dict(items) => {
            // The last entry with an equal key wins, as in a dict display.
            let key = key?.python()?;
            if !crate::rules::core::python::hashable(&key) {
                return None;
            }
            let mut found = None;
            for (candidate, value) in items {
                if crate::rules::core::python::equal(&candidate.as_ref()?.python()?, &key)? {
                    found = Some(value.clone());
                }
            }
            found.flatten()
        }
        _ => None,
    }
}

/// The items iterating a value yields, when how many is known (each item may be unknown);
/// bounded, so a long sequence is not expanded.
pub(crate) fn iteration_items(value: &Value) -> Option<Vec<Option<Value>>> {
    const LIMIT: usize = 1_000;
    let items: Vec<Option<Value>> = match value {
        Value::Seq { items, .. } => items.clone(),
        Value::Const(constant) => crate::rules::core::python::items(constant)?
            .into_iter()
            .map(|item| Some(Value::Const(item)))
            .collect(),
        Value::Object(obj) if obj.kind() == Kind::Range => {
            let len = usize::try_from(obj.var.len()?).ok()?;
            let start = obj.var.v.get("start")?.as_i64()?;
            if len > LIMIT {
                return None;
            }
            (0..len as i64)
                .map(|offset| Some(Value::Const(Constant::Int(start + offset))))
                .collect()
        }
        _ => return None,
    };
    (items.len() <= LIMIT).then_some(items)
}

/// A subscript the runtime facts record as absent.
pub(crate) fn absent_subscript(
    interp: &mut Interp,
    base: &Value,
    slice: &Expr,
    facts: &Variable,
    line: u32,
) {
    match base {
        Value::Object(obj) if obj.kind() == Kind::Dict => {
            let obj = obj.clone();
            if let Some(key) = crate::rules::core::cell::constant(slice) {
                objects::dict_key(interp, &obj, &key, line);
            }
        }
        _ => pandas::absent_key(interp, base, facts, line),
    }
}

pub(crate) fn store_subscript(
    interp: &mut Interp,
    base: &Value,
    _slice: &Expr,
    key: Option<Value>,
    value: Option<Value>,
    _line: u32,
) {
    let Value::Object(obj) = base else {
        if let Value::Indexer(obj, _) = base {
            let obj = (**obj).clone();
            interp.forget(&obj);
        }
        return;
    };
    let obj = obj.clone();
    if pandas::store_column(interp, &obj, key, value.as_ref()) {
        return;
    }
    if obj.kind() == Kind::Ndarray {
        // Element assignment keeps the shape; the values are no longer known.
        let mut var = (*obj.var).clone();
        var.v.clear();
        interp.replace_object(&obj, var, obj.label.clone());
        return;
    }
    interp.forget(&obj);
}

pub(crate) fn delete_subscript(interp: &mut Interp, base: &Value, slice: &Expr, line: u32) {
    let Value::Object(obj) = base else {
        return;
    };
    let obj = obj.clone();
    if !pandas::delete_column(interp, &obj, slice, line) {
        interp.forget(&obj);
    }
}

pub(crate) fn binary(
    interp: &mut Interp,
    op: Operator,
    left: Option<Value>,
    right: Option<Value>,
    line: u32,
) -> Option<Value> {
    let (left, right) = (left?, right?);
    // A loop index shifted by a constant still takes every value of its range.
    if let (Value::Ints { low, high }, Some(shift)) = (&left, right.int()) {
        let shift = match op {
            Operator::Add => Some(shift),
            Operator::Sub => shift.checked_neg(),
            _ => None,
        };
        return shift.and_then(|shift| {
            Some(Value::Ints {
                low: low.checked_add(shift)?,
                high: high.checked_add(shift)?,
            })
        });
    }
    if let (Some(shift), Value::Ints { low, high }, Operator::Add) = (left.int(), &right, op) {
        return Some(Value::Ints {
            low: low.checked_add(shift)?,
            high: high.checked_add(shift)?,
        });
    }
    if let (Value::Object(l), Value::Object(r)) = (&left, &right) {
        if l.kind() == Kind::Tensor && r.kind() == Kind::Tensor {
            let (l, r) = (l.clone(), r.clone());
            torch::binary(interp, &l, &r, line);
            return None;
        }
    }
    if left.kind() == Some(Kind::Ndarray) || right.kind() == Some(Kind::Ndarray) {
        return numpy::binary(interp, op, &left, &right, line);
    }
    crate::rules::core::python::binary(op, &left.python()?, &right.python()?)
        .map(Value::from_python)
}

fn unary(op: UnaryOp, operand: Option<Value>) -> Option<Value> {
    let operand = operand?;
    if let Some(constant) = operand.python() {
        return crate::rules::core::python::unary(op, &constant).map(Value::from_python);
    }
    match op {
        UnaryOp::Not => operand.truth().map(|t| Value::Const(Constant::Bool(!t))),
        _ => None,
    }
}

/// Comparisons: a series compared with something is a boolean mask of the same length.
pub(crate) fn compare(
    interp: &mut Interp,
    ops: &[CmpOp],
    operands: &[Option<Value>],
) -> Option<Value> {
    if ops.len() != 1 || matches!(ops[0], CmpOp::In | CmpOp::NotIn | CmpOp::Is | CmpOp::IsNot) {
        return None;
    }
    let series = operands
        .iter()
        .flatten()
        .find_map(|v| v.obj().filter(|o| o.kind() == Kind::Series))?
        .clone();
    let mut mask = Variable::new("pandas.core.series.Series", Kind::Series);
    if let Some(shape) = series.var.s.get("shape") {
        mask.s.insert("shape".to_owned(), shape.clone());
    }
    mask.r.insert("dtype".to_owned(), serde_json::json!("bool"));
    Some(interp.derived(Some(&series), mask, "a boolean mask"))
}

/// Whether iterating the value yields at least one item, and the first item when known.
fn first_item(value: &Value) -> Option<Option<Value>> {
    if let Some(obj) = value.obj() {
        if obj.var.type_name == "builtins.enumerate" {
            return (length_of(value)? > 0).then_some(None);
        }
    }
    match value {
        Value::Seq { items, .. } => items.first().cloned(),
        Value::Const(Constant::List(items) | Constant::Tuple(items)) => {
            items.first().map(|c| Some(Value::Const(c.clone())))
        }
        Value::Const(Constant::Str(text)) => text
            .chars()
            .next()
            .map(|c| Some(Value::Const(Constant::Str(c.to_string())))),
        Value::Object(obj) => {
            let len = match obj.kind() {
                Kind::Range => {
                    let len = obj.var.len()?;
                    let start = obj.var.v.get("start").and_then(|s| s.as_i64());
                    return (len > 0).then(|| start.map(|s| Value::Const(Constant::Int(s))));
                }
                Kind::Dataframe => {
                    return facts::known_columns(&obj.var).and_then(|c| c.first().map(|_| None))
                }
                Kind::List | Kind::Tuple | Kind::Dict | Kind::Set => obj.var.len(),
                Kind::Ndarray | Kind::Series | Kind::Tensor => facts::rows(&obj.var),
                Kind::Dataloader => obj.var.n_batches().or_else(|| obj.var.len()),
                _ => None,
            }?;
            (len > 0).then_some(None)
        }
        _ => None,
    }
}

/// The items of a value unpacked into `count` targets, when known.
fn unpack(value: &Value, count: usize) -> Option<Vec<Option<Value>>> {
    match value {
        Value::Seq { items, .. } if items.len() == count => Some(items.clone()),
        Value::Const(Constant::List(items) | Constant::Tuple(items)) if items.len() == count => {
            Some(
                items
                    .iter()
                    .map(|c| Some(Value::Const(c.clone())))
                    .collect(),
            )
        }
        _ => None,
    }
}

/// How many items iterating the value yields, when known (a frame yields its column names).
pub(crate) fn length_of(value: &Value) -> Option<u64> {
    match value {
        Value::Seq { items, .. } => Some(items.len() as u64),
        Value::Const(Constant::List(items) | Constant::Tuple(items)) => Some(items.len() as u64),
        Value::Const(Constant::Str(text)) => Some(text.chars().count() as u64),
        Value::Object(obj) => match obj.kind() {
            Kind::Dataframe => facts::known_columns(&obj.var).map(|c| c.len() as u64),
            Kind::Series | Kind::Ndarray | Kind::Tensor => facts::rows(&obj.var),
            Kind::List
            | Kind::Tuple
            | Kind::Dict
            | Kind::Str
            | Kind::Set
            | Kind::Range
            | Kind::Index => obj.var.len(),
            Kind::Dataloader => obj.var.n_batches().or_else(|| obj.var.len()),
            Kind::Other if obj.var.type_name == "builtins.enumerate" => obj.var.len(),
            _ => None,
        },
        _ => None,
    }
}

/// The integers a loop index takes over every pass of `for target in value`, for `range(...)`
/// and `enumerate(...)`: `(low, high, enumerate)`.
pub(crate) fn loop_index(value: &Value) -> Option<(i64, i64, bool)> {
    let obj = value.obj()?;
    let enumerate = match (obj.kind(), obj.var.type_name.as_str()) {
        (Kind::Range, _) => false,
        (Kind::Other, "builtins.enumerate") => true,
        _ => return None,
    };
    let length = i64::try_from(obj.var.len()?).ok()?;
    let start = obj.var.v.get("start")?.as_i64()?;
    (length > 0).then(|| (start, start + length - 1, enumerate))
}
