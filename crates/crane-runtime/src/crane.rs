//! Adapter from CRANE-LLM's recorded runtime information (`crane_runtime_info` in the JunoBench
//! cases) to crane's vocabulary, and back to the paper's layout (for size comparisons).
//!
//! The paper keys its dict by variable name, and by `__method__<object>_<attribute>` for the
//! attributes and methods a cell uses; the latter become attribute-chain expressions
//! (`__method__plt_show` is `plt.show`).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::model::{Facts, Kind, Origin, RuntimeInfo, Section, Variable};

const METHOD_PREFIX: &str = "__method__";

/// Translate CRANE-LLM's runtime information (a JSON object keyed by variable) into crane's.
/// Anything that is not an object yields empty information.
pub fn from_crane(info: &Value) -> RuntimeInfo {
    from_crane_with_source(info, "")
}

/// Like [`from_crane`], using the source code the information was collected for (the target
/// cell) to resolve `__method__` keys whose split into object and attribute is ambiguous.
pub fn from_crane_with_source(info: &Value, source: &str) -> RuntimeInfo {
    let Some(entries) = info.as_object() else {
        return RuntimeInfo::default();
    };
    let names: BTreeSet<&str> = entries
        .keys()
        .filter(|key| !key.starts_with(METHOD_PREFIX))
        .map(String::as_str)
        .collect();
    let mut result = RuntimeInfo::default();
    for (key, entry) in entries {
        let expression = match key.strip_prefix(METHOD_PREFIX) {
            Some(mangled) => method_expression(mangled, &names, source),
            None => key.clone(),
        };
        let variable = match entry.as_object() {
            Some(entry) => adapt_variable(entry),
            None => {
                let mut variable = Variable::new("", Kind::Other);
                variable.error = Some(format!("unexpected entry {entry}"));
                variable
            }
        };
        result.variables.insert(expression, variable);
    }
    result
}

/// `X_test_shape` -> `X_test.shape`: the object is the longest prefix found as an attribute
/// chain in the source, else the longest prefix that is another variable of the same
/// information, else the part before the first underscore.
fn method_expression(mangled: &str, names: &BTreeSet<&str>, source: &str) -> String {
    let underscores: Vec<usize> = mangled
        .char_indices()
        .filter(|&(_, c)| c == '_')
        .map(|(i, _)| i)
        .collect();
    let splits: Vec<(&str, &str)> = underscores
        .iter()
        .map(|&i| (&mangled[..i], &mangled[i + 1..]))
        .filter(|(object, attribute)| is_identifier(object) && is_identifier(attribute))
        .collect();
    if !source.is_empty() && underscores.len() <= 12 {
        let mut found: Vec<String> = dotted_candidates(mangled, &underscores)
            .into_iter()
            .filter(|candidate| appears_in(source, candidate))
            .collect();
        found.sort_by_key(|candidate| {
            let root = candidate.split('.').next().unwrap_or_default();
            (
                !names.contains(root),
                std::cmp::Reverse(root.len()),
                candidate.matches('.').count(),
            )
        });
        if let Some(best) = found.into_iter().next() {
            return best;
        }
    }
    let known = splits
        .iter()
        .rev()
        .find(|(object, _)| names.contains(object));
    match known.or(splits.first()) {
        Some((object, attribute)) => format!("{object}.{attribute}"),
        None => mangled.to_owned(),
    }
}

/// Every way of turning some underscores into dots that yields an attribute chain.
fn dotted_candidates(mangled: &str, underscores: &[usize]) -> Vec<String> {
    let mut candidates = Vec::new();
    for mask in 1u32..(1 << underscores.len()) {
        let mut candidate = mangled.as_bytes().to_vec();
        for (bit, &position) in underscores.iter().enumerate() {
            if mask & (1 << bit) != 0 {
                candidate[position] = b'.';
            }
        }
        let Ok(candidate) = String::from_utf8(candidate) else {
            continue;
        };
        if candidate.split('.').all(is_identifier) {
            candidates.push(candidate);
        }
    }
    candidates
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

/// The chain occurs in the source as a whole chain (not inside a longer name).
fn appears_in(source: &str, chain: &str) -> bool {
    let is_name_char = |c: char| c == '_' || c.is_alphanumeric();
    source.match_indices(chain).any(|(start, _)| {
        let before = source[..start].chars().next_back();
        let after = source[start + chain.len()..].chars().next();
        !before.is_some_and(|c| is_name_char(c) || c == '.') && !after.is_some_and(is_name_char)
    })
}

/// Type name of a CRANE `type` string (`<class 'pandas.core.frame.DataFrame'>`,
/// `<class 'function'>`, `pandas.core.frame.DataFrame`, `<enum 'Weights'>`), as
/// `module.qualname` (`builtins.function`).
pub(crate) fn parse_type(text: &str) -> String {
    let inner = ["<class '", "<enum '"]
        .iter()
        .find_map(|prefix| text.strip_prefix(prefix)?.strip_suffix("'>"));
    match inner {
        Some(inner) if text.starts_with("<class") && !inner.contains('.') => {
            format!("builtins.{inner}")
        }
        Some(inner) => inner.to_owned(),
        None => text.to_owned(),
    }
}

impl Kind {
    /// The kind of an object of this type (`module.qualname`), for types crane knows by name.
    pub fn of_type(type_name: &str) -> Kind {
        let (module, name) = type_name.rsplit_once('.').unwrap_or(("", type_name));
        let top = module.split('.').next().unwrap_or_default();
        match (module, name) {
            ("builtins", "NoneType") => Kind::NoneType,
            ("builtins", "bool") => Kind::Bool,
            ("builtins", "int") => Kind::Int,
            ("builtins", "float") => Kind::Float,
            ("builtins", "complex") => Kind::Complex,
            ("builtins", "str") => Kind::Str,
            ("builtins", "bytes" | "bytearray") => Kind::Bytes,
            ("builtins", "list") => Kind::List,
            ("builtins", "tuple") => Kind::Tuple,
            ("builtins", "set" | "frozenset") => Kind::Set,
            ("builtins", "dict") | ("collections", "defaultdict" | "OrderedDict") => Kind::Dict,
            ("builtins", "range") => Kind::Range,
            ("builtins", "function") | ("functools", "partial") => Kind::Function,
            ("numpy", "_ArrayFunctionDispatcher") => Kind::Function,
            ("builtins", "method") => Kind::Method,
            (
                "builtins",
                "builtin_function_or_method" | "method-wrapper" | "wrapper_descriptor",
            )
            | ("numpy", "ufunc") => Kind::Builtin,
            ("builtins", "type") | ("abc", "ABCMeta") | ("enum", "EnumMeta" | "EnumType") => {
                Kind::Class
            }
            ("builtins", "module") => Kind::Pymodule,
            ("numpy", "ndarray") => Kind::Ndarray,
            ("numpy", scalar) if is_numpy_scalar(scalar) => Kind::NumpyScalar,
            ("pandas.core.frame", "DataFrame") => Kind::Dataframe,
            ("pandas.core.series", "Series") => Kind::Series,
            ("pandas.core.arrays.categorical", "Categorical") => Kind::Categorical,
            (m, _) if m.starts_with("pandas.core.indexes.") => Kind::Index,
            (m, _) if m.starts_with("pandas.core.groupby") => Kind::Groupby,
            ("sklearn.model_selection._split", _) => Kind::Splitter,
            (m, _) if is_sklearn_estimator_module(m) => Kind::Estimator,
            ("xgboost.sklearn", _) | ("lightgbm.sklearn", _) | ("catboost.core", _) => {
                Kind::Estimator
            }
            ("torch", "Tensor") | ("torch.nn.parameter", "Parameter") => Kind::Tensor,
            (m, _) if m.starts_with("torch.optim.lr_scheduler") => Kind::Other,
            (m, _) if m.starts_with("torch.optim") => Kind::Optimizer,
            ("torch.utils.data.dataloader", "DataLoader") => Kind::Dataloader,
            (m, _) if m.starts_with("torch.utils.data.dataset") => Kind::Dataset,
            (m, _) if m.starts_with("torchvision.datasets") => Kind::Dataset,
            (m, _) if m.starts_with("torch.nn.modules") => Kind::TorchModule,
            (m, _) if m.starts_with("torchvision.models") || m.starts_with("timm.models") => {
                Kind::TorchModule
            }
            (m, _) if m.starts_with("transformers.models.") && m.contains(".modeling_") => {
                if m.contains(".modeling_tf_") {
                    Kind::KerasModel
                } else {
                    Kind::TorchModule
                }
            }
            (_, "EagerTensor" | "Tensor" | "SymbolicTensor" | "ResourceVariable")
                if top == "tensorflow" =>
            {
                Kind::TfTensor
            }
            (m, _) if m.starts_with("tensorflow.python.data.ops") => Kind::TfDataset,
            (_, "DirectoryIterator" | "DataFrameIterator" | "NumpyArrayIterator")
                if top == "keras" || top == "tensorflow" =>
            {
                Kind::KerasIterator
            }
            (m, "History") if m.ends_with("callbacks.history") || m.ends_with("callbacks") => {
                Kind::History
            }
            (m, _) if top == "keras" || m.starts_with("tensorflow.python.keras") => {
                if m.contains(".models") || m.contains(".engine.") {
                    Kind::KerasModel
                } else if m.contains(".layers") {
                    Kind::KerasLayer
                } else {
                    Kind::Other
                }
            }
            ("matplotlib.figure", "Figure") => Kind::Figure,
            (m, _) if m.starts_with("matplotlib.axes") => Kind::Axes,
            _ => Kind::Other,
        }
    }
}

fn is_numpy_scalar(name: &str) -> bool {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit());
    matches!(
        base,
        "float" | "int" | "uint" | "bool" | "bool_" | "complex" | "str_" | "bytes_" | "datetime"
    ) || matches!(
        name,
        "datetime64" | "timedelta64" | "longlong" | "ulonglong"
    )
}

fn is_sklearn_estimator_module(module: &str) -> bool {
    let Some(rest) = module.strip_prefix("sklearn.") else {
        return false;
    };
    let package = rest.split('.').next().unwrap_or_default();
    matches!(
        package,
        "linear_model"
            | "ensemble"
            | "svm"
            | "tree"
            | "neighbors"
            | "preprocessing"
            | "pipeline"
            | "compose"
            | "cluster"
            | "decomposition"
            | "naive_bayes"
            | "impute"
            | "feature_extraction"
            | "feature_selection"
            | "neural_network"
            | "discriminant_analysis"
            | "gaussian_process"
            | "kernel_ridge"
            | "isotonic"
            | "manifold"
            | "mixture"
            | "multiclass"
            | "multioutput"
            | "semi_supervised"
            | "cross_decomposition"
            | "calibration"
            | "dummy"
            | "covariance"
            | "kernel_approximation"
            | "random_projection"
            | "model_selection"
    )
}

fn adapt_variable(entry: &Map<String, Value>) -> Variable {
    let type_name = entry
        .get("type")
        .and_then(Value::as_str)
        .map(parse_type)
        .unwrap_or_default();
    let kind = Kind::of_type(&type_name);
    let mut variable = Variable::new(type_name, kind);
    let history_dict =
        entry.get("detected").and_then(Value::as_str) == Some("training_history_dict");
    for (key, value) in entry {
        let facts = &mut variable;
        match key.as_str() {
            "type" => {}
            "execution_cell_source" => facts.origin = origin(value),
            "shape" => put(facts, Section::S, "shape", value.clone()),
            "length" => put(facts, Section::S, "len", value.clone()),
            "dtype" => put(facts, Section::R, "dtype", dtype(value)),
            "dtypes" => put(facts, Section::R, "dtypes", map_array(value, dtype)),
            "has_nan" => put(facts, Section::V, "has_nan", value.clone()),
            "value_range" => range(facts, value),
            "value" => put(facts, Section::V, "value", value.clone()),
            "value_info" => value_info(facts, value),
            "per_column" => per_column(facts, value),
            "batch_size" => put(facts, Section::S, "batch_size", value.clone()),
            "num_batches" => put(facts, Section::S, "n_batches", value.clone()),
            "num_examples" | "n_samples" | "samples" => {
                put(facts, Section::S, "n_samples", value.clone())
            }
            "num_classes" => put(facts, Section::V, "n_classes", value.clone()),
            "image_shape" => put(facts, Section::S, "image_shape", value.clone()),
            "target_size" => put(facts, Section::S, "target_size", value.clone()),
            "class_mode" => put(facts, Section::R, "class_mode", value.clone()),
            "device" => put(facts, Section::R, "device", value.clone()),
            "requires_grad" => put(facts, Section::R, "requires_grad", value.clone()),
            "is_fitted" => put(facts, Section::V, "fitted", value.clone()),
            "fitted_attributes" => fitted_attributes(facts, value),
            "class_name" if kind == Kind::Estimator => {
                put(facts, Section::R, "estimator", value.clone())
            }
            "module" if is_defining_module(&facts.type_name, value) => {}
            "metrics" if history_dict => put(facts, Section::V, "history_keys", value.clone()),
            "metrics" => put(facts, Section::R, "metrics", value.clone()),
            "n_epochs" => put(facts, Section::V, "epochs", value.clone()),
            "detected" => put(facts, Section::R, "detected", value.clone()),
            "element_spec" => put(facts, Section::R, "element_spec", value.clone()),
            "preview" => preview(facts, value),
            "dataset" => dataloader_dataset(facts, value),
            other => put(
                facts,
                unknown_key_section(other, value),
                other,
                value.clone(),
            ),
        }
    }
    variable
}

fn put(variable: &mut Variable, section: Section, key: &str, value: Value) {
    variable.section_mut(section).insert(key.to_owned(), value);
}

/// Where a key the adapter does not know goes: sizes to S, names and descriptions to R,
/// the rest (values, flags) to V.
fn unknown_key_section(key: &str, value: &Value) -> Section {
    let structural = ["shape", "size", "len", "count", "num_", "n_"]
        .iter()
        .any(|word| key.contains(word));
    if structural && (value.is_number() || value.is_array()) {
        Section::S
    } else if value.is_string() {
        Section::R
    } else {
        Section::V
    }
}

fn origin(value: &Value) -> Option<Origin> {
    let cell = u32::try_from(value.get("cellno")?.as_u64()?).ok()?;
    let line = u32::try_from(value.get("lineno")?.as_u64()?).ok()?;
    Some(Origin { cell, line })
}

/// `dtype('O')` and `O` as recorded become `object`; other spellings pass through.
fn dtype(value: &Value) -> Value {
    let Some(text) = value.as_str() else {
        return value.clone();
    };
    let inner = text
        .strip_prefix("dtype(")
        .and_then(|rest| rest.strip_suffix(')'))
        .map(|quoted| quoted.trim_matches(|c| c == '\'' || c == '"'))
        .unwrap_or(text);
    Value::String(match inner {
        "O" | "|O" => "object".to_owned(),
        other => other.to_owned(),
    })
}

fn map_array(value: &Value, f: fn(&Value) -> Value) -> Value {
    match value.as_array() {
        Some(items) => Value::Array(items.iter().map(f).collect()),
        None => value.clone(),
    }
}

fn range(variable: &mut Variable, value: &Value) {
    match value.as_array().map(Vec::as_slice) {
        Some([min, max]) => {
            put(variable, Section::V, "min", min.clone());
            put(variable, Section::V, "max", max.clone());
        }
        _ if value.as_str() == Some("empty array") => {
            put(variable, Section::S, "size", Value::from(0))
        }
        _ => put(variable, Section::V, "value_range", value.clone()),
    }
}

/// The paper's value categories: `continuous`, `categorical`, `categorical_numeric`, `binary`.
fn value_kind(value: &Value) -> Value {
    let Some(text) = value.as_str() else {
        return value.clone();
    };
    let normalized = if text.starts_with("categorical numeric") {
        "categorical_numeric"
    } else if text.starts_with("categorical") {
        "categorical"
    } else {
        text
    };
    Value::String(normalized.to_owned())
}

fn value_info(variable: &mut Variable, value: &Value) {
    let Some(info) = value.as_object() else {
        put(variable, Section::V, "value_info", value.clone());
        return;
    };
    for (key, value) in info {
        match key.as_str() {
            "num_unique" => put(variable, Section::V, "n_unique", value.clone()),
            "value_type" => put(variable, Section::R, "value_kind", value_kind(value)),
            "value_range" => range(variable, value),
            "unique_values" => put(variable, Section::V, "unique_values", value.clone()),
            other => put(variable, Section::V, other, value.clone()),
        }
    }
}

fn per_column(variable: &mut Variable, value: &Value) {
    let Some(columns) = value.as_object() else {
        put(variable, Section::V, "per_column", value.clone());
        return;
    };
    let mut schema = Vec::new();
    let mut values = Facts::new();
    for (name, column) in columns {
        let mut entry = Facts::new();
        entry.insert("name".into(), Value::String(name.clone()));
        let mut stats = Facts::new();
        for (key, fact) in column.as_object().into_iter().flatten() {
            match key.as_str() {
                "dtype" => {
                    entry.insert("dtype".into(), dtype(fact));
                }
                "type" => {
                    entry.insert("value_kind".into(), value_kind(fact));
                }
                "num_unique" => {
                    stats.insert("n_unique".into(), fact.clone());
                }
                "value_range" => match fact.as_array().map(Vec::as_slice) {
                    Some([min, max]) => {
                        stats.insert("min".into(), min.clone());
                        stats.insert("max".into(), max.clone());
                    }
                    _ => {
                        stats.insert("value_range".into(), fact.clone());
                    }
                },
                "example_values" => {
                    stats.insert("examples".into(), fact.clone());
                }
                other => {
                    stats.insert(other.to_owned(), fact.clone());
                }
            }
        }
        schema.push(Value::Object(entry));
        values.insert(name.clone(), Value::Object(stats));
    }
    put(variable, Section::R, "columns", Value::Array(schema));
    // The recorded text is a pprint of a dict, which sorts its keys: not the frame's order.
    put(variable, Section::R, "columns_ordered", Value::Bool(false));
    put(variable, Section::V, "columns", Value::Object(values));
}

fn fitted_attributes(variable: &mut Variable, value: &Value) {
    let Some(attributes) = value.as_object() else {
        put(variable, Section::V, "fitted_attributes", value.clone());
        return;
    };
    let mut rest = Facts::new();
    for (name, value) in attributes {
        match (name.as_str(), value) {
            (_, Value::Null) => {}
            ("n_features_in_", _) => put(variable, Section::S, "n_features_in", value.clone()),
            ("n_outputs_", _) => put(variable, Section::S, "n_outputs", value.clone()),
            _ => {
                rest.insert(name.clone(), value.clone());
            }
        }
    }
    if !rest.is_empty() {
        put(
            variable,
            Section::V,
            "fitted_attributes",
            Value::Object(rest),
        );
    }
}

/// The paper records the defining module of estimators, already part of the type name.
fn is_defining_module(type_name: &str, module: &Value) -> bool {
    module.as_str().is_some_and(|module| {
        type_name
            .strip_prefix(module)
            .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// The value of a simple Python literal repr (`'text'`, `3`, `0.5`, `True`, `None`); any
/// other repr (`array([...])`, `<tf.Tensor ...>`) stays as its text.
fn python_literal(repr: &str) -> Value {
    let quoted = ['\'', '"'].into_iter().find_map(|quote| {
        let inner = repr.strip_prefix(quote)?.strip_suffix(quote)?;
        (!inner.contains(quote) && !inner.contains('\\')).then_some(inner)
    });
    if let Some(inner) = quoted {
        return Value::String(inner.to_owned());
    }
    match repr {
        "True" => return Value::Bool(true),
        "False" => return Value::Bool(false),
        "None" => return Value::Null,
        _ => {}
    }
    if let Ok(int) = repr.parse::<i64>() {
        return Value::from(int);
    }
    match repr.parse::<f64>() {
        Ok(float) if float.is_finite() => Value::from(float),
        _ => Value::String(repr.to_owned()),
    }
}

/// A dict's first items: keys (typed back from their recorded repr) to R, value reprs to V.
fn preview(variable: &mut Variable, value: &Value) {
    let Some(items) = value.as_array() else {
        put(variable, Section::V, "preview", value.clone());
        return;
    };
    let mut keys = Vec::new();
    let mut element_types: Vec<Value> = Vec::new();
    let mut examples = Vec::new();
    for item in items {
        let key = item.get("key").cloned().unwrap_or(Value::Null);
        let key_type = item.get("key_type").and_then(Value::as_str).map(parse_type);
        keys.push(match (key_type.as_deref(), key.as_str()) {
            (Some("builtins.int"), Some(text)) => {
                text.parse::<i64>().map_or(key.clone(), Value::from)
            }
            _ => key,
        });
        if let Some(value_type) = item.get("value_type").and_then(Value::as_str) {
            let value_type = Value::String(parse_type(value_type));
            if !element_types.contains(&value_type) {
                element_types.push(value_type);
            }
        }
        if let Some(repr) = item.get("value_repr") {
            examples.push(repr.as_str().map_or(repr.clone(), python_literal));
        }
    }
    put(variable, Section::R, "keys", Value::Array(keys));
    put(
        variable,
        Section::R,
        "element_types",
        Value::Array(element_types),
    );
    put(variable, Section::V, "examples", Value::Array(examples));
}

fn dataloader_dataset(variable: &mut Variable, value: &Value) {
    let Some(dataset) = value.as_object() else {
        put(variable, Section::R, "dataset", value.clone());
        return;
    };
    for (key, value) in dataset {
        match key.as_str() {
            "batch_shapes" => put(variable, Section::S, "batch_shapes", value.clone()),
            "sample_shapes" => put(variable, Section::S, "sample_shapes", value.clone()),
            "dataset_info" => put(variable, Section::R, "dataset_fields", value.clone()),
            other => put(
                variable,
                Section::R,
                &format!("dataset_{other}"),
                value.clone(),
            ),
        }
    }
}

/// The paper's dict layout of the same facts, keyed like CRANE-LLM keys it (attribute chains
/// as `__method__<object>_<attribute>`); facts the paper has no key for keep crane's key.
pub fn to_crane(info: &RuntimeInfo) -> Value {
    let mut out = Map::new();
    for (expression, variable) in &info.variables {
        let key = if is_identifier(expression) {
            expression.clone()
        } else if expression.split('.').all(is_identifier) {
            format!("{METHOD_PREFIX}{}", expression.replace('.', "_"))
        } else {
            expression.clone()
        };
        out.insert(key, Value::Object(crane_entry(variable)));
    }
    Value::Object(out)
}

fn crane_entry(variable: &Variable) -> Map<String, Value> {
    let mut entry = Map::new();
    let type_repr = match variable.type_name.strip_prefix("builtins.") {
        Some(builtin) => format!("<class '{builtin}'>"),
        None => format!("<class '{}'>", variable.type_name),
    };
    entry.insert("type".into(), Value::String(type_repr));
    if let Some(origin) = variable.origin {
        entry.insert(
            "execution_cell_source".into(),
            serde_json::json!({"cellno": origin.cell, "lineno": origin.line}),
        );
    }
    let mut value_info = Map::new();
    let mut fitted = Map::new();
    let mut dataset = Map::new();
    let in_value_info = matches!(variable.kind, Kind::Series | Kind::List | Kind::Tuple);
    for (key, value) in &variable.s {
        match key.as_str() {
            "len" => insert(&mut entry, "length", value),
            "n_batches" => insert(&mut entry, "num_batches", value),
            "n_samples" if variable.kind == Kind::Dataloader => {
                insert(&mut entry, "num_examples", value)
            }
            "n_features_in" => insert(&mut fitted, "n_features_in_", value),
            "n_outputs" => insert(&mut fitted, "n_outputs_", value),
            "batch_shapes" | "sample_shapes" => insert(&mut dataset, key, value),
            "size" if value.as_u64() == Some(0) => {
                insert(&mut entry, "value_range", &Value::from("empty array"))
            }
            _ => insert(&mut entry, key, value),
        }
    }
    for (key, value) in &variable.r {
        match key.as_str() {
            "columns" | "columns_ordered" => {}
            "value_kind" => insert(&mut value_info, "value_type", value),
            "estimator" => {
                insert(&mut entry, "class_name", value);
                if let Some((module, _)) = variable.type_name.rsplit_once('.') {
                    insert(&mut entry, "module", &Value::from(module));
                }
            }
            "dataset_fields" => insert(&mut dataset, "dataset_info", value),
            "keys" | "element_types" if variable.kind == Kind::Dict => {}
            _ => insert(&mut entry, key, value),
        }
    }
    for (key, value) in &variable.v {
        match key.as_str() {
            "columns" => {}
            "n_unique" => insert(&mut value_info, "num_unique", value),
            "unique_values" => insert(&mut value_info, "unique_values", value),
            "min" | "max" => {}
            "fitted" => insert(&mut entry, "is_fitted", value),
            "fitted_attributes" => {
                for (name, attribute) in value.as_object().into_iter().flatten() {
                    insert(&mut fitted, name, attribute);
                }
            }
            "n_classes" => insert(&mut entry, "num_classes", value),
            "history_keys" => insert(&mut entry, "metrics", value),
            "epochs" => insert(&mut entry, "n_epochs", value),
            "examples" if variable.kind == Kind::Dict => {
                entry.insert("preview".into(), dict_preview(variable));
            }
            _ => insert(&mut entry, key, value),
        }
    }
    if let (Some(min), Some(max)) = (variable.v.get("min"), variable.v.get("max")) {
        let range = Value::Array(vec![min.clone(), max.clone()]);
        if in_value_info {
            value_info.insert("value_range".into(), range);
        } else {
            entry.insert("value_range".into(), range);
        }
    }
    if let Some(columns) = crane_columns(variable) {
        entry.insert("per_column".into(), columns);
    }
    for (key, map) in [
        ("value_info", value_info),
        ("fitted_attributes", fitted),
        ("dataset", dataset),
    ] {
        if !map.is_empty() {
            entry.insert(key.into(), Value::Object(map));
        }
    }
    entry
}

fn insert(map: &mut Map<String, Value>, key: &str, value: &Value) {
    map.insert(key.to_owned(), value.clone());
}

fn crane_columns(variable: &Variable) -> Option<Value> {
    let schema = variable.r.get("columns")?.as_array()?;
    let stats = variable.v.get("columns").and_then(Value::as_object);
    let mut columns = Map::new();
    for column in schema {
        let Some(column) = column.as_object() else {
            continue;
        };
        let name = match column.get("name") {
            Some(Value::String(name)) => name.clone(),
            Some(other) => other.to_string(),
            None => continue,
        };
        let mut entry = Map::new();
        if let Some(dtype) = column.get("dtype") {
            entry.insert("dtype".into(), dtype.clone());
        }
        if let Some(kind) = column.get("value_kind") {
            entry.insert("type".into(), kind.clone());
        }
        let column_stats = stats.and_then(|stats| stats.get(&name)?.as_object());
        for (key, value) in column_stats.into_iter().flatten() {
            match key.as_str() {
                "n_unique" => insert(&mut entry, "num_unique", value),
                "examples" => insert(&mut entry, "example_values", value),
                "min" | "max" => {}
                _ => insert(&mut entry, key, value),
            }
        }
        if let Some(stats) = column_stats {
            if let (Some(min), Some(max)) = (stats.get("min"), stats.get("max")) {
                entry.insert(
                    "value_range".into(),
                    Value::Array(vec![min.clone(), max.clone()]),
                );
            }
        }
        columns.insert(name, Value::Object(entry));
    }
    Some(Value::Object(columns))
}

fn dict_preview(variable: &Variable) -> Value {
    let keys = variable.keys().cloned().unwrap_or_default();
    let examples = variable.examples().cloned().unwrap_or_default();
    let value_type = match variable.element_types().as_deref() {
        Some([only]) => Value::String(crane_type(only)),
        _ => Value::Null,
    };
    let items = keys
        .into_iter()
        .zip(examples)
        .map(|(key, example)| {
            let key_type = match &key {
                Value::Number(_) => "<class 'int'>",
                _ => "<class 'str'>",
            };
            let key = match key {
                Value::String(text) => text,
                other => other.to_string(),
            };
            serde_json::json!({
                "key": key,
                "key_type": key_type,
                "value_repr": python_repr(&example),
                "value_type": value_type,
            })
        })
        .collect();
    Value::Array(items)
}

fn python_repr(value: &Value) -> String {
    match value {
        Value::String(text) => crane_analysis::python_repr(text),
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        other => other.to_string(),
    }
}

fn crane_type(type_name: &str) -> String {
    format!(
        "<class '{}'>",
        type_name.strip_prefix("builtins.").unwrap_or(type_name)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_strings_become_qualified_names() {
        assert_eq!(parse_type("<class 'function'>"), "builtins.function");
        assert_eq!(
            parse_type("<class 'pandas.core.series.Series'>"),
            "pandas.core.series.Series"
        );
        assert_eq!(
            parse_type("pandas.core.frame.DataFrame"),
            "pandas.core.frame.DataFrame"
        );
        assert_eq!(parse_type("<enum 'ViT_B_16_Weights'>"), "ViT_B_16_Weights");
        assert_eq!(parse_type("<class '__main__.Vocab'>"), "__main__.Vocab");
    }

    #[test]
    fn kinds_follow_type_names() {
        let cases = [
            ("builtins.function", Kind::Function),
            ("builtins.module", Kind::Pymodule),
            ("builtins.NoneType", Kind::NoneType),
            ("numpy._ArrayFunctionDispatcher", Kind::Function),
            ("numpy.ufunc", Kind::Builtin),
            ("numpy.float64", Kind::NumpyScalar),
            ("abc.ABCMeta", Kind::Class),
            ("pandas.core.indexes.base.Index", Kind::Index),
            ("pandas.core.indexing._iLocIndexer", Kind::Other),
            ("sklearn.preprocessing._data.MinMaxScaler", Kind::Estimator),
            ("sklearn.model_selection._split.KFold", Kind::Splitter),
            ("torch.Tensor", Kind::Tensor),
            ("torch.optim.adamw.AdamW", Kind::Optimizer),
            ("torch.nn.modules.loss.CrossEntropyLoss", Kind::TorchModule),
            ("torchvision.models.vgg.VGG", Kind::TorchModule),
            ("torchvision.datasets.folder.ImageFolder", Kind::Dataset),
            ("torch.utils.data.dataloader.DataLoader", Kind::Dataloader),
            ("__main__.DataLoader", Kind::Other),
            ("keras.src.models.functional.Functional", Kind::KerasModel),
            ("keras.src.models.sequential.Sequential", Kind::KerasModel),
            ("keras.src.callbacks.history.History", Kind::History),
            (
                "keras.src.legacy.preprocessing.image.DirectoryIterator",
                Kind::KerasIterator,
            ),
            (
                "keras.src.legacy.preprocessing.image.ImageDataGenerator",
                Kind::Other,
            ),
            (
                "tensorflow.python.data.ops.prefetch_op._PrefetchDataset",
                Kind::TfDataset,
            ),
            (
                "tensorflow.python.framework.ops.EagerTensor",
                Kind::TfTensor,
            ),
            (
                "transformers.models.bert.modeling_bert.BertModel",
                Kind::TorchModule,
            ),
            ("matplotlib.figure.Figure", Kind::Figure),
            ("matplotlib.axes._axes.Axes", Kind::Axes),
        ];
        for (type_name, kind) in cases {
            assert_eq!(Kind::of_type(type_name), kind, "{type_name}");
        }
    }

    #[test]
    fn method_keys_split_at_a_known_object() {
        let names: BTreeSet<&str> = ["tf_idf", "train", "train_input", "tokenizer", "df_train"]
            .into_iter()
            .collect();
        let split = |mangled| method_expression(mangled, &names, "");
        assert_eq!(split("tf_idf_toarray"), "tf_idf.toarray");
        assert_eq!(split("tokenizer_eos_token_id"), "tokenizer.eos_token_id");
        assert_eq!(split("train_label"), "train.label");
        assert_eq!(split("df_train_labels"), "df_train.labels");
        assert_eq!(split("plt_tight_layout"), "plt.tight_layout");
        assert_eq!(split("nosplit"), "nosplit");
    }

    #[test]
    fn source_code_settles_ambiguous_method_keys() {
        let names = BTreeSet::from(["np"]);
        let source = "np.random.seed(0)\nx = np.random_sample";
        assert_eq!(
            method_expression("np_random_seed", &names, source),
            "np.random.seed"
        );
        assert_eq!(
            method_expression(
                "test_data_astype",
                &BTreeSet::new(),
                "y = test_data.astype(int)"
            ),
            "test_data.astype"
        );
        assert_eq!(
            method_expression("test_data_astype", &BTreeSet::new(), ""),
            "test.data_astype"
        );
    }

    #[test]
    fn dtype_reprs_are_normalized() {
        assert_eq!(dtype(&Value::from("dtype('O')")), Value::from("object"));
        assert_eq!(
            dtype(&Value::from("dtype('float64')")),
            Value::from("float64")
        );
        assert_eq!(
            dtype(&Value::from("torch.int64")),
            Value::from("torch.int64")
        );
    }
}
