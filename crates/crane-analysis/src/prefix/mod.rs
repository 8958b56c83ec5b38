//! What the part of a cell that ran before it raised can have done to the state that existed
//! before the cell: the question a kernel that can roll a failed cell back must answer to know
//! whether running the fixed cell again would see what the cell saw the first time.
//!
//! The statements that ran are the cell's top-level statements up to the one holding the
//! failing line (the first `Cell In[N], line L` frame of IPython's traceback), that one
//! included; inside compound statements every branch counts as run. They leave the state
//! before the cell as it was when they only bind names the cell does not read before binding
//! them, to values built from literals, names the cell bound itself, builtins, and modules
//! (and what modules define) the kernel had imported. Why that last part holds: a module's
//! function called with fresh arguments reaches the user's objects only through the arguments
//! it is given, or through the interpreter's introspection (`__main__`, frames, `gc`), which
//! ordinary library code does not use on the user's namespace; what such a call can change
//! is the library's own state (matplotlib's style, a random generator's seed), which a re-run
//! of the cell sets again the same way and which the kernel keeps without crane too. For the
//! same reason a library's setting set to a constant (`os.environ['K'] = '1'`,
//! `pd.options.display.max_rows = 5`, `plt.rcParams['figure.dpi'] = 100`) leaves it alone.
//!
//! Anything else counts as a possible change: rebinding a name the cell reads before binding
//! it (`X = X[:, 1:]`), augmented assignment or `del` of a name from before the cell, an item
//! or attribute assignment on anything the cell did not build (`d['k'] = v`, `obj.attr = v`)
//! other than a constant into a module's object,
//! reading a name from before the cell other than a module or a builtin (so a method call on
//! it, `df.drop(..., inplace=True)`, `lst.append(x)`, `model.fit(X)`, or a call taking it as an
//! argument), calling a function the cell defined (its body may do any of these), and every
//! statement or magic this walk does not know (`global`, `class`, star imports, shell
//! commands, magics other than `%matplotlib`). The answer errs only towards a possible change.
//!
//! One kind of object from before the cell is read without changing it by contract: data
//! (`Prior::Data`, as the kernel says: a numpy array or a pandas series, frame or index of
//! immutable scalars). Its subscripts, attributes and operators (`X[:, :5]`, `df.shape`,
//! `X * 2`) build new values or views of it; a name bound to what may be such a view is read
//! the same way and never written into. Calling its methods, handing it (or a view) to a
//! function other than a few builtins that only show it (`print`, `len`, `str`, ...), iterating
//! over it, or writing into it counts as a possible change.
//!
//! Reads of objects from before the cell are where syntax cannot tell: `make_pipeline(prep, ...)`
//! leaves `prep` as it was, `pipe.fit(X)` fits it in place. [`failed_prefix_watching`] leaves
//! them to evidence: it answers which names' objects must be found unchanged (the proxy compares
//! the kernel's with the snapshot's before the cell), and counts everything else as above.

use ruff_python_ast::Stmt;
use ruff_text_size::Ranged;

use crate::bounds::{parse_here, with_deep_stack};
use crate::position::LineIndex;

use walk::Walk;

mod out_of_order;
#[cfg(test)]
mod tests;
mod walk;

pub use out_of_order::{not_run_alone, out_of_order, NotRunAlone, OutOfOrder};

/// What the kernel's executed cells say of a name the cell reads without binding it first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prior {
    /// Last bound by an import (`import numpy as np`, `from sklearn import datasets`): a
    /// module or something a module defines.
    Imported,
    /// No executed cell bound it: a builtin when Python has one by that name.
    NotBound,
    /// Bound by anything else (or not known).
    Bound,
    /// Bound by anything else, and holding a numpy array or a pandas series, frame or index
    /// with no object dtype, as the kernel says: reading it by subscript, attribute or
    /// operator leaves it as it was (the libraries' contract), and what such a read gives holds
    /// numbers, not objects the cell could change through it, except the data itself (a view).
    Data,
}

/// What the statements of a failed cell that ran can have done to the state before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailedPrefix {
    /// They only bound these names (in order), none of which the cell reads before binding it:
    /// the state the cell read is as it was, and running the cell again sees it.
    BoundOnly { names: Vec<String> },
    /// They only bound these names, and read the objects `watched` names from before the cell
    /// (a method called on one, one given to a function, a pipeline built around one):
    /// the state is as it was when those objects are, which only evidence tells (the kernel's
    /// objects compared with its snapshot's). Only [`failed_prefix_watching`] answers this.
    BoundIfUnchanged {
        names: Vec<String>,
        watched: Vec<String>,
    },
    /// They may have changed a binding or an object from before the cell that the cell reads,
    /// or crane cannot tell: `line` is where, `reason` says what.
    MayHaveChanged { line: u32, reason: String },
}

/// What the top-level statements of `source` up to the one holding `failing_line` (1-based)
/// can have done to the state that existed before the cell (see the module's documentation).
/// `prior` says how the executed cells left a name the cell reads without binding it first.
///
/// Reading a module's attributes and calling its functions with only fresh arguments counts
/// as leaving that state alone: such a call reaches the user's objects only through what it is
/// given (or introspection of `__main__` and frames, which libraries do not turn on the user's
/// namespace); what it may change is the library's own state, which running the cell again
/// sets the same way, and which a kernel without crane keeps too.
pub fn failed_prefix(
    source: &str,
    failing_line: u32,
    prior: &(dyn Fn(&str) -> Prior + Sync),
) -> FailedPrefix {
    with_deep_stack(|| failed_prefix_here(source, failing_line, prior, false))
}

/// As [`failed_prefix`], but a read of a name from before the cell (other than a module's or
/// a builtin's) is no longer a possible change by itself: the statements are
/// [`FailedPrefix::BoundIfUnchanged`] when nothing else in them may change that state, and the
/// caller compares the objects those names hold with the state before the cell. Everything
/// that changes it for certain or reaches it by other ways still counts: assigning into such an
/// object, rebinding or deleting such a name, calling a function the cell defined, the
/// namespace's builtins (`globals()`, `eval`), magics.
pub fn failed_prefix_watching(
    source: &str,
    failing_line: u32,
    prior: &(dyn Fn(&str) -> Prior + Sync),
) -> FailedPrefix {
    with_deep_stack(|| failed_prefix_here(source, failing_line, prior, true))
}

fn failed_prefix_here(
    source: &str,
    failing_line: u32,
    prior: &(dyn Fn(&str) -> Prior + Sync),
    watching: bool,
) -> FailedPrefix {
    let unsure = |reason: &str| FailedPrefix::MayHaveChanged {
        line: failing_line,
        reason: reason.to_owned(),
    };
    if source.trim_start().starts_with("%%") {
        return unsure("a cell magic");
    }
    let Ok(analysis) = crate::analyzer::analyze(source) else {
        return unsure("crane cannot read the cell");
    };
    let Ok(parsed) = parse_here(source) else {
        return unsure("crane cannot read the cell");
    };
    let Some(module) = parsed.syntax().as_module() else {
        return unsure("crane cannot read the cell");
    };
    let lines = LineIndex::new(source);
    let line_of = |stmt: &Stmt| lines.position(stmt.start().to_usize()).0;
    let ran: Vec<&Stmt> = module
        .body
        .iter()
        .take_while(|stmt| line_of(stmt) <= failing_line)
        .collect();
    let holds_line = ran
        .last()
        .is_some_and(|last| lines.position(last.end().to_usize()).0 >= failing_line);
    if !holds_line {
        return unsure("the failing line is not in a statement of the cell");
    }
    let read_first = analysis.cell.reads.iter().map(|r| r.name.clone()).collect();
    let mut walk = Walk::new(&lines, prior, read_first, watching);
    for stmt in ran {
        walk.stmt(stmt);
    }
    walk.outcome()
}

/// The source of the top-level statements of `source` before the one holding `line` (1-based),
/// as the cell has them (magics and comments among them included): what a kernel runs of the
/// cell before it reaches that line. `None` when no statement comes before it, the line is in
/// no statement, the cell is a cell magic, or crane cannot read it.
pub fn statements_before(source: &str, line: u32) -> Option<&str> {
    if source.trim_start().starts_with("%%") {
        return None;
    }
    let end = with_deep_stack(|| {
        let parsed = parse_here(source).ok()?;
        let module = parsed.syntax().as_module()?;
        let lines = LineIndex::new(source);
        let holding = module
            .body
            .iter()
            .position(|stmt| lines.position(stmt.end().to_usize()).0 >= line)?;
        if lines.position(module.body[holding].start().to_usize()).0 > line {
            return None;
        }
        let before = module.body[..holding].last()?;
        Some(before.end().to_usize())
    })?;
    source.get(..end)
}

/// The longest run of `source`'s top-level statements before the one holding `line` that only
/// bind new names (as [`failed_prefix`] judges them, with `prior`): their source, up to the end
/// of the last, and the names they bind, in order. Nothing of the cell ran before them, so run
/// again in the state before the cell they do what they did first. `None` when the cell opens
/// with a statement that may change that state, binds nothing, or cannot be read.
pub fn bound_only_prefix<'s>(
    source: &'s str,
    line: u32,
    prior: &(dyn Fn(&str) -> Prior + Sync),
) -> Option<(&'s str, Vec<String>)> {
    longest_prefix(source, line, |before, last| {
        failed_prefix(before, last, prior)
    })
    .map(|(before, names, _)| (before, names))
}

/// As [`bound_only_prefix`], judged by [`failed_prefix_watching`]: the longest run of the
/// statements before the one holding `line` that only bind new names once the objects they read
/// from before the cell are found unchanged; their source, the names they bind and those they
/// read (empty when they read none). `None` as for [`bound_only_prefix`].
pub fn watched_prefix<'s>(
    source: &'s str,
    line: u32,
    prior: &(dyn Fn(&str) -> Prior + Sync),
) -> Option<(&'s str, Vec<String>, Vec<String>)> {
    longest_prefix(source, line, |before, last| {
        failed_prefix_watching(before, last, prior)
    })
}

/// The longest run of the statements before the one holding `line` that `judge` finds bind new
/// names (and read the objects it names, if any): cut before each possible change it finds.
fn longest_prefix(
    source: &str,
    line: u32,
    judge: impl Fn(&str, u32) -> FailedPrefix,
) -> Option<(&str, Vec<String>, Vec<String>)> {
    let mut before = statements_before(source, line)?;
    loop {
        let last = u32::try_from(before.lines().count()).ok()?;
        match judge(before, last) {
            FailedPrefix::BoundOnly { names } if !names.is_empty() => {
                return Some((before, names, Vec::new()))
            }
            FailedPrefix::BoundIfUnchanged { names, watched } if !names.is_empty() => {
                return Some((before, names, watched))
            }
            FailedPrefix::BoundOnly { .. } | FailedPrefix::BoundIfUnchanged { .. } => return None,
            FailedPrefix::MayHaveChanged { line: changed, .. } => {
                before = statements_before(before, changed)?;
            }
        }
    }
}
