//! A cell on its way through the relay is parsed once: a checked cell is relayed with the
//! check's parse, and the relay's readings of it (whether it may change the kernel's state, the
//! snapshot kept before it, what it did outside the kernel, an undo's account of it) and the
//! checker's history once it ran take that parse; code no check read is parsed once when the
//! relay decides it, and that parse serves the same readings. Alone in its test binary: the
//! parser counter is the process's. The check itself parsing its cell once, against a real
//! kernel, is crane-check's `tests/parse_once.rs`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crane_analysis::bounds::parser_calls;
use crane_analysis::{ParsedCell, Prior};
use crane_check::KernelChecker;
use crane_probe::snapshot::cannot_change_state_parsed;
use crane_proxy::check::{parse_of, Checked, Checker, KernelEvent, Timings};
use crane_proxy::effects;
use crane_proxy::snapshots::{SnapshotId, Snapshots};

const CELL: &str = "import json\nreport = json.dumps({'rows': 3})\nwith open('report.json', 'w') as f:\n    f.write(report)\n";

/// The relay's readings of a cell it relays and hears ran, each from `cell`: what the relay
/// and the checker's history found.
fn relayed_and_ran(
    cell: &Arc<ParsedCell>,
    checker: &mut KernelChecker,
) -> (bool, Vec<String>, Prior) {
    // Before it is relayed: whether it needs a snapshot, which keeps its parse.
    let unchanged = cannot_change_state_parsed(cell);
    let snapshots = Snapshots::new(None);
    snapshots.add_fresh_start(cell);
    // It ran and raised: what it did outside the kernel; an undo's account of the same.
    let mut outside = effects::in_parsed(cell);
    let undone: Vec<String> = snapshots
        .cells_from(SnapshotId::FreshStart)
        .iter()
        .flat_map(|cell| effects::in_parsed(cell))
        .collect();
    assert_eq!(undone, outside);
    outside.push(format!("unchanged: {unchanged}"));
    // The checker reads it, with its parse, before the next check.
    Checker::executed(
        checker,
        vec![KernelEvent::Ran {
            cell: Arc::clone(cell),
            execution_count: Some(1),
            raised: true,
        }],
    );
    let prior = Checker::prior(checker, "report");
    (unchanged, outside, prior)
}

fn new_checker() -> KernelChecker {
    KernelChecker::new(Box::new(|_| Ok(None)), BTreeSet::new(), None)
}

#[test]
fn a_cell_relayed_and_reported_as_ran_costs_one_parse() {
    let before = parser_calls();
    // The check's one parse, handed on with its verdict.
    let checked = Checked {
        findings: Vec::new(),
        verdict: crane_detect::combine(&[]),
        notes: Vec::new(),
        outside_effects: Vec::new(),
        elapsed: Duration::ZERO,
        timings: Timings::default(),
        beside: false,
        cell: Arc::new(ParsedCell::parse(CELL)),
    };
    let cell = parse_of(CELL, Some(&checked));
    assert!(Arc::ptr_eq(&cell, &checked.cell));
    let mut checker = new_checker();
    let checked_readings = relayed_and_ran(&cell, &mut checker);
    assert_eq!(parser_calls() - before, 1);
    let (unchanged, outside, prior) = checked_readings.clone();
    assert!(!unchanged);
    assert!(
        outside[0].starts_with("line 3 `open('report.json', 'w')` writes"),
        "{outside:?}"
    );
    assert_eq!(prior, Prior::Bound);

    // Code no check read is parsed once where the relay decides it. (One test: the parser
    // counter is the process's, and tests run side by side.)
    let before = parser_calls();
    // Policy off, a check abandoned, `%%crane run`'s cell: parsed when it is relayed.
    let cell = parse_of(CELL, None);
    let mut checker = new_checker();
    let readings = relayed_and_ran(&cell, &mut checker);
    assert_eq!(parser_calls() - before, 1);
    assert_eq!(readings, checked_readings);
}
