//! crane's runtime information back in the paper's dict layout, for size comparisons.

use super::*;

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
