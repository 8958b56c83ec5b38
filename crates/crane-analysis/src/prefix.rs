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

use std::collections::HashSet;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Comprehension, Expr, ExprContext, IpyEscapeKind, Parameters, Stmt};
use ruff_text_size::Ranged;

use crate::bounds::{parse_here, with_deep_stack};
use crate::magics::split_name;
use crate::position::LineIndex;

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

/// Magics that change nothing a cell reads (the plotting backend).
const HARMLESS_MAGICS: &[&str] = &["matplotlib"];

/// Builtins that only read what they are given and return a new value that holds none of it
/// (a string, a number, a type): data from before the cell handed to one stays as it was.
const SHOWING_BUILTINS: &[&str] = &[
    "print",
    "len",
    "repr",
    "str",
    "format",
    "type",
    "isinstance",
    "float",
    "int",
    "bool",
];

/// Builtins that reach the namespace or run arbitrary code: `globals()['df']`, `eval('df')`.
const REACHING_BUILTINS: &[&str] = &[
    "In",
    "Out",
    "__import__",
    "breakpoint",
    "compile",
    "delattr",
    "eval",
    "exec",
    "exit",
    "get_ipython",
    "getattr",
    "globals",
    "locals",
    "quit",
    "setattr",
    "vars",
];

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
    let mut walk = Walk {
        lines: &lines,
        prior,
        read_first: analysis.cell.reads.iter().map(|r| r.name.clone()).collect(),
        owned: HashSet::new(),
        modules: HashSet::new(),
        functions: HashSet::new(),
        scoped: Vec::new(),
        bound: Vec::new(),
        failure: None,
        constant_value: false,
        watching,
        watched: Vec::new(),
        views: HashSet::new(),
    };
    for stmt in ran {
        walk.stmt(stmt);
        if let Some((line, reason)) = walk.failure {
            return FailedPrefix::MayHaveChanged { line, reason };
        }
    }
    if walk.watched.is_empty() {
        FailedPrefix::BoundOnly { names: walk.bound }
    } else {
        FailedPrefix::BoundIfUnchanged {
            names: walk.bound,
            watched: walk.watched,
        }
    }
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
    let mut before = statements_before(source, line)?;
    loop {
        let last = u32::try_from(before.lines().count()).ok()?;
        match failed_prefix(before, last, prior) {
            FailedPrefix::BoundOnly { names } if !names.is_empty() => return Some((before, names)),
            FailedPrefix::BoundOnly { .. } => return None,
            FailedPrefix::BoundIfUnchanged { .. } => return None,
            FailedPrefix::MayHaveChanged { line: changed, .. } => {
                before = statements_before(before, changed)?;
            }
        }
    }
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
    let mut before = statements_before(source, line)?;
    loop {
        let last = u32::try_from(before.lines().count()).ok()?;
        match failed_prefix_watching(before, last, prior) {
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

/// A literal, or a tuple, list, set or dict of literals (`'1'`, `-5`, `(10, 6)`, `None`).
fn is_constant(expr: &Expr) -> bool {
    match expr {
        Expr::NumberLiteral(_)
        | Expr::StringLiteral(_)
        | Expr::BytesLiteral(_)
        | Expr::BooleanLiteral(_)
        | Expr::NoneLiteral(_)
        | Expr::EllipsisLiteral(_) => true,
        Expr::UnaryOp(unary) => is_constant(&unary.operand),
        Expr::Tuple(tuple) => tuple.elts.iter().all(is_constant),
        Expr::List(list) => list.elts.iter().all(is_constant),
        Expr::Set(set) => set.elts.iter().all(is_constant),
        Expr::Dict(dict) => dict
            .items
            .iter()
            .all(|item| item.key.as_ref().is_none_or(is_constant) && is_constant(&item.value)),
        _ => false,
    }
}

struct Walk<'w> {
    lines: &'w LineIndex,
    prior: &'w (dyn Fn(&str) -> Prior + Sync),
    /// Names the cell reads before it binds them (its reads from the kernel).
    read_first: HashSet<String>,
    /// Names the cell bound to values it built.
    owned: HashSet<String>,
    /// Names the cell bound to modules or what they define (imports, references into them).
    modules: HashSet<String>,
    /// Functions the cell defined: calling one runs a body this walk does not follow.
    functions: HashSet<String>,
    /// Parameters of lambdas and targets of comprehensions around the expression walked.
    scoped: Vec<HashSet<String>>,
    bound: Vec<String>,
    failure: Option<(u32, String)>,
    /// The assignment walked assigns a constant (`os.environ['K'] = '1'`).
    constant_value: bool,
    /// Reads of names from before the cell are watched, not failed ([`failed_prefix_watching`]).
    watching: bool,
    watched: Vec<String>,
    /// Names the cell bound to what may be data from before the cell or a view of it
    /// (`left = X[:, :5]`): read as that data is, never changed.
    views: HashSet<String>,
}

impl Walk<'_> {
    fn fail(&mut self, node: &impl Ranged, reason: String) {
        if self.failure.is_none() {
            let line = self.lines.position(node.start().to_usize()).0;
            self.failure = Some((line, reason));
        }
    }

    fn stmts(&mut self, body: &[Stmt]) {
        for stmt in body {
            self.stmt(stmt);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        if self.failure.is_some() {
            return;
        }
        match stmt {
            Stmt::Expr(expr) => self.expr(&expr.value),
            Stmt::Assign(assign) => {
                self.expr(&assign.value);
                if self.aliases_data(&assign.value) {
                    for target in &assign.targets {
                        self.view_target(target);
                    }
                    return;
                }
                let owned = self.builds(&assign.value);
                self.constant_value = is_constant(&assign.value);
                for target in &assign.targets {
                    self.target(target, owned);
                }
                self.constant_value = false;
            }
            Stmt::AnnAssign(assign) => {
                self.expr(&assign.annotation);
                if let Some(value) = &assign.value {
                    self.expr(value);
                    if self.aliases_data(value) {
                        self.view_target(&assign.target);
                    } else {
                        let owned = self.builds(value);
                        self.target(&assign.target, owned);
                    }
                }
            }
            Stmt::AugAssign(assign) => {
                self.expr(&assign.value);
                match &*assign.target {
                    Expr::Name(name) if self.owned.contains(name.id.as_str()) => {}
                    Expr::Name(name) => self.fail(
                        stmt,
                        format!(
                            "`{} {}=` changes a name from before the cell",
                            name.id,
                            assign.op.as_str()
                        ),
                    ),
                    target => self.item_target(target),
                }
            }
            Stmt::Delete(delete) => {
                for target in &delete.targets {
                    match target {
                        Expr::Name(name) if self.is_cell_name(name.id.as_str()) => {}
                        _ => self.fail(stmt, "`del` of something from before the cell".into()),
                    }
                }
            }
            Stmt::Import(import) => {
                for alias in &import.names {
                    let bound = match &alias.asname {
                        Some(name) => name.as_str(),
                        None => alias.name.split('.').next().unwrap_or_default(),
                    };
                    if bound == "__main__" || alias.name.as_str() == "__main__" {
                        self.fail(stmt, "imports `__main__`, the kernel's namespace".into());
                    }
                    self.bind(stmt, bound, Binds::Module);
                }
            }
            Stmt::ImportFrom(import) => {
                if import
                    .module
                    .as_ref()
                    .is_some_and(|m| m.as_str() == "__main__")
                {
                    self.fail(
                        stmt,
                        "imports from `__main__`, the kernel's namespace".into(),
                    );
                }
                for alias in &import.names {
                    if alias.name.as_str() == "*" {
                        self.fail(stmt, "a star import binds names crane cannot list".into());
                        return;
                    }
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                    self.bind(stmt, bound.as_str(), Binds::Module);
                }
            }
            Stmt::FunctionDef(def) => {
                if !def.decorator_list.is_empty() || def.type_params.is_some() || def.is_async {
                    self.fail(stmt, "a decorated, generic or async function".into());
                    return;
                }
                self.parameters(&def.parameters);
                if let Some(returns) = &def.returns {
                    self.expr(returns);
                }
                self.bind(stmt, def.name.as_str(), Binds::Function);
            }
            Stmt::For(for_stmt) => {
                if for_stmt.is_async {
                    self.fail(stmt, "an async loop".into());
                    return;
                }
                self.expr(&for_stmt.iter);
                self.refuse_data(&for_stmt.iter, "iterates over");
                self.target(&for_stmt.target, true);
                self.stmts(&for_stmt.body);
                self.stmts(&for_stmt.orelse);
            }
            Stmt::While(while_stmt) => {
                self.expr(&while_stmt.test);
                self.stmts(&while_stmt.body);
                self.stmts(&while_stmt.orelse);
            }
            Stmt::If(if_stmt) => {
                self.expr(&if_stmt.test);
                self.stmts(&if_stmt.body);
                for clause in &if_stmt.elif_else_clauses {
                    if let Some(test) = &clause.test {
                        self.expr(test);
                    }
                    self.stmts(&clause.body);
                }
            }
            Stmt::With(with) => {
                if with.is_async {
                    self.fail(stmt, "an async `with`".into());
                    return;
                }
                for item in &with.items {
                    self.expr(&item.context_expr);
                    self.refuse_data(&item.context_expr, "enters");
                    if let Some(vars) = &item.optional_vars {
                        self.target(vars, true);
                    }
                }
                self.stmts(&with.body);
            }
            Stmt::Try(try_stmt) => {
                self.stmts(&try_stmt.body);
                for handler in &try_stmt.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(handler) = handler;
                    if let Some(kind) = &handler.type_ {
                        self.expr(kind);
                    }
                    if let Some(name) = &handler.name {
                        self.bind(handler, name.as_str(), Binds::Owned);
                    }
                    self.stmts(&handler.body);
                }
                self.stmts(&try_stmt.orelse);
                self.stmts(&try_stmt.finalbody);
            }
            Stmt::Raise(raise) => {
                for expr in raise.exc.iter().chain(&raise.cause) {
                    self.expr(expr);
                }
            }
            Stmt::Assert(assert) => {
                self.expr(&assert.test);
                if let Some(msg) = &assert.msg {
                    self.expr(msg);
                }
            }
            Stmt::Pass(_) | Stmt::Break(_) | Stmt::Continue(_) => {}
            Stmt::IpyEscapeCommand(escape) => {
                let (name, _) = split_name(&escape.value);
                if !(escape.kind == IpyEscapeKind::Magic && HARMLESS_MAGICS.contains(&name)) {
                    self.fail(stmt, "a magic or shell command".into());
                }
            }
            Stmt::ClassDef(_) => {
                self.fail(stmt, "a class body runs code crane does not follow".into())
            }
            Stmt::Global(_) | Stmt::Nonlocal(_) => self.fail(stmt, "`global`/`nonlocal`".into()),
            Stmt::Return(_) | Stmt::Match(_) | Stmt::TypeAlias(_) => {
                self.fail(stmt, "a statement crane does not follow here".into())
            }
        }
    }

    /// Whether the cell itself bound `name` (to anything).
    fn is_cell_name(&self, name: &str) -> bool {
        self.owned.contains(name)
            || self.modules.contains(name)
            || self.functions.contains(name)
            || self.views.contains(name)
    }

    /// Whether `name` holds data from before the cell, or a view of it the cell bound. Watching,
    /// data is an object to compare as any other.
    fn is_data(&self, name: &str) -> bool {
        if self.watching {
            return false;
        }
        self.views.contains(name)
            || (!self.is_cell_name(name)
                && !self.scoped.iter().any(|scope| scope.contains(name))
                && (self.prior)(name) == Prior::Data)
    }

    /// Whether the value of `expr` may be data from before the cell or part of it (the object
    /// itself, a view, an element): a name holding it, a subscript or attribute of one, or a
    /// container or choice that may hold one. A call or an operator builds a new value.
    fn aliases_data(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Name(name) => self.is_data(name.id.as_str()),
            Expr::Attribute(attribute) => self.aliases_data(&attribute.value),
            Expr::Subscript(subscript) => self.aliases_data(&subscript.value),
            Expr::Starred(starred) => self.aliases_data(&starred.value),
            Expr::Named(named) => self.aliases_data(&named.value),
            Expr::If(choice) => {
                self.aliases_data(&choice.body) || self.aliases_data(&choice.orelse)
            }
            Expr::BoolOp(op) => op.values.iter().any(|value| self.aliases_data(value)),
            Expr::Tuple(tuple) => tuple.elts.iter().any(|elt| self.aliases_data(elt)),
            Expr::List(list) => list.elts.iter().any(|elt| self.aliases_data(elt)),
            Expr::Set(set) => set.elts.iter().any(|elt| self.aliases_data(elt)),
            Expr::Dict(dict) => dict.items.iter().any(|item| {
                item.key.as_ref().is_some_and(|key| self.aliases_data(key))
                    || self.aliases_data(&item.value)
            }),
            _ => false,
        }
    }

    /// Data from before the cell given where it could be changed (`for row in X`, a call's
    /// argument): a possible change.
    fn refuse_data(&mut self, expr: &Expr, how: &str) {
        if self.aliases_data(expr) {
            self.fail(
                expr,
                format!("{how} data from before the cell, which it could change"),
            );
        }
    }

    /// Targets bound to what may be data from before the cell: views, never owned.
    fn view_target(&mut self, target: &Expr) {
        match target {
            Expr::Name(name) => {
                let name = name.id.as_str();
                if self.read_first.contains(name) {
                    self.fail(
                        target,
                        format!("rebinds `{name}`, which the cell reads before binding it"),
                    );
                    return;
                }
                self.owned.remove(name);
                self.modules.remove(name);
                self.functions.remove(name);
                self.views.insert(name.to_owned());
                if !self.bound.iter().any(|b| b == name) {
                    self.bound.push(name.to_owned());
                }
            }
            Expr::Tuple(tuple) => tuple.elts.iter().for_each(|elt| self.view_target(elt)),
            Expr::List(list) => list.elts.iter().for_each(|elt| self.view_target(elt)),
            Expr::Starred(starred) => self.view_target(&starred.value),
            other => self.item_target(other),
        }
    }

    /// Whether `name` is a module (or what a module defines) here: imported by the cell, or
    /// last bound by an import of the kernel's and not bound by the cell since.
    fn is_module(&self, name: &str) -> bool {
        self.modules.contains(name)
            || (!self.is_cell_name(name) && (self.prior)(name) == Prior::Imported)
    }

    /// Whether evaluating `value` builds a new object rather than naming one that exists (a
    /// reference into a module names the module's).
    fn builds(&self, value: &Expr) -> bool {
        let mut root = value;
        loop {
            match root {
                Expr::Attribute(attribute) => root = &attribute.value,
                Expr::Subscript(subscript) => root = &subscript.value,
                Expr::Name(name) => return self.owned.contains(name.id.as_str()),
                _ => return true,
            }
        }
    }

    fn bind(&mut self, node: &impl Ranged, name: &str, binds: Binds) {
        if self.read_first.contains(name) {
            self.fail(
                node,
                format!("rebinds `{name}`, which the cell reads before binding it"),
            );
            return;
        }
        self.owned.remove(name);
        self.modules.remove(name);
        self.functions.remove(name);
        self.views.remove(name);
        match binds {
            Binds::Owned => self.owned.insert(name.to_owned()),
            Binds::Module => self.modules.insert(name.to_owned()),
            Binds::Function => self.functions.insert(name.to_owned()),
        };
        if !self.bound.iter().any(|b| b == name) {
            self.bound.push(name.to_owned());
        }
    }

    /// An assignment target; `owned`: the value is one the cell built.
    fn target(&mut self, target: &Expr, owned: bool) {
        match target {
            Expr::Name(name) => {
                let binds = if owned { Binds::Owned } else { Binds::Module };
                self.bind(name, name.id.as_str(), binds);
            }
            Expr::Tuple(tuple) => tuple.elts.iter().for_each(|elt| self.target(elt, true)),
            Expr::List(list) => list.elts.iter().for_each(|elt| self.target(elt, true)),
            Expr::Starred(starred) => self.target(&starred.value, true),
            other => self.item_target(other),
        }
    }

    /// `x[k] = v`, `x.a = v`, `x[k] += v`: only on an object the cell built.
    fn item_target(&mut self, target: &Expr) {
        let mut root = target;
        loop {
            match root {
                Expr::Attribute(attribute) => root = &attribute.value,
                Expr::Subscript(subscript) => {
                    self.expr(&subscript.slice);
                    root = &subscript.value;
                }
                Expr::Name(name) if self.owned.contains(name.id.as_str()) => return,
                // A library's setting set to a constant: running the cell again sets it again.
                Expr::Name(name) if self.constant_value && self.is_module(name.id.as_str()) => {
                    return
                }
                Expr::Name(name) => {
                    let reason =
                        format!("assigns into `{}`, which the cell did not build", name.id);
                    self.fail(target, reason);
                    return;
                }
                _ => {
                    self.fail(
                        target,
                        "assigns into an object the cell did not build".to_owned(),
                    );
                    return;
                }
            }
        }
    }

    fn parameters(&mut self, parameters: &Parameters) {
        for parameter in parameters.iter() {
            if let Some(default) = parameter.default() {
                self.expr(default);
            }
            if let Some(annotation) = parameter.annotation() {
                self.expr(annotation);
            }
        }
    }

    fn expr(&mut self, expr: &Expr) {
        if self.failure.is_none() {
            self.visit_expr(expr);
        }
    }

    fn name(&mut self, node: &impl Ranged, name: &str) {
        if self.scoped.iter().any(|scope| scope.contains(name))
            || self.owned.contains(name)
            || self.modules.contains(name)
            || self.views.contains(name)
        {
            return;
        }
        if self.functions.contains(name) {
            self.fail(node, format!("calls `{name}`, a function the cell defined"));
            return;
        }
        match (self.prior)(name) {
            Prior::Imported => {}
            Prior::NotBound
                if crate::is_builtin(name)
                    && !name.starts_with('_')
                    && !REACHING_BUILTINS.contains(&name) => {}
            // Where it is read, not called or handed on (`visit_expr`).
            Prior::Data if !self.watching => {}
            Prior::Bound | Prior::Data if self.watching && !name.starts_with('_') => {
                if !self.watched.iter().any(|watched| watched == name) {
                    self.watched.push(name.to_owned());
                }
            }
            _ => self.fail(
                node,
                format!("uses `{name}`, which existed before the cell"),
            ),
        }
    }

    fn comprehension(&mut self, generators: &[Comprehension], elements: &[&Expr]) {
        let mut scope = HashSet::new();
        for (index, generator) in generators.iter().enumerate() {
            self.refuse_data(&generator.iter, "iterates over");
            if index == 0 {
                self.expr(&generator.iter);
            }
            collect_names(&generator.target, &mut scope);
        }
        self.scoped.push(scope);
        for (index, generator) in generators.iter().enumerate() {
            if index > 0 {
                self.expr(&generator.iter);
            }
            for condition in &generator.ifs {
                self.expr(condition);
            }
        }
        for element in elements {
            self.expr(element);
        }
        self.scoped.pop();
    }
}

#[derive(Clone, Copy)]
enum Binds {
    Owned,
    Module,
    Function,
}

fn collect_names(target: &Expr, names: &mut HashSet<String>) {
    match target {
        Expr::Name(name) => {
            names.insert(name.id.to_string());
        }
        Expr::Tuple(tuple) => tuple.elts.iter().for_each(|elt| collect_names(elt, names)),
        Expr::List(list) => list.elts.iter().for_each(|elt| collect_names(elt, names)),
        Expr::Starred(starred) => collect_names(&starred.value, names),
        _ => {}
    }
}

impl<'a> Visitor<'a> for Walk<'_> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.failure.is_some() {
            return;
        }
        match expr {
            Expr::Name(name) => match name.ctx {
                ExprContext::Load => self.name(name, name.id.as_str()),
                _ => self.fail(name, "a binding crane does not follow here".into()),
            },
            Expr::Named(named) => {
                self.expr(&named.value);
                if self.aliases_data(&named.value) {
                    self.view_target(&named.target);
                } else {
                    let owned = self.builds(&named.value);
                    self.target(&named.target, owned);
                }
            }
            Expr::Lambda(lambda) => {
                let mut scope = HashSet::new();
                if let Some(parameters) = &lambda.parameters {
                    self.parameters(parameters);
                    for parameter in parameters.iter() {
                        scope.insert(parameter.name().to_string());
                    }
                }
                // The lambda may be called by what it is given to: its body counts as run.
                self.scoped.push(scope);
                self.expr(&lambda.body);
                self.scoped.pop();
            }
            Expr::Call(call) => {
                let mut callee = &*call.func;
                while let Expr::Attribute(attribute) = callee {
                    callee = &attribute.value;
                }
                if self.aliases_data(callee) {
                    self.fail(
                        expr,
                        "calls a method of data from before the cell, which may change it".into(),
                    );
                    return;
                }
                let shows = matches!(&*call.func, Expr::Name(name)
                    if SHOWING_BUILTINS.contains(&name.id.as_str())
                        && !self.is_cell_name(name.id.as_str())
                        && (self.prior)(name.id.as_str()) == Prior::NotBound);
                if !shows {
                    for argument in &call.arguments.args {
                        self.refuse_data(argument, "hands on");
                    }
                    for keyword in &call.arguments.keywords {
                        self.refuse_data(&keyword.value, "hands on");
                    }
                }
                visitor::walk_expr(self, expr);
            }
            Expr::ListComp(comp) => self.comprehension(&comp.generators, &[&comp.elt]),
            Expr::SetComp(comp) => self.comprehension(&comp.generators, &[&comp.elt]),
            Expr::Generator(comp) => self.comprehension(&comp.generators, &[&comp.elt]),
            Expr::DictComp(comp) => {
                let mut elements: Vec<&Expr> = comp.key.iter().map(|key| &**key).collect();
                elements.push(&comp.value);
                self.comprehension(&comp.generators, &elements)
            }
            Expr::Await(_) | Expr::Yield(_) | Expr::YieldFrom(_) => {
                self.fail(expr, "`await`/`yield` at the cell's level".into())
            }
            Expr::IpyEscapeCommand(_) => self.fail(expr, "a magic or shell command".into()),
            _ => visitor::walk_expr(self, expr),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel of the examples: `np`, `pd` and `plt` imported, `df`, `obj`, `lst`, `model`
    /// and `X` bound by assignments, `list` never rebound.
    fn kernel(name: &str) -> Prior {
        match name {
            "np" | "pd" | "plt" | "LinearRegression" => Prior::Imported,
            "df" | "obj" | "lst" | "model" | "X" | "d" | "f" => Prior::Bound,
            _ => Prior::NotBound,
        }
    }

    fn kept(source: &str, line: u32) -> Vec<String> {
        match failed_prefix(source, line, &kernel) {
            FailedPrefix::BoundOnly { names } => names,
            other => panic!("{source:?} at line {line}: {other:?}"),
        }
    }

    fn changed(source: &str, line: u32) -> (u32, String) {
        match failed_prefix(source, line, &kernel) {
            FailedPrefix::MayHaveChanged { line, reason } => (line, reason),
            other => panic!("{source:?} at line {line}: {other:?}"),
        }
    }

    #[test]
    fn the_statements_before_a_line_are_cut_where_a_statement_ends() {
        let cell = "%matplotlib inline\nimport numpy as np\nx = np.ones(\n    3)\nx[9]\ny = 1\n";
        assert_eq!(
            statements_before(cell, 5),
            Some("%matplotlib inline\nimport numpy as np\nx = np.ones(\n    3)")
        );
        // Inside a statement: what comes before the statement.
        assert_eq!(
            statements_before(cell, 4),
            Some("%matplotlib inline\nimport numpy as np")
        );
        // A line names no single statement of those sharing it: the first holds it.
        assert_eq!(statements_before("a = 1; a[0]", 1), None);
        assert_eq!(statements_before("a = 1\nb = 2; b[0]", 2), Some("a = 1"));
        assert_eq!(statements_before(cell, 1), None);
        assert_eq!(statements_before("x = 1\n\n# end\n", 3), None);
        assert_eq!(statements_before("%%time\nx = 1\nx[0]", 3), None);
        assert_eq!(statements_before("x = (", 1), None);
    }

    #[test]
    fn the_statements_that_only_bind_new_names_before_a_change() {
        let cell = "%matplotlib inline\nimport numpy as np\ndef f(v):\n    return v\nn = 3\ndf.drop(columns='a', inplace=True)\nk = 1\ndf['a']";
        assert_eq!(
            bound_only_prefix(cell, 8, &kernel),
            Some((
                "%matplotlib inline\nimport numpy as np\ndef f(v):\n    return v\nn = 3",
                vec!["np".to_owned(), "f".to_owned(), "n".to_owned()]
            ))
        );
        // Only what ended before the statement holding the line.
        assert_eq!(
            bound_only_prefix(cell, 4, &kernel),
            Some((
                "%matplotlib inline\nimport numpy as np",
                vec!["np".to_owned()]
            ))
        );
        // A change first, nothing bound, a cell magic.
        assert_eq!(
            bound_only_prefix(
                "df.drop(columns='a', inplace=True)\nx = 1\n1 / 0",
                3,
                &kernel
            ),
            None
        );
        assert_eq!(bound_only_prefix("print('hi')\n1 / 0", 2, &kernel), None);
        assert_eq!(
            bound_only_prefix("%%time\nimport json\n1 / 0", 3, &kernel),
            None
        );
    }

    #[test]
    fn imports_and_new_names_are_kept() {
        let cell = "%matplotlib inline\nimport matplotlib.pyplot as plt\nimport numpy as np\nplt.style.use('seaborn-whitegrid')\n";
        assert_eq!(kept(cell, 4), ["plt", "np"]);
        let cell = "obj1 = pd.Series([4, 7, -5, 3], index=['d', 'b', 'a', 'c'])\nobj2 = pd.Series(range(3), index=['a', 'b', 'c'])\nobj2[[0, 1, 2]]";
        assert_eq!(kept(cell, 3), ["obj1", "obj2"]);
        assert_eq!(kept("a = \"this is a string\"\na[10] = \"f\"", 2), ["a"]);
        assert_eq!(
            kept("tup = tuple(['foo', [1, 2], True])\ntup[2] = False", 2),
            ["tup"]
        );
        // Names built from the cell's own, comprehensions, lambdas, loops over fresh values.
        let cell = "xs = [i * 2 for i in range(10)]\nkey = lambda v: -v\nfor x in sorted(xs, key=key):\n    total = x + 1\nm = LinearRegression()\nm.fit(np.zeros((2, 1)), [1, 2])\n";
        assert_eq!(kept(cell, 6), ["xs", "key", "x", "total", "m"]);
        // Only what ran counts: a mutation after the failing line never happened.
        assert_eq!(
            kept(
                "y = np.ones(3)\ny[5]\ndf.drop(columns='a', inplace=True)",
                2
            ),
            ["y"]
        );
        // A library's setting set to a constant, as a re-run sets it again.
        let cell = "import os\nos.environ['TF_USE_LEGACY_KERAS'] = '1'\npd.options.display.max_rows = 5\nplt.rcParams['figure.figsize'] = (10, -6)\nimport tf_keras";
        assert_eq!(kept(cell, 5), ["os", "tf_keras"]);
        // Rebinding a name the cell does not read before is what a re-run does again.
        assert_eq!(kept("df = pd.read_csv('x.csv')\ndf['b']", 2), ["df"]);
    }

    #[test]
    fn changes_to_the_state_before_the_cell_are_seen() {
        assert_eq!(
            changed("df.drop(columns=['a'], inplace=True)\ndf['a']", 2).0,
            1
        );
        assert!(changed("X = X[:, 1:]\nX[0, 9]", 2).1.contains("`X`"));
        assert!(changed("lst.append(3)\nlst[9]", 2).1.contains("`lst`"));
        assert!(changed("model.fit(np.zeros((3, 1)))", 1)
            .1
            .contains("`model`"));
        assert!(changed("d['k'] = 1\nd['j']", 2).1.contains("`d`"));
        assert!(changed("obj.attr = 1\n1 / 0", 2).1.contains("`obj`"));
        assert!(changed("n = 1\ndel f\n1 / 0", 3).1.contains("del"));
        assert!(changed("total += 1\n1 / 0", 2).1.contains("total"));
        assert!(changed("print(len(df))\n1 / 0", 2).1.contains("`df`"));
        // Through a name: an alias of an object from before is not the cell's own.
        assert!(changed("y = np\ny.x = np.ones(2)", 2)
            .1
            .contains("`y`, which the cell did not build"));
        // Assigning into a module's object what is not a constant: it may read what it sets.
        assert!(changed(
            "import os\nos.environ['P'] = os.environ['P'] + ':/x'\n1 / 0",
            3
        )
        .1
        .contains("did not build"));
        assert!(
            changed("import pandas as pd\npd.options.display.max_rows += 5", 2)
                .1
                .contains("did not build")
        );
        // A constant into an object of the kernel's that is not a module.
        assert!(changed("d['k'] = '1'\n1 / 0", 2).1.contains("`d`"));
    }

    #[test]
    fn what_crane_cannot_follow_is_a_possible_change() {
        for cell in [
            "global g\ng = 1\n1 / 0",
            "from os.path import *\n1 / 0",
            "%time x = 1\n1 / 0",
            "!ls\n1 / 0",
            "class A:\n    pass\n1 / 0",
            "def f2():\n    df.drop(columns='a', inplace=True)\nf2()",
            "globals()['df'] = 1\n1 / 0",
            "import __main__\n1 / 0",
            "%%time\nx = 1\n1 / 0",
            "x = (\n1 /",
        ] {
            let lines = cell.lines().count() as u32;
            changed(cell, lines);
        }
        // A line outside the cell's statements.
        changed("x = 1", 7);
        changed("x = 1\n\n\n", 3);
    }

    #[test]
    fn watching_turns_reads_of_earlier_objects_into_names_to_compare() {
        let watching = |source: &str, line: u32| failed_prefix_watching(source, line, &kernel);
        // A pipeline around an earlier transformer, a slice of an earlier array.
        assert_eq!(
            watching(
                "pipe = (model, LinearRegression())\nleft = X[:, :5]\nmodel.predict(X)",
                3
            ),
            FailedPrefix::BoundIfUnchanged {
                names: vec!["pipe".into(), "left".into()],
                watched: vec!["model".into(), "X".into()],
            }
        );
        // Without reads of earlier objects: bound only, as without watching.
        assert_eq!(
            watching("import json\nn = 3\n1 / 0", 3),
            FailedPrefix::BoundOnly {
                names: vec!["json".into(), "n".into()]
            }
        );
        // Changes for certain stay changes: an assignment into an earlier object, a rebinding
        // of a name the cell read, `globals()`.
        for (source, line) in [
            ("d['k'] = 1\n1 / 0", 1),
            ("X = X[:, 1:]\n1 / 0", 1),
            ("df += 1\n1 / 0", 1),
            ("g = globals()\n1 / 0", 1),
        ] {
            assert!(
                matches!(watching(source, 2), FailedPrefix::MayHaveChanged { line: at, .. } if at == line),
                "{source:?}"
            );
        }
        // Without watching, a read of an earlier object is a possible change.
        assert_eq!(changed("left = X[:, :5]\n1 / 0", 2).0, 1);
    }

    #[test]
    fn data_from_before_the_cell_is_read_by_subscripts_attributes_and_operators() {
        let data = |name: &str| match name {
            "X" | "df" => Prior::Data,
            other => kernel(other),
        };
        let kept = |source: &str, line: u32| match failed_prefix(source, line, &data) {
            FailedPrefix::BoundOnly { names } => names,
            other => panic!("{source:?}: {other:?}"),
        };
        let changed = |source: &str, line: u32| match failed_prefix(source, line, &data) {
            FailedPrefix::MayHaveChanged { line, reason } => (line, reason),
            other => panic!("{source:?}: {other:?}"),
        };
        assert_eq!(
            kept(
                "wide, deep = X[:, :5], X[:, 2:]\nn = X.shape[0] * 2\nscaled = (X - 1) if False else X * 2\nprint(len(df), df.columns)\n1 / 0",
                5
            ),
            ["wide", "deep", "n", "scaled"]
        );
        assert_eq!(
            kept("col = df['a']\nhigh = col[col > 1]\n1 / 0", 3),
            ["col", "high"]
        );
        for (source, line) in [
            // A method may change it; so may a function handed it, or a loop's body.
            ("top = X.sort()\n1 / 0", 1),
            ("m = np.mean(X)\n1 / 0", 1),
            ("for row in X:\n    row[0] = 1\n1 / 0", 1),
            ("rows = [r for r in X]\n1 / 0", 1),
            // A view of it written into, or changed in place.
            ("left = X[:, :1]\nleft[0] = 99\n1 / 0", 2),
            ("left = X[:, :1]\nleft += 1\n1 / 0", 2),
            ("left = X[:, :1]\nleft.fill(0)\n1 / 0", 2),
            ("pair = [X]\npair[0][0] = 1\n1 / 0", 2),
            ("X[0] = 1\n1 / 0", 1),
        ] {
            assert_eq!(changed(source, line + 1).0, line, "{source:?}");
        }
        // Watching: data is an object to compare as any other.
        assert_eq!(
            failed_prefix_watching("left = X[:, :1]\n1 / 0", 2, &data),
            FailedPrefix::BoundIfUnchanged {
                names: vec!["left".into()],
                watched: vec!["X".into()],
            }
        );
    }

    #[test]
    fn a_builtin_the_kernel_rebound_is_not_a_builtin() {
        let prior = |name: &str| match name {
            "list" => Prior::Bound,
            _ => Prior::NotBound,
        };
        assert!(matches!(
            failed_prefix("x = list(range(3))\n1 / 0", 2, &prior),
            FailedPrefix::MayHaveChanged { .. }
        ));
        assert_eq!(
            failed_prefix("x = tuple(range(3))\n1 / 0", 2, &prior),
            FailedPrefix::BoundOnly {
                names: vec!["x".into()]
            }
        );
    }
}
