//! Where the rules gave up, over the crashing cases they were silent on: per library of the
//! case and reason, how many such crashes the interpreter gave up at for that reason (a case
//! counts once per reason; one that gave up nowhere counts as "no rule for the operation").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::report::CaseResult;

/// The count for one library and reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SilenceRow {
    pub library: String,
    pub reason: String,
    /// Silent crashes that gave up at this reason.
    pub crashes: u64,
}

/// The aggregate of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Silence {
    /// Crashing cases the rules judged and were silent on, per library.
    pub silent_crashes: BTreeMap<String, u64>,
    /// Most crashes first, then by library and reason.
    pub rows: Vec<SilenceRow>,
    /// The same counts over every library, most crashes first.
    pub by_reason: Vec<(String, u64)>,
}

impl Silence {
    pub fn of(cases: &[CaseResult]) -> Silence {
        let mut silent_crashes: BTreeMap<String, u64> = BTreeMap::new();
        let mut counts: BTreeMap<(String, String), u64> = BTreeMap::new();
        let mut by_reason: BTreeMap<String, u64> = BTreeMap::new();
        for case in cases.iter().filter(|case| case.expected) {
            let Some(gave_up) = &case.gave_up else {
                continue;
            };
            *silent_crashes.entry(case.library.clone()).or_default() += 1;
            let reasons: Vec<&str> = if gave_up.is_empty() {
                vec![crane_detect::silence::NO_RULE]
            } else {
                gave_up.keys().map(String::as_str).collect()
            };
            for reason in reasons {
                *counts
                    .entry((case.library.clone(), reason.to_owned()))
                    .or_default() += 1;
                *by_reason.entry(reason.to_owned()).or_default() += 1;
            }
        }
        let mut rows: Vec<SilenceRow> = counts
            .into_iter()
            .map(|((library, reason), crashes)| SilenceRow {
                library,
                reason,
                crashes,
            })
            .collect();
        rows.sort_by(|a, b| {
            b.crashes
                .cmp(&a.crashes)
                .then_with(|| a.library.cmp(&b.library))
                .then_with(|| a.reason.cmp(&b.reason))
        });
        let mut by_reason: Vec<(String, u64)> = by_reason.into_iter().collect();
        by_reason.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Silence {
            silent_crashes,
            rows,
            by_reason,
        }
    }

    pub fn total(&self) -> u64 {
        self.silent_crashes.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::case;

    #[test]
    fn silent_crashes_count_once_per_reason_and_sort_by_count() {
        let mut cases = vec![
            case("a1", "pandas", true, Some(false)),
            case("a2", "pandas", true, Some(false)),
            case("b1", "numpy", true, Some(false)),
            case("b2", "numpy", false, Some(false)),
            case("b3", "numpy", true, Some(true)),
        ];
        cases[0].gave_up = Some(
            [
                ("if test not decided".to_owned(), 3),
                ("while loop".into(), 1),
            ]
            .into(),
        );
        cases[1].gave_up = Some([("if test not decided".to_owned(), 1)].into());
        cases[2].gave_up = Some(BTreeMap::new());
        cases[3].gave_up = Some([("while loop".to_owned(), 1)].into());
        let silence = Silence::of(&cases);
        assert_eq!(silence.total(), 3);
        assert_eq!(silence.silent_crashes["pandas"], 2);
        let rows: Vec<(&str, &str, u64)> = silence
            .rows
            .iter()
            .map(|row| (row.library.as_str(), row.reason.as_str(), row.crashes))
            .collect();
        assert_eq!(
            rows,
            vec![
                ("pandas", "if test not decided", 2),
                ("numpy", crane_detect::silence::NO_RULE, 1),
                ("pandas", "while loop", 1),
            ]
        );
        assert_eq!(silence.by_reason[0], ("if test not decided".to_owned(), 2));
    }
}
