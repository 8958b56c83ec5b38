//! A held cell's statements before its crash that run although a statement before them does
//! not: a kernel without crane runs every statement before the crash, and a later cell that
//! reads what one of them bound (`X_wide = X[:, :5]` below `model.compile(...)`) would fail
//! under crane where it runs without it.
//!
//! A statement runs out of order when running it without the statements crane leaves out
//! binds what it bound after them, and when leaving them out changes nothing it bound after
//! the cell's part before the crash ran:
//! - it only binds new names (as [`super::failed_prefix`] judges the statements that run,
//!   together), and is an import or an assignment of an expression without calls
//!   ([`crate::built_from_reads`]: names, literals, attributes, subscripts, slices, operators),
//!   whose value depends on nothing but what it reads (no library state, no random generator a left-out statement moved);
//! - what it reads from before the cell is a module, a builtin, or data (`Prior::Data`) that
//!   only the notebook's namespace reaches, as the kernel says (`alone`: a numpy array no
//!   other object refers to, and no function the kernel ran names), with the names bound to
//!   that data's memory;
//! - no statement left out (before the crash, before it or after it) shows any name it reads
//!   or binds, or any name of the memory of the data it reads: a left-out statement could
//!   then reach that data only through a name it shows, and shows none. A left-out statement
//!   that is an IPython escape (a magic, a shell command) can reach anything: nothing runs
//!   out of order past one.
//!
//! Statements that fail any of these are left out too, until nothing changes. The statements
//! before the first one left out run as the statements from the top do
//! ([`super::bound_only_prefix`]), whatever a later statement left out shows: the state they
//! leave is the one a crash right after them would, which these rules do not ask of them
//! (`optimizer = Adam()` runs above a `model.compile(optimizer=optimizer)` left out, as it
//! does where no statement after that runs).

use std::collections::HashSet;

use ruff_python_ast::visitor::source_order::{self, SourceOrderVisitor};
use ruff_python_ast::{Expr, Identifier, Stmt};
use ruff_text_size::Ranged;

use super::{failed_prefix, FailedPrefix, Prior};
use crate::bounds::{parse_here, with_deep_stack};
use crate::position::LineIndex;

/// The statements of a held cell that run before its hold, some out of order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfOrder {
    /// Their source, in the cell's order, one after another.
    pub code: String,
    /// The names they bind, in order.
    pub names: Vec<String>,
    /// The lines (first, last) of each statement that runs.
    pub ran: Vec<(u32, u32)>,
    /// The lines (first, last) of each statement before the crash that does not.
    pub left_out: Vec<(u32, u32)>,
}

/// The statements of `source` before the one holding `line` that run with some before them
/// left out (the module's documentation); `None` when none runs after one left out (the
/// statements that run from the top are [`super::bound_only_prefix`]'s then), or crane cannot
/// read the cell. `alone`: for data from before the cell that only the namespace reaches, the
/// names bound to its memory.
pub fn out_of_order(
    source: &str,
    line: u32,
    prior: &(dyn Fn(&str) -> Prior + Sync),
    alone: &(dyn Fn(&str) -> Option<Vec<String>> + Sync),
) -> Option<OutOfOrder> {
    with_deep_stack(|| judge(source, line, prior, alone)?.out_of_order(prior))
}

/// A statement left out that would bind names without calling anything, and why it does not
/// run on its own: what a held cell's message says of the slices it did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotRunAlone {
    /// Its lines (first, last).
    pub lines: (u32, u32),
    /// The names it would bind.
    pub binds: Vec<String>,
    /// Why, a phrase: "line 8, which does not run, shows `X_wide`".
    pub why: String,
}

/// The assignments without calls among the statements before the crash that do not run, past
/// a statement left out, and why each does not ([`out_of_order`]'s rules); empty where crane
/// cannot read the cell or a magic is left out.
pub fn not_run_alone(
    source: &str,
    line: u32,
    prior: &(dyn Fn(&str) -> Prior + Sync),
    alone: &(dyn Fn(&str) -> Option<Vec<String>> + Sync),
) -> Vec<NotRunAlone> {
    with_deep_stack(|| {
        judge(source, line, prior, alone)
            .map(|judged| judged.not_run_alone(prior, alone))
            .unwrap_or_default()
    })
}

/// Why a statement does not run out of order.
enum Blocked {
    /// It is not an import or an assignment without calls, or crane's judge of the statements
    /// that run refuses it.
    NotPlain,
    /// A statement left out shows a name it shows.
    Shown { name: String, by: (u32, u32) },
    /// It reads data from before the cell that something but the namespace may reach.
    Shared { name: String },
    /// A statement left out shows a name bound to the memory of data it reads.
    Alias {
        name: String,
        alias: String,
        by: (u32, u32),
    },
    /// It reads a name from before the cell that is not data.
    NotData { name: String },
}

impl Blocked {
    fn phrase(&self) -> Option<String> {
        let line = |(first, last): (u32, u32)| match first == last {
            true => format!("line {first}"),
            false => format!("lines {first}-{last}"),
        };
        Some(match self {
            Blocked::NotPlain => return None,
            Blocked::Shown { name, by } => {
                format!("{}, which does not run, shows `{name}`", line(*by))
            }
            Blocked::Shared { name } => format!(
                "something besides the notebook's namespace refers to `{name}` or to memory it shares"
            ),
            Blocked::Alias { name, alias, by } => format!(
                "{}, which does not run, shows `{alias}`, a name of `{name}`'s memory",
                line(*by)
            ),
            Blocked::NotData { name } => format!(
                "it reads `{name}` from before the cell, which the kernel does not hold as an array or a frame of plain values"
            ),
        })
    }
}

/// The statements before the crash, and which run.
struct Judged<'s> {
    statements: Vec<Statement<'s>>,
    runs: Vec<bool>,
}

struct Statement<'s> {
    text: &'s str,
    lines: (u32, u32),
    /// Every identifier it shows.
    shown: HashSet<String>,
    /// The names it reads.
    reads: HashSet<String>,
    /// The names it binds, as far as it shows (one it binds without showing how counts as read).
    binds: HashSet<String>,
    escape: bool,
    /// An import, or an assignment of an expression without calls.
    plain: bool,
}

fn judge<'s>(
    source: &'s str,
    line: u32,
    prior: &(dyn Fn(&str) -> Prior + Sync),
    alone: &(dyn Fn(&str) -> Option<Vec<String>> + Sync),
) -> Option<Judged<'s>> {
    if source.trim_start().starts_with("%%") {
        return None;
    }
    let parsed = parse_here(source).ok()?;
    let module = parsed.syntax().as_module()?;
    let lines = LineIndex::new(source);
    let holding =
        (module.body.iter()).position(|stmt| lines.position(stmt.end().to_usize()).0 >= line)?;
    if lines.position(module.body[holding].start().to_usize()).0 > line {
        return None;
    }
    let statements: Vec<Statement> = module.body[..holding]
        .iter()
        .map(|stmt| statement(source, &lines, stmt))
        .collect::<Option<_>>()?;
    let mut runs: Vec<bool> = vec![true; statements.len()];
    // In passes over the statements in order, each that fails left out at once (a statement
    // judged later in the pass sees it left out), until a pass leaves none out: every statement
    // that runs then passes with exactly the others that run. A pass costs a parse of the
    // statements before each one; leaving out one per pass instead would cost a pass per
    // statement left out (seconds for a cell of a few hundred statements).
    loop {
        let mut changed = false;
        for index in 0..statements.len() {
            if runs[index] && runs_here(&statements, &runs, index, prior, alone).is_err() {
                runs[index] = false;
                changed = true;
            }
        }
        if (statements.iter().zip(&runs)).any(|(statement, runs)| !runs && statement.escape) {
            return None;
        }
        if !changed {
            break;
        }
    }
    Some(Judged { statements, runs })
}

impl Judged<'_> {
    fn out_of_order(&self, prior: &(dyn Fn(&str) -> Prior + Sync)) -> Option<OutOfOrder> {
        let (statements, runs) = (&self.statements, &self.runs);
        let first_left_out = runs.iter().position(|runs| !runs)?;
        if !runs[first_left_out..].iter().any(|runs| *runs) {
            return None;
        }
        let code = joined(statements, runs, statements.len());
        let FailedPrefix::BoundOnly { names } = failed_prefix(&code, count_lines(&code), prior)
        else {
            return None;
        };
        let lines_of = |keep: bool| {
            (statements.iter().zip(runs))
                .filter(|(_, runs)| **runs == keep)
                .map(|(statement, _)| statement.lines)
                .collect()
        };
        Some(OutOfOrder {
            code,
            names,
            ran: lines_of(true),
            left_out: lines_of(false),
        })
    }

    fn not_run_alone(
        &self,
        prior: &(dyn Fn(&str) -> Prior + Sync),
        alone: &(dyn Fn(&str) -> Option<Vec<String>> + Sync),
    ) -> Vec<NotRunAlone> {
        let Some(first_left_out) = self.runs.iter().position(|runs| !runs) else {
            return Vec::new();
        };
        (first_left_out + 1..self.statements.len())
            .filter(|&index| !self.runs[index] && self.statements[index].plain)
            .filter(|&index| !self.statements[index].binds.is_empty())
            .filter_map(|index| {
                // Judged as if it were the only one of the statements left out to run.
                let mut runs = self.runs.clone();
                runs[index] = true;
                let why = runs_here(&self.statements, &runs, index, prior, alone)
                    .err()?
                    .phrase()?;
                let statement = &self.statements[index];
                let mut binds: Vec<String> = statement.binds.iter().cloned().collect();
                binds.sort();
                Some(NotRunAlone {
                    lines: statement.lines,
                    binds,
                    why,
                })
            })
            .collect()
    }
}

/// Whether statement `index` runs, with those `runs` marks run too and the others left out.
fn runs_here(
    statements: &[Statement],
    runs: &[bool],
    index: usize,
    prior: &(dyn Fn(&str) -> Prior + Sync),
    alone: &(dyn Fn(&str) -> Option<Vec<String>> + Sync),
) -> Result<(), Blocked> {
    let statement = &statements[index];
    // Which statement left out (not this one) shows `name`.
    let shown_by = |name: &str| {
        (statements.iter().zip(runs).enumerate())
            .find(|(other, (left_out, runs))| {
                *other != index && !**runs && left_out.shown.contains(name)
            })
            .map(|(_, (left_out, _))| left_out.lines)
    };
    let left_out_before = runs[..index].iter().any(|runs| !runs);
    if !left_out_before {
        // Before every statement left out it runs in order, as the statements from the top
        // run (`super::bound_only_prefix`): the cell's state is then the one a crash after it
        // would leave, whatever the statements after it show.
        return match bind_only(statements, runs, index, prior) {
            true => Ok(()),
            false => Err(Blocked::NotPlain),
        };
    }
    if !statement.plain {
        return Err(Blocked::NotPlain);
    }
    let mut shown: Vec<&String> = statement.shown.iter().collect();
    shown.sort();
    if let Some((name, by)) = shown
        .into_iter()
        .find_map(|name| shown_by(name).map(|by| (name, by)))
    {
        return Err(Blocked::Shown {
            name: name.clone(),
            by,
        });
    }
    // What it reads from before the cell (not bound by a statement that runs before it).
    let bound_before: HashSet<&str> = (statements[..index].iter().zip(runs))
        .filter(|(_, runs)| **runs)
        .flat_map(|(statement, _)| statement.binds.iter().map(String::as_str))
        .collect();
    let mut reads: Vec<&String> = (statement.reads.iter())
        .filter(|name| !bound_before.contains(name.as_str()))
        .collect();
    reads.sort();
    if let Some(name) = reads.iter().find(|name| prior(name) == Prior::Bound) {
        return Err(Blocked::NotData {
            name: (*name).clone(),
        });
    }
    if !bind_only(statements, runs, index, prior) {
        return Err(Blocked::NotPlain);
    }
    // Data from before the cell: only what no left-out statement can reach.
    for name in reads {
        match prior(name) {
            Prior::Imported | Prior::NotBound => {}
            Prior::Data => {
                let Some(aliases) = alone(name) else {
                    return Err(Blocked::Shared { name: name.clone() });
                };
                if let Some((alias, by)) =
                    (aliases.iter()).find_map(|alias| shown_by(alias).map(|by| (alias, by)))
                {
                    return Err(Blocked::Alias {
                        name: name.clone(),
                        alias: alias.clone(),
                        by,
                    });
                }
            }
            Prior::Bound => return Err(Blocked::NotData { name: name.clone() }),
        }
    }
    Ok(())
}

/// Whether the statements that run, up to statement `index`, only bind new names
/// ([`failed_prefix`]).
fn bind_only(
    statements: &[Statement],
    runs: &[bool],
    index: usize,
    prior: &(dyn Fn(&str) -> Prior + Sync),
) -> bool {
    let code = joined(statements, runs, index + 1);
    matches!(
        failed_prefix(&code, count_lines(&code), prior),
        FailedPrefix::BoundOnly { .. }
    )
}

/// The source of the statements `runs` marks among the first `upto`, one after another.
fn joined(statements: &[Statement], runs: &[bool], upto: usize) -> String {
    let mut code = String::new();
    for (statement, _) in statements[..upto]
        .iter()
        .zip(runs)
        .filter(|(_, runs)| **runs)
    {
        code.push_str(statement.text);
        code.push('\n');
    }
    code
}

fn count_lines(code: &str) -> u32 {
    u32::try_from(code.lines().count()).unwrap_or(u32::MAX)
}

fn statement<'s>(source: &'s str, lines: &LineIndex, stmt: &Stmt) -> Option<Statement<'s>> {
    let mut names = Names::default();
    names.visit_stmt(stmt);
    let plain = match stmt {
        Stmt::Import(_) => true,
        Stmt::ImportFrom(from) => from.names.iter().all(|alias| alias.name.as_str() != "*"),
        Stmt::Assign(assign) => crate::built_from_reads(&assign.value, &|_| false),
        _ => false,
    };
    Some(Statement {
        text: source.get(stmt.start().to_usize()..stmt.end().to_usize())?,
        lines: (
            lines.position(stmt.start().to_usize()).0,
            lines.position(stmt.end().to_usize()).0,
        ),
        shown: names.shown,
        reads: names.reads,
        binds: names.binds,
        escape: names.escape,
        plain,
    })
}

#[derive(Default)]
struct Names {
    shown: HashSet<String>,
    reads: HashSet<String>,
    binds: HashSet<String>,
    escape: bool,
}

impl<'a> SourceOrderVisitor<'a> for Names {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::IpyEscapeCommand(_) => self.escape = true,
            Stmt::Import(import) => {
                for alias in &import.names {
                    let bound = match &alias.asname {
                        Some(asname) => asname.id.as_str(),
                        None => alias.name.id.split('.').next().unwrap_or_default(),
                    };
                    self.binds.insert(bound.to_owned());
                    self.shown.insert(bound.to_owned());
                }
            }
            Stmt::ImportFrom(from) => {
                for alias in &from.names {
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                    self.binds.insert(bound.id.to_string());
                }
            }
            Stmt::FunctionDef(function) => {
                self.binds.insert(function.name.id.to_string());
            }
            Stmt::ClassDef(class) => {
                self.binds.insert(class.name.id.to_string());
            }
            _ => {}
        }
        source_order::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(name) => {
                self.shown.insert(name.id.to_string());
                if name.ctx.is_load() {
                    self.reads.insert(name.id.to_string());
                } else {
                    self.binds.insert(name.id.to_string());
                }
            }
            Expr::IpyEscapeCommand(_) => self.escape = true,
            _ => {}
        }
        source_order::walk_expr(self, expr);
    }

    fn visit_identifier(&mut self, identifier: &'a Identifier) {
        self.shown.insert(identifier.id.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `np` imported; `model`, `norm` and `y` bound; `X` and `X_full` data, `X` a view of
    /// `X_full`'s memory and `T` data some other object refers to.
    fn kernel(name: &str) -> Prior {
        match name {
            "np" | "math" => Prior::Imported,
            "model" | "norm" | "y" => Prior::Bound,
            "X" | "X_full" | "T" => Prior::Data,
            _ => Prior::NotBound,
        }
    }

    fn alone(name: &str) -> Option<Vec<String>> {
        matches!(name, "X" | "X_full").then(|| vec!["X".to_owned(), "X_full".to_owned()])
    }

    fn run(source: &str, line: u32) -> Option<OutOfOrder> {
        out_of_order(source, line, &kernel, &alone)
    }

    #[test]
    fn slices_of_alone_data_run_past_a_statement_left_out() {
        let cell = "model.compile(loss='mse',\n    optimizer='sgd')\nX_wide, X_deep = X[:, :5], X[:, 2:]\nX_new = X_wide[:3] * 2\nmodel.fit((X_wide, X_deep), y)\n";
        let ran = run(cell, 5).expect("runs out of order");
        assert_eq!(ran.names, ["X_wide", "X_deep", "X_new"]);
        assert_eq!(ran.ran, [(3, 3), (4, 4)]);
        assert_eq!(ran.left_out, [(1, 2)]);
        assert_eq!(
            ran.code,
            "X_wide, X_deep = X[:, :5], X[:, 2:]\nX_new = X_wide[:3] * 2\n"
        );
        // The statements from the top that bind only new names run too, in order.
        let cell = "import math\nmodel.compile()\nr = math.pi\nmodel.fit(X, y)\n";
        let ran = run(cell, 4).expect("runs out of order");
        assert_eq!(
            (ran.names, ran.ran),
            (vec!["math".into(), "r".into()], vec![(1, 1), (3, 3)])
        );
    }

    #[test]
    fn the_statements_from_the_top_run_whatever_a_later_one_left_out_shows() {
        // The first statement binds what the one left out reads: it still runs, in order, and
        // the slices after that one run too.
        let cell = "opt = np.ones(3)\nmodel.compile(optimizer=opt)\nX_wide = X[:, :5]\nmodel.fit(X_wide, y)\n";
        let ran = run(cell, 4).expect("runs out of order");
        assert_eq!(ran.names, ["opt", "X_wide"]);
        assert_eq!(
            (ran.ran, ran.left_out),
            (vec![(1, 1), (3, 3)], vec![(2, 2)])
        );
        // Past the statement left out the names it shows still keep a slice from running.
        let cell = "opt = np.ones(3)\nmodel.compile(optimizer=opt)\nr = opt[:2]\nmodel.fit(X, y)\n";
        assert_eq!(run(cell, 4), None);
    }

    #[test]
    fn nothing_runs_out_of_order_that_a_statement_left_out_could_reach() {
        // Data some other object refers to (the model could hold it).
        assert_eq!(
            run("model.compile()\nT2 = T[:, :5]\nmodel.fit(T2, y)\n", 3),
            None
        );
        // A statement left out that shows another name of the data's memory.
        assert_eq!(
            run("X_full *= 2\nX2 = X[:, :5]\nmodel.fit(X2, y)\n", 3),
            None
        );
        // One that shows a name the statement binds, after it.
        assert_eq!(
            run(
                "model.compile()\nX2 = X[:, :5]\nnorm.adapt(X2)\nmodel.fit(X2, y)\n",
                4
            ),
            None
        );
        // One that reads what is not data.
        assert_eq!(
            run("model.compile()\nw = model.weights\nmodel.fit(X, y)\n", 3),
            None
        );
        // A call: its value may hang on state a statement left out moved.
        assert_eq!(
            run(
                "model.compile()\nr = np.random.rand(3)\nmodel.fit(X, y)\n",
                3
            ),
            None
        );
        // A magic left out can reach anything.
        assert_eq!(
            run("%run setup.py\nX2 = X[:, :5]\nmodel.fit(X2, y)\n", 3),
            None
        );
        // Nothing left out: the statements from the top are the whole answer, elsewhere.
        assert_eq!(run("X2 = X[:, :5]\nmodel.fit(X2, y)\n", 2), None);
    }

    #[test]
    fn a_slice_left_out_says_why() {
        let why = |source: &str, line: u32| {
            not_run_alone(source, line, &kernel, &alone)
                .into_iter()
                .map(|not_run| (not_run.lines, not_run.binds, not_run.why))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            why(
                "model.compile()\nX2 = X[:, :5]\nnorm.adapt(X2)\nmodel.fit(X2, y)\n",
                4
            ),
            [(
                (2, 2),
                vec!["X2".to_owned()],
                "line 3, which does not run, shows `X2`".to_owned()
            )]
        );
        assert_eq!(
            why("model.compile()\nT2 = T[:, :5]\nmodel.fit(T2, y)\n", 3)[0].2,
            "something besides the notebook's namespace refers to `T` or to memory it shares"
        );
        assert_eq!(
            why("X_full *= 2\nX2 = X[:, :5]\nmodel.fit(X2, y)\n", 3)[0].2,
            "line 1, which does not run, shows `X_full`, a name of `X`'s memory"
        );
        assert_eq!(
            why("model.compile()\nw = model.weights\nmodel.fit(X, y)\n", 3)[0].2,
            "line 1, which does not run, shows `model`"
        );
        assert_eq!(
            why("model.compile()\nn = y.shape\nmodel.fit(X, y)\n", 3)[0].2,
            "it reads `y` from before the cell, which the kernel does not hold as an array or a frame of plain values"
        );
        // A call is not such a statement; a statement that runs needs no reason.
        assert_eq!(
            why("model.compile()\nr = np.ones(3)\nmodel.fit(X, y)\n", 3),
            []
        );
        assert_eq!(
            why("model.compile()\nX2 = X[:, :5]\nmodel.fit(X2, y)\n", 3),
            []
        );
    }
}
