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
//! and they do not look long (`crane_analysis::watched_prefix`): once they ran, the relay
//! compares those objects with the snapshot as for a failed cell's part, and keeps the state or
//! rolls it back. Where they do not run (no snapshot, an object without a fingerprint, they look
//! long, no automatic rollback), the held cell's message says which lines did not run, what
//! they would have bound and why ([`Refused`]): a later cell held on such a name is then no
//! surprise.

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
    /// Where statements before the crash did not run and later ones did ([`out_of_order`]):
    /// the lines (first, last) of each statement that runs and of each left out.
    pub out_of_order: Option<(StatementLines, StatementLines)>,
}

/// The lines (first, last) of statements of a cell.
pub type StatementLines = Vec<(u32, u32)>;

/// The statements of `cell` before the line `checked` predicts its crash at, up to the first
/// that may change the state before the cell, when they bind new names and read nothing from
/// before the cell that they could change, as far as the checker's history of the kernel tells
/// (`crane_analysis::bound_only_prefix`); `None` otherwise. Where a snapshot and a rollback can
/// take them back, statements that read objects from before the cell may run instead
/// ([`watched_first`]). `priors`: what the kernel's cells say of each name the cell reads
/// ([`priors`]), data whose reads change nothing included.
pub fn run_first(cell: &ParsedCell, checked: &Checked, priors: &Priors) -> Option<RunFirst> {
    let line = checked.verdict.line?;
    let prior = |name: &str| priors.prior(name);
    let (before, names) = crane_analysis::bound_only_prefix(cell.source(), line, &prior)?;
    Some(RunFirst {
        code: before.to_owned(),
        names,
        line,
        watched: Vec::new(),
        out_of_order: None,
    })
}

/// The statements before the predicted crash that bind new names once the objects they read
/// from before the cell are found unchanged (`crane_analysis::watched_prefix`), when they
/// reach further than `strict` ([`run_first`]'s) and read such objects: what runs first where a
/// snapshot and a rollback can take them back, and what a held cell's message names as not
/// run where they cannot.
pub fn watched_first(
    cell: &ParsedCell,
    checked: &Checked,
    priors: &Priors,
    strict: Option<&RunFirst>,
) -> Option<RunFirst> {
    let line = checked.verdict.line?;
    let prior = |name: &str| priors.prior(name);
    let (before, names, watched) = crane_analysis::watched_prefix(cell.source(), line, &prior)?;
    let further = strict.is_none_or(|strict| before.len() > strict.code.len());
    (!watched.is_empty() && further).then(|| RunFirst {
        code: before.to_owned(),
        names,
        line,
        watched,
        out_of_order: None,
    })
}

/// The statements before the predicted crash that run although some before them do not
/// (`crane_analysis::out_of_order`: imports and slices of data only the namespace reaches, past
/// statements that may change the state before the cell and show none of their names), when
/// they bind every name `first` (what runs otherwise) binds, and more. Nothing is compared
/// after them and nothing needs a snapshot: a kernel that cannot fork gets them too.
pub fn out_of_order(
    cell: &ParsedCell,
    checked: &Checked,
    priors: &Priors,
    first: Option<&RunFirst>,
) -> Option<RunFirst> {
    let line = checked.verdict.line?;
    let prior = |name: &str| priors.prior(name);
    let alone = |name: &str| priors.alone.get(name).cloned();
    let ran = crane_analysis::out_of_order(cell.source(), line, &prior, &alone)?;
    let further = first.is_none_or(|first| {
        ran.names.len() > first.names.len()
            && first.names.iter().all(|name| ran.names.contains(name))
    });
    further.then(|| RunFirst {
        code: ran.code,
        names: ran.names,
        line,
        watched: Vec::new(),
        out_of_order: Some((ran.ran, ran.left_out)),
    })
}

impl RunFirst {
    /// Whether these statements look long (`crane_probe::abridge::looks_long`): a held cell's
    /// first statements run only when quick.
    pub fn long(&self) -> bool {
        crane_probe::abridge::looks_long(&self.code, &Default::default())
    }

    fn lines(&self) -> u32 {
        u32::try_from(self.code.lines().count()).unwrap_or(u32::MAX)
    }
}

/// Why a held cell's first statements that read objects from before it did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotRun {
    /// No snapshots are kept, or `%crane rollback auto` is off: nothing would take them back.
    NoRollback,
    /// They look long.
    Long,
    /// crane cannot fingerprint the objects these names hold.
    Unreadable(Vec<String>),
    /// The kernel refused the snapshot before them (one that cannot be forked refuses it).
    NoSnapshot,
}

/// The first statements of a held cell that did not run, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub first: RunFirst,
    pub why: NotRun,
}

impl Refused {
    /// The line under a held cell's error: which of its first lines did not run (after those
    /// that `ran`, if any), what they would have bound, and why.
    pub fn line(&self, ran: Option<&RunFirst>) -> String {
        let last = self.first.lines();
        let (lines_ran, names_ran) = ran.map_or((0, &[][..]), |ran| (ran.lines(), &ran.names[..]));
        let names: Vec<String> = self
            .first
            .names
            .iter()
            .filter(|name| !names_ran.contains(name))
            .cloned()
            .collect();
        let (lines, they, them, read, look) = match lines_ran.saturating_add(1) {
            from if from >= last => (format!("line {last}"), "it", "it", "reads", "looks"),
            from => (
                format!("lines {from}-{last}"),
                "they",
                "them",
                "read",
                "look",
            ),
        };
        let why = match &self.why {
            NotRun::NoRollback => format!(
                "no snapshot is kept to take {them} back (`%crane snapshot-keep 0`, or `%crane rollback auto` off)"
            ),
            NotRun::Long => {
                format!("{they} {look} long, and a held cell's first lines run only when quick")
            }
            NotRun::Unreadable(names) => format!(
                "crane cannot fingerprint {} to compare after {them}",
                failed::names_listed(names)
            ),
            NotRun::NoSnapshot => format!(
                "crane could take no snapshot before the cell (a kernel that cannot be forked refuses one), so nothing would take {them} back"
            ),
        };
        let binds = match names.is_empty() {
            true => "which would bind no name".to_owned(),
            false => format!("which would bind {}", failed::names_listed(&names)),
        };
        format!(
            "crane did not run its {lines}, {binds}: {they} {read} {} from before the cell, and {why}. A kernel without crane runs {them} before the crash; fix the crash and run the cell again.",
            failed::names_listed(&self.first.watched),
        )
    }
}

/// Lines for a held cell's message: the assignments without calls before the crash that did
/// not run on their own past a statement left out, and why
/// (`crane_analysis::not_run_alone`): "Line 4 (X_wide) did not run on its own either: line 5,
/// which does not run, shows `X_wide`."
/// `first`: what runs of the cell; a statement it runs is not named, and where it runs
/// statements compared after them, nothing is.
pub fn not_run_alone(
    cell: &ParsedCell,
    checked: &Checked,
    priors: &Priors,
    first: Option<&RunFirst>,
) -> Vec<String> {
    let Some(line) = checked.verdict.line else {
        return Vec::new();
    };
    if first.is_some_and(|first| !first.watched.is_empty()) {
        return Vec::new();
    }
    // The statements from the top that run (out of order, those that run are not left out).
    let from_top = first
        .filter(|first| first.out_of_order.is_none())
        .map_or(0, RunFirst::lines);
    let prior = |name: &str| priors.prior(name);
    let alone = |name: &str| priors.alone.get(name).cloned();
    crane_analysis::not_run_alone(cell.source(), line, &prior, &alone)
        .into_iter()
        .filter(|not_run| not_run.lines.0 > from_top)
        .map(|not_run| {
            format!(
                "{} ({}) did not run on its own either: {}.",
                capitalized(&line_ranges(&[not_run.lines])),
                not_run.binds.join(", "),
                not_run.why
            )
        })
        .collect()
}

/// What crane knows of the names a held cell reads before binding them ([`priors`]).
#[derive(Debug, Clone, Default)]
pub struct Priors {
    pub names: HashMap<String, Prior>,
    /// Of the data, the arrays only the notebook's namespace reaches, with the names bound to
    /// their memory (`crane_probe::fingerprint::DataNames::alone`).
    pub alone: HashMap<String, Vec<String>>,
}

impl Priors {
    fn prior(&self, name: &str) -> Prior {
        self.names.get(name).copied().unwrap_or(Prior::Bound)
    }
}

/// What the checker's history says of each name `cell` reads before binding it
/// (`failed::priors`), with those the kernel says hold data whose reads change nothing (a numpy
/// array, a pandas object of immutable scalars: `crane_probe::fingerprint::data_names`) as
/// [`Prior::Data`]; statements that only read those by subscript, attribute or operator bind
/// new names as ones that read nothing from before the cell do. The arrays among them that
/// only the namespace reaches are named too ([`out_of_order`]).
pub async fn priors(
    cell: &ParsedCell,
    checker: &mut impl Checker,
    session: &mut KernelSession,
) -> Priors {
    let mut priors = Priors {
        names: failed::priors(cell, checker),
        alone: HashMap::new(),
    };
    let bound: Vec<String> = (priors.names.iter())
        .filter(|(_, prior)| **prior == Prior::Bound)
        .map(|(name, _)| name.clone())
        .collect();
    if bound.is_empty() {
        return priors;
    }
    let data = crane_probe::fingerprint::data_names(session, &bound, COMPARABLE_TIMEOUT)
        .await
        .unwrap_or_default();
    with_data(&mut priors.names, &data.data);
    priors.alone = data.alone;
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

/// Which of `names`, and of the globals the notebook's code among them reads, hold objects
/// without a fingerprint in the kernel (`crane_probe::fingerprint`), or are not there: the
/// comparison after the statements that read them needs every one, and would otherwise roll
/// back what it ran. All of `names` when the kernel does not answer.
pub async fn unreadable(session: &mut KernelSession, names: &[String]) -> Vec<String> {
    let Ok(found) = crane_probe::fingerprint::in_kernel(session, names, COMPARABLE_TIMEOUT).await
    else {
        return names.to_vec();
    };
    let missing = names.iter().filter(|name| {
        found
            .get(*name)
            .is_none_or(|print| print.as_deref().is_none_or(|print| print == "absent"))
    });
    let globals = found
        .iter()
        .filter(|(name, print)| print.is_none() && !names.contains(name))
        .map(|(name, _)| name);
    missing.chain(globals).cloned().collect()
}

/// How long the kernel may take to fingerprint what a held cell's first statements read.
const COMPARABLE_TIMEOUT: Duration = Duration::from_secs(30);

/// crane's error for a cell whose first statements ran: as a held cell's, saying what ran.
/// `refused`: the first statements after those that did not run, and why (a line of its own).
pub fn error(
    checked: &Checked,
    code: &str,
    first: &RunFirst,
    refused: Option<&Refused>,
) -> CraneError {
    let names = failed::names_listed(&first.names);
    if let Some((ran, left_out)) = &first.out_of_order {
        let bind = if ran.len() == 1 { "binds" } else { "bind" };
        let mut traceback = vec![format!(
            "\u{1b}[0;31m{HELD_ENAME}\u{1b}[0m: crane ran {} of this cell, which only {bind} new names ({names}), as a kernel without crane would, and held the rest of it before it ran (the crash is predicted at line {}). {} did not run: {} may change the state before the cell. The lines that ran after {} read nothing {} can reach: no name {}, and only data no other object refers to.",
            line_ranges(ran),
            first.line,
            capitalized(&line_ranges(left_out)),
            if left_out.len() == 1 { "it" } else { "they" },
            if left_out.len() == 1 { "it" } else { "the first of them" },
            if left_out.len() == 1 { "it" } else { "they" },
            if left_out.len() == 1 { "it shows" } else { "they show" },
        )];
        traceback.extend(check::held_traceback(checked, code).into_iter().skip(1));
        return CraneError {
            ename: HELD_ENAME.to_owned(),
            evalue: check::held_evalue(checked),
            traceback,
        };
    }
    let ran = first.lines();
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
    traceback.extend(refused.map(|refused| refused.line(Some(first))));
    traceback.extend(check::held_traceback(checked, code).into_iter().skip(1));
    CraneError {
        ename: HELD_ENAME.to_owned(),
        evalue: check::held_evalue(checked),
        traceback,
    }
}

/// `line 3`, `lines 1-2 and 4`: the lines of statements, each (first, last).
fn line_ranges(statements: &[(u32, u32)]) -> String {
    let mut spans: Vec<(u32, u32)> = Vec::new();
    for &(first, last) in statements {
        match spans.last_mut() {
            Some(span) if span.1 + 1 >= first => span.1 = span.1.max(last),
            _ => spans.push((first, last)),
        }
    }
    let one = spans.len() == 1 && spans[0].0 == spans[0].1;
    let parts: Vec<String> = (spans.iter())
        .map(|&(first, last)| match first == last {
            true => first.to_string(),
            false => format!("{first}-{last}"),
        })
        .collect();
    let listed = match parts.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    format!("{} {listed}", if one { "line" } else { "lines" })
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
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
                "df" | "X" | "model" => Prior::Bound,
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
        let mut priors = Priors {
            names: failed::priors(&cell, &mut Kernel),
            alone: HashMap::new(),
        };
        with_data(&mut priors.names, data);
        let checked = checked(line);
        let strict = run_first(&cell, &checked, &priors);
        let watched = compare
            .then(|| watched_first(&cell, &checked, &priors, strict.as_ref()))
            .flatten()
            .filter(|first| !first.long());
        watched.or(strict)
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
        let error = error(&checked(3), code, &first, None);
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
        let text = error(&checked(4), code, &first, None).traceback[0].clone();
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
    fn a_refusal_says_which_lines_did_not_run_and_why() {
        let code = "import numpy as np\ntotal = df['a'].sum()\nkeep = [total, df]\ndf['missing']";
        let cell = ParsedCell::parse(code);
        let priors = Priors {
            names: failed::priors(&cell, &mut Kernel),
            alone: HashMap::new(),
        };
        // Line 1 runs (it binds only a module).
        let ran = run_first(&cell, &checked(4), &priors).unwrap();
        let watched = watched_first(&cell, &checked(4), &priors, Some(&ran)).unwrap();
        assert_eq!(watched.names, ["np", "total", "keep"]);
        let refused = Refused {
            first: watched,
            why: NotRun::Unreadable(vec!["df".into()]),
        };
        assert_eq!(
            refused.line(Some(&ran)),
            "crane did not run its lines 2-3, which would bind total, keep: they read df from before the cell, and crane cannot fingerprint df to compare after them. A kernel without crane runs them before the crash; fix the crash and run the cell again."
        );
        let long = Refused {
            why: NotRun::Long,
            ..refused
        };
        let two = RunFirst {
            code: "import numpy as np\ntotal = 1".into(),
            names: vec!["np".into(), "total".into()],
            ..ran
        };
        let line = long.line(Some(&two));
        assert!(line.contains("its line 3, which would bind keep: it reads df from before the cell, and it looks long, and a held cell's first lines run only when quick."), "{line}");
        // Lines that bind nothing new say so.
        let all = RunFirst {
            code: "import numpy as np\ntotal = 1\nkeep = 2".into(),
            names: vec!["np".into(), "total".into(), "keep".into()],
            ..two
        };
        let line = long.line(Some(&RunFirst {
            code: "import numpy as np\ntotal = 1".into(),
            ..all
        }));
        assert!(
            line.starts_with("crane did not run its line 3, which would bind no name: it reads df"),
            "{line}"
        );
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

    #[test]
    fn slices_of_data_only_the_namespace_reaches_run_past_a_change() {
        let code =
            "model.compile(loss='mse')\nX_wide = X[:, :5]\nX_new = X_wide[:3]\nmodel.fit(X_wide)";
        let cell = ParsedCell::parse(code);
        let mut priors = Priors {
            names: failed::priors(&cell, &mut Kernel),
            alone: HashMap::from([("X".to_owned(), vec!["X".to_owned()])]),
        };
        with_data(&mut priors.names, &["X".to_owned()]);
        let checked = checked(4);
        assert_eq!(run_first(&cell, &checked, &priors), None);
        let first = out_of_order(&cell, &checked, &priors, None).expect("runs out of order");
        assert_eq!(first.code, "X_wide = X[:, :5]\nX_new = X_wide[:3]\n");
        assert_eq!(first.names, ["X_wide", "X_new"]);
        let text = error(&checked, code, &first, None).traceback[0].clone();
        assert!(
            text.contains("crane ran lines 2-3 of this cell, which only bind new names (X_wide, X_new), as a kernel without crane would, and held the rest of it before it ran (the crash is predicted at line 4). Line 1 did not run: it may change the state before the cell. The lines that ran after it read nothing it can reach: no name it shows, and only data no other object refers to."),
            "{text}"
        );
        // Data some other object refers to: nothing runs.
        priors.alone.clear();
        assert_eq!(out_of_order(&cell, &checked, &priors, None), None);
    }
}
