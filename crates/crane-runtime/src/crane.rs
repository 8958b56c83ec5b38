//! Adapter from CRANE-LLM's recorded runtime information (`crane_runtime_info`) to crane's
//! vocabulary, and back to the paper's layout (for size comparisons).

use serde_json::Value;

use crate::model::RuntimeInfo;

/// Translate CRANE-LLM's runtime information (a JSON object keyed by variable) into crane's.
pub fn from_crane(_info: &Value) -> RuntimeInfo {
    RuntimeInfo::default()
}

/// The paper's dict layout of the same facts.
pub fn to_crane(_info: &RuntimeInfo) -> Value {
    Value::Object(Default::default())
}
