//! What the executed cells tell about the kernel: the names they bind, what imported names
//! stand for, and which user functions may change global state when called.

use std::collections::{HashMap, HashSet};

use crane_analysis::{Bindings, NameState};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprContext, IpyEscapeKind, Stmt};
use ruff_text_size::Ranged;

/// Knowledge drawn from the executed cells' code.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Kernel {
    /// Names some executed cell binds (anywhere outside function bodies, or declared global).
    pub bound: HashSet<String>,
    /// Imported names and the qualified name they stand for, when the import is the name's last
    /// binding (`np` -> `numpy`, `train_test_split` -> `sklearn.model_selection.train_test_split`).
    pub imports: HashMap<String, String>,
    /// Names may have been bound by code crane cannot see: star imports, `%run`, `exec`,
    /// `globals()`, cells that do not parse.
    pub dynamic_names: bool,
    /// User functions defined by the executed cells: whether a call may change global state.
    pub functions: HashMap<String, bool>,
    /// Names of frames whose index may carry names: they were bound from, or changed by, an
    /// operation that names the index (`set_index`, `groupby`, `pivot`, `index_col=`, ...).
    /// A label that is not a column may still be an index level of such a frame.
    pub named_index: HashSet<String>,
    /// Some library registers methods or accessors on pandas objects.
    pub extends_pandas: bool,
    /// Attribute names the executed cells assign (`obj.name = ...`).
    pub assigned_attributes: HashSet<String>,
    /// scikit-learn may be set to output frames (`set_output`, `transform_output`).
    pub frames_from_transformers: bool,
}

const INDEX_NAMING: &[&str] = &[
    "set_index",
    "index_col",
    "rename_axis",
    "groupby",
    "pivot",
    "unstack",
    "stack(",
    "resample",
    "crosstab",
    "index.name",
    "set_axis",
    "MultiIndex",
    "from_product",
    "from_tuples",
];

const DYNAMIC_MAGICS: &[&str] = &[
    "run",
    "store",
    "pylab",
    "load",
    "reset",
    "macro",
    "recall",
    "rerun",
    "autoreload",
    "aimport",
    "load_ext",
    "sql",
    "R",
    "octave",
];

impl Kernel {
    /// Scan the next executed cell (parsed here).
    pub(crate) fn scan_cell(&mut self, source: &str) {
        match parse_cell(source) {
            Some(body) => self.scan_parsed(source, &body),
            None => self.dynamic_names = true,
        }
    }

    /// Scan the next executed cell, whose statements are `body` as [`parse_cell`] gives them.
    pub(crate) fn scan_parsed(&mut self, source: &str, body: &[Stmt]) {
        index_naming(self, source, body);
        let mut scanner = Scanner {
            kernel: self,
            rebound: HashSet::new(),
        };
        for stmt in body {
            scanner.visit_stmt(stmt);
        }
    }

    /// Add what the analysis of every executed cell says: the names whose last binding stands,
    /// and whether star imports or cells that do not parse may have bound others. Done after
    /// the last cell's scan.
    pub(crate) fn add_bindings(&mut self, bindings: &Bindings) {
        for (name, state) in &bindings.names {
            if matches!(state, NameState::Bound { .. }) {
                self.bound.insert(name.clone());
            }
        }
        if !bindings.star_imports.is_empty() || !bindings.unparsed_cells.is_empty() {
            self.dynamic_names = true;
        }
    }
}

/// Names a statement list assigns or changes in place.
pub(crate) fn changed_in_place(body: &[Stmt]) -> Vec<String> {
    let mut names = HashSet::new();
    let mut targets = Targets(&mut names);
    for stmt in body {
        targets.visit_stmt(stmt);
    }
    names.into_iter().collect()
}

/// Names assigned, roots of subscript/attribute assignments, receivers of `inplace=True`.
struct Targets<'k>(&'k mut HashSet<String>);

impl<'a> Visitor<'a> for Targets<'_> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(name) if name.ctx != ExprContext::Load => {
                self.0.insert(name.id.to_string());
            }
            Expr::Attribute(_) | Expr::Subscript(_) if expr_ctx_store(expr) => {
                if let Some(root) = root_of(expr) {
                    self.0.insert(root);
                }
            }
            Expr::Call(call) => {
                let in_place = call
                    .arguments
                    .keywords
                    .iter()
                    .any(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "inplace"));
                if in_place {
                    if let Some(root) = root_of(&call.func) {
                        self.0.insert(root);
                    }
                }
                visitor::walk_expr(self, expr);
            }
            _ => visitor::walk_expr(self, expr),
        }
    }
}
fn expr_ctx_store(expr: &Expr) -> bool {
    match expr {
        Expr::Attribute(attribute) => attribute.ctx != ExprContext::Load,
        Expr::Subscript(subscript) => subscript.ctx != ExprContext::Load,
        _ => false,
    }
}
fn root_of(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(name) => Some(name.id.to_string()),
        Expr::Attribute(attribute) => root_of(&attribute.value),
        Expr::Subscript(subscript) => root_of(&subscript.value),
        Expr::Call(call) => root_of(&call.func),
        _ => None,
    }
}

/// Record the frames a statement may give a named index: the names it assigns and the objects
/// it changes in place or whose `index` it sets.
fn index_naming(kernel: &mut Kernel, source: &str, body: &[Stmt]) {
    for stmt in body {
        let text = source.get(stmt.range().to_std_range()).unwrap_or_default();
        if !INDEX_NAMING.iter().any(|keyword| text.contains(keyword)) {
            continue;
        }
        let mut targets = Targets(&mut kernel.named_index);
        targets.visit_stmt(stmt);
    }
}

/// Parse a cell; a leading cell magic whose body is Python (`%%time`, `%%capture`) is skipped.
pub(crate) fn parse_cell(source: &str) -> Option<Vec<Stmt>> {
    let parsed = crane_analysis::bounds::parse_bounded(source).ok()?;
    match parsed.into_syntax() {
        ast::Mod::Module(module) => Some(module.body.into_iter().collect()),
        ast::Mod::Expression(_) => None,
    }
}

struct Scanner<'k> {
    kernel: &'k mut Kernel,
    /// Names rebound in this cell by something other than an import.
    rebound: HashSet<String>,
}

impl Scanner<'_> {
    fn bind(&mut self, name: &str) {
        self.kernel.bound.insert(name.to_owned());
        self.kernel.imports.remove(name);
        self.rebound.insert(name.to_owned());
    }

    fn import(&mut self, alias: &str, qualified: String) {
        self.kernel.bound.insert(alias.to_owned());
        self.kernel.imports.insert(alias.to_owned(), qualified);
    }

    fn magic(&mut self, kind: IpyEscapeKind, value: &str) {
        let mut words = value.split_whitespace();
        let name = words.next().unwrap_or_default();
        match kind {
            IpyEscapeKind::Magic | IpyEscapeKind::Magic2 => {
                if DYNAMIC_MAGICS.contains(&name) {
                    self.kernel.dynamic_names = true;
                }
                if kind == IpyEscapeKind::Magic2 && name == "capture" {
                    for word in words.filter(|w| !w.starts_with('-')) {
                        self.bind(word);
                    }
                }
                if kind == IpyEscapeKind::Magic2 {
                    // The body of `%%time` and friends is Python run in the kernel.
                    if let Some((_, rest)) = value.split_once('\n') {
                        self.kernel.scan_cell(rest);
                    }
                } else if matches!(name, "time" | "timeit" | "prun") {
                    let rest: String = value[name.len()..].trim().to_owned();
                    let rest = rest.trim_start_matches(|c: char| c == '-' || c.is_alphanumeric());
                    self.kernel.scan_cell(rest.trim());
                }
            }
            _ => {}
        }
    }
}

impl<'a> Visitor<'a> for Scanner<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(function) => {
                self.bind(&function.name);
                let mutates = function_mutates_globals(function);
                self.kernel
                    .functions
                    .insert(function.name.to_string(), mutates);
                let mut globals = GlobalDeclarations(Vec::new());
                for stmt in &function.body {
                    globals.visit_stmt(stmt);
                }
                for name in globals.0 {
                    self.bind(&name);
                }
                for decorator in &function.decorator_list {
                    self.visit_expr(&decorator.expression);
                }
            }
            Stmt::ClassDef(class) => {
                self.bind(&class.name);
                self.kernel.functions.remove(class.name.as_str());
            }
            Stmt::Import(import) => {
                for alias in &import.names {
                    match &alias.asname {
                        Some(asname) => self.import(asname, alias.name.to_string()),
                        None => {
                            let root = alias.name.split('.').next().unwrap_or_default();
                            self.import(root, root.to_owned());
                        }
                    }
                }
            }
            Stmt::ImportFrom(import) => {
                let module = import.module.as_ref().map(|m| m.to_string());
                for alias in &import.names {
                    if alias.name.as_str() == "*" {
                        self.kernel.dynamic_names = true;
                        continue;
                    }
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name).to_string();
                    match (&module, import.level) {
                        (Some(module), 0) => {
                            self.import(&bound, format!("{module}.{}", alias.name))
                        }
                        _ => self.bind(&bound),
                    }
                }
            }
            Stmt::IpyEscapeCommand(command) => self.magic(command.kind, &command.value),
            Stmt::Match(_) => {
                self.kernel.dynamic_names = true;
                visitor::walk_stmt(self, stmt);
            }
            Stmt::Try(try_stmt) => {
                for handler in &try_stmt.handlers {
                    let ast::ExceptHandler::ExceptHandler(handler) = handler;
                    if let Some(name) = &handler.name {
                        self.bind(name);
                    }
                }
                visitor::walk_stmt(self, stmt);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(name) if matches!(name.ctx, ExprContext::Store | ExprContext::Del) => {
                self.bind(&name.id);
            }
            Expr::Attribute(attribute) if attribute.ctx == ExprContext::Store => {
                self.kernel
                    .assigned_attributes
                    .insert(attribute.attr.to_string());
                visitor::walk_expr(self, expr);
            }
            Expr::Name(name)
                if matches!(
                    name.id.as_str(),
                    "globals" | "locals" | "exec" | "vars" | "eval" | "builtins"
                ) =>
            {
                self.kernel.dynamic_names = true;
            }
            Expr::IpyEscapeCommand(command) => self.magic(command.kind, &command.value),
            Expr::Lambda(_) => {}
            Expr::ListComp(comp) => {
                self.visit_comprehensions(&comp.generators);
                self.visit_expr(&comp.elt);
            }
            Expr::SetComp(comp) => {
                self.visit_comprehensions(&comp.generators);
                self.visit_expr(&comp.elt);
            }
            Expr::Generator(comp) => {
                self.visit_comprehensions(&comp.generators);
                self.visit_expr(&comp.elt);
            }
            Expr::DictComp(comp) => {
                self.visit_comprehensions(&comp.generators);
                if let Some(key) = &comp.key {
                    self.visit_expr(key);
                }
                self.visit_expr(&comp.value);
            }
            _ => visitor::walk_expr(self, expr),
        }
    }
}

impl Scanner<'_> {
    /// Comprehension targets do not leak; walrus targets inside them do (visited as `Store`
    /// names through `visit_expr` of the conditions and elements).
    fn visit_comprehensions(&mut self, generators: &[ast::Comprehension]) {
        for generator in generators {
            self.visit_expr(&generator.iter);
            for condition in &generator.ifs {
                self.visit_expr(condition);
            }
        }
    }
}

struct GlobalDeclarations(Vec<String>);

impl<'a> Visitor<'a> for GlobalDeclarations {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Global(global) => self.0.extend(global.names.iter().map(|n| n.to_string())),
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            _ => visitor::walk_stmt(self, stmt),
        }
    }
}

/// Whether calling the function may change objects or names of the global namespace: it declares
/// globals, assigns into subscripts or attributes, calls something with `inplace=True`, or calls
/// methods known to change their object in place.
fn function_mutates_globals(function: &ast::StmtFunctionDef) -> bool {
    struct Mutations(bool);
    impl<'a> Visitor<'a> for Mutations {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::Global(_) | Stmt::Nonlocal(_) => self.0 = true,
                _ => visitor::walk_stmt(self, stmt),
            }
        }
        fn visit_expr(&mut self, expr: &'a Expr) {
            match expr {
                Expr::Subscript(subscript) if subscript.ctx != ExprContext::Load => self.0 = true,
                Expr::Attribute(attribute) if attribute.ctx != ExprContext::Load => self.0 = true,
                Expr::Call(call) => {
                    if call
                        .arguments
                        .keywords
                        .iter()
                        .any(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "inplace"))
                    {
                        self.0 = true;
                    }
                    if let Expr::Attribute(attribute) = call.func.as_ref() {
                        if IN_PLACE_METHODS.contains(&attribute.attr.as_str()) {
                            self.0 = true;
                        }
                    }
                    visitor::walk_expr(self, expr);
                }
                _ => visitor::walk_expr(self, expr),
            }
        }
    }
    let mut mutations = Mutations(false);
    for stmt in &function.body {
        mutations.visit_stmt(stmt);
    }
    mutations.0
}

/// Methods that change their object in place (on frames, estimators, models, containers).
pub(crate) const IN_PLACE_METHODS: &[&str] = &[
    "fit",
    "fit_transform",
    "fit_predict",
    "partial_fit",
    "set_params",
    "compile",
    "add",
    "pop",
    "insert",
    "update",
    "append",
    "extend",
    "remove",
    "clear",
    "to",
    "cuda",
    "cpu",
    "load_state_dict",
    "load_weights",
    "build",
    "train",
    "eval",
    "set_axis",
    "setdefault",
    "sort",
    "reverse",
    "requires_grad_",
    "zero_",
    "fill_",
    "add_",
    "mul_",
    "resize",
    "resize_",
];
