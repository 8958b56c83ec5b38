//! The functions the executed cells define, so a call in the target cell can be followed into
//! their bodies: the latest top-level `def` of each name, when no later statement rebinds it.

use std::collections::HashMap;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprContext, Stmt};

use super::cell::Cell;

/// A function defined by an executed cell, with the cell it is written in.
#[derive(Clone, Copy)]
pub(crate) struct Definition<'a> {
    pub cell: &'a Cell,
    pub function: &'a ast::StmtFunctionDef,
}

/// A class defined by an executed cell.
#[derive(Clone, Copy)]
pub(crate) struct ClassDefinition<'a> {
    pub cell: &'a Cell,
    pub class: &'a ast::StmtClassDef,
}

/// The executed cells, parsed (a cell that does not parse is skipped: the names it binds are
/// unknown, so nothing is followed when one exists).
pub(crate) struct Executed {
    cells: Vec<Cell>,
    complete: bool,
}

impl Executed {
    pub(crate) fn parse(sources: &[String]) -> Executed {
        let mut cells = Vec::new();
        let mut complete = true;
        for source in sources {
            match Cell::parse(source) {
                Some(cell) => cells.push(cell),
                None => complete = false,
            }
        }
        Executed { cells, complete }
    }

    /// Every executed cell parsed, in execution order, or `None` when one does not parse.
    pub(crate) fn cells(&self) -> Option<&[Cell]> {
        self.complete.then_some(self.cells.as_slice())
    }

    /// The latest plain `def` of each name, while no later statement of an executed cell binds
    /// the name otherwise (assignment, import, class, a decorated def, a `global` in a function).
    pub(crate) fn definitions(&self) -> HashMap<String, Definition<'_>> {
        self.definitions_before(self.cells.len())
    }

    /// [`Executed::definitions`] as they stood after the first `count` cells ran.
    pub(crate) fn definitions_before(&self, count: usize) -> HashMap<String, Definition<'_>> {
        let mut definitions = HashMap::new();
        if !self.complete {
            return definitions;
        }
        for cell in &self.cells[..count.min(self.cells.len())] {
            for stmt in &cell.body {
                let mut bound = Bound::default();
                bound.visit_stmt(stmt);
                for name in bound.0 {
                    definitions.remove(&name);
                }
                if let Stmt::FunctionDef(function) = stmt {
                    if function.decorator_list.is_empty() {
                        definitions
                            .insert(function.name.to_string(), Definition { cell, function });
                    }
                }
            }
        }
        definitions
    }
}

impl Executed {
    /// The latest undecorated `class` of each name, while no later statement rebinds the name.
    pub(crate) fn classes(&self) -> HashMap<String, ClassDefinition<'_>> {
        self.classes_before(self.cells.len())
    }

    /// [`Executed::classes`] as they stood after the first `count` cells ran.
    pub(crate) fn classes_before(&self, count: usize) -> HashMap<String, ClassDefinition<'_>> {
        let mut classes = HashMap::new();
        if !self.complete {
            return classes;
        }
        for cell in &self.cells[..count.min(self.cells.len())] {
            for stmt in &cell.body {
                let mut bound = Bound::default();
                bound.visit_stmt(stmt);
                for name in bound.0 {
                    classes.remove(&name);
                }
                if let Stmt::ClassDef(class) = stmt {
                    if class.decorator_list.is_empty() {
                        classes.insert(class.name.to_string(), ClassDefinition { cell, class });
                    }
                }
            }
        }
        classes
    }
}

/// The methods of a class whose behaviour crane can follow: a body of plain `def`s (a
/// docstring and `pass` aside), no metaclass or keywords. `None` otherwise.
pub(crate) fn plain_methods(class: &ast::StmtClassDef) -> Option<Vec<&ast::StmtFunctionDef>> {
    if class
        .arguments
        .as_ref()
        .is_some_and(|arguments| !arguments.keywords.is_empty())
    {
        return None;
    }
    let mut methods = Vec::new();
    for stmt in &class.body {
        match stmt {
            Stmt::FunctionDef(function) if function.decorator_list.is_empty() => {
                methods.push(function);
            }
            Stmt::Pass(_) => {}
            Stmt::Expr(expr) if expr.value.is_string_literal_expr() => {}
            _ => return None,
        }
    }
    Some(methods)
}

/// Whether calling the function runs its body: a generator or coroutine function returns an
/// object instead, whose code runs later.
pub(crate) fn runs_when_called(function: &ast::StmtFunctionDef) -> bool {
    struct Yields(bool);
    impl<'a> Visitor<'a> for Yields {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                _ => visitor::walk_stmt(self, stmt),
            }
        }
        fn visit_expr(&mut self, expr: &'a Expr) {
            match expr {
                Expr::Yield(_) | Expr::YieldFrom(_) => self.0 = true,
                Expr::Lambda(_) => {}
                _ => visitor::walk_expr(self, expr),
            }
        }
    }
    let mut yields = Yields(false);
    for stmt in &function.body {
        yields.visit_stmt(stmt);
    }
    !function.is_async && !yields.0
}

/// Every name a top-level statement may bind in the global namespace (a `def`'s own name too,
/// and names its body declares `global`).
#[derive(Default)]
struct Bound(Vec<String>);

impl<'a> Visitor<'a> for Bound {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(function) => {
                self.0.push(function.name.to_string());
                let mut globals = Globals(Vec::new());
                for stmt in &function.body {
                    globals.visit_stmt(stmt);
                }
                self.0.extend(globals.0);
            }
            Stmt::ClassDef(class) => {
                self.0.push(class.name.to_string());
                for stmt in &class.body {
                    let mut globals = Globals(Vec::new());
                    globals.visit_stmt(stmt);
                    self.0.extend(globals.0);
                }
            }
            Stmt::Import(import) => {
                for alias in &import.names {
                    self.0.push(match &alias.asname {
                        Some(asname) => asname.to_string(),
                        None => alias.name.split('.').next().unwrap_or_default().to_owned(),
                    });
                }
            }
            Stmt::ImportFrom(import) => {
                for alias in &import.names {
                    self.0
                        .push(alias.asname.as_ref().unwrap_or(&alias.name).to_string());
                }
            }
            Stmt::Try(try_stmt) => {
                for handler in &try_stmt.handlers {
                    let ast::ExceptHandler::ExceptHandler(handler) = handler;
                    if let Some(name) = &handler.name {
                        self.0.push(name.to_string());
                    }
                }
                visitor::walk_stmt(self, stmt);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(name) if name.ctx != ExprContext::Load => self.0.push(name.id.to_string()),
            // A lambda's or comprehension's own names stay inside it; a walrus there binds here.
            _ => visitor::walk_expr(self, expr),
        }
    }
}

/// Names declared `global` anywhere in a body (nested functions included).
struct Globals(Vec<String>);

impl<'a> Visitor<'a> for Globals {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::Global(global) = stmt {
            self.0.extend(global.names.iter().map(|n| n.to_string()));
        }
        visitor::walk_stmt(self, stmt);
    }
}
