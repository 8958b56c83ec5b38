//! The local names of a function the cell defines: its parameters, its assignments and the
//! names it declares global.

use super::*;

pub(super) fn parameter_names(parameters: Option<&Parameters>) -> HashSet<String> {
    parameters
        .into_iter()
        .flat_map(|parameters| parameters.iter())
        .map(|parameter| parameter.name().to_string())
        .collect()
}

pub(super) fn target_names(target: &Expr, names: &mut HashSet<String>) {
    match target {
        Expr::Name(name) => {
            names.insert(name.id.to_string());
        }
        Expr::Tuple(tuple) => tuple.elts.iter().for_each(|elt| target_names(elt, names)),
        Expr::List(list) => list.elts.iter().for_each(|elt| target_names(elt, names)),
        Expr::Starred(starred) => target_names(&starred.value, names),
        _ => {}
    }
}

/// The names local to a function (parameters and everything its body binds) and the names it
/// declares `global`.
pub(super) fn function_locals(
    parameters: &Parameters,
    body: &[Stmt],
) -> (HashSet<String>, HashSet<String>) {
    let mut collector = LocalNames {
        names: parameter_names(Some(parameters)),
        ..LocalNames::default()
    };
    collector.visit_body(body);
    let globals = collector.globals;
    let locals = collector
        .names
        .into_iter()
        .filter(|name| !globals.contains(name))
        .collect();
    (locals, globals)
}

#[derive(Default)]
struct LocalNames {
    names: HashSet<String>,
    globals: HashSet<String>,
    in_comprehension: bool,
}

impl<'a> Visitor<'a> for LocalNames {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => {
                self.names.insert(def.name.to_string());
            }
            Stmt::ClassDef(class) => {
                self.names.insert(class.name.to_string());
            }
            Stmt::Global(global) => {
                self.globals
                    .extend(global.names.iter().map(ToString::to_string));
            }
            Stmt::Nonlocal(nonlocal) => {
                self.names
                    .extend(nonlocal.names.iter().map(ToString::to_string));
            }
            Stmt::Import(import) => {
                for alias in &import.names {
                    let bound = match &alias.asname {
                        Some(asname) => asname.as_str(),
                        None => alias.name.split('.').next().unwrap_or_default(),
                    };
                    self.names.insert(bound.to_owned());
                }
            }
            Stmt::ImportFrom(import) => {
                for alias in &import.names {
                    if alias.name.as_str() != "*" {
                        let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                        self.names.insert(bound.to_string());
                    }
                }
            }
            Stmt::TypeAlias(alias) => {
                if let Expr::Name(name) = &*alias.name {
                    self.names.insert(name.id.to_string());
                }
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(name) => {
                if !self.in_comprehension && name.ctx != ExprContext::Load {
                    self.names.insert(name.id.to_string());
                }
            }
            Expr::Named(named) => {
                if let Expr::Name(name) = &*named.target {
                    self.names.insert(name.id.to_string());
                }
                self.visit_expr(&named.value);
            }
            Expr::Lambda(_) => {}
            Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) | Expr::Generator(_) => {
                let outer = std::mem::replace(&mut self.in_comprehension, true);
                visitor::walk_expr(self, expr);
                self.in_comprehension = outer;
            }
            _ => visitor::walk_expr(self, expr),
        }
    }

    fn visit_except_handler(&mut self, handler: &'a ExceptHandler) {
        let ExceptHandler::ExceptHandler(inner) = handler;
        if let Some(name) = &inner.name {
            self.names.insert(name.to_string());
        }
        visitor::walk_except_handler(self, handler);
    }

    fn visit_pattern(&mut self, pattern: &'a Pattern) {
        let name = match pattern {
            Pattern::MatchAs(pattern) => pattern.name.as_ref(),
            Pattern::MatchStar(pattern) => pattern.name.as_ref(),
            Pattern::MatchMapping(pattern) => pattern.rest.as_ref(),
            _ => None,
        };
        if let Some(name) = name {
            self.names.insert(name.to_string());
        }
        visitor::walk_pattern(self, pattern);
    }
}
