//! Executed cells added one by one, as a kernel session adds them, give the rules exactly what
//! the same cells read all at once give.

use crane_detect::rules::{self, CheckContext, ExecutedCells, Interpretation};
use crane_runtime::RuntimeInfo;
use serde_json::json;

/// A notebook's history: IPython magics (one blanked cell magic, one that may bind names), a
/// function and a class defined then the function redefined, a library that extends pandas, a
/// deletion, a star import and a cell that does not parse, late enough that the cells before
/// them are followed.
const CELLS: &[&str] = &[
    "import numpy as np\nimport pandas as pd",
    "%matplotlib inline\nx = 3\ndf = pd.DataFrame({'a': [1, 2], 'b': [3, 4]})",
    "def drop_a(frame):\n    return frame.drop('a', axis=1)\n\nclass Box:\n    def __init__(self, value):\n        self.value = value\n    def get(self):\n        return self.value",
    "%%time\nslim = drop_a(df)\nbox = Box(df)",
    "def drop_a(frame):\n    return frame.drop('b', axis=1)\nlabels = {'a': 1}",
    "import tqdm\ntqdm.tqdm.pandas()\ndel x",
    "from os.path import *",
    "z = (",
    "%run helpers.py\nw = 1",
];

const TARGETS: &[&str] = &[
    "print(undefined_name)",
    "slim['a'].sum()",
    "drop_a(df)['b'].sum()",
    "Box(df).get()['c']",
    "df.progress_apply(len)",
    "labels['b']",
    "total = x + 1\nfirst = df['a']",
];

/// Recorded facts that describe no object (the executed cells are interpreted again to rebuild
/// them), and facts from the probe (they alone describe the kernel).
fn facts() -> Vec<RuntimeInfo> {
    let probe = json!({
        "variables": {
            "df": {
                "type": "pandas.core.frame.DataFrame",
                "kind": "dataframe",
                "S": {"shape": [2, 2]},
                "R": {
                    "columns": [{"name": "a", "dtype": "int64"}, {"name": "b", "dtype": "int64"}],
                    "index": {"type": "RangeIndex", "name": null, "nlevels": 1}
                },
                "V": {"has_nan": false}
            }
        },
        "missing": ["undefined_name"],
        "cost": {"ms": 1.0, "bytes": 10, "sampled": false}
    });
    vec![
        RuntimeInfo::default(),
        serde_json::from_value(probe).expect("facts parse"),
    ]
}

fn interpret(target: &str, runtime: &RuntimeInfo, executed: &ExecutedCells) -> Interpretation {
    let parsed_target = crane_analysis::ParsedCell::parse(target);
    let analysis = crane_analysis::analyze_parsed(&parsed_target);
    rules::interpret(&CheckContext {
        target: &parsed_target,
        analysis: analysis.as_ref(),
        runtime,
        executed_cells: executed,
    })
}

#[track_caller]
fn assert_same(pushed: &Interpretation, built: &Interpretation, what: &str) {
    assert_eq!(pushed.findings, built.findings, "findings of {what}");
    assert_eq!(pushed.values, built.values, "values of {what}");
    assert_eq!(pushed.closed, built.closed, "closed statements of {what}");
    assert_eq!(pushed.gave_up, built.gave_up, "give-ups of {what}");
}

#[test]
fn cells_pushed_one_by_one_give_the_findings_of_cells_read_at_once() {
    let facts = facts();
    let mut pushed = ExecutedCells::default();
    let (mut findings, mut values) = (0, 0);
    for count in 0..=CELLS.len() {
        if count > 0 {
            pushed.push(CELLS[count - 1]);
        }
        let built = ExecutedCells::new(&CELLS[..count]);
        assert_eq!(pushed.sources(), built.sources());
        assert_eq!(pushed.bindings(), built.bindings());
        assert_eq!(
            pushed.bindings(),
            &crane_analysis::bindings(&CELLS[..count])
        );
        for target in TARGETS {
            for (mode, runtime) in facts.iter().enumerate() {
                let what = format!("{target:?} after {count} cells (facts {mode})");
                let from_pushed = interpret(target, runtime, &pushed);
                let from_built = interpret(target, runtime, &built);
                assert_same(&from_pushed, &from_built, &what);
                findings += from_pushed.findings.len();
                values += from_pushed.values.len();
            }
        }
    }
    // The history matters to these targets: the comparison is not between empty results.
    assert!(findings >= 5, "only {findings} findings");
    assert!(values >= 5, "only {values} known values");
}

#[test]
fn the_cells_before_decide_what_the_rules_find() {
    let runtime = RuntimeInfo::default();
    let rule = |target: &str, count: usize| {
        let executed = ExecutedCells::new(&CELLS[..count]);
        interpret(target, &runtime, &executed)
            .findings
            .first()
            .and_then(|finding| finding.rule)
            .map(|rule| rule.code())
    };
    // Bound by no cell, until a star import may bind it.
    assert_eq!(rule("print(undefined_name)", 6), Some("NB001"));
    assert_eq!(rule("print(undefined_name)", 7), None);
    // The class and the function are followed; the redefined function drops the other column;
    // after a cell that does not parse, no function is followed.
    assert_eq!(rule("Box(df).get()['c']", 3), Some("PD001"));
    assert_eq!(rule("drop_a(df)['b'].sum()", 4), None);
    assert_eq!(rule("drop_a(df)['b'].sum()", 5), Some("PD001"));
    assert_eq!(rule("drop_a(df)['b'].sum()", 8), None);
    // What the body of a `%%time` cell bound and built.
    assert_eq!(rule("slim['a'].sum()", 3), Some("NB001"));
    assert_eq!(rule("slim['a'].sum()", 4), Some("PD001"));
}

#[test]
fn an_update_adds_the_new_cells_or_starts_again() {
    let runtime = RuntimeInfo::default();
    let sources = |cells: &[&str]| cells.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut executed = ExecutedCells::new(&CELLS[..3]);
    assert!(executed.update(&sources(&CELLS[..5])));
    assert!(executed.update(&sources(&CELLS[..5])));
    assert_eq!(executed.sources(), sources(&CELLS[..5]));
    // A restarted kernel: a shorter history, then another one of the same length.
    assert!(!executed.update(&sources(&CELLS[..1])));
    assert_eq!(executed.sources(), sources(&CELLS[..1]));
    let other = sources(&["x = 'text'", "data = None"]);
    executed.update(&sources(&CELLS[..2]));
    assert!(!executed.update(&other));
    let built = ExecutedCells::new(&other);
    for target in TARGETS {
        assert_same(
            &interpret(target, &runtime, &executed),
            &interpret(target, &runtime, &built),
            target,
        );
    }
}
