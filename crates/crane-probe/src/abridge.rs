//! Which cells look long: the shapes an abridged dry run can shorten (`python/crane_abridge.py`),
//! read from a cell's syntax before anything runs. A `for` loop of the cell, a call of a
//! function or method an earlier cell defined with a `for` loop in it, a `fit` given `epochs`,
//! a scikit-learn search built and fitted, or a cross-validation.
//!
//! This decides what a check costs, never a verdict: a cell that looks long and is fast only
//! pays for a short dry run, and a long cell of another shape is what it was without abridging.

use std::collections::BTreeSet;

use crane_analysis::ParsedCell;
use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt};

/// scikit-learn's searches, whose folds and candidates an abridged run cuts: building one is
/// instant, fitting it fits every candidate on every fold, so code that builds one looks long
/// only where it also calls a `fit`.
const SEARCHES: &[&str] = &[
    "GridSearchCV",
    "RandomizedSearchCV",
    "HalvingGridSearchCV",
    "HalvingRandomSearchCV",
];

/// scikit-learn's functions that fit an estimator once per fold as they are called.
const CROSS_VALIDATIONS: &[&str] = &["cross_validate", "cross_val_score"];

/// The names of the functions and methods `source` (an executed cell) defines at its top
/// level or in its top-level classes whose body holds a `for` loop.
pub fn looping_functions(source: &str) -> Vec<String> {
    looping_functions_parsed(&ParsedCell::parse(source))
}

/// [`looping_functions`] of a cell already parsed; a cell that is not plain Python has none.
pub fn looping_functions_parsed(cell: &ParsedCell) -> Vec<String> {
    let Some(module) = cell.plain_python() else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for statement in &module.body {
        match statement {
            Stmt::FunctionDef(function) if has_loop(&function.body) => {
                names.push(function.name.id.to_string());
            }
            Stmt::ClassDef(class) => {
                for member in &class.body {
                    if let Stmt::FunctionDef(method) = member {
                        if has_loop(&method.body) {
                            names.push(method.name.id.to_string());
                        }
                    }
                }
            }
            _ => {}
        }
    }
    names
}

/// Whether an abridged run could shorten `code`: it loops, or calls one of `looping` (from
/// [`looping_functions`] of the cells before), a `fit` with `epochs`, a cross-validation, or
/// builds a search and calls a `fit`.
pub fn looks_long(code: &str, looping: &BTreeSet<String>) -> bool {
    looks_long_parsed(&ParsedCell::parse(code), looping)
}

/// [`looks_long`] of a cell already parsed; a cell that is not plain Python (a magic, a shell
/// escape) does not look long.
pub fn looks_long_parsed(cell: &ParsedCell, looping: &BTreeSet<String>) -> bool {
    let Some(module) = cell.plain_python() else {
        return false;
    };
    !matches!(long_shape(&module.body, looping), LongShape::NotLong)
}

/// Why a cell looks long.
pub(crate) enum LongShape<'a> {
    NotLong,
    /// Only because of these `fit(..., epochs=...)` calls.
    FitsOnly(Vec<&'a ExprCall>),
    /// A loop, a search or a looping function (and perhaps fits too).
    Other,
}

pub(crate) fn long_shape<'a>(body: &'a [Stmt], looping: &BTreeSet<String>) -> LongShape<'a> {
    let mut shape = Shape {
        looping,
        other: false,
        search: false,
        fit: false,
        fits: Vec::new(),
    };
    for statement in body {
        shape.visit_stmt(statement);
    }
    let other = shape.other || (shape.search && shape.fit);
    match (other, shape.fits.is_empty()) {
        (true, _) => LongShape::Other,
        (false, true) => LongShape::NotLong,
        (false, false) => LongShape::FitsOnly(shape.fits),
    }
}

fn has_loop(body: &[Stmt]) -> bool {
    let mut finder = LoopFinder { found: false };
    for statement in body {
        finder.visit_stmt(statement);
    }
    finder.found
}

struct LoopFinder {
    found: bool,
}

impl<'a> Visitor<'a> for LoopFinder {
    fn visit_stmt(&mut self, statement: &'a Stmt) {
        match statement {
            Stmt::For(_) => self.found = true,
            // A nested definition's loop runs only if it is called.
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            _ => walk_stmt(self, statement),
        }
    }
}

struct Shape<'s, 'a> {
    looping: &'s BTreeSet<String>,
    other: bool,
    /// A search is built ([`SEARCHES`]).
    search: bool,
    /// Something's `fit` is called.
    fit: bool,
    fits: Vec<&'a ExprCall>,
}

impl<'a> Visitor<'a> for Shape<'_, 'a> {
    fn visit_stmt(&mut self, statement: &'a Stmt) {
        match statement {
            Stmt::For(_) => self.other = true,
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            _ => walk_stmt(self, statement),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            let name = match call.func.as_ref() {
                Expr::Name(name) => Some(name.id.as_str()),
                Expr::Attribute(attribute) => Some(attribute.attr.as_str()),
                _ => None,
            };
            if let Some(name) = name {
                let epochs = || {
                    call.arguments
                        .keywords
                        .iter()
                        .any(|keyword| keyword.arg.as_ref().is_some_and(|arg| arg == "epochs"))
                };
                self.search |= SEARCHES.contains(&name);
                self.fit |= name == "fit";
                if CROSS_VALIDATIONS.contains(&name) || self.looping.contains(name) {
                    self.other = true;
                } else if name == "fit" && epochs() {
                    self.fits.push(call);
                }
            }
        }
        walk_expr(self, expr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long(code: &str, earlier: &[&str]) -> bool {
        let looping = earlier.iter().flat_map(|s| looping_functions(s)).collect();
        looks_long(code, &looping)
    }

    #[test]
    fn loops_training_calls_and_searches_look_long() {
        assert!(long("for epoch in range(10):\n    pass", &[]));
        assert!(long(
            "if True:\n    with open('x') as f:\n        for l in f: pass",
            &[]
        ));
        assert!(long("h = model.fit(X, y, epochs=20)", &[]));
        assert!(long("s = GridSearchCV(m, grid).fit(X, y)", &[]));
        assert!(long(
            "s = RandomizedSearchCV(m, grid, n_iter=5)\ns.fit(X, y)",
            &[]
        ));
        assert!(long("scores = cross_val_score(m, X, y)", &[]));
        let earlier = "def train(n):\n    for i in range(n):\n        pass\n\
                       class T:\n    def run(self):\n        while True:\n            for b in []: pass\n    def name(self):\n        return 1\n";
        assert!(long("train(3)", &[earlier]));
        assert!(long("T().run()", &[earlier]));
    }

    #[test]
    fn other_cells_do_not() {
        assert!(!long("model.fit(X, y)", &[]));
        // Building a search fits nothing.
        assert!(!long(
            "s = GridSearchCV(make_pipeline(m), {'a': [1, 2]}, cv=3)",
            &[]
        ));
        assert!(!long("while x < 3:\n    x += 1", &[]));
        assert!(!long("[i for i in range(10)]", &[]));
        assert!(!long("def f():\n    for i in range(3): pass", &[]));
        let earlier =
            "def helper():\n    return 1\nclass T:\n    def name(self):\n        return 1\n";
        assert!(!long("helper(); T().name()", &[earlier]));
        assert!(!long("for (", &[]));
    }
}
