//! The walk over a parsed cell: scopes, reads, bindings, and the expansion of cell-defined
//! functions and classes at the places the cell calls them.

use std::collections::{HashMap, HashSet};

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{
    self as ast, Comprehension, ExceptHandler, Expr, ExprContext, IpyEscapeKind, ModModule,
    Parameters, Pattern, Stmt,
};
use ruff_python_parser::Parsed;
use ruff_text_size::{Ranged, TextRange};

use crate::bounds::{parse_here, with_deep_stack, ParseFailure, Unanalysable};
use crate::builtins::is_builtin;
use crate::magics::{cell_magic, line_magic_body, split_name};
use crate::model::AnalysisError;
use crate::model::{
    AttributeRead, BinaryOperation, Binding, BindingKind, Call, CalledFrom, CellAnalysis, Indexer,
    KeywordArgument, LocalRead, Magic, MagicKind, NameAt, NameRead, Operand, StarImport,
    SubscriptRead, SyntaxError,
};
use crate::parsed::ParsedCell;
use crate::position::LineIndex;
use crate::render::{constant, expr_kind, reference_root, Renderer};

/// Methods that run when a class is called.
const CONSTRUCTOR_METHODS: &[&str] = &["__new__", "__init__", "__post_init__"];

/// A change to a cell-level name, in execution order.
#[derive(Debug, Clone)]
pub(crate) enum NameEvent {
    Bound {
        name: String,
        line: u32,
        kind: BindingKind,
    },
    Deleted {
        name: String,
        line: u32,
    },
}

pub(crate) struct Analysis {
    pub(crate) cell: CellAnalysis,
    pub(crate) events: Vec<NameEvent>,
}

/// Analyses a cell on a thread with a deep stack, within the bounds of `crate::bounds`.
pub(crate) fn analyze(source: &str) -> Result<Analysis, AnalysisError> {
    with_deep_stack(|| analyze_here(&ParsedCell::parse_here(source)))
}

/// Analyses a parsed cell on a thread with a deep stack.
pub(crate) fn analyze_parsed(cell: &ParsedCell) -> Result<Analysis, AnalysisError> {
    with_deep_stack(|| analyze_here(cell))
}

fn analyze_here(parsed_cell: &ParsedCell) -> Result<Analysis, AnalysisError> {
    let lines = parsed_cell.lines();
    let mut cell = CellAnalysis::default();

    let magic_line = cell_magic(parsed_cell.source());
    if let Some(magic) = &magic_line {
        cell.magics.push(Magic {
            kind: MagicKind::CellMagic,
            name: magic.name.to_owned(),
            args: magic.args.to_owned(),
            line: magic.line,
            body_analyzed: magic.has_python_body(),
        });
        if !magic.has_python_body() {
            return Ok(Analysis {
                cell,
                events: Vec::new(),
            });
        }
    }
    let python_source = parsed_cell.python_text();

    let parsed = match (parsed_cell.parsed(), parsed_cell.failure()) {
        (Some(parsed), _) => parsed,
        (None, Some(failure)) => {
            return Err(match failure {
                ParseFailure::Syntax(error) => {
                    let (line, column) = lines.position(error.location.start().to_usize());
                    AnalysisError::Syntax(SyntaxError {
                        message: error.error.to_string(),
                        line,
                        column,
                    })
                }
                ParseFailure::TooDeep { at } => {
                    AnalysisError::Unanalysable(Unanalysable::TooDeep {
                        line: lines.position(*at).0,
                    })
                }
                ParseFailure::TooLarge { bytes } => {
                    AnalysisError::Unanalysable(Unanalysable::TooLarge { bytes: *bytes })
                }
                ParseFailure::ParserFailed => {
                    AnalysisError::Unanalysable(Unanalysable::ParserFailed)
                }
            })
        }
        (None, None) => {
            return Err(AnalysisError::Syntax(SyntaxError {
                message: "the cell is not a module".to_owned(),
                line: 1,
                column: 1,
            }))
        }
    };

    let magic_bodies = collect_magic_bodies(python_source, parsed.suite());
    let mut analyzer = Analyzer {
        lines,
        cell_text: python_source,
        frame: Frame {
            text: python_source,
            base: 0,
            exact: true,
        },
        magic_bodies: &magic_bodies,
        scopes: Vec::new(),
        module: ModuleState::default(),
        expanded: HashSet::new(),
        called_from: None,
        cell,
        events: Vec::new(),
        read_keys: HashSet::new(),
        local_read_names: HashSet::new(),
        attribute_keys: HashSet::new(),
        subscript_keys: HashSet::new(),
    };
    analyzer.visit_body(parsed.suite());
    // `%%capture out` stores its output once the body has run.
    if let Some(magic) = magic_line.filter(|magic| magic.name == "capture") {
        if let Some(output) = magic
            .args
            .split_whitespace()
            .find(|arg| !arg.starts_with('-'))
        {
            analyzer.cell.bindings.push(Binding {
                name: output.to_owned(),
                line: magic.line,
                kind: BindingKind::Magic,
            });
            analyzer.events.push(NameEvent::Bound {
                name: output.to_owned(),
                line: magic.line,
                kind: BindingKind::Magic,
            });
        }
    }
    Ok(Analysis {
        cell: analyzer.cell,
        events: analyzer.events,
    })
}

/// The text AST ranges point into, and where it sits in the cell.
#[derive(Clone, Copy)]
struct Frame<'a> {
    text: &'a str,
    /// Offset of `text` in the cell.
    base: usize,
    /// `text` is a verbatim slice of the cell; otherwise every position maps to `base`.
    exact: bool,
}

/// Parsed Python bodies of line magics (`%time x = f(y)`), by offset of the magic in the cell.
type MagicBodies = HashMap<usize, MagicBody>;

struct MagicBody {
    frame_base: usize,
    exact: bool,
    text: String,
    parsed: Parsed<ModModule>,
}

fn collect_magic_bodies(source: &str, suite: &[Stmt]) -> MagicBodies {
    let mut collector = EscapeCollector {
        source,
        bodies: HashMap::new(),
    };
    collector.visit_body(suite);
    collector.bodies
}

struct EscapeCollector<'s> {
    source: &'s str,
    bodies: HashMap<usize, MagicBody>,
}

impl EscapeCollector<'_> {
    fn add(&mut self, range: TextRange, kind: IpyEscapeKind, value: &str) {
        if kind != IpyEscapeKind::Magic {
            return;
        }
        let Some(body) = line_magic_body(value) else {
            return;
        };
        let Ok(parsed) = parse_here(body) else {
            return;
        };
        let Some(parsed) = parsed.try_into_module() else {
            return;
        };
        let start = range.start().to_usize();
        let node_text = self.source.get(range.to_std_range()).unwrap_or_default();
        let (frame_base, exact) = match node_text.find(body) {
            Some(offset) => (start + offset, true),
            None => (start, false),
        };
        self.bodies.insert(
            start,
            MagicBody {
                frame_base,
                exact,
                text: body.to_owned(),
                parsed,
            },
        );
    }
}

impl<'a> Visitor<'a> for EscapeCollector<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::IpyEscapeCommand(escape) = stmt {
            self.add(escape.range, escape.kind, &escape.value);
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::IpyEscapeCommand(escape) = expr {
            self.add(escape.range, escape.kind, &escape.value);
        }
        visitor::walk_expr(self, expr);
    }
}

/// A function, lambda or class defined in the cell, walked when the cell calls it.
#[derive(Clone)]
struct Definition<'a> {
    kind: DefinitionKind<'a>,
    name: String,
    frame: Frame<'a>,
    /// How many scopes enclose the definition (its lexical environment).
    depth: usize,
}

#[derive(Clone, Copy)]
enum DefinitionKind<'a> {
    Function(&'a ast::StmtFunctionDef),
    Lambda(&'a ast::ExprLambda),
    Class(&'a ast::StmtClassDef),
}

impl Definition<'_> {
    fn id(&self) -> (usize, usize) {
        let range = match self.kind {
            DefinitionKind::Function(def) => def.range,
            DefinitionKind::Lambda(lambda) => lambda.range,
            DefinitionKind::Class(class) => class.range,
        };
        (self.frame.text.as_ptr() as usize, range.start().to_usize())
    }
}

enum Scope<'a> {
    Function {
        locals: HashSet<String>,
        globals: HashSet<String>,
        definitions: HashMap<String, Definition<'a>>,
    },
    /// A lambda's parameters or a comprehension's loop variables.
    Names(HashSet<String>),
    Class {
        bound: HashSet<String>,
        globals: HashSet<String>,
    },
}

#[derive(Default)]
struct ModuleState<'a> {
    /// Names the cell bound so far, with the line of the last binding.
    bound: HashMap<String, u32>,
    /// Names the cell deleted and did not rebind, with the line of the `del`.
    deleted: HashMap<String, u32>,
    definitions: HashMap<String, Definition<'a>>,
    /// Methods of classes defined in the cell, by method name.
    methods: HashMap<String, Vec<Definition<'a>>>,
    after_star_import: bool,
}

#[derive(Debug, PartialEq, Eq)]
enum Resolution {
    /// A parameter or local of a function, lambda, comprehension or class body.
    Local,
    /// Bound earlier by the cell, on this line.
    CellBound(u32),
    Global,
}

struct Analyzer<'a> {
    lines: &'a LineIndex,
    /// The (masked) cell text the top-level AST points into.
    cell_text: &'a str,
    frame: Frame<'a>,
    magic_bodies: &'a MagicBodies,
    scopes: Vec<Scope<'a>>,
    module: ModuleState<'a>,
    expanded: HashSet<(usize, usize)>,
    called_from: Option<CalledFrom>,
    cell: CellAnalysis,
    events: Vec<NameEvent>,
    read_keys: HashSet<(String, Option<u32>)>,
    local_read_names: HashSet<String>,
    attribute_keys: HashSet<(String, bool)>,
    subscript_keys: HashSet<String>,
}

impl<'a> Analyzer<'a> {
    fn renderer(&self) -> Renderer<'a> {
        Renderer::new(self.frame.text)
    }

    fn position(&self, node: &impl Ranged) -> (u32, u32) {
        let offset = if self.frame.exact {
            self.frame.base + node.start().to_usize()
        } else {
            self.frame.base
        };
        self.lines.position(offset)
    }

    fn line(&self, node: &impl Ranged) -> u32 {
        self.position(node).0
    }

    fn resolve(&self, name: &str) -> Resolution {
        let innermost = self.scopes.len();
        for (index, scope) in self.scopes.iter().enumerate().rev() {
            match scope {
                Scope::Names(names) => {
                    if names.contains(name) {
                        return Resolution::Local;
                    }
                }
                Scope::Function {
                    locals, globals, ..
                } => {
                    if globals.contains(name) {
                        break;
                    }
                    if locals.contains(name) {
                        return Resolution::Local;
                    }
                }
                // Class bodies are visible only to their own statements, not to nested scopes.
                Scope::Class { bound, globals } if index + 1 == innermost => {
                    if globals.contains(name) {
                        break;
                    }
                    if bound.contains(name) {
                        return Resolution::Local;
                    }
                }
                Scope::Class { .. } => {}
            }
        }
        match self.module.bound.get(name) {
            Some(line) => Resolution::CellBound(*line),
            None => Resolution::Global,
        }
    }

    fn definition(&self, name: &str) -> Option<Definition<'a>> {
        let innermost = self.scopes.len();
        for (index, scope) in self.scopes.iter().enumerate().rev() {
            match scope {
                Scope::Names(names) => {
                    if names.contains(name) {
                        return None;
                    }
                }
                Scope::Function {
                    locals,
                    globals,
                    definitions,
                } => {
                    if globals.contains(name) {
                        break;
                    }
                    if let Some(definition) = definitions.get(name) {
                        return Some(definition.clone());
                    }
                    if locals.contains(name) {
                        return None;
                    }
                }
                Scope::Class { bound, .. } => {
                    if index + 1 == innermost && bound.contains(name) {
                        return None;
                    }
                }
            }
        }
        self.module.definitions.get(name).cloned()
    }

    fn read_name(&mut self, name: &ast::ExprName) {
        let id = name.id.as_str();
        let (line, column) = self.position(name);
        match self.resolve(id) {
            Resolution::Local => {}
            Resolution::CellBound(bound_on_line) => {
                if self.local_read_names.insert(id.to_owned()) {
                    self.cell.local_reads.push(LocalRead {
                        name: id.to_owned(),
                        line,
                        bound_on_line,
                    });
                }
            }
            Resolution::Global => {
                let deleted_on_line = self.module.deleted.get(id).copied();
                if self.read_keys.insert((id.to_owned(), deleted_on_line)) {
                    self.cell.reads.push(NameRead {
                        name: id.to_owned(),
                        line,
                        column,
                        called_from: self.called_from.clone(),
                        deleted_on_line,
                        after_star_import: self.module.after_star_import,
                        builtin: is_builtin(id),
                    });
                }
            }
        }
    }

    fn bind(&mut self, name: &str, node: &impl Ranged, kind: BindingKind) {
        let mut in_function = false;
        for scope in self.scopes.iter_mut().rev() {
            match scope {
                Scope::Names(_) => {}
                Scope::Function { globals, .. } => {
                    if !globals.contains(name) {
                        return;
                    }
                    in_function = true;
                    break;
                }
                Scope::Class { bound, globals } => {
                    if !globals.contains(name) {
                        bound.insert(name.to_owned());
                        return;
                    }
                    in_function = true;
                    break;
                }
            }
        }
        let kind = if in_function {
            BindingKind::GlobalInFunction
        } else {
            kind
        };
        let line = self.line(node);
        self.module.bound.insert(name.to_owned(), line);
        self.module.deleted.remove(name);
        self.module.definitions.remove(name);
        self.cell.bindings.push(Binding {
            name: name.to_owned(),
            line,
            kind,
        });
        self.events.push(NameEvent::Bound {
            name: name.to_owned(),
            line,
            kind,
        });
    }

    fn unbind(&mut self, name: &str, node: &impl Ranged) {
        for scope in self.scopes.iter().rev() {
            match scope {
                Scope::Names(_) => {}
                Scope::Function { globals, .. } | Scope::Class { globals, .. } => {
                    if !globals.contains(name) {
                        return;
                    }
                    break;
                }
            }
        }
        let line = self.line(node);
        self.module.bound.remove(name);
        self.module.definitions.remove(name);
        self.module.deleted.insert(name.to_owned(), line);
        self.cell.deletions.push(NameAt {
            name: name.to_owned(),
            line,
        });
        self.events.push(NameEvent::Deleted {
            name: name.to_owned(),
            line,
        });
    }

    /// Registers a function/class/lambda the cell may call later.
    fn define(&mut self, name: &str, kind: DefinitionKind<'a>) {
        let depth = self.scopes.len();
        let definition = Definition {
            kind,
            name: name.to_owned(),
            frame: self.frame,
            depth,
        };
        match self.scopes.last_mut() {
            None => {
                self.module.definitions.insert(name.to_owned(), definition);
            }
            Some(Scope::Function { definitions, .. }) => {
                definitions.insert(name.to_owned(), definition);
            }
            Some(Scope::Class { .. }) => {
                if let DefinitionKind::Function(_) = kind {
                    let method = Definition {
                        depth: depth - 1,
                        ..definition
                    };
                    self.module
                        .methods
                        .entry(name.to_owned())
                        .or_default()
                        .push(method);
                }
            }
            Some(Scope::Names(_)) => {}
        }
    }

    /// Walks the body of a cell-defined function or class as the call on `call_line` runs it.
    fn expand(&mut self, definition: Definition<'a>, call_line: u32) {
        if self.scopes.len() < definition.depth || !self.expanded.insert(definition.id()) {
            return;
        }
        let enclosing = self.scopes.split_off(definition.depth);
        let outer_frame = std::mem::replace(&mut self.frame, definition.frame);
        let outer_called_from = self.called_from.replace(CalledFrom {
            function: definition.name.clone(),
            line: call_line,
        });
        match definition.kind {
            DefinitionKind::Function(def) => {
                let (locals, globals) = function_locals(&def.parameters, &def.body);
                self.scopes.push(Scope::Function {
                    locals,
                    globals,
                    definitions: HashMap::new(),
                });
                self.visit_body(&def.body);
                self.scopes.pop();
            }
            DefinitionKind::Lambda(lambda) => {
                self.scopes
                    .push(Scope::Names(parameter_names(lambda.parameters.as_deref())));
                self.visit_expr(&lambda.body);
                self.scopes.pop();
            }
            DefinitionKind::Class(class) => {
                for stmt in &class.body {
                    if let Stmt::FunctionDef(method) = stmt {
                        if CONSTRUCTOR_METHODS.contains(&method.name.as_str()) {
                            let constructor = Definition {
                                kind: DefinitionKind::Function(method),
                                name: format!("{}.{}", class.name, method.name),
                                frame: definition.frame,
                                depth: definition.depth,
                            };
                            self.expand(constructor, call_line);
                        }
                    }
                }
            }
        }
        self.called_from = outer_called_from;
        self.frame = outer_frame;
        self.scopes.extend(enclosing);
    }

    /// Visits a chain of attributes and subscripts read from left to right, recording the
    /// maximal attribute chains and every constant subscript.
    fn visit_chain(&mut self, expr: &'a Expr, in_attribute_run: bool, called: bool) {
        match expr {
            Expr::Attribute(attribute) => {
                if !in_attribute_run {
                    self.record_attribute(expr, attribute, called);
                }
                self.visit_chain(&attribute.value, true, false);
            }
            Expr::Subscript(subscript) => {
                self.record_subscript(expr, subscript);
                self.visit_chain(&subscript.value, false, false);
                self.visit_expr(&subscript.slice);
            }
            other => self.visit_expr(other),
        }
    }

    fn global_root(&self, expr: &Expr) -> Option<String> {
        let root = reference_root(expr)?;
        (self.resolve(&root.id) == Resolution::Global).then(|| root.id.to_string())
    }

    fn record_attribute(&mut self, expr: &Expr, attribute: &ast::ExprAttribute, called: bool) {
        let Some(root) = self.global_root(expr) else {
            return;
        };
        let renderer = self.renderer();
        let rendered = renderer.render(expr);
        if !self.attribute_keys.insert((rendered.clone(), called)) {
            return;
        }
        let (line, column) = self.position(attribute);
        self.cell.attributes.push(AttributeRead {
            expr: rendered,
            root,
            attribute: attribute.attr.to_string(),
            owner: renderer.render(&attribute.value),
            called,
            line,
            column,
            called_from: self.called_from.clone(),
        });
    }

    fn record_subscript(&mut self, expr: &Expr, subscript: &ast::ExprSubscript) {
        let Some(root) = self.global_root(expr) else {
            return;
        };
        let renderer = self.renderer();
        let rendered = renderer.render(expr);
        if !self.subscript_keys.insert(rendered.clone()) {
            return;
        }
        let indexer = match &*subscript.value {
            Expr::Attribute(attribute) => match attribute.attr.as_str() {
                "loc" => Some(Indexer::Loc),
                "iloc" => Some(Indexer::Iloc),
                "at" => Some(Indexer::At),
                "iat" => Some(Indexer::Iat),
                _ => None,
            },
            _ => None,
        };
        let (line, column) = self.position(subscript);
        self.cell.subscripts.push(SubscriptRead {
            expr: rendered,
            root,
            value: renderer.render(&subscript.value),
            key: renderer.render_key(&subscript.slice),
            key_constant: constant(&subscript.slice),
            indexer,
            line,
            column,
            called_from: self.called_from.clone(),
        });
    }

    fn operand(&self, expr: &Expr) -> Operand {
        let renderer = self.renderer();
        let root = reference_root(expr);
        Operand {
            text: renderer.text(expr).to_owned(),
            kind: expr_kind(expr),
            expr: root.map(|_| renderer.render(expr)),
            constant: constant(expr),
            local: root.is_some_and(|root| self.resolve(&root.id) != Resolution::Global),
        }
    }

    fn record_call(&mut self, call: &'a ast::ExprCall) {
        let renderer = self.renderer();
        let (receiver, method) = match &*call.func {
            Expr::Attribute(attribute) => (
                Some(renderer.render(&attribute.value)),
                Some(attribute.attr.to_string()),
            ),
            _ => (None, None),
        };
        let call_record = Call {
            callee: renderer.render(&call.func),
            receiver,
            method,
            args: call
                .arguments
                .args
                .iter()
                .map(|arg| self.operand(arg))
                .collect(),
            keywords: call
                .arguments
                .keywords
                .iter()
                .map(|keyword| KeywordArgument {
                    name: keyword.arg.as_ref().map(ToString::to_string),
                    value: self.operand(&keyword.value),
                })
                .collect(),
            line: self.line(call),
            called_from: self.called_from.clone(),
        };
        self.cell.calls.push(call_record);
    }

    fn visit_call(&mut self, call: &'a ast::ExprCall) {
        self.record_call(call);
        match &*call.func {
            func @ Expr::Attribute(_) => self.visit_chain(func, false, true),
            func => self.visit_expr(func),
        }
        self.visit_arguments(&call.arguments);

        let line = self.line(call);
        match &*call.func {
            Expr::Name(name) => {
                if let Some(definition) = self.definition(&name.id) {
                    self.expand(definition, line);
                }
            }
            Expr::Attribute(attribute) => {
                let methods = self
                    .module
                    .methods
                    .get(attribute.attr.as_str())
                    .cloned()
                    .unwrap_or_default();
                for method in methods {
                    self.expand(method, line);
                }
            }
            _ => {}
        }
        // A cell-defined function passed as an argument is called by the callee.
        let passed = call
            .arguments
            .args
            .iter()
            .chain(call.arguments.keywords.iter().map(|keyword| &keyword.value));
        for argument in passed {
            if let Expr::Name(name) = argument {
                if let Some(definition) = self.definition(&name.id) {
                    self.expand(definition, line);
                }
            }
        }
    }

    fn visit_target(&mut self, target: &'a Expr, kind: BindingKind) {
        match target {
            Expr::Name(name) => self.bind(&name.id, name, kind),
            Expr::Tuple(tuple) => {
                for elt in &tuple.elts {
                    self.visit_target(elt, kind);
                }
            }
            Expr::List(list) => {
                for elt in &list.elts {
                    self.visit_target(elt, kind);
                }
            }
            Expr::Starred(starred) => self.visit_target(&starred.value, kind),
            Expr::Attribute(attribute) => self.visit_chain(&attribute.value, false, false),
            Expr::Subscript(subscript) => {
                self.visit_chain(&subscript.value, false, false);
                self.visit_expr(&subscript.slice);
            }
            other => self.visit_expr(other),
        }
    }

    fn visit_comprehension_scope(
        &mut self,
        generators: &'a [Comprehension],
        elements: &[&'a Expr],
    ) {
        let Some(first) = generators.first() else {
            return;
        };
        self.visit_expr(&first.iter);
        let mut names = HashSet::new();
        for generator in generators {
            target_names(&generator.target, &mut names);
        }
        self.scopes.push(Scope::Names(names));
        for (index, generator) in generators.iter().enumerate() {
            if index > 0 {
                self.visit_expr(&generator.iter);
            }
            for condition in &generator.ifs {
                self.visit_expr(condition);
            }
        }
        for element in elements {
            self.visit_expr(element);
        }
        self.scopes.pop();
    }

    fn visit_function_def(&mut self, def: &'a ast::StmtFunctionDef) {
        for decorator in &def.decorator_list {
            self.visit_decorator_call(&decorator.expression);
        }
        self.visit_parameter_defaults(&def.parameters);
        for parameter in def.parameters.iter() {
            if let Some(annotation) = &parameter.as_parameter().annotation {
                self.visit_expr(annotation);
            }
        }
        if let Some(returns) = &def.returns {
            self.visit_expr(returns);
        }
        self.bind(&def.name, &def.name, BindingKind::FunctionDef);
        self.define(&def.name, DefinitionKind::Function(def));
    }

    fn visit_class_def(&mut self, class: &'a ast::StmtClassDef) {
        for decorator in &class.decorator_list {
            self.visit_decorator_call(&decorator.expression);
        }
        if let Some(arguments) = &class.arguments {
            self.visit_arguments(arguments);
        }
        self.scopes.push(Scope::Class {
            bound: HashSet::new(),
            globals: HashSet::new(),
        });
        self.visit_body(&class.body);
        self.scopes.pop();
        self.bind(&class.name, &class.name, BindingKind::ClassDef);
        self.define(&class.name, DefinitionKind::Class(class));
    }

    /// A decorator is called with the decorated object when the definition runs.
    fn visit_decorator_call(&mut self, decorator: &'a Expr) {
        self.visit_expr(decorator);
        if let Expr::Name(name) = decorator {
            if let Some(definition) = self.definition(&name.id) {
                let line = self.line(decorator);
                self.expand(definition, line);
            }
        }
    }

    fn visit_parameter_defaults(&mut self, parameters: &'a Parameters) {
        for parameter in parameters.iter_non_variadic_params() {
            if let Some(default) = &parameter.default {
                self.visit_expr(default);
            }
        }
    }

    fn visit_lambda(&mut self, lambda: &'a ast::ExprLambda) {
        if let Some(parameters) = &lambda.parameters {
            self.visit_parameter_defaults(parameters);
        }
        self.scopes
            .push(Scope::Names(parameter_names(lambda.parameters.as_deref())));
        self.visit_expr(&lambda.body);
        self.scopes.pop();
    }

    fn visit_import(&mut self, alias: &'a ast::Alias) {
        let bound = match &alias.asname {
            Some(asname) => asname.as_str(),
            None => alias.name.split('.').next().unwrap_or_default(),
        };
        self.bind(bound, alias, BindingKind::Import);
    }

    fn star_import(&mut self, module: String, node: &impl Ranged) {
        let line = self.line(node);
        self.module.after_star_import = true;
        self.cell.star_imports.push(StarImport { module, line });
    }

    fn visit_escape(&mut self, range: TextRange, kind: IpyEscapeKind, value: &'a str) {
        let line = self.line(&range);
        let (magic_kind, name, args) = match kind {
            IpyEscapeKind::Magic | IpyEscapeKind::Magic2 => {
                let (name, args) = split_name(value);
                let kind = if kind == IpyEscapeKind::Magic {
                    MagicKind::LineMagic
                } else {
                    MagicKind::CellMagic
                };
                (kind, name, args)
            }
            IpyEscapeKind::Shell | IpyEscapeKind::ShCap => {
                let (name, args) = split_name(value);
                (MagicKind::Shell, name, args)
            }
            IpyEscapeKind::Help | IpyEscapeKind::Help2 => (MagicKind::Help, value.trim(), ""),
            IpyEscapeKind::Quote | IpyEscapeKind::Quote2 | IpyEscapeKind::Paren => {
                let (name, args) = split_name(value);
                (MagicKind::AutoCall, name, args)
            }
        };
        let in_cell_text = std::ptr::eq(self.frame.text, self.cell_text);
        let body = if magic_kind == MagicKind::LineMagic && in_cell_text {
            self.magic_bodies.get(&range.start().to_usize())
        } else {
            None
        };
        self.cell.magics.push(Magic {
            kind: magic_kind,
            name: name.to_owned(),
            args: args.to_owned(),
            line,
            body_analyzed: body.is_some(),
        });
        if magic_kind == MagicKind::LineMagic {
            match name {
                "run" => {
                    let script = args.split_whitespace().find(|arg| !arg.starts_with('-'));
                    self.star_import(script.unwrap_or(args).to_owned(), &range);
                }
                "pylab" => self.star_import("pylab".to_owned(), &range),
                "store" => self.visit_store_magic(args, &range),
                _ => {}
            }
        }
        if let Some(body) = body {
            let outer = std::mem::replace(
                &mut self.frame,
                Frame {
                    text: &body.text,
                    base: body.frame_base,
                    exact: body.exact,
                },
            );
            self.visit_body(body.parsed.suite());
            self.frame = outer;
        }
    }

    /// `%store -r a b` restores `a` and `b`; `%store -r` restores everything stored.
    fn visit_store_magic(&mut self, args: &str, range: &TextRange) {
        let mut words = args.split_whitespace();
        if words.next() != Some("-r") {
            return;
        }
        let names: Vec<&str> = words.collect();
        if names.is_empty() {
            self.star_import("%store".to_owned(), range);
        }
        for name in names {
            self.bind(name, range, BindingKind::Magic);
        }
    }
}

impl<'a> Visitor<'a> for Analyzer<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => self.visit_function_def(def),
            Stmt::ClassDef(class) => self.visit_class_def(class),
            Stmt::Assign(assign) => {
                if let ([Expr::Name(target)], Expr::Lambda(lambda)) =
                    (assign.targets.as_slice(), &*assign.value)
                {
                    if let Some(parameters) = &lambda.parameters {
                        self.visit_parameter_defaults(parameters);
                    }
                    self.bind(&target.id, target, BindingKind::Assignment);
                    self.define(&target.id, DefinitionKind::Lambda(lambda));
                    return;
                }
                self.visit_expr(&assign.value);
                for target in &assign.targets {
                    self.visit_target(target, BindingKind::Assignment);
                }
            }
            Stmt::AugAssign(aug) => {
                match &*aug.target {
                    Expr::Name(name) => self.read_name(name),
                    target => self.visit_chain(target, false, false),
                }
                self.visit_expr(&aug.value);
                let operation = BinaryOperation {
                    operator: format!("{}=", aug.op.as_str()),
                    left: self.operand(&aug.target),
                    right: self.operand(&aug.value),
                    line: self.line(aug),
                    called_from: self.called_from.clone(),
                };
                self.cell.binary_operations.push(operation);
                if let Expr::Name(name) = &*aug.target {
                    self.bind(&name.id, name, BindingKind::AugmentedAssignment);
                }
            }
            Stmt::AnnAssign(ann) => {
                if let Some(value) = &ann.value {
                    self.visit_expr(value);
                }
                // Annotations of function locals are never evaluated.
                if !matches!(self.scopes.last(), Some(Scope::Function { .. })) {
                    self.visit_expr(&ann.annotation);
                }
                match (&*ann.target, &ann.value) {
                    (Expr::Name(name), Some(_)) => {
                        self.bind(&name.id, name, BindingKind::AnnotatedAssignment);
                    }
                    (Expr::Name(_), None) => {}
                    (target, _) => self.visit_target(target, BindingKind::AnnotatedAssignment),
                }
            }
            Stmt::For(for_stmt) => {
                self.visit_expr(&for_stmt.iter);
                self.visit_target(&for_stmt.target, BindingKind::For);
                self.visit_body(&for_stmt.body);
                self.visit_body(&for_stmt.orelse);
            }
            Stmt::With(with) => {
                for item in &with.items {
                    self.visit_expr(&item.context_expr);
                    if let Some(target) = &item.optional_vars {
                        self.visit_target(target, BindingKind::With);
                    }
                }
                self.visit_body(&with.body);
            }
            Stmt::Delete(delete) => {
                for target in &delete.targets {
                    match target {
                        Expr::Name(name) => self.unbind(&name.id, name),
                        other => self.visit_target(other, BindingKind::Assignment),
                    }
                }
            }
            Stmt::Import(import) => {
                for alias in &import.names {
                    self.visit_import(alias);
                }
            }
            Stmt::ImportFrom(import) => {
                for alias in &import.names {
                    if alias.name.as_str() == "*" {
                        let module = format!(
                            "{}{}",
                            ".".repeat(import.level as usize),
                            import
                                .module
                                .as_ref()
                                .map(|m| m.as_str())
                                .unwrap_or_default()
                        );
                        self.star_import(module, import);
                    } else {
                        let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                        self.bind(bound, alias, BindingKind::Import);
                    }
                }
            }
            Stmt::Global(global) => {
                for name in &global.names {
                    match self.scopes.last_mut() {
                        Some(Scope::Class { globals, .. }) => {
                            globals.insert(name.to_string());
                        }
                        None => {
                            let line = self.line(name);
                            self.cell.global_declarations.push(NameAt {
                                name: name.to_string(),
                                line,
                            });
                        }
                        // Function globals are collected before the body is walked.
                        Some(_) => {}
                    }
                }
            }
            Stmt::TypeAlias(alias) => {
                if let Expr::Name(name) = &*alias.name {
                    self.bind(&name.id, name, BindingKind::TypeAlias);
                }
            }
            Stmt::IpyEscapeCommand(escape) => {
                self.visit_escape(escape.range, escape.kind, &escape.value);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(name) => match name.ctx {
                ExprContext::Load => self.read_name(name),
                ExprContext::Store => self.bind(&name.id, name, BindingKind::Assignment),
                ExprContext::Del => self.unbind(&name.id, name),
                ExprContext::Invalid => {}
            },
            Expr::Attribute(attribute) => match attribute.ctx {
                ExprContext::Load => self.visit_chain(expr, false, false),
                _ => self.visit_chain(&attribute.value, false, false),
            },
            Expr::Subscript(subscript) => match subscript.ctx {
                ExprContext::Load => self.visit_chain(expr, false, false),
                _ => {
                    self.visit_chain(&subscript.value, false, false);
                    self.visit_expr(&subscript.slice);
                }
            },
            Expr::Call(call) => self.visit_call(call),
            Expr::BinOp(binary) => {
                let operation = BinaryOperation {
                    operator: binary.op.as_str().to_owned(),
                    left: self.operand(&binary.left),
                    right: self.operand(&binary.right),
                    line: self.line(binary),
                    called_from: self.called_from.clone(),
                };
                self.cell.binary_operations.push(operation);
                visitor::walk_expr(self, expr);
            }
            Expr::Named(named) => {
                self.visit_expr(&named.value);
                self.visit_target(&named.target, BindingKind::Walrus);
            }
            Expr::Lambda(lambda) => self.visit_lambda(lambda),
            Expr::ListComp(comp) => self.visit_comprehension_scope(&comp.generators, &[&comp.elt]),
            Expr::SetComp(comp) => self.visit_comprehension_scope(&comp.generators, &[&comp.elt]),
            Expr::Generator(comp) => {
                self.visit_comprehension_scope(&comp.generators, &[&comp.elt]);
            }
            Expr::DictComp(comp) => {
                let elements: Vec<&Expr> = comp
                    .key
                    .as_deref()
                    .into_iter()
                    .chain([&*comp.value])
                    .collect();
                self.visit_comprehension_scope(&comp.generators, &elements);
            }
            Expr::IpyEscapeCommand(escape) => {
                self.visit_escape(escape.range, escape.kind, &escape.value);
            }
            _ => visitor::walk_expr(self, expr),
        }
    }

    fn visit_except_handler(&mut self, handler: &'a ExceptHandler) {
        let ExceptHandler::ExceptHandler(handler) = handler;
        if let Some(type_) = &handler.type_ {
            self.visit_expr(type_);
        }
        if let Some(name) = &handler.name {
            self.bind(name, name, BindingKind::ExceptHandler);
        }
        self.visit_body(&handler.body);
    }

    fn visit_pattern(&mut self, pattern: &'a Pattern) {
        visitor::walk_pattern(self, pattern);
        let name = match pattern {
            Pattern::MatchAs(pattern) => pattern.name.as_ref(),
            Pattern::MatchStar(pattern) => pattern.name.as_ref(),
            Pattern::MatchMapping(pattern) => pattern.rest.as_ref(),
            _ => None,
        };
        if let Some(name) = name {
            self.bind(name, name, BindingKind::MatchPattern);
        }
    }
}

fn parameter_names(parameters: Option<&Parameters>) -> HashSet<String> {
    parameters
        .into_iter()
        .flat_map(|parameters| parameters.iter())
        .map(|parameter| parameter.name().to_string())
        .collect()
}

fn target_names(target: &Expr, names: &mut HashSet<String>) {
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
fn function_locals(parameters: &Parameters, body: &[Stmt]) -> (HashSet<String>, HashSet<String>) {
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
