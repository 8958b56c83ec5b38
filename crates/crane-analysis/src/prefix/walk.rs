//! The walk over the statements of a failed cell that ran (or that a held cell runs first):
//! which names they bind, and the first that may change the state before the cell, by the
//! rules the parent module's documentation states; data read by contract and the names whose
//! objects are left to evidence included.

use std::collections::HashSet;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Comprehension, Expr, ExprContext, IpyEscapeKind, Parameters, Stmt};
use ruff_text_size::Ranged;

use super::{FailedPrefix, Prior};
use crate::magics::split_name;
use crate::position::LineIndex;

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

pub(super) struct Walk<'w> {
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

impl<'w> Walk<'w> {
    pub(super) fn new(
        lines: &'w LineIndex,
        prior: &'w (dyn Fn(&str) -> Prior + Sync),
        read_first: HashSet<String>,
        watching: bool,
    ) -> Walk<'w> {
        Walk {
            lines,
            prior,
            read_first,
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
        }
    }

    /// What the statements walked so far can have done.
    pub(super) fn outcome(self) -> FailedPrefix {
        if let Some((line, reason)) = self.failure {
            return FailedPrefix::MayHaveChanged { line, reason };
        }
        if self.watched.is_empty() {
            FailedPrefix::BoundOnly { names: self.bound }
        } else {
            FailedPrefix::BoundIfUnchanged {
                names: self.bound,
                watched: self.watched,
            }
        }
    }

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

    pub(super) fn stmt(&mut self, stmt: &Stmt) {
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
