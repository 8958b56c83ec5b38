//! The names code binds, read from its syntax: targets and patterns (`BoundNames`), a function
//! body's locals and `global` declarations (`LocalNames`) and walrus targets (`Walrus`). The
//! interpreter needs them before running the code (a function's locals, what a loop body may
//! rebind), so they are a walk of the tree apart from evaluation.

use std::collections::HashSet;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprContext, Stmt};

/// Names bound by targets and patterns.
#[derive(Default)]
pub(super) struct BoundNames(pub(super) Vec<String>);

impl<'a> Visitor<'a> for BoundNames {
    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(name) => self.0.push(name.id.to_string()),
            _ => visitor::walk_expr(self, expr),
        }
    }

    fn visit_pattern(&mut self, pattern: &'a ast::Pattern) {
        match pattern {
            ast::Pattern::MatchAs(ast::PatternMatchAs {
                name: Some(name), ..
            })
            | ast::Pattern::MatchStar(ast::PatternMatchStar {
                name: Some(name), ..
            }) => self.0.push(name.to_string()),
            ast::Pattern::MatchMapping(ast::PatternMatchMapping {
                rest: Some(name), ..
            }) => self.0.push(name.to_string()),
            _ => {}
        }
        visitor::walk_pattern(self, pattern);
    }
}

/// Names a function body binds (its locals) and declares global.
#[derive(Default)]
pub(super) struct LocalNames {
    pub(super) assigned: HashSet<String>,
    pub(super) globals: Vec<String>,
}

impl<'a> Visitor<'a> for LocalNames {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(function) => {
                self.assigned.insert(function.name.to_string());
            }
            Stmt::ClassDef(class) => {
                self.assigned.insert(class.name.to_string());
            }
            Stmt::Global(global) => self
                .globals
                .extend(global.names.iter().map(|n| n.to_string())),
            Stmt::Import(import) => {
                for alias in &import.names {
                    let bound = match &alias.asname {
                        Some(asname) => asname.to_string(),
                        None => alias.name.split('.').next().unwrap_or_default().to_owned(),
                    };
                    self.assigned.insert(bound);
                }
            }
            Stmt::ImportFrom(import) => {
                for alias in &import.names {
                    self.assigned
                        .insert(alias.asname.as_ref().unwrap_or(&alias.name).to_string());
                }
            }
            Stmt::Try(try_stmt) => {
                for handler in &try_stmt.handlers {
                    let ast::ExceptHandler::ExceptHandler(handler) = handler;
                    if let Some(name) = &handler.name {
                        self.assigned.insert(name.to_string());
                    }
                }
                visitor::walk_stmt(self, stmt);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(name) if name.ctx != ExprContext::Load => {
                self.assigned.insert(name.id.to_string());
            }
            Expr::Lambda(_)
            | Expr::ListComp(_)
            | Expr::SetComp(_)
            | Expr::DictComp(_)
            | Expr::Generator(_) => {
                // Their targets are their own; a walrus inside would bind here, which is rare.
                let mut walrus = Walrus(Vec::new());
                walrus.visit_expr(expr);
                self.assigned.extend(walrus.0);
            }
            _ => visitor::walk_expr(self, expr),
        }
    }
}

struct Walrus(Vec<String>);

impl<'a> Visitor<'a> for Walrus {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Named(named) = expr {
            if let Expr::Name(name) = named.target.as_ref() {
                self.0.push(name.id.to_string());
            }
        }
        visitor::walk_expr(self, expr);
    }
}
