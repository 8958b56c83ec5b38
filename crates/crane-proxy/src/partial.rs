//! A held cell whose first statements, before the predicted crash, only bind new names: those
//! run, as a kernel without crane runs them before it reaches the crashing line, and the cell
//! then ends with crane's error in place of the crash. Holding the whole cell would leave those names
//! unbound, and the next cells, which a kernel without crane runs, would fail on them
//! (`import`s above a line that raises are the commonest case).
//!
//! The statements that run are judged as a failed cell's are (`crane_analysis::failed_prefix`):
//! the longest run of them from the top that only binds new names, from literals, the cell's
//! own names, builtins and modules, and reads nothing from before the cell that it could change
//! (`crane_analysis::bound_only_prefix`). What follows, from the first statement that might
//! change that state, is held with the crash: the same state a failed cell's rollback leaves
//! (`failed::replay`). A cell that opens with such a statement, or that crane cannot read, is
//! held whole, as before it ran. Data from before the cell that the kernel says holds only
//! immutable scalars (an array, a frame) counts as read without change where the statements
//! only take subscripts, attributes or operators of it (`crane_analysis::Prior::Data`): that
//! needs no snapshot, so it serves kernels that cannot fork too.
//!
//! Where a snapshot is taken before them and a failed cell is rolled back by itself, statements
//! that read objects from before the cell run too, when every such object has a fingerprint
//! and they do not look long
//! (`crane_analysis::watched_prefix`): once they ran, the relay
//! compares those objects with the snapshot as for a failed cell's part, and keeps the state or
//! rolls it back.

use std::collections::HashMap;
use std::time::Duration;

use crane_analysis::{ParsedCell, Prior};
use crane_kernel::KernelSession;
use serde_json::Value;

use crate::check::{self, Checked, Checker, CraneError, HELD_ENAME};
use crate::failed;

/// What of a held cell runs first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFirst {
    /// The cell's source up to the end of the last statement that runs.
    pub code: String,
    /// The names those statements bind, in order.
    pub names: Vec<String>,
    /// The line crane predicts the crash at.
    pub line: u32,
    /// Names of objects from before the cell those statements read: once they ran, the relay
    /// compares these objects with the snapshot before them, and rolls back unless unchanged.
    pub watched: Vec<String>,
}

/// The statements of `cell` before the line `checked` predicts its crash at, up to the first
/// that may change the state before the cell, when they bind new names, as far as the
/// checker's history of the kernel tells (`crane_analysis::bound_only_prefix`); `None`
/// otherwise. With `compare` (a snapshot before them will be taken and a failed cell is rolled
/// back by itself), statements that read objects from before the cell count too
/// (`crane_analysis::watched_prefix`), when they do not look long: those objects are compared
/// with the snapshot once they ran.
/// `priors`: what the kernel's cells say of each name the cell reads ([`priors`]), data whose
/// reads change nothing included.
pub fn run_first(
    cell: &ParsedCell,
    checked: &Checked,
    priors: &HashMap<String, Prior>,
    compare: bool,
) -> Option<RunFirst> {
    let line = checked.verdict.line?;
    let code = cell.source();
    let prior = |name: &str| priors.get(name).copied().unwrap_or(Prior::Bound);
    let strict = crane_analysis::bound_only_prefix(code, line, &prior);
    let watched = compare
        .then(|| crane_analysis::watched_prefix(code, line, &prior))
        .flatten()
        .filter(|(before, _, watched)| {
            !watched.is_empty()
                && !crane_probe::abridge::looks_long(before, &Default::default())
                && strict
                    .as_ref()
                    .is_none_or(|(strict, _)| before.len() > strict.len())
        });
    if let Some((before, names, watched)) = watched {
        return Some(RunFirst {
            code: before.to_owned(),
            names,
            line,
            watched,
        });
    }
    let (before, names) = strict?;
    Some(RunFirst {
        code: before.to_owned(),
        names,
        line,
        watched: Vec::new(),
    })
}

/// What the checker's history says of each name `cell` reads before binding it
/// (`failed::priors`), with those the kernel says hold data whose reads change nothing (a numpy
/// array, a pandas object of immutable scalars: `crane_probe::fingerprint::data_names`) as
/// [`Prior::Data`]; statements that only read those by subscript, attribute or operator bind
/// new names as ones that read nothing from before the cell do.
pub async fn priors(
    cell: &ParsedCell,
    checker: &mut impl Checker,
    session: &mut KernelSession,
) -> HashMap<String, Prior> {
    let mut priors = failed::priors(cell, checker);
    let bound: Vec<String> = priors
        .iter()
        .filter(|(_, prior)| **prior == Prior::Bound)
        .map(|(name, _)| name.clone())
        .collect();
    if bound.is_empty() {
        return priors;
    }
    let data = crane_probe::fingerprint::data_names(session, &bound, COMPARABLE_TIMEOUT)
        .await
        .unwrap_or_default();
    with_data(&mut priors, &data);
    priors
}

/// `data`'s names, last bound by an assignment, as [`Prior::Data`].
fn with_data(priors: &mut HashMap<String, Prior>, data: &[String]) {
    for name in data {
        if let Some(prior @ Prior::Bound) = priors.get_mut(name) {
            *prior = Prior::Data;
        }
    }
}

/// Whether every object `names` hold in the kernel has a fingerprint
/// (`crane_probe::fingerprint`): what the comparison after the statements that read them needs.
pub async fn comparable(session: &mut KernelSession, names: &[String]) -> bool {
    match crane_probe::fingerprint::in_kernel(session, names, COMPARABLE_TIMEOUT).await {
        Ok(found) => names.iter().all(|name| {
            found
                .get(name)
                .is_some_and(|print| print.as_deref().is_some_and(|print| print != "absent"))
        }),
        Err(_) => false,
    }
}

/// How long the kernel may take to fingerprint what a held cell's first statements read.
const COMPARABLE_TIMEOUT: Duration = Duration::from_secs(30);

/// crane's error for a cell whose first statements ran: as a held cell's, saying what ran.
pub fn error(checked: &Checked, code: &str, first: &RunFirst) -> CraneError {
    let names = failed::names_listed(&first.names);
    let ran = u32::try_from(first.code.lines().count()).unwrap_or(u32::MAX);
    let (lines, bind) = match ran {
        1 => ("line 1".to_owned(), "binds"),
        n => (format!("lines 1-{n}"), "bind"),
    };
    let held = match ran.saturating_add(1) {
        from if from >= first.line => format!("held it at line {} before it ran", first.line),
        from => format!(
            "held the rest of it, from line {from}, before it ran (the crash is predicted at line {})",
            first.line
        ),
    };
    let what = match first.watched.as_slice() {
        [] => format!("which only {bind} new names ({names})"),
        read => format!(
            "which {bind} new names ({names}) and read {} from before it",
            failed::names_listed(read)
        ),
    };
    let mut traceback = vec![format!(
        "\u{1b}[0;31m{HELD_ENAME}\u{1b}[0m: crane ran {lines} of this cell, {what}, as a kernel without crane would, and {held}."
    )];
    traceback.extend(check::held_traceback(checked, code).into_iter().skip(1));
    CraneError {
        ename: HELD_ENAME.to_owned(),
        evalue: check::held_evalue(checked),
        traceback,
    }
}

/// The kernel's `execute_reply` for the statements that ran, as crane's error (every other
/// field kept); `None` when it is not `ok` (they raised on their own: that error stands).
pub fn as_error(content: &[u8], error: &CraneError) -> Option<Vec<u8>> {
    let Ok(Value::Object(mut content)) = serde_json::from_slice::<Value>(content) else {
        return None;
    };
    if content.get("status").and_then(Value::as_str) != Some("ok") {
        return None;
    }
    content.insert("status".into(), Value::String("error".into()));
    content.insert("ename".into(), Value::String(error.ename.clone()));
    content.insert("evalue".into(), Value::String(error.evalue.clone()));
    content.insert(
        "traceback".into(),
        Value::Array(error.traceback.iter().cloned().map(Value::String).collect()),
    );
    content.insert("payload".into(), Value::Array(Vec::new()));
    serde_json::to_vec(&content).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crane_detect::{DetectorKind, Finding, FindingStatus};

    /// A checker whose kernel imported `pd` and bound `df`.
    struct Kernel;

    impl Checker for Kernel {
        async fn prepare(&mut self, _session: &mut KernelSession) -> Result<(), String> {
            Ok(())
        }
        fn executed(&mut self, _events: Vec<check::KernelEvent>) {}
        fn prior(&mut self, name: &str) -> Prior {
            match name {
                "pd" | "np" => Prior::Imported,
                "df" => Prior::Bound,
                _ => Prior::NotBound,
            }
        }
        async fn check(
            &mut self,
            _session: &mut KernelSession,
            _request: &check::CheckRequest,
        ) -> Result<Checked, String> {
            Err("not used".into())
        }
    }

    fn first_of(code: &str, line: u32, compare: bool, data: &[String]) -> Option<RunFirst> {
        let cell = ParsedCell::parse(code);
        let mut priors = failed::priors(&cell, &mut Kernel);
        with_data(&mut priors, data);
        run_first(&cell, &checked(line), &priors, compare)
    }

    fn checked(line: u32) -> Checked {
        let finding = Finding {
            detector: DetectorKind::DryRun,
            rule: None,
            crash: true,
            exception: Some("KeyError".into()),
            line: Some(line),
            diagnosis: "0".into(),
            evidence: Vec::new(),
            confidence: 1.0,
            status: FindingStatus::Observed,
        };
        Checked {
            verdict: crane_detect::combine(std::slice::from_ref(&finding)),
            findings: vec![finding],
            notes: Vec::new(),
            outside_effects: Vec::new(),
            elapsed: std::time::Duration::ZERO,
            timings: check::Timings::default(),
            beside: false,
            cell: std::sync::Arc::new(ParsedCell::parse("")),
        }
    }

    #[test]
    fn new_names_before_the_crash_run_first() {
        let code = "obj1 = pd.Series([4, 7])\nobj2 = pd.Series(range(3), index=['a', 'b', 'c'])\nobj2[[0, 1, 2]]\nobj3 = 1";
        let first = first_of(code, 3, false, &[]).unwrap();
        assert_eq!(
            first.code,
            "obj1 = pd.Series([4, 7])\nobj2 = pd.Series(range(3), index=['a', 'b', 'c'])"
        );
        assert_eq!(first.names, ["obj1", "obj2"]);
        let error = error(&checked(3), code, &first);
        assert_eq!(error.ename, "CranePredictedCrash");
        assert!(
            error.traceback[0].contains(
                "crane ran lines 1-2 of this cell, which only bind new names (obj1, obj2), as a kernel without crane would, and held it at line 3"
            ),
            "{:?}",
            error.traceback
        );
        assert!(error
            .traceback
            .iter()
            .any(|line| line.contains("line 3: obj2[[0, 1, 2]]")));
    }

    #[test]
    fn what_may_change_the_state_is_held() {
        // A change to an object from before the cell.
        let code = "df.drop(columns=['a'], inplace=True)\nx = 1\ndf['a']";
        assert_eq!(first_of(code, 3, false, &[]), None);
        // Up to the first statement that may change the state before the cell.
        let code = "import numpy as np\ndf.drop(columns=['a'], inplace=True)\nx = 1\ndf['a']";
        let first = first_of(code, 4, false, &[]).unwrap();
        assert_eq!(
            (first.code.as_str(), first.names.as_slice()),
            ("import numpy as np", &["np".to_owned()][..])
        );
        let text = error(&checked(4), code, &first).traceback[0].clone();
        assert!(
            text.contains("crane ran line 1 of this cell, which only binds new names (np), as a kernel without crane would, and held the rest of it, from line 2, before it ran (the crash is predicted at line 4)."),
            "{text}"
        );
        // Nothing before the crash, or nothing bound.
        assert_eq!(first_of("df['a']", 1, false, &[]), None);
        assert_eq!(first_of("print(1)\ndf['a']", 2, false, &[]), None);
        // A cell magic.
        assert_eq!(first_of("%%time\nx = 1\ndf['a']", 3, false, &[]), None);
    }

    #[test]
    fn with_a_snapshot_reads_of_earlier_objects_run_and_are_compared() {
        let code = "import numpy as np\ntotal = df['a'].sum()\nx = 1\ndf['missing']";
        let first = first_of(code, 4, true, &[]).unwrap();
        assert_eq!(
            first.code,
            "import numpy as np\ntotal = df['a'].sum()\nx = 1"
        );
        assert_eq!(first.names, ["np", "total", "x"]);
        assert_eq!(first.watched, ["df"]);
        // Without the comparison: only what binds new names from nothing earlier.
        let first = first_of(code, 4, false, &[]).unwrap();
        assert_eq!(first.code, "import numpy as np");
        assert!(first.watched.is_empty());
        // A loop over an earlier object looks long: not run ahead of the hold.
        let code = "import numpy as np\nparts = [row for row in df['a']]\nfor v in df['a']:\n    parts.append(v)\ndf['missing']";
        let first = first_of(code, 5, true, &[]).unwrap();
        assert_eq!(first.code, "import numpy as np");
        // A certain change stays held.
        let code = "df['b'] = 1\ndf['missing']";
        assert_eq!(first_of(code, 2, true, &[]), None);
    }

    #[test]
    fn data_read_by_subscripts_needs_no_comparison() {
        let code = "import numpy as np\nfirst = df['a']\nn = df.shape[0] + 1\ndf['missing']";
        let data = ["df".to_owned()];
        let first = first_of(code, 4, false, &data).unwrap();
        assert_eq!(first.names, ["np", "first", "n"]);
        assert!(first.watched.is_empty());
        // A method of it may change it: held from there.
        let code = "import numpy as np\nfirst = df.pop('a')\ndf['missing']";
        let first = first_of(code, 3, false, &data).unwrap();
        assert_eq!(first.names, ["np"]);
    }

    #[test]
    fn only_an_ok_reply_becomes_crane_error() {
        let error = CraneError {
            ename: HELD_ENAME.into(),
            evalue: "KeyError predicted: 0".into(),
            traceback: vec!["held".into()],
        };
        let ok = br#"{"status": "ok", "execution_count": 7, "payload": [{"source": "page"}], "user_expressions": {}}"#;
        let reply: Value = serde_json::from_slice(&as_error(ok, &error).unwrap()).unwrap();
        assert_eq!(reply["status"], "error");
        assert_eq!(reply["execution_count"], 7);
        assert_eq!(reply["ename"], "CranePredictedCrash");
        assert_eq!(reply["payload"], Value::Array(Vec::new()));
        let own = br#"{"status": "error", "ename": "ValueError", "evalue": "x", "traceback": []}"#;
        assert_eq!(as_error(own, &error), None);
    }
}
