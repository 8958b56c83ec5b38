//! What `--redact` hides: string examples (`strings`), or every fact but types, shapes,
//! dtypes, counts, flags and names, by an allow-list (`values`).

use super::*;

impl RuntimeInfo {
    /// The same information with example values hidden as `redact` says.
    pub fn redacted(&self, redact: Redact) -> RuntimeInfo {
        let mut info = self.clone();
        if redact == Redact::None {
            return info;
        }
        for variable in info.variables.values_mut() {
            match redact {
                Redact::None => {}
                Redact::Strings => redact_strings(variable),
                Redact::Values => redact_values(variable),
            }
        }
        info
    }
}

const EXAMPLE_KEYS: [&str; 4] = ["examples", "unique_values", "classes", "value"];

fn redact_strings(variable: &mut Variable) {
    for key in EXAMPLE_KEYS {
        if let Some(value) = variable.v.get_mut(key) {
            hide_strings(value);
        }
    }
    for column in column_stats_mut(&mut variable.v) {
        for key in EXAMPLE_KEYS {
            if let Some(value) = column.get_mut(key) {
                hide_strings(value);
            }
        }
    }
}

fn hide_strings(value: &mut Value) {
    match value {
        Value::String(text) => *text = REDACTED_STR.to_owned(),
        Value::Array(items) => items.iter_mut().for_each(hide_strings),
        Value::Object(map) => map.values_mut().for_each(hide_strings),
        _ => {}
    }
}

/// What `--redact values` keeps: types, shapes, dtypes, counts, flags and column names, by an
/// allow-list (a fact not listed here is dropped, so a new fact that carries a value, such as
/// an object's repr, never slips through).
mod kept {
    /// R facts: types, dtypes, devices, column and layer names, library settings.
    pub(super) const R: &[&str] = &[
        "attributes",
        "best_estimator",
        "bits",
        "categories_dtype",
        "classes_dtype",
        "columns",
        "columns_nlevels",
        "columns_truncated",
        "dataset_type",
        "device",
        "drop_last",
        "dtype",
        "dtype_counts",
        "duplicated_columns",
        "element_types",
        "element_types_scanned",
        "estimator",
        "feature_names_in",
        "feature_names_truncated",
        "index",
        "inner_estimator",
        "iterable",
        "iterator",
        "last_activation",
        "layout",
        "len_unknown",
        "library",
        "library_bases",
        "loss",
        "masked",
        "memmap",
        "metrics",
        "module",
        "name",
        "num_workers",
        "obj_type",
        "optimizer",
        "ordered",
        "owner_fitted",
        "owner_type",
        "param_dtype",
        "raises",
        "requires_grad",
        "sampler",
        "shuffle",
        "steps",
        "tensors",
        "trainable",
        "training",
        "version",
    ];
    /// Keys inside the R facts kept above (an index, a step, a column, a tensor).
    pub(super) const NESTED: &[&str] = &[
        "type",
        "dtype",
        "nlevels",
        "name",
        "names",
        "range",
        "fitted",
        "n_features_in",
        "n_features_out",
        "columns",
        "shape",
    ];
    /// V facts: counts and flags.
    pub(super) const V: &[&str] = &[
        "built",
        "columns",
        "columns_skipped",
        "compiled",
        "categories_sizes",
        "fitted",
        "has_inf",
        "has_nan",
        "index_unique",
        "n_classes",
        "n_masked",
        "n_true",
        "n_unique",
        "nulls",
        "skipped",
        "unique",
    ];
}

fn redact_values(variable: &mut Variable) {
    variable.s.retain(|_, value| carries_no_text(value));
    variable.r.retain(|key, _| kept::R.contains(&key.as_str()));
    for value in variable.r.values_mut() {
        keep_nested(value);
    }
    variable.v.retain(|key, _| kept::V.contains(&key.as_str()));
    for column in column_stats_mut(&mut variable.v) {
        column.retain(|key, _| kept::V.contains(&key.as_str()));
    }
    // "raises KeyError: 'secret'": the exception's message may quote a value.
    if let Some(error) = &mut variable.error {
        if let Some((kind, _)) = error.split_once(':') {
            *error = kind.to_owned();
        }
    }
}

/// Structure facts are numbers (shapes, counts); a layer summary may also name its type.
fn carries_no_text(value: &Value) -> bool {
    match value {
        Value::String(_) => false,
        Value::Array(items) => items.iter().all(carries_no_text),
        Value::Object(map) => map
            .iter()
            .all(|(key, value)| key == "type" || key == "activation" || carries_no_text(value)),
        _ => true,
    }
}

fn keep_nested(value: &mut Value) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(keep_nested),
        Value::Object(map) => {
            map.retain(|key, _| kept::NESTED.contains(&key.as_str()));
            map.values_mut().for_each(keep_nested);
        }
        _ => {}
    }
}

fn column_stats_mut(v: &mut Facts) -> impl Iterator<Item = &mut Facts> {
    v.get_mut("columns")
        .and_then(Value::as_object_mut)
        .into_iter()
        .flat_map(|columns| columns.values_mut())
        .filter_map(Value::as_object_mut)
}
