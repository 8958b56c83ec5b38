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
#[derive(Clone)]
pub(crate) struct Executed {
    cells: Vec<Cell>,
    complete: bool,
    /// The latest definitions after every cell so far.
    latest: Latest,
}

impl Default for Executed {
    fn default() -> Executed {
        Executed {
            cells: Vec::new(),
            complete: true,
            latest: Latest::default(),
        }
    }
}

/// The latest plain `def` and undecorated `class` of each name, while no later statement of an
/// executed cell binds the name otherwise: (cell, statement) positions in [`Executed::cells`].
#[derive(Clone, Default)]
struct Latest {
    functions: HashMap<String, (usize, usize)>,
    classes: HashMap<String, (usize, usize)>,
}

impl Latest {
    /// The state after `cell`, the executed cell at `index`, ran.
    fn run(&mut self, index: usize, cell: &Cell) {
        for (position, stmt) in cell.body.iter().enumerate() {
            let mut bound = Bound::default();
            bound.visit_stmt(stmt);
            for name in &bound.0 {
                self.functions.remove(name);
                self.classes.remove(name);
            }
            match stmt {
                Stmt::FunctionDef(function) if function.decorator_list.is_empty() => {
                    self.functions
                        .insert(function.name.to_string(), (index, position));
                }
                Stmt::ClassDef(class) if class.decorator_list.is_empty() => {
                    self.classes
                        .insert(class.name.to_string(), (index, position));
                }
                _ => {}
            }
        }
    }
}

impl Executed {
    /// Add the next executed cell, parsed (`None` when it does not parse).
    pub(crate) fn push(&mut self, cell: Option<Cell>) {
        let Some(cell) = cell else {
            self.complete = false;
            return;
        };
        // Once a cell does not parse nothing is followed, so nothing more is recorded.
        if self.complete {
            self.latest.run(self.cells.len(), &cell);
        }
        self.cells.push(cell);
    }

    /// Every executed cell parsed, in execution order, or `None` when one does not parse.
    pub(crate) fn cells(&self) -> Option<&[Cell]> {
        self.complete.then_some(self.cells.as_slice())
    }

    /// The latest plain `def` of each name, while no later statement of an executed cell binds
    /// the name otherwise (assignment, import, class, a decorated def, a `global` in a function).
    pub(crate) fn definitions(&self) -> HashMap<String, Definition<'_>> {
        self.definitions_in(&self.latest)
    }

    /// The latest undecorated `class` of each name, while no later statement rebinds the name.
    pub(crate) fn classes(&self) -> HashMap<String, ClassDefinition<'_>> {
        self.classes_in(&self.latest)
    }

    /// [`Executed::definitions`] and [`Executed::classes`] as they stood after each cell ran,
    /// in order, starting before the first.
    pub(crate) fn history(&self) -> History<'_> {
        History {
            executed: self,
            latest: Latest::default(),
            ran: 0,
        }
    }

    fn definitions_in(&self, latest: &Latest) -> HashMap<String, Definition<'_>> {
        self.statements_at(&latest.functions, |cell, stmt| match stmt {
            Stmt::FunctionDef(function) => Some(Definition { cell, function }),
            _ => None,
        })
    }

    fn classes_in(&self, latest: &Latest) -> HashMap<String, ClassDefinition<'_>> {
        self.statements_at(&latest.classes, |cell, stmt| match stmt {
            Stmt::ClassDef(class) => Some(ClassDefinition { cell, class }),
            _ => None,
        })
    }

    /// Each name's statement at its (cell, position), as `pick` reads it; nothing while an
    /// executed cell did not parse.
    fn statements_at<'s, T>(
        &'s self,
        positions: &HashMap<String, (usize, usize)>,
        pick: impl Fn(&'s Cell, &'s Stmt) -> Option<T>,
    ) -> HashMap<String, T> {
        if !self.complete {
            return HashMap::new();
        }
        positions
            .iter()
            .filter_map(|(name, &(index, position))| {
                let cell = self.cells.get(index)?;
                Some((name.clone(), pick(cell, cell.body.get(position)?)?))
            })
            .collect()
    }
}

/// The definitions of the executed cells as the cells ran one after the other.
pub(crate) struct History<'a> {
    executed: &'a Executed,
    latest: Latest,
    ran: usize,
}

impl<'a> History<'a> {
    /// The functions defined before the next cell ran.
    pub(crate) fn definitions(&self) -> HashMap<String, Definition<'a>> {
        self.executed.definitions_in(&self.latest)
    }

    /// The classes defined before the next cell ran.
    pub(crate) fn classes(&self) -> HashMap<String, ClassDefinition<'a>> {
        self.executed.classes_in(&self.latest)
    }

    /// The next cell ran.
    pub(crate) fn advance(&mut self) {
        if let Some(cell) = self.executed.cells.get(self.ran) {
            self.latest.run(self.ran, cell);
            self.ran += 1;
        }
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use ruff_text_size::{Ranged, TextRange};

    use super::*;

    const CELLS: &[&str] = &[
        "def f(x):\n    return x\n\nclass A:\n    pass",
        "@decorate\ndef g():\n    pass\n\ndef h():\n    global f\n    f = 1",
        "def g(y):\n    return y\ntry:\n    pass\nexcept ValueError as A:\n    pass",
        "class A:\n    def m(self):\n        return 1\nimport os as h",
        "%%time\ndef k():\n    return 2",
        "def f(z):\n    return z\n[h := 1 for _ in range(2)]\nclass f:\n    x = 1",
    ];

    /// Where a definition is: the cell's position and the statement's range.
    type Places = BTreeMap<String, (usize, TextRange)>;

    fn place(cells: &[Cell], cell: &Cell, range: TextRange) -> (usize, TextRange) {
        let index = cells.iter().position(|c| std::ptr::eq(c, cell));
        (index.unwrap_or(usize::MAX), range)
    }

    /// The latest definitions after the first `count` cells, computed from scratch.
    fn from_scratch(cells: &[Cell], count: usize) -> (Places, Places) {
        let (mut functions, mut classes) = (Places::new(), Places::new());
        for (index, cell) in cells[..count].iter().enumerate() {
            for stmt in &cell.body {
                let mut bound = Bound::default();
                bound.visit_stmt(stmt);
                for name in bound.0 {
                    functions.remove(&name);
                    classes.remove(&name);
                }
                match stmt {
                    Stmt::FunctionDef(function) if function.decorator_list.is_empty() => {
                        functions.insert(function.name.to_string(), (index, function.range()));
                    }
                    Stmt::ClassDef(class) if class.decorator_list.is_empty() => {
                        classes.insert(class.name.to_string(), (index, class.range()));
                    }
                    _ => {}
                }
            }
        }
        (functions, classes)
    }

    fn places(
        cells: &[Cell],
        definitions: HashMap<String, Definition<'_>>,
        classes: HashMap<String, ClassDefinition<'_>>,
    ) -> (Places, Places) {
        (
            definitions
                .into_iter()
                .map(|(name, d)| (name, place(cells, d.cell, d.function.range())))
                .collect(),
            classes
                .into_iter()
                .map(|(name, c)| (name, place(cells, c.cell, c.class.range())))
                .collect(),
        )
    }

    #[test]
    fn definitions_kept_cell_by_cell_are_those_computed_from_scratch() {
        let mut executed = Executed::default();
        for count in 1..=CELLS.len() {
            executed.push(Cell::parse(CELLS[count - 1]));
            let cells = executed.cells().expect("every cell parses");
            let kept = places(cells, executed.definitions(), executed.classes());
            assert_eq!(kept, from_scratch(cells, count), "after {count} cells");
        }
        let cells = executed.cells().expect("every cell parses");
        let mut history = executed.history();
        for count in 0..=cells.len() {
            let before = places(cells, history.definitions(), history.classes());
            assert_eq!(before, from_scratch(cells, count), "history at {count}");
            history.advance();
        }
        let (functions, classes) = from_scratch(cells, cells.len());
        assert_eq!(functions.keys().collect::<Vec<_>>(), ["g", "k"]);
        assert_eq!(classes.keys().collect::<Vec<_>>(), ["A", "f"]);
    }

    #[test]
    fn nothing_is_followed_once_a_cell_does_not_parse() {
        let mut executed = Executed::default();
        executed.push(Cell::parse(CELLS[0]));
        assert_eq!(executed.definitions().len(), 1);
        executed.push(Cell::parse("x = ("));
        executed.push(Cell::parse(CELLS[2]));
        assert!(executed.cells().is_none());
        assert!(executed.definitions().is_empty());
        assert!(executed.classes().is_empty());
    }
}
