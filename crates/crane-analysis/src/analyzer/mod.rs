//! The walk over a parsed cell: scopes, reads, bindings, and the expansion of cell-defined
//! functions and classes at the places the cell calls them.
//!
//! This module holds the walk's state and its core (names resolved, bound, unbound, defined,
//! and a definition expanded where the cell calls it); the traversal of statements and
//! expressions is `visit.rs`, what it records of the names a cell uses (attribute chains,
//! subscripts, operands, calls) `uses.rs`, the local names of a function the cell defines
//! `locals.rs`, and the Python bodies of line magics `escapes.rs`.

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

use escapes::{collect_magic_bodies, MagicBodies};
use locals::{function_locals, parameter_names, target_names};

mod escapes;
mod locals;
mod uses;
mod visit;

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
}
