//! The abstract interpreter over the target cell: it runs the cell's statements in order on
//! abstract values, so rules see what an expression denotes at the point it is evaluated
//! (`X = df.drop('a', axis=1); model.predict(X)`), and fire only on code that certainly runs.
//! Plain values follow Python's semantics (`python.rs`); library objects are described by facts
//! and changed by the [`Library`] the core is given (`rules/models/`).
//!
//! Followed: calls of functions and instances of classes defined in the target or an executed
//! cell (`defs.rs`), loops over known items pass by pass, branches whose test the facts decide,
//! `try` bodies against their handlers; all of it bounded in depth and work.
//!
//! Certainty: top-level statements, `with` bodies, followed calls and loop passes, decided
//! branches run for sure; undecided `if`s, `while` bodies, handlers, comprehension elements and
//! code after an undecided jump may not. Rules fire only in certain code. Whatever uncertain
//! code may bind or change is forgotten afterwards, and so is whatever code that is not followed
//! could reach (lists, dicts and instances are shared by every name holding them).

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crane_analysis::{CellAnalysis, Indexer};
use crane_runtime::{Kind, RuntimeInfo, Variable};
use ruff_python_ast::Expr;
use ruff_text_size::Ranged;

use super::cell::Cell;
use super::defs::{ClassDefinition, Definition};
use super::kernel::Kernel;
use super::value::{Obj, Sequence, Value};
use super::Library;
use crate::Finding;

mod bindings;
mod calls;
mod expr;
mod loops;
mod report;
mod state;
mod stmt;

use stmt::may_jump;

/// What a name holds in the cell.
#[derive(Debug, Clone)]
enum Slot {
    Known(Value),
    Unknown,
    /// Deleted by `del` in the cell.
    Deleted,
}

/// How many passes of a loop over known items are followed one by one.
const MAX_PASSES: usize = 256;
/// Statements run in all, bounded so following calls and loops stays cheap.
const MAX_STEPS: usize = 20_000;

/// How many elements a comprehension may compute before its value is given up.
const COMPREHENSION_WORK: usize = 1_000;

/// A cell function's call frame.
struct Frame {
    slots: HashMap<String, Slot>,
    locals: HashSet<String>,
}

/// An argument of a call.
#[derive(Debug, Clone)]
pub(crate) struct Arg<'e> {
    pub expr: &'e Expr,
    pub value: Option<Value>,
}

/// A call's evaluated arguments.
#[derive(Debug, Clone)]
pub(crate) struct Args<'e> {
    pub positional: Vec<Arg<'e>>,
    pub keywords: Vec<(&'e str, Arg<'e>)>,
    /// `*args` or `**kwargs`: positions and keywords are not all known.
    pub star: bool,
    pub line: u32,
}

impl<'e> Args<'e> {
    /// The argument given by keyword `name`, or else at `position` (when positions are sure).
    pub fn arg(&self, position: usize, name: &str) -> Option<&Arg<'e>> {
        self.keyword(name).or_else(|| {
            if self.star {
                None
            } else {
                self.positional.get(position)
            }
        })
    }

    pub fn keyword(&self, name: &str) -> Option<&Arg<'e>> {
        self.keywords
            .iter()
            .find(|(keyword, _)| *keyword == name)
            .map(|(_, arg)| arg)
    }

    pub fn value(&self, position: usize, name: &str) -> Option<&Value> {
        self.arg(position, name)?.value.as_ref()
    }

    pub fn keyword_value(&self, name: &str) -> Option<&Value> {
        self.keyword(name)?.value.as_ref()
    }

    /// Whether the keyword is given (whatever its value).
    pub fn has_keyword(&self, name: &str) -> bool {
        self.star || self.keyword(name).is_some()
    }

    /// The known values of every argument.
    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.positional
            .iter()
            .chain(self.keywords.iter().map(|(_, arg)| arg))
            .filter_map(|arg| arg.value.as_ref())
    }

    pub fn objects(&self) -> impl Iterator<Item = &Obj> {
        self.positional
            .iter()
            .chain(self.keywords.iter().map(|(_, arg)| arg))
            .filter_map(|arg| arg.value.as_ref()?.obj())
    }
}

/// What a call does, as the library rules know it.
pub(crate) enum Effect {
    /// Changes nothing it was given.
    Pure(Option<Value>),
    /// Changes the receiver in place into this object.
    Replace {
        receiver: Box<Variable>,
        label: String,
        result: Option<Value>,
    },
    /// Changes the receiver in a way not followed.
    ForgetReceiver(Option<Value>),
    /// Not known: the receiver and every object argument may have changed.
    Unknown,
}

#[derive(Default)]
struct Log {
    names: Vec<String>,
    objects: Vec<u32>,
}

/// What running a cell leaves.
pub(crate) struct Run {
    pub findings: Vec<Finding>,
    /// What each global name the cell bound is known to hold.
    pub values: Vec<(String, Value)>,
    /// For each top-level statement run, whether everything in it was known (so it cannot
    /// raise).
    pub closed: Vec<bool>,
    pub gave_up: std::collections::BTreeMap<&'static str, usize>,
    /// The top-level statement Python certainly raises at, and the exception's class when
    /// crane names it.
    pub raised: Option<(usize, Option<String>)>,
}

enum Flow {
    Next,
    /// `return` (with its value), `raise` or a proven crash: the block ends here.
    Leave(Option<Value>),
    Break,
    Continue,
}

pub(crate) struct Interp<'a> {
    /// What library objects and functions do: the core asks, it knows no library itself.
    library: &'a dyn Library,
    pub runtime: &'a RuntimeInfo,
    pub kernel: &'a Kernel,
    pub cell: &'a Cell,
    /// Global names the analysis says the cell reads (where a NameError can happen).
    global_reads: HashSet<&'a str>,
    globals: HashMap<String, Slot>,
    frames: Vec<Frame>,
    functions: Vec<Definition<'a>>,
    /// Functions the executed cells define (the latest definition of each name).
    executed: HashMap<String, Definition<'a>>,
    /// Classes the executed cells define.
    executed_classes: HashMap<String, ClassDefinition<'a>>,
    /// User classes whose instances are followed: their methods (function indices) and whether
    /// they are torch modules (`model(x)` calls `forward`).
    classes: Vec<(HashMap<String, usize>, bool)>,
    /// The target cell (`cell` is the cell whose code runs now: another one inside a function
    /// an executed cell defines).
    target: &'a Cell,
    /// Inside a function from an executed cell: the target cell's line of the outermost call
    /// and the function's name (a crash in there is reported at that call).
    foreign: Option<(u32, String)>,
    /// Statements run so far, bounded so following calls stays cheap.
    steps: usize,
    pub findings: Vec<Finding>,
    certain: bool,
    crashed: bool,
    /// The exception the code certainly raised when it stopped (`Some(None)`: of a class crane
    /// does not name), when no finding stopped it.
    raised: Option<Option<String>>,
    /// How many methods were called without their lookup being resolved (which may have
    /// raised before the arguments are evaluated).
    unresolved: usize,
    /// How many unknown values and unresolved methods there were when the top-level statement
    /// being run started.
    statement_unknowns: usize,
    logs: Vec<Log>,
    runtime_ids: HashMap<String, u32>,
    next_id: u32,
    /// A call may have changed kernel objects in ways not followed: facts about objects not yet
    /// loaded no longer hold.
    runtime_stale: bool,
    /// Kinds of kernel objects the cell changed in place: other kernel names may alias them.
    changed_kinds: HashSet<Kind>,
    /// The cell star-imports: any global name may be rebound from then on.
    star_imported: bool,
    /// Names bound in the bodies of the loops being run.
    loop_variant: Vec<HashSet<String>>,
    /// How many expressions evaluated to an unknown value so far (one that may have raised).
    unknowns: usize,
    /// How many statements with a jump (`break`, `return`, ...) ran without the facts deciding
    /// whether it jumps.
    undecided: usize,
    /// The `try` statements being run: the exception classes their handlers name (`None`: a
    /// bare `except` or a type crane cannot name) and the unknown count when the body started.
    catching: Vec<(Vec<Option<String>>, usize)>,
    /// Running the body of a method of a followed class.
    in_method: bool,
    /// Why the call being applied is not followed, when the caller knows better than "code not
    /// followed".
    unknown_call: Option<&'static str>,
    /// Where the interpreter gave up, by reason (what its silence is made of).
    pub gave_up: std::collections::BTreeMap<&'static str, usize>,
    /// The last statement whose control flow the facts decided (by its range: a statement
    /// inside it has another).
    decided: Option<ruff_text_size::TextRange>,
}

impl<'a> Interp<'a> {
    pub(crate) fn new(
        library: &'a dyn Library,
        runtime: &'a RuntimeInfo,
        kernel: &'a Kernel,
        cell: &'a Cell,
        analysis: &'a CellAnalysis,
        executed: HashMap<String, Definition<'a>>,
        executed_classes: HashMap<String, ClassDefinition<'a>>,
    ) -> Interp<'a> {
        Interp {
            library,
            executed,
            executed_classes,
            classes: Vec::new(),
            target: cell,
            foreign: None,
            steps: 0,
            runtime,
            kernel,
            cell,
            global_reads: analysis.reads.iter().map(|r| r.name.as_str()).collect(),
            globals: HashMap::new(),
            frames: Vec::new(),
            functions: Vec::new(),
            findings: Vec::new(),
            certain: true,
            crashed: false,
            raised: None,
            unresolved: 0,
            statement_unknowns: 0,
            logs: Vec::new(),
            runtime_ids: HashMap::new(),
            next_id: 0,
            runtime_stale: false,
            changed_kinds: HashSet::new(),
            star_imported: false,
            loop_variant: Vec::new(),
            unknowns: 0,
            undecided: 0,
            decided: None,
            gave_up: std::collections::BTreeMap::new(),
            unknown_call: None,
            catching: Vec::new(),
            in_method: false,
        }
    }

    /// Start with these global names bound, as earlier cells left them (values another
    /// interpreter computed: their objects get this interpreter's identities, shared where they
    /// were shared; a value holding functions or instances of that interpreter is left out).
    pub(crate) fn seed(&mut self, values: Vec<(String, Value)>) {
        let mut identities = HashMap::new();
        for (name, value) in values {
            if let Some(value) = self.reseat(value, &mut identities) {
                self.globals.insert(name, Slot::Known(value));
            }
        }
    }

    fn reseat(&mut self, value: Value, identities: &mut HashMap<u32, u32>) -> Option<Value> {
        let mut identity = |interp: &mut Self, obj: Obj| {
            let id = *identities
                .entry(obj.id)
                .or_insert_with(|| interp.fresh_id());
            Obj { id, ..obj }
        };
        Some(match value {
            Value::Object(obj) => Value::Object(identity(self, obj)),
            Value::Indexer(obj, indexer) => Value::Indexer(Box::new(identity(self, *obj)), indexer),
            Value::Seq { items, of } => Value::Seq {
                items: items
                    .into_iter()
                    .map(|item| match item {
                        Some(item) => self.reseat(item, identities).map(Some),
                        None => Some(None),
                    })
                    .collect::<Option<Vec<_>>>()?,
                of,
            },
            Value::Dict(items) => Value::Dict(
                items
                    .into_iter()
                    .map(|(key, item)| {
                        let key = match key {
                            Some(key) => Some(self.reseat(key, identities)?),
                            None => None,
                        };
                        let item = match item {
                            Some(item) => Some(self.reseat(item, identities)?),
                            None => None,
                        };
                        Some((key, item))
                    })
                    .collect::<Option<Vec<_>>>()?,
            ),
            Value::CellFunction(_)
            | Value::UserClass(_)
            | Value::Instance(_)
            | Value::BoundMethod(..) => return None,
            plain @ (Value::Const(_)
            | Value::Qual { .. }
            | Value::Ints { .. }
            | Value::Slice { .. }) => plain,
        })
    }

    /// Run the cell: what the rules found, and what the interpreter knows when it ends.
    pub(crate) fn run_with_values(mut self) -> Run {
        let cell = self.cell;
        let mut closed = Vec::new();
        let mut raised = None;
        for (position, stmt) in cell.body.iter().enumerate() {
            let before = self.unknowns;
            self.statement_unknowns = before + self.unresolved;
            let flow = self.exec(stmt);
            closed.push(self.unknowns == before && !self.crashed);
            if let Some(exception) = self.raised.take() {
                raised = Some((position, exception));
            }
            if self.crashed || !matches!(flow, Flow::Next) {
                break;
            }
            if may_jump(stmt) && self.decided != Some(stmt.range()) {
                self.certain = false;
                self.undecided += 1;
            }
        }
        let values = self
            .globals
            .iter()
            .filter_map(|(name, slot)| match slot {
                Slot::Known(value) => Some((name.clone(), value.clone())),
                _ => None,
            })
            .collect();
        Run {
            findings: self.findings,
            values,
            closed,
            gave_up: self.gave_up,
            raised,
        }
    }

    fn fresh_id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }

    /// An object derived in the cell from `from` (or from nothing in the kernel).
    pub(crate) fn derived(
        &mut self,
        from: Option<&Obj>,
        var: Variable,
        label: impl Into<String>,
    ) -> Value {
        let id = self.fresh_id();
        Value::Object(Obj {
            var: Rc::new(var),
            key: None,
            label: label.into(),
            id,
            source: from.and_then(|obj| obj.source.clone()),
        })
    }

    /// The library models, borrowed for as long as the interpreter lives (not from `self`, so a
    /// model can be handed `self`).
    pub(super) fn lib(&self) -> &'a dyn Library {
        self.library
    }

    /// The value of a kernel object by its facts key.
    pub(crate) fn kernel_value(&mut self, key: &str) -> Option<Value> {
        let var = self.runtime.get(key)?;
        if var.error.is_some() || var.is_absent() {
            return None;
        }
        let root = root_name(key);
        let imported = self.kernel.imports.get(key);
        match var.kind {
            Kind::Pymodule => {
                let name = imported
                    .cloned()
                    .or_else(|| {
                        var.r
                            .get("module")
                            .and_then(|m| m.as_str())
                            .map(str::to_owned)
                    })
                    .unwrap_or_else(|| key.to_owned());
                return Some(Value::Qual {
                    name,
                    key: Some(key.to_owned()),
                });
            }
            kind if kind.is_callable() => {
                if let Some(name) = imported {
                    return Some(Value::Qual {
                        name: name.clone(),
                        key: Some(key.to_owned()),
                    });
                }
            }
            _ => {}
        }
        if self.runtime_stale || (self.changed_kinds.contains(&var.kind) && key == root) {
            return None;
        }
        let id = match self.runtime_ids.get(key) {
            Some(id) => *id,
            None => {
                let id = self.fresh_id();
                self.runtime_ids.insert(key.to_owned(), id);
                id
            }
        };
        Some(Value::Object(Obj {
            var: Rc::new(var.clone()),
            key: Some(key.to_owned()),
            label: key.to_owned(),
            id,
            source: Some(root.to_owned()),
        }))
    }
}

/// Whether a value is or holds a list or dict (which may be changed in place).
pub(crate) fn holds_mutable(value: &Value) -> bool {
    match value {
        Value::Seq {
            of: Sequence::List, ..
        }
        | Value::Dict(_)
        | Value::Instance(_)
        | Value::BoundMethod(..) => true,
        Value::Seq { items, .. } => items.iter().flatten().any(holds_mutable),
        _ => false,
    }
}

/// The name an expression string starts with (`df` of `df['a'].str`).
pub(crate) fn root_name(key: &str) -> &str {
    let end = key
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(key.len());
    &key[..end]
}

/// Whether an expression is a `loc`/`iloc`/`at`/`iat` indexer name.
pub(crate) fn indexer_of(attr: &str) -> Option<Indexer> {
    match attr {
        "loc" => Some(Indexer::Loc),
        "iloc" => Some(Indexer::Iloc),
        "at" => Some(Indexer::At),
        "iat" => Some(Indexer::Iat),
        _ => None,
    }
}
