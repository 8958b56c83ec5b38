//! Why the rules stayed silent on a cell: the places where their interpreter gave up (a call of
//! code it does not follow, a test the facts do not decide, a loop over unknown items, ...),
//! or, when it gave up nowhere, that no rule covers what the cell does.

use std::collections::BTreeMap;

/// The reason of a silent cell whose interpretation gave up nowhere.
pub const NO_RULE: &str = "no rule for the operation";

/// The reasons, in name order, for a cell the rules were silent on.
pub fn reasons(gave_up: &BTreeMap<&'static str, usize>) -> Vec<&'static str> {
    if gave_up.is_empty() {
        vec![NO_RULE]
    } else {
        gave_up.keys().copied().collect()
    }
}
