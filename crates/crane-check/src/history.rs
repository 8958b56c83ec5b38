//! The cells a kernel ran, as the checks of the next cells need them: what the kernel still
//! holds (the cells since its start, less those a return to a snapshot took back), each
//! cell's execution count, and what the cells taken back had bound, so that a name a rollback
//! took away is said to be gone for that reason, not bound by no cell.

use crane_analysis::{BindingKind, NameState, Prior};
use crane_detect::{ExecutedCells, Finding};

use crate::kernel::KernelEvent;

/// The kernel's history as [`KernelEvent`]s told it.
#[derive(Default)]
pub struct KernelHistory {
    /// The cells whose effects the kernel holds, in execution order.
    executed: ExecutedCells,
    /// Each cell of `executed`: its execution count, and whether it raised.
    ran: Vec<Ran>,
    /// Cells taken back, in the order they ran.
    taken_back: Vec<TakenBack>,
    /// What the cells crane held before they ran would have bound (name, line, the line's
    /// text), the latest last; the oldest go past [`HELD_KEPT`].
    held: Vec<Vec<(String, u32, String)>>,
}

/// How many held cells the history remembers the bindings of.
const HELD_KEPT: usize = 50;

#[derive(Clone, Copy)]
struct Ran {
    count: usize,
    raised: bool,
    /// Its place among every cell the kernel ran, taken back or not (execution counts repeat
    /// after a rollback).
    order: usize,
}

/// A cell a return to a snapshot took back, the names it bound (with their lines) and the
/// names it read.
struct TakenBack {
    ran: Ran,
    bound: Vec<(String, u32)>,
    read: Vec<String>,
}

impl KernelHistory {
    /// The cells whose effects the kernel holds.
    pub fn executed(&self) -> &ExecutedCells {
        &self.executed
    }

    /// Take one more event into account; a cell that ran is read from the parse it comes
    /// with.
    pub fn apply(&mut self, event: KernelEvent) {
        match event {
            KernelEvent::Ran {
                cell,
                execution_count,
                raised,
            } => {
                let count =
                    execution_count.unwrap_or_else(|| self.ran.last().map_or(0, |ran| ran.count));
                self.executed.push_parsed(&cell);
                let order = self.ran.len() + self.taken_back.len();
                self.ran.push(Ran {
                    count,
                    raised,
                    order,
                });
            }
            KernelEvent::Held { cell } => {
                let Ok(analysis) = crane_analysis::analyze_parsed(&cell) else {
                    return;
                };
                let lines: Vec<&str> = cell.source().lines().collect();
                let bound = analysis
                    .bindings
                    .into_iter()
                    .map(|binding| {
                        let index = usize::try_from(binding.line.saturating_sub(1)).unwrap_or(0);
                        let text = lines.get(index).map_or("", |line| line.trim());
                        (binding.name, binding.line, text.to_owned())
                    })
                    .collect();
                if self.held.len() >= HELD_KEPT {
                    self.held.remove(0);
                }
                self.held.push(bound);
            }
            KernelEvent::Returned { next_count } => {
                let Some(first) = self.ran.iter().position(|ran| ran.count >= next_count) else {
                    return;
                };
                let sources = self.executed.sources().to_vec();
                for (source, ran) in sources[first..].iter().zip(&self.ran[first..]) {
                    let (bound, read) = crane_analysis::analyze_cell(source)
                        .map(|analysis| {
                            let bound = (analysis.bindings.into_iter())
                                .map(|binding| (binding.name, binding.line))
                                .collect();
                            let read = analysis.reads.into_iter().map(|read| read.name).collect();
                            (bound, read)
                        })
                        .unwrap_or_default();
                    self.taken_back.push(TakenBack {
                        ran: *ran,
                        bound,
                        read,
                    });
                }
                self.ran.truncate(first);
                self.executed = ExecutedCells::new(&sources[..first]);
            }
        }
    }

    /// What the cells the kernel holds say of `name` ([`crane_analysis::failed_prefix`]).
    pub fn prior(&self, name: &str) -> Prior {
        let bindings = self.executed.bindings();
        match bindings.names.get(name) {
            Some(NameState::Bound {
                kind: BindingKind::Import,
                ..
            }) => Prior::Imported,
            Some(_) => Prior::Bound,
            // A star import or a cell crane cannot read may have bound it.
            None if !bindings.star_imports.is_empty() || !bindings.unparsed_cells.is_empty() => {
                Prior::Bound
            }
            None => Prior::NotBound,
        }
    }

    /// Where `name` was last bound, as a clause: "In \[7\] bound it on line 2", "it was bound
    /// by In \[55\] (line 1), which raised and was rolled back", "no cell run in this kernel
    /// bound it".
    pub fn where_bound(&self, name: &str) -> String {
        let count = |cell: usize| self.ran.get(cell).map_or(0, |ran| ran.count);
        match self.executed.bindings().names.get(name) {
            Some(NameState::Bound { at, .. }) => {
                return format!("In [{}] bound it on line {}", count(at.cell), at.line)
            }
            Some(NameState::Deleted { at, .. }) => {
                return format!("In [{}] deleted it on line {}", count(at.cell), at.line)
            }
            None => {}
        }
        let taken = self.taken_back.iter().rev().find_map(|taken| {
            let (_, line) = taken.bound.iter().rev().find(|(bound, _)| bound == name)?;
            Some((taken.ran, *line))
        });
        match taken {
            Some((ran, line)) if ran.raised => format!(
                "it was bound by In [{}] (line {line}), which raised and was rolled back",
                ran.count
            ),
            Some((ran, line)) => format!(
                "it was bound by In [{}] (line {line}), which an undo took back",
                ran.count
            ),
            None => {
                let held = self
                    .held
                    .iter()
                    .rev()
                    .find_map(|bound| bound.iter().rev().find(|(held, _, _)| held == name));
                match held {
                    Some((_, line, text)) => format!(
                        "no cell run in this kernel bound it; a cell crane held before it ran would have, on its line {line} (`{}`)",
                        shortened(text)
                    ),
                    None => "no cell run in this kernel bound it".to_owned(),
                }
            }
        }
    }

    /// What a rule's missing attribute says of its object's name: where it was last bound, and
    /// the last cell taken back since that used it, which may have set what is missing now:
    /// "In \[1\] bound it on line 5; In \[3\], which used it after that, raised and was rolled
    /// back".
    fn where_object(&self, name: &str) -> String {
        let bound = self.where_bound(name);
        let since = match self.executed.bindings().names.get(name) {
            Some(NameState::Bound { at, .. }) => self.ran.get(at.cell).map_or(0, |ran| ran.order),
            _ => 0,
        };
        let used = (self.taken_back.iter().rev())
            .find(|taken| taken.ran.order >= since && taken.read.iter().any(|read| read == name));
        match used {
            Some(taken) => format!(
                "{bound}; In [{}], which used it after that, {}",
                taken.ran.count,
                match taken.ran.raised {
                    true => "raised and was rolled back",
                    false => "was taken back by an undo",
                }
            ),
            None => bound,
        }
    }

    /// Say in each `NameError` finding where its name was last bound (or that no cell bound
    /// it): a rule's (`` `x` is not defined: ...``) is said again with that, a dry run's gets
    /// it added; and in a rule's missing attribute where its object's name was bound, with the
    /// cell taken back since that used it ([`Self::where_object`]).
    pub fn explain_names(&self, findings: &mut [Finding]) {
        for finding in findings
            .iter_mut()
            .filter(|finding| finding.crash && finding.exception.as_deref() == Some("NameError"))
        {
            if let Some(name) = rule_name(&finding.diagnosis) {
                finding.diagnosis = format!(
                    "`{name}` is not defined: {}; it is not a builtin and the cell does not bind it before line {}.",
                    self.where_bound(&name),
                    finding.line.unwrap_or_default()
                );
            } else if let Some(name) = python_name(&finding.diagnosis) {
                let clause = self.where_bound(&name);
                finding.diagnosis = format!("{} (`{name}`: {clause})", finding.diagnosis);
            }
        }
        // A rule's missing attribute: where its object's name was bound, and what took back a
        // cell that used it.
        for finding in findings.iter_mut().filter(|finding| {
            finding.crash && finding.exception.as_deref() == Some("AttributeError")
        }) {
            if let Some(name) = attribute_owner(&finding.diagnosis) {
                let clause = self.where_object(&name);
                let diagnosis = finding.diagnosis.trim_end_matches('.');
                finding.diagnosis = format!("{diagnosis} (`{name}`: {clause}).");
            }
        }
    }
}

/// A line of code as a clause quotes it: its first 60 characters.
fn shortened(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

/// The name of rule NB001's `` `x` is not defined: ...``.
fn rule_name(diagnosis: &str) -> Option<String> {
    let rest = diagnosis.strip_prefix('`')?;
    let (name, after) = rest.split_once('`')?;
    after
        .starts_with(" is not defined")
        .then(|| name.to_owned())
}

/// The name a rule's missing attribute is looked up on: the first name of `` `model.layer` ``
/// in `` `model.layer` (Dense) has no attribute `x`. ``.
fn attribute_owner(diagnosis: &str) -> Option<String> {
    let rest = diagnosis.strip_prefix('`')?;
    let (label, after) = rest.split_once('`')?;
    if !after.contains(" has no attribute `") {
        return None;
    }
    let name = label.split(['.', '[']).next()?;
    let identifier = name
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    identifier.then(|| name.to_owned())
}

/// The name of Python's `name 'x' is not defined`.
fn python_name(diagnosis: &str) -> Option<String> {
    let start = diagnosis.find("name '")? + "name '".len();
    let (name, after) = diagnosis[start..].split_once('\'')?;
    after
        .starts_with(" is not defined")
        .then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crane_analysis::ParsedCell;
    use std::sync::Arc;

    fn ran(code: &str, count: usize, raised: bool) -> KernelEvent {
        KernelEvent::Ran {
            cell: std::sync::Arc::new(crane_analysis::ParsedCell::parse(code)),
            execution_count: Some(count),
            raised,
        }
    }

    fn name_error(diagnosis: &str) -> Finding {
        Finding {
            detector: crane_detect::DetectorKind::Rules,
            rule: None,
            crash: true,
            exception: Some("NameError".into()),
            line: Some(1),
            diagnosis: diagnosis.into(),
            evidence: Vec::new(),
            confidence: 1.0,
            status: crane_detect::FindingStatus::Proven,
        }
    }

    #[test]
    fn a_name_a_held_cell_would_have_bound_says_so() {
        let mut history = KernelHistory::default();
        history.apply(KernelEvent::Held {
            cell: Arc::new(ParsedCell::parse(
                "import numpy as np\nwide, deep = X[:, :5], X[:, 2:]\nnorm.adapt(wide)",
            )),
        });
        assert_eq!(
            history.where_bound("wide"),
            "no cell run in this kernel bound it; a cell crane held before it ran would have, on its line 2 (`wide, deep = X[:, :5], X[:, 2:]`)"
        );
        assert_eq!(
            history.where_bound("other"),
            "no cell run in this kernel bound it"
        );
    }

    #[test]
    fn a_rolled_back_cell_is_no_longer_held_but_named() {
        let mut history = KernelHistory::default();
        history.apply(ran("import pandas as pd", 1, false));
        history.apply(ran(
            "obj1 = pd.Series([1])\nobj2 = obj1\nobj2[[9]]",
            2,
            true,
        ));
        assert_eq!(history.prior("obj1"), Prior::Bound);
        history.apply(KernelEvent::Returned { next_count: 2 });
        assert_eq!(history.executed().len(), 1);
        assert_eq!(history.prior("pd"), Prior::Imported);
        assert_eq!(history.prior("obj1"), Prior::NotBound);
        assert_eq!(
            history.where_bound("obj1"),
            "it was bound by In [2] (line 1), which raised and was rolled back"
        );
        assert_eq!(history.where_bound("pd"), "In [1] bound it on line 1");
        assert_eq!(
            history.where_bound("zzz"),
            "no cell run in this kernel bound it"
        );
        // The next cell gets the rolled-back cell's number again.
        history.apply(ran("x = 1", 2, false));
        history.apply(ran("y = 2\ndel x", 3, false));
        assert_eq!(history.where_bound("x"), "In [3] deleted it on line 2");
        // An undo of two cells.
        history.apply(KernelEvent::Returned { next_count: 2 });
        assert_eq!(
            history.where_bound("y"),
            "it was bound by In [3] (line 1), which an undo took back"
        );
        // A fresh start takes back every cell.
        history.apply(KernelEvent::Returned { next_count: 1 });
        assert!(history.executed().is_empty());
        assert_eq!(history.prior("pd"), Prior::NotBound);
    }

    #[test]
    fn a_missing_attribute_says_where_its_object_was_bound_and_what_was_taken_back() {
        let mut history = KernelHistory::default();
        history.apply(ran("class P:\n    pass\np = P()", 1, false));
        history.apply(ran("p.extra = 1\n1 / 0", 2, true));
        history.apply(KernelEvent::Returned { next_count: 2 });
        let attribute = |diagnosis: &str| Finding {
            exception: Some("AttributeError".into()),
            ..name_error(diagnosis)
        };
        let mut findings = vec![
            attribute("`p` (__main__.P) has no attribute `extra`."),
            attribute("`q.inner` (__main__.P) has no attribute `x`."),
            attribute("'P' object has no attribute 'extra'"),
        ];
        history.explain_names(&mut findings);
        assert_eq!(
            findings[0].diagnosis,
            "`p` (__main__.P) has no attribute `extra` (`p`: In [1] bound it on line 3; In [2], which used it after that, raised and was rolled back)."
        );
        assert_eq!(
            findings[1].diagnosis,
            "`q.inner` (__main__.P) has no attribute `x` (`q`: no cell run in this kernel bound it)."
        );
        assert_eq!(findings[2].diagnosis, "'P' object has no attribute 'extra'");
        // Bound again after the cell taken back: that cell no longer counts.
        history.apply(ran("p = P()", 2, false));
        let mut findings = vec![attribute("`p` (__main__.P) has no attribute `extra`.")];
        history.explain_names(&mut findings);
        assert_eq!(
            findings[0].diagnosis,
            "`p` (__main__.P) has no attribute `extra` (`p`: In [2] bound it on line 1)."
        );
    }

    #[test]
    fn name_errors_say_where_the_name_was_bound() {
        let mut history = KernelHistory::default();
        history.apply(ran("obj1 = 1\n1 / 0", 55, true));
        history.apply(KernelEvent::Returned { next_count: 55 });
        let mut findings = vec![
            name_error("`obj1` is not defined: it is not a builtin, no executed cell binds it and the cell does not bind it before line 1."),
            name_error("NameError: name 'obj1' is not defined"),
            name_error("`zz` is not defined: ..."),
        ];
        history.explain_names(&mut findings);
        assert_eq!(
            findings[0].diagnosis,
            "`obj1` is not defined: it was bound by In [55] (line 1), which raised and was rolled back; it is not a builtin and the cell does not bind it before line 1."
        );
        assert_eq!(
            findings[1].diagnosis,
            "NameError: name 'obj1' is not defined (`obj1`: it was bound by In [55] (line 1), which raised and was rolled back)"
        );
        assert!(
            findings[2]
                .diagnosis
                .starts_with("`zz` is not defined: no cell run in this kernel bound it;"),
            "{}",
            findings[2].diagnosis
        );
    }
}
