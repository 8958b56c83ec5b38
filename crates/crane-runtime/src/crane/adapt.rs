//! One recorded entry of CRANE-LLM's runtime information into a crane variable: its type,
//! origin, shape, dtype, value, columns, fitted attributes and preview, each fact in its
//! section.

use super::*;

pub(super) fn adapt_variable(entry: &Map<String, Value>) -> Variable {
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
pub(super) fn dtype(value: &Value) -> Value {
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
