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

use crane_analysis::{CellAnalysis, Constant, Indexer};
use crane_runtime::{Kind, RuntimeInfo, Variable};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, CmpOp, Expr, ExprContext, IpyEscapeKind, Operator, Stmt};
use ruff_text_size::Ranged;

use super::cell::{constant, render_key, Cell};
use super::defs::{plain_methods, runs_when_called, ClassDefinition, Definition};
use super::kernel::Kernel;
use super::value::{Instance, Obj, Sequence, Value};
use super::{names, python, Library};
use crate::rules::{proven, RuleCode};
use crate::Finding;

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

    // Reporting

    /// Report a proven crash, when the code certainly runs.
    pub(crate) fn report(
        &mut self,
        rule: RuleCode,
        line: u32,
        diagnosis: String,
        evidence: Vec<String>,
    ) {
        self.report_raising(rule, rule.info().exception, line, diagnosis, evidence);
    }

    /// Report a proven crash whose exception class is the caller's (a contract row's, or one
    /// that depends on the library version) rather than the catalogue's.
    pub(crate) fn report_raising(
        &mut self,
        rule: RuleCode,
        exception: &str,
        line: u32,
        diagnosis: String,
        evidence: Vec<String>,
    ) {
        if !self.certain || self.crashed {
            return;
        }
        let catalogued = rule.info().exception;
        if self.catching.iter().any(|(handlers, unknowns)| {
            self.unknowns > *unknowns
                || handlers
                    .iter()
                    .any(|h| catches(h.as_deref(), exception) || catches(h.as_deref(), catalogued))
        }) {
            // Caught, or maybe never reached: the rest of the `try` body may not run.
            self.give_up("crash in a try body");
            self.certain = false;
            return;
        }
        let (line, diagnosis) = match &self.foreign {
            Some((call, function)) => (
                *call,
                format!("{diagnosis} (inside `{function}`, defined in an executed cell, called on line {call})"),
            ),
            None => (line, diagnosis),
        };
        let mut finding = proven(rule, line, diagnosis, evidence);
        finding.exception = Some(exception.to_owned());
        self.findings.push(finding);
        self.crashed = true;
    }

    /// The code being run certainly raises `exception` (`None`: a class crane does not name):
    /// nothing after it runs on this path. A handler of a `try` being run may catch it, so the
    /// rest of that body is no longer certain; uncaught, the cell ends here, without a finding
    /// of its own (no rule proves it), and nothing after it is reported.
    pub(crate) fn raises(&mut self, exception: Option<&str>) {
        if !self.certain || self.crashed {
            return;
        }
        if self.catching.iter().any(|(handlers, unknowns)| {
            self.unknowns > *unknowns
                || handlers
                    .iter()
                    .any(|h| exception.is_none_or(|exception| catches(h.as_deref(), exception)))
        }) {
            self.give_up("raise in a try body");
            self.certain = false;
            return;
        }
        self.crashed = true;
        // Something unknown run before it in the statement may have raised first.
        let first = self.unknowns + self.unresolved == self.statement_unknowns;
        self.raised = Some(exception.filter(|_| first).map(str::to_owned));
    }

    // Objects

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
    fn lib(&self) -> &'a dyn Library {
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

    fn slots_mut(&mut self) -> impl Iterator<Item = &mut Slot> {
        self.globals.values_mut().chain(
            self.frames
                .iter_mut()
                .flat_map(|frame| frame.slots.values_mut()),
        )
    }

    /// Forget what uncertain code may have bound or changed: the names and objects it logged.
    fn forget_logged(&mut self, log: &Log) {
        for name in &log.names {
            self.set_slot(name, Slot::Unknown);
        }
        for id in &log.objects {
            for slot in self.slots_mut() {
                if slot_holds(slot, *id) {
                    *slot = Slot::Unknown;
                }
            }
        }
    }

    /// Forget everything known about an object (it changed in a way not followed).
    pub(crate) fn forget(&mut self, obj: &Obj) {
        let id = obj.id;
        for slot in self.slots_mut() {
            if slot_holds(slot, id) {
                *slot = Slot::Unknown;
            }
        }
        if let Some(key) = &obj.key {
            let root = root_name(key).to_owned();
            self.changed_kinds.insert(obj.kind());
            if !self.globals.contains_key(&root) || root == *key {
                self.globals.insert(root.clone(), Slot::Unknown);
            }
            self.log_name(&root);
        } else if let Some(source) = &obj.source {
            // A derived object may be a view of the kernel object it came from (a column).
            if !self.globals.contains_key(source) {
                self.globals.insert(source.clone(), Slot::Unknown);
                self.log_name(&source.clone());
            }
        }
        self.log_object(id);
    }

    /// An object changed in place into `var`.
    pub(crate) fn replace_object(&mut self, obj: &Obj, var: Variable, label: String) {
        if !self.certain {
            self.forget(obj);
            return;
        }
        let new = Obj {
            var: Rc::new(var),
            key: None,
            label,
            id: obj.id,
            source: obj.source.clone(),
        };
        for slot in self.slots_mut() {
            if slot_holds(slot, obj.id) {
                *slot = Slot::Known(Value::Object(new.clone()));
            }
        }
        if let Some(key) = &obj.key {
            self.changed_kinds.insert(obj.kind());
            let root = root_name(key).to_owned();
            let slot = if root == *key {
                Slot::Known(Value::Object(new))
            } else {
                Slot::Unknown
            };
            self.globals.insert(root, slot);
        }
    }

    /// A call into code that may change any kernel object: forget what came from the kernel.
    fn give_up(&mut self, reason: &'static str) {
        *self.gave_up.entry(reason).or_default() += 1;
    }

    fn havoc(&mut self) {
        self.runtime_stale = true;
        for slot in self.slots_mut() {
            if let Slot::Known(Value::Object(obj)) = slot {
                if obj.key.is_some() {
                    *slot = Slot::Unknown;
                }
            }
        }
    }

    fn log_name(&mut self, name: &str) {
        if let Some(log) = self.logs.last_mut() {
            log.names.push(name.to_owned());
        }
    }

    fn log_object(&mut self, id: u32) {
        if let Some(log) = self.logs.last_mut() {
            log.objects.push(id);
        }
    }

    /// Run `f`, then forget what it bound or changed. `certain` says whether the code certainly
    /// runs (it never makes uncertain code certain).
    fn forgetting(&mut self, certain: bool, f: impl FnOnce(&mut Self)) {
        let saved = self.certain;
        self.certain = saved && certain;
        self.logs.push(Log::default());
        f(self);
        let log = self.logs.pop().unwrap_or_default();
        self.certain = saved;
        self.forget_logged(&log);
        if let Some(outer) = self.logs.last_mut() {
            outer.names.extend(log.names);
            outer.objects.extend(log.objects);
        }
    }

    // Names

    fn set_slot(&mut self, name: &str, slot: Slot) {
        if let Some(frame) = self.frames.last_mut() {
            if frame.locals.contains(name) {
                frame.slots.insert(name.to_owned(), slot);
                return;
            }
        }
        self.globals.insert(name.to_owned(), slot);
    }

    pub(crate) fn bind(&mut self, name: &str, value: Option<Value>) {
        self.log_name(name);
        // A derived object is named after the name it is bound to.
        let value = value.map(|value| match value {
            Value::Object(mut obj) if obj.key.is_none() => {
                obj.label = name.to_owned();
                Value::Object(obj)
            }
            other => other,
        });
        let slot = match value {
            Some(value) => Slot::Known(value),
            None => Slot::Unknown,
        };
        self.set_slot(name, slot);
    }

    fn load_name(&mut self, name: &str, line: u32) -> Option<Value> {
        if let Some(frame) = self.frames.last() {
            if frame.locals.contains(name) {
                return match frame.slots.get(name) {
                    Some(Slot::Known(value)) => Some(value.clone()),
                    _ => None,
                };
            }
        }
        match self.globals.get(name) {
            Some(Slot::Known(value)) => return Some(value.clone()),
            Some(Slot::Unknown) => return None,
            Some(Slot::Deleted) => {
                names::undefined_name(self, name, line, true);
                return None;
            }
            None => {}
        }
        if self.star_imported {
            return None;
        }
        if let Some(definition) = self.executed.get(name).copied() {
            let is_function = self
                .runtime
                .get(name)
                .is_none_or(|var| var.kind == Kind::Function);
            if is_function {
                self.functions.push(definition);
                return Some(Value::CellFunction(self.functions.len() - 1));
            }
        }
        // The probe describes builtins the cell reads; the kernel's `range` is still `range`.
        if names::is_builtin(name)
            && self
                .runtime
                .get(name)
                .is_some_and(|var| is_builtin(var, name))
        {
            return Some(Value::Qual {
                name: format!("builtins.{name}"),
                key: None,
            });
        }
        if let Some(definition) = self.executed_classes.get(name).copied() {
            let is_class = self
                .runtime
                .get(name)
                .is_none_or(|var| var.kind == Kind::Class);
            if is_class {
                if let Some(class) = self.register_class(definition.cell, definition.class) {
                    return Some(class);
                }
            }
        }
        if self.runtime.get(name).is_some() {
            return self.kernel_value(name);
        }
        if let Some(qualified) = self.kernel.imports.get(name) {
            return Some(Value::Qual {
                name: qualified.clone(),
                key: None,
            });
        }
        if names::is_builtin(name) {
            return Some(Value::Qual {
                name: format!("builtins.{name}"),
                key: None,
            });
        }
        if self.global_reads.contains(name) {
            names::undefined_name(self, name, line, false);
        }
        None
    }

    // Statements

    fn exec_block(&mut self, body: &'a [Stmt]) -> Flow {
        let saved = self.certain;
        for stmt in body {
            if self.crashed {
                self.certain = saved;
                return Flow::Leave(None);
            }
            let flow = self.exec(stmt);
            if !matches!(flow, Flow::Next) {
                self.certain = saved;
                return flow;
            }
            // A statement whose control flow the facts decided leaves what follows certain.
            if may_jump(stmt) && self.decided != Some(stmt.range()) {
                self.certain = false;
                self.undecided += 1;
            }
        }
        self.certain = saved;
        Flow::Next
    }

    fn exec(&mut self, stmt: &'a Stmt) -> Flow {
        self.steps += 1;
        match stmt {
            Stmt::Expr(expr) => {
                self.eval(&expr.value);
            }
            Stmt::Assign(assign) => {
                let value = self.eval(&assign.value);
                for target in &assign.targets {
                    self.assign(target, value.clone());
                }
            }
            Stmt::AnnAssign(assign) => {
                if let Some(value) = &assign.value {
                    let value = self.eval(value);
                    self.assign(&assign.target, value);
                }
            }
            Stmt::AugAssign(assign) => {
                // `a += [x]` extends the list `a` in place, which other names may hold.
                let in_place = |value: &Option<Value>| {
                    matches!(
                        value,
                        Some(
                            Value::Seq {
                                of: Sequence::List,
                                ..
                            } | Value::Dict(_)
                        )
                    )
                };
                // The target is read first (its context is Store, so read the name itself).
                let current = match assign.target.as_ref() {
                    Expr::Name(name) => {
                        let line = self.cell.line(name);
                        self.load_name(&name.id, line)
                    }
                    target => self.eval(target),
                };
                let operand = self.eval(&assign.value);
                let line = self.cell.line(assign);
                let mutates = in_place(&current);
                // `a += [a]` puts the list into itself.
                let aliased = mutates && operand.as_ref().is_none_or(holds_mutable);
                // `list += iterable` extends; on immutable values `+=` is `+`.
                let plain = current
                    .as_ref()
                    .and_then(Value::python)
                    .filter(|current| !matches!(current, Constant::List(_)))
                    .zip(operand.as_ref().and_then(Value::python));
                let value = self.lib().binary(self, assign.op, current, operand, line);
                if let (None, Some((current, operand))) = (&value, plain) {
                    if let Some(exception) = python::binary_raises(assign.op, &current, &operand) {
                        self.raises(Some(exception));
                    }
                }
                let value = if aliased { None } else { value };
                if mutates {
                    self.forget_mutable();
                }
                if value.is_none() {
                    self.unknowns += 1;
                }
                self.assign(&assign.target, value);
            }
            Stmt::Delete(delete) => {
                for target in &delete.targets {
                    self.delete(target);
                }
            }
            Stmt::Import(import) => {
                for alias in &import.names {
                    match &alias.asname {
                        Some(asname) => self.bind(
                            asname,
                            Some(Value::Qual {
                                name: alias.name.to_string(),
                                key: None,
                            }),
                        ),
                        None => {
                            let root = alias.name.split('.').next().unwrap_or_default();
                            self.bind(
                                root,
                                Some(Value::Qual {
                                    name: root.to_owned(),
                                    key: None,
                                }),
                            );
                        }
                    }
                }
            }
            Stmt::ImportFrom(import) => {
                for alias in &import.names {
                    if alias.name.as_str() == "*" {
                        self.star_imported = true;
                        continue;
                    }
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                    let value = match (&import.module, import.level) {
                        (Some(module), 0) => Some(Value::Qual {
                            name: format!("{module}.{}", alias.name),
                            key: None,
                        }),
                        _ => None,
                    };
                    self.bind(bound, value);
                }
            }
            Stmt::FunctionDef(function) => {
                let value = if function.decorator_list.is_empty() {
                    self.functions.push(Definition {
                        cell: self.cell,
                        function,
                    });
                    Some(Value::CellFunction(self.functions.len() - 1))
                } else {
                    for decorator in &function.decorator_list {
                        self.eval(&decorator.expression);
                    }
                    None
                };
                self.bind(&function.name, value);
            }
            Stmt::ClassDef(class) => {
                let value = if class.decorator_list.is_empty() {
                    self.register_class(self.cell, class)
                } else {
                    None
                };
                self.bind(&class.name, value);
            }
            Stmt::Return(ret) => {
                let value = ret.value.as_ref().and_then(|value| self.eval(value));
                return Flow::Leave(value);
            }
            Stmt::Raise(_) => {
                self.raises(None);
                return Flow::Leave(None);
            }
            Stmt::Break(_) => return Flow::Break,
            Stmt::Continue(_) => return Flow::Continue,
            Stmt::If(if_stmt) => {
                let branches: Vec<(Option<&'a Expr>, &'a [Stmt])> =
                    std::iter::once((Some(&*if_stmt.test), if_stmt.body.as_slice()))
                        .chain(
                            if_stmt
                                .elif_else_clauses
                                .iter()
                                .map(|clause| (clause.test.as_ref(), clause.body.as_slice())),
                        )
                        .collect();
                // Tests are decided in order while the facts decide them; the first true one
                // runs for sure, and from the first undecided one on nothing is certain.
                for (position, (test, body)) in branches.iter().enumerate() {
                    let truth = match test {
                        Some(test) => self.eval_test(test),
                        None => Some(true),
                    };
                    match truth {
                        Some(true) => {
                            let flow = self.exec_block(body);
                            self.decided = Some(if_stmt.range);
                            return flow;
                        }
                        Some(false) => {
                            if position + 1 == branches.len() {
                                self.decided = Some(if_stmt.range);
                            }
                            continue;
                        }
                        None => {
                            self.give_up("if test not decided");
                            self.forgetting(false, |this| {
                                this.exec_block(body);
                            });
                            for (test, body) in &branches[position + 1..] {
                                self.forgetting(false, |this| {
                                    if let Some(test) = test {
                                        this.eval(test);
                                    }
                                    this.exec_block(body);
                                });
                            }
                            break;
                        }
                    }
                }
            }
            Stmt::For(for_stmt) => {
                let column_passes = self.column_passes(&for_stmt.iter);
                let iterable = self.eval(&for_stmt.iter);
                let items = self
                    .paired_items(&for_stmt.iter)
                    .or_else(|| {
                        iterable
                            .as_ref()
                            .and_then(|it| self.lib().iteration_items(it))
                    })
                    .filter(|items| {
                        items.len() <= MAX_PASSES
                            && !for_stmt.is_async
                            && !changes_iterated(&for_stmt.iter, &for_stmt.body)
                    });
                if let Some(items) = items {
                    return self.unrolled(for_stmt, items);
                }
                self.give_up("loop over unknown items");
                let first = iterable
                    .as_ref()
                    .and_then(|it| self.lib().first_item(self, it));
                // Without an early exit, every pass runs: the index takes all its values.
                let every_pass = iterable
                    .as_ref()
                    .and_then(|it| self.lib().loop_index(it))
                    .filter(|_| !leaves_loop(&for_stmt.body));
                let mut variant = LocalNames::default();
                for stmt in &for_stmt.body {
                    variant.visit_stmt(stmt);
                }
                variant.visit_expr(&for_stmt.target);
                let counters =
                    match column_passes.or_else(|| passes(self.lib(), iterable.as_ref()?)) {
                        Some(passes) if !leaves_loop(&for_stmt.body) => {
                            self.counters(&for_stmt.body, passes)
                        }
                        _ => Vec::new(),
                    };
                // A frame with columns makes `df.items()` run its body.
                let runs = first.is_some() || column_passes.is_some_and(|n| n > 0);
                self.forgetting(runs, |this| {
                    for (name, ints) in counters {
                        this.bind(name, Some(ints));
                    }
                    match (every_pass, for_stmt.target.as_ref()) {
                        (Some((low, high, false)), Expr::Name(name)) => {
                            this.bind(&name.id, Some(Value::Ints { low, high }));
                        }
                        (Some((low, high, true)), Expr::Tuple(tuple))
                            if tuple.elts.len() == 2 && tuple.elts[0].is_name_expr() =>
                        {
                            if let Expr::Name(name) = &tuple.elts[0] {
                                this.bind(&name.id, Some(Value::Ints { low, high }));
                            }
                            this.assign(&tuple.elts[1], None);
                        }
                        _ => this.assign(&for_stmt.target, first.flatten()),
                    }
                    this.loop_variant.push(variant.assigned);
                    this.exec_block(&for_stmt.body);
                    this.loop_variant.pop();
                });
                self.forgetting(false, |this| {
                    this.exec_block(&for_stmt.orelse);
                });
            }
            Stmt::While(while_stmt) => {
                self.give_up("while loop");
                if self.eval_test(&while_stmt.test) == Some(false) {
                    return self.exec_block(&while_stmt.orelse);
                }
                self.forgetting(false, |this| {
                    this.exec_block(&while_stmt.body);
                    this.exec_block(&while_stmt.orelse);
                });
            }
            Stmt::With(with) => {
                let mut may_suppress = false;
                for item in &with.items {
                    may_suppress |= !self.never_suppresses(&item.context_expr);
                    self.eval(&item.context_expr);
                    if let Some(target) = &item.optional_vars {
                        self.assign(target, None);
                    }
                }
                if !may_suppress {
                    return self.exec_block(&with.body);
                }
                // A context manager's `__exit__` may swallow what the body raises
                // (`contextlib.suppress`): the body is then a `try` catching everything.
                self.catching.push((vec![None], self.unknowns));
                self.forgetting(true, |this| {
                    this.exec_block(&with.body);
                });
                self.catching.pop();
            }
            Stmt::Try(try_stmt) => {
                // The body starts for sure. A crash in it that a handler catches is not one;
                // nor is one after something in the body that may have raised (and been
                // caught). What the body binds is forgotten: it may have stopped anywhere.
                let handlers = try_stmt
                    .handlers
                    .iter()
                    .flat_map(|handler| {
                        let ast::ExceptHandler::ExceptHandler(handler) = handler;
                        handler_types(handler.type_.as_deref())
                    })
                    .collect();
                self.catching.push((handlers, self.unknowns));
                self.forgetting(true, |this| {
                    this.exec_block(&try_stmt.body);
                });
                self.catching.pop();
                self.forgetting(false, |this| {
                    for handler in &try_stmt.handlers {
                        let ast::ExceptHandler::ExceptHandler(handler) = handler;
                        if let Some(name) = &handler.name {
                            this.bind(name, None);
                        }
                        this.exec_block(&handler.body);
                    }
                    this.exec_block(&try_stmt.orelse);
                });
                return self.exec_block(&try_stmt.finalbody);
            }
            Stmt::Match(match_stmt) => {
                self.eval(&match_stmt.subject);
                self.forgetting(false, |this| {
                    for case in &match_stmt.cases {
                        let mut bound = BoundNames::default();
                        bound.visit_pattern(&case.pattern);
                        for name in bound.0 {
                            this.bind(&name, None);
                        }
                        this.exec_block(&case.body);
                    }
                });
            }
            Stmt::Global(global) => {
                if let Some(frame) = self.frames.last_mut() {
                    for name in &global.names {
                        frame.locals.remove(name.as_str());
                    }
                }
            }
            Stmt::IpyEscapeCommand(command) => self.magic(command.kind, &command.value),
            Stmt::Assert(assert) => {
                let test = self.eval(&assert.test);
                if test.as_ref().and_then(Value::truth) == Some(false) {
                    self.raises(Some("AssertionError"));
                }
            }
            Stmt::TypeAlias(_) | Stmt::Nonlocal(_) | Stmt::Pass(_) => {}
        }
        Flow::Next
    }

    /// Whether the `with` item `context` is a call of a context manager known never to
    /// swallow the body's exception. Only the callee's root name is evaluated (as the item's
    /// own evaluation does next), the rest of its dotted path is read from the source.
    fn never_suppresses(&mut self, context: &'a Expr) -> bool {
        let Expr::Call(call) = context else {
            return false;
        };
        let mut path = Vec::new();
        let mut callee = call.func.as_ref();
        while let Expr::Attribute(attribute) = callee {
            path.push(attribute.attr.as_str());
            callee = attribute.value.as_ref();
        }
        if !matches!(callee, Expr::Name(_)) {
            return false;
        }
        let counters = (self.unknowns, self.unresolved);
        let root = self.eval(callee);
        (self.unknowns, self.unresolved) = counters;
        let Some(Value::Qual { name, .. }) = root else {
            return false;
        };
        let qualified = std::iter::once(name.as_str())
            .chain(path.iter().rev().copied())
            .collect::<Vec<_>>()
            .join(".");
        NEVER_SUPPRESSING.contains(&qualified.as_str())
    }

    fn magic(&mut self, kind: IpyEscapeKind, value: &str) {
        if !matches!(kind, IpyEscapeKind::Magic | IpyEscapeKind::Magic2) {
            return;
        }
        let name = value.split_whitespace().next().unwrap_or_default();
        if matches!(
            name,
            "run" | "store" | "pylab" | "load" | "reset" | "recall" | "rerun"
        ) {
            self.star_imported = true;
            self.havoc();
        }
    }

    /// Whether an `if` test is known: from its value, or `__name__ == '__main__'` (always true in
    /// a kernel).
    fn eval_test(&mut self, test: &'a Expr) -> Option<bool> {
        if let Expr::Compare(compare) = test {
            if let (Expr::Name(name), [CmpOp::Eq], [right]) =
                (compare.left.as_ref(), &*compare.ops, &*compare.comparators)
            {
                if name.id.as_str() == "__name__"
                    && !self.globals.contains_key("__name__")
                    && constant(right) == Some(Constant::Str("__main__".to_owned()))
                {
                    return Some(true);
                }
            }
        }
        self.eval(test)?.truth()
    }

    fn assign(&mut self, target: &'a Expr, value: Option<Value>) {
        match target {
            Expr::Name(name) => self.bind(&name.id, value),
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                if let Some(plain) = value.as_ref().and_then(Value::python) {
                    if !elts.iter().any(Expr::is_starred_expr) {
                        if let Some(exception) = python::unpack_raises(&plain, elts.len()) {
                            self.raises(Some(exception));
                        }
                    }
                }
                let items = value.and_then(|value| self.lib().unpack(self, &value, elts.len()));
                for (index, element) in elts.iter().enumerate() {
                    let item = match (&items, element) {
                        (_, Expr::Starred(_)) => None,
                        (Some(items), _) if !elts.iter().any(|e| e.is_starred_expr()) => {
                            items.get(index).cloned().flatten()
                        }
                        _ => None,
                    };
                    match element {
                        Expr::Starred(starred) => self.assign(&starred.value, None),
                        other => self.assign(other, item),
                    }
                }
            }
            Expr::Starred(starred) => self.assign(&starred.value, None),
            Expr::Subscript(subscript) => {
                // Whether a store succeeds is not decided here (a str or int rejects it).
                self.unknowns += 1;
                let base = self.eval(&subscript.value);
                let key = self.eval(&subscript.slice);
                let line = self.cell.line(subscript);
                self.forget_container(&subscript.value);
                match base {
                    Some(base) => {
                        self.lib()
                            .store_subscript(self, &base, &subscript.slice, key, value, line)
                    }
                    // An unknown object may be a list or dict some name holds.
                    None => self.forget_mutable(),
                }
            }
            Expr::Attribute(attribute) => {
                self.unknowns += 1;
                let base = self.eval(&attribute.value);
                match base {
                    Some(Value::Object(obj)) => self.forget(&obj),
                    Some(Value::Instance(instance)) => {
                        // Known only where the store certainly happens and stays.
                        let value = value.filter(|_| self.certain && self.logs.is_empty());
                        instance
                            .borrow_mut()
                            .attributes
                            .insert(attribute.attr.to_string(), value);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    fn delete(&mut self, target: &'a Expr) {
        self.unknowns += 1;
        match target {
            Expr::Name(name) => {
                self.log_name(&name.id);
                self.set_slot(&name.id, Slot::Deleted);
            }
            Expr::Subscript(subscript) => {
                let base = self.eval(&subscript.value);
                let line = self.cell.line(subscript);
                self.forget_container(&subscript.value);
                match base {
                    Some(base) => self
                        .lib()
                        .delete_subscript(self, &base, &subscript.slice, line),
                    None => self.forget_mutable(),
                }
            }
            Expr::Attribute(attribute) => {
                if let Some(Value::Object(obj)) = self.eval(&attribute.value) {
                    self.forget(&obj);
                }
            }
            Expr::Tuple(tuple) => {
                for element in &tuple.elts {
                    self.delete(element);
                }
            }
            _ => {}
        }
    }

    /// Apply the effect of a call whose receiver is `receiver`.
    pub(crate) fn apply(
        &mut self,
        receiver: Option<&Value>,
        args: &Args,
        effect: Effect,
    ) -> Option<Value> {
        match effect {
            Effect::Pure(result) => result,
            Effect::Replace {
                receiver: var,
                label,
                result,
            } => {
                if let Some(Value::Object(obj)) = receiver {
                    self.replace_object(obj, *var, label);
                }
                result
            }
            Effect::ForgetReceiver(result) => {
                if let Some(Value::Object(obj)) = receiver {
                    self.forget(obj);
                }
                result
            }
            Effect::Unknown => {
                let reason = self
                    .unknown_call
                    .take()
                    .unwrap_or("call of code not followed");
                self.give_up(reason);
                if let Some(Value::Object(obj)) = receiver {
                    self.forget(obj);
                }
                // Code not followed may change any list or dict it can reach.
                self.forget_mutable();
                let objects: Vec<Obj> = args.objects().cloned().collect();
                for obj in &objects {
                    self.forget(obj);
                }
                None
            }
        }
    }

    // Expressions

    pub(crate) fn eval(&mut self, expr: &'a Expr) -> Option<Value> {
        let value = self.eval_expr(expr);
        if value.is_none() {
            self.unknowns += 1;
        }
        value
    }

    fn eval_expr(&mut self, expr: &'a Expr) -> Option<Value> {
        if self.crashed {
            return None;
        }
        let line = self.cell.line(expr);
        match expr {
            Expr::Name(name) => match name.ctx {
                ExprContext::Load => self.load_name(&name.id, line),
                _ => None,
            },
            Expr::StringLiteral(_)
            | Expr::NumberLiteral(_)
            | Expr::BooleanLiteral(_)
            | Expr::NoneLiteral(_) => constant(expr).map(Value::Const),
            Expr::UnaryOp(unary) => {
                let operand = self.eval(&unary.operand);
                self.lib().unary(self, unary.op, operand)
            }
            Expr::List(list) => self.display(&list.elts, Sequence::List),
            Expr::Tuple(tuple) => self.display(&tuple.elts, Sequence::Tuple),
            Expr::Set(set) => {
                for element in &set.elts {
                    self.eval(element);
                }
                None
            }
            Expr::Dict(dict) => {
                let items = dict
                    .items
                    .iter()
                    .map(|item| {
                        let key = item.key.as_ref().and_then(|key| self.eval(key));
                        let value = self.eval(&item.value);
                        (key, value)
                    })
                    .collect::<Vec<_>>();
                // A key that cannot be hashed raises TypeError; one not known may.
                if items.iter().any(|(key, _)| match key {
                    Some(Value::Seq {
                        of: Sequence::List, ..
                    }) => true,
                    key => key
                        .as_ref()
                        .and_then(Value::python)
                        .is_some_and(|key| !python::hashable(&key)),
                }) {
                    return None;
                }
                Some(Value::Dict(items))
            }
            Expr::Attribute(attribute) => {
                let base = self.eval(&attribute.value);
                self.load_attribute(base, &attribute.attr, line, false)
            }
            Expr::Subscript(subscript) => {
                let base = self.eval(&subscript.value);
                let key = match self.eval(&subscript.slice) {
                    // A loop index stands for all its values only on an object every pass sees.
                    Some(Value::Ints { .. }) if self.loop_variant_base(&subscript.value) => None,
                    key => key,
                };
                let base = base?;
                if let Some(value) = self.runtime_subscript(&base, &subscript.slice, line) {
                    return value;
                }
                let plain = base.python().zip(key.as_ref().and_then(Value::python));
                let value = self
                    .lib()
                    .subscript(self, &base, &subscript.slice, key, line);
                if let (None, Some((base, key))) = (&value, plain) {
                    if let Some(exception) = python::index_raises(&base, &key) {
                        self.raises(Some(exception));
                    }
                }
                value
            }
            Expr::Slice(slice) => {
                let bound = |this: &mut Self, expr: &'a Option<Box<Expr>>| match expr {
                    Some(expr) => this
                        .eval(expr)
                        .and_then(|value| python::slice_bound(&value.python()?)),
                    None => Some(None),
                };
                let lower = bound(self, &slice.lower);
                let upper = bound(self, &slice.upper);
                let step = bound(self, &slice.step);
                Some(Value::Slice {
                    lower: lower?,
                    upper: upper?,
                    step: step?,
                })
            }
            Expr::Call(call) => self.eval_call(call, line),
            Expr::BinOp(binary) => {
                let left = self.eval(&binary.left);
                let right = self.eval(&binary.right);
                let plain = left
                    .as_ref()
                    .and_then(Value::python)
                    .zip(right.as_ref().and_then(Value::python));
                let value = self.lib().binary(self, binary.op, left, right, line);
                if let (None, Some((left, right))) = (&value, plain) {
                    if let Some(exception) = python::binary_raises(binary.op, &left, &right) {
                        self.raises(Some(exception));
                    }
                }
                value
            }
            Expr::Compare(compare) => self.eval_compare(compare),
            Expr::BoolOp(boolean) => {
                let and = boolean.op == ast::BoolOp::And;
                let (first, rest) = boolean.values.split_first()?;
                let mut current = self.eval(first);
                for (position, value) in rest.iter().enumerate() {
                    match current.as_ref().and_then(Value::truth) {
                        // `a and b` is `a` when `a` is false; `a or b` is `a` when it is true.
                        Some(truth) if truth != and => return current,
                        Some(_) => current = self.eval(value),
                        None => {
                            let remaining = &rest[position..];
                            self.forgetting(false, |this| {
                                for value in remaining {
                                    this.eval(value);
                                }
                            });
                            return None;
                        }
                    }
                }
                current
            }
            Expr::If(conditional) => {
                let test = self.eval(&conditional.test);
                match test.as_ref().and_then(Value::truth) {
                    Some(true) => self.eval(&conditional.body),
                    Some(false) => self.eval(&conditional.orelse),
                    None => {
                        self.forgetting(false, |this| {
                            this.eval(&conditional.body);
                            this.eval(&conditional.orelse);
                        });
                        None
                    }
                }
            }
            Expr::Named(named) => {
                let value = self.eval(&named.value);
                self.assign(&named.target, value.clone());
                value
            }
            Expr::Starred(starred) => {
                self.eval(&starred.value);
                None
            }
            Expr::FString(fstring) => self.eval_fstring(fstring),
            Expr::ListComp(ast::ExprListComp {
                elt, generators, ..
            }) => self
                .comprehension(generators, &[elt])
                .map(|items| Value::Seq {
                    items,
                    of: Sequence::List,
                }),
            Expr::SetComp(ast::ExprSetComp {
                elt, generators, ..
            })
            | Expr::Generator(ast::ExprGenerator {
                elt, generators, ..
            }) => {
                self.comprehension(generators, &[elt]);
                None
            }
            Expr::DictComp(comp) => {
                let mut parts: Vec<&'a Expr> = vec![&comp.value];
                if let Some(key) = &comp.key {
                    parts.push(key);
                }
                self.comprehension(&comp.generators, &parts);
                None
            }
            Expr::Lambda(_)
            | Expr::EllipsisLiteral(_)
            | Expr::BytesLiteral(_)
            | Expr::TString(_)
            | Expr::IpyEscapeCommand(_) => None,
            Expr::Await(await_expr) => {
                self.eval(&await_expr.value);
                None
            }
            Expr::Yield(_) | Expr::YieldFrom(_) => None,
        }
    }

    /// Whether the object an expression denotes may differ between passes of the loops being
    /// run (its root name is bound in a loop body, or it is not a plain reference).
    /// How many passes `for ... in df.items()` makes: one per column. Read before the call,
    /// which may forget the frame.
    fn column_passes(&mut self, iter: &'a Expr) -> Option<i64> {
        let Expr::Call(call) = iter else {
            return None;
        };
        let Expr::Attribute(method) = call.func.as_ref() else {
            return None;
        };
        if !matches!(method.attr.as_str(), "items" | "iteritems")
            || !call.arguments.is_empty()
            || !method.value.is_name_expr()
        {
            return None;
        }
        let frame = self.eval(&method.value)?;
        i64::try_from(self.lib().column_count(&frame)?).ok()
    }

    /// Counters of a loop making `passes` passes: a name holding a constant integer before the
    /// loop, raised by a top-level `name += 1` and bound nowhere else in the body, in a body
    /// without `continue`. Until the increment it takes every value from its start on.
    fn counters(&self, body: &'a [Stmt], passes: i64) -> Vec<(&'a str, Value)> {
        if passes < 1 || continues(body) {
            return Vec::new();
        }
        let mut counters = Vec::new();
        for (position, stmt) in body.iter().enumerate() {
            let Stmt::AugAssign(increment) = stmt else {
                continue;
            };
            let Expr::Name(name) = increment.target.as_ref() else {
                continue;
            };
            if increment.op != Operator::Add
                || !matches!(constant(&increment.value), Some(Constant::Int(1)))
            {
                continue;
            }
            let mut others = LocalNames::default();
            for (other_position, other) in body.iter().enumerate() {
                if other_position != position {
                    others.visit_stmt(other);
                }
            }
            if others.assigned.contains(name.id.as_str())
                || others.globals.iter().any(|g| g == name.id.as_str())
            {
                continue;
            }
            if let Some(Value::Const(Constant::Int(start))) = self.load_slot(&name.id) {
                counters.push((
                    name.id.as_str(),
                    Value::Ints {
                        low: start,
                        high: start + passes - 1,
                    },
                ));
            }
        }
        counters
    }

    fn loop_variant_base(&self, expr: &Expr) -> bool {
        let mut current = expr;
        loop {
            match current {
                Expr::Name(name) => {
                    return self
                        .loop_variant
                        .iter()
                        .any(|names| names.contains(name.id.as_str()))
                }
                Expr::Attribute(attribute) => current = &attribute.value,
                _ => return true,
            }
        }
    }

    /// A list or tuple display; one with a starred item (`[*a, b]`) has an unknown length.
    fn display(&mut self, elts: &'a [Expr], of: Sequence) -> Option<Value> {
        let items: Vec<Option<Value>> = elts.iter().map(|e| self.eval_item(e)).collect();
        if elts.iter().any(Expr::is_starred_expr) {
            return None;
        }
        Some(Value::Seq { items, of })
    }

    fn eval_item(&mut self, expr: &'a Expr) -> Option<Value> {
        let value = self.eval(expr);
        if expr.is_starred_expr() {
            None
        } else {
            value
        }
    }

    /// The first iterable is evaluated in the enclosing scope; the rest runs per element, maybe
    /// never, in a scope of its own. When every iterable's items and every condition are known
    /// (within a work bound), the elements the comprehension yields are returned.
    fn comprehension(
        &mut self,
        generators: &'a [ast::Comprehension],
        parts: &[&'a Expr],
    ) -> Option<Vec<Option<Value>>> {
        let (first, _) = generators.split_first()?;
        let iterable = self.eval(&first.iter);
        let mut targets = BoundNames::default();
        for generator in generators {
            targets.visit_expr(&generator.target);
        }
        let frame = Frame {
            slots: HashMap::new(),
            locals: targets.0.into_iter().collect(),
        };
        self.frames.push(frame);
        let mut elements = Some(Vec::new());
        let mut budget = COMPREHENSION_WORK;
        self.forgetting(false, |this| {
            let known = generators.iter().all(|g| !g.is_async)
                && this.comprehend(generators, 0, iterable, parts, &mut elements, &mut budget);
            if !known {
                elements = None;
                this.give_up("comprehension over unknown items");
                // Still look at every part once, with the targets unknown.
                for (index, generator) in generators.iter().enumerate() {
                    this.assign(&generator.target, None);
                    if index > 0 {
                        this.eval(&generator.iter);
                    }
                    for condition in &generator.ifs {
                        this.eval(condition);
                    }
                }
                for part in parts {
                    this.eval(part);
                }
            }
        });
        self.frames.pop();
        elements
    }

    /// Run generator `index` and the ones after it over known items; `false` when something
    /// is not known (an iterable's items, a condition) or the work bound is reached.
    fn comprehend(
        &mut self,
        generators: &'a [ast::Comprehension],
        index: usize,
        iterable: Option<Value>,
        parts: &[&'a Expr],
        elements: &mut Option<Vec<Option<Value>>>,
        budget: &mut usize,
    ) -> bool {
        let Some(generator) = generators.get(index) else {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            let mut value = None;
            for part in parts {
                value = self.eval(part);
            }
            if let Some(elements) = elements {
                elements.push(value);
            }
            return !self.crashed;
        };
        let Some(items) = iterable
            .as_ref()
            .and_then(|it| self.lib().iteration_items(it))
        else {
            return false;
        };
        for item in items {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            self.assign(&generator.target, item);
            let mut keep = true;
            for condition in &generator.ifs {
                match self.eval(condition).as_ref().and_then(Value::truth) {
                    Some(true) => {}
                    Some(false) => {
                        keep = false;
                        break;
                    }
                    None => return false,
                }
            }
            if !keep {
                continue;
            }
            let next = match generators.get(index + 1) {
                Some(next) => self.eval(&next.iter),
                None => None,
            };
            if !self.comprehend(generators, index + 1, next, parts, elements, budget) {
                return false;
            }
        }
        true
    }

    /// A loop over known items, pass by pass: each pass sees what the passes before it did
    /// (reassignments, in-place changes, counters), `break` and `continue` act as in Python.
    /// When a pass reaches a jump the facts do not decide, or the work bound, the passes stop
    /// being followed and whatever the loop may have changed is forgotten.
    fn unrolled(&mut self, for_stmt: &'a ast::StmtFor, items: Vec<Option<Value>>) -> Flow {
        let start = self.undecided;
        self.logs.push(Log::default());
        let mut flow = Flow::Next;
        let mut faithful = true;
        let mut broke = false;
        for item in items {
            if self.steps > MAX_STEPS {
                faithful = false;
                break;
            }
            self.assign(&for_stmt.target, item);
            let pass = self.exec_block(&for_stmt.body);
            if self.undecided != start || self.crashed {
                faithful = false;
            }
            match pass {
                Flow::Next | Flow::Continue => {}
                Flow::Break => {
                    broke = true;
                    break;
                }
                leave @ Flow::Leave(_) => {
                    flow = leave;
                    break;
                }
            }
            if !faithful {
                break;
            }
        }
        if !faithful {
            self.give_up("loop pass not decided");
        }
        if faithful && !broke && matches!(flow, Flow::Next) {
            flow = self.exec_block(&for_stmt.orelse);
        } else if !faithful {
            self.forgetting(false, |this| {
                this.exec_block(&for_stmt.orelse);
            });
        }
        let log = self.logs.pop().unwrap_or_default();
        if !faithful {
            self.forget_logged(&log);
        }
        if let Some(outer) = self.logs.last_mut() {
            outer.names.extend(log.names);
            outer.objects.extend(log.objects);
        }
        if faithful {
            self.decided = Some(for_stmt.range);
        }
        flow
    }

    /// The items of `enumerate(x)` or `zip(x, y, ...)` over names and literals whose items are
    /// known: `(index, item)` or `(x_item, y_item, ...)` tuples.
    fn paired_items(&mut self, iter: &'a Expr) -> Option<Vec<Option<Value>>> {
        let Expr::Call(call) = iter else {
            return None;
        };
        let Expr::Name(function) = call.func.as_ref() else {
            return None;
        };
        if !call.arguments.keywords.is_empty()
            || !matches!(
                self.load_slot(&function.id)
                    .or_else(|| self.builtin_name(&function.id)),
                Some(Value::Qual { ref name, .. }) if name == "builtins.enumerate" || name == "builtins.zip"
            )
        {
            return None;
        }
        let sources = call
            .arguments
            .args
            .iter()
            .map(|arg| {
                if !(arg.is_name_expr() || constant(arg).is_some()) {
                    return None;
                }
                let value = self.eval(arg)?;
                self.lib().iteration_items(&value)
            })
            .collect::<Option<Vec<_>>>()?;
        let tuple = |items: Vec<Option<Value>>| {
            Some(Value::Seq {
                items,
                of: Sequence::Tuple,
            })
        };
        match (function.id.as_str(), sources.as_slice()) {
            ("enumerate", [items]) => Some(
                items
                    .iter()
                    .enumerate()
                    .map(|(index, item)| {
                        tuple(vec![
                            Some(Value::Const(Constant::Int(index as i64))),
                            item.clone(),
                        ])
                    })
                    .collect(),
            ),
            ("zip", sources) if !sources.is_empty() => {
                let shortest = sources.iter().map(Vec::len).min().unwrap_or(0);
                Some(
                    (0..shortest)
                        .map(|position| {
                            tuple(
                                sources
                                    .iter()
                                    .map(|items| items[position].clone())
                                    .collect(),
                            )
                        })
                        .collect(),
                )
            }
            _ => None,
        }
    }

    /// A builtin a plain name stands for, when nothing in the cell or the kernel rebinds it.
    fn builtin_name(&self, name: &str) -> Option<Value> {
        if self.globals.contains_key(name)
            || self.star_imported
            || self.runtime.get(name).is_some()
            || self.kernel.bound.contains(name)
            || self.kernel.dynamic_names
            || !names::is_builtin(name)
        {
            return None;
        }
        Some(Value::Qual {
            name: format!("builtins.{name}"),
            key: None,
        })
    }

    /// A chain of comparisons: each comparator is evaluated only while the comparisons before it
    /// hold, as Python does; the result is known when every comparison is.
    fn eval_compare(&mut self, compare: &'a ast::ExprCompare) -> Option<Value> {
        let mut left = self.eval(&compare.left);
        let mut operands = vec![left.clone()];
        let mut result = Some(true);
        for (op, comparator) in compare.ops.iter().zip(&*compare.comparators) {
            let right = if result == Some(true) {
                self.eval(comparator)
            } else {
                let mut value = None;
                self.forgetting(false, |this| value = this.eval(comparator));
                value
            };
            operands.push(right.clone());
            let pair = match (
                left.as_ref().and_then(Value::python),
                right.as_ref().and_then(Value::python),
            ) {
                (Some(a), Some(b)) => python::compare(*op, &a, &b),
                _ => None,
            };
            result = result.and(pair);
            if result == Some(false) {
                return Some(Value::Const(Constant::Bool(false)));
            }
            left = right;
        }
        match result {
            Some(truth) => Some(Value::Const(Constant::Bool(truth))),
            None => self.lib().compare(self, &compare.ops, &operands),
        }
    }

    /// An f-string whose interpolations are all known plain values, without format specs.
    fn eval_fstring(&mut self, fstring: &'a ast::ExprFString) -> Option<Value> {
        let mut text = String::new();
        let mut known = true;
        for part in fstring.value.iter() {
            let elements = match part {
                ast::FStringPart::Literal(literal) => {
                    text.push_str(&literal.value);
                    continue;
                }
                ast::FStringPart::FString(inner) => &inner.elements,
            };
            for element in elements {
                match element {
                    ast::InterpolatedStringElement::Literal(literal) => {
                        text.push_str(&literal.value)
                    }
                    ast::InterpolatedStringElement::Interpolation(interpolation) => {
                        let value = self.eval(&interpolation.expression);
                        if let Some(spec) = &interpolation.format_spec {
                            for inner in spec.elements.interpolations() {
                                self.eval(&inner.expression);
                            }
                            known = false;
                        }
                        if interpolation.debug_text.is_some() {
                            known = false;
                        }
                        let constant = value.as_ref().and_then(Value::python);
                        let rendered = match (constant, interpolation.conversion) {
                            (Some(c), ast::ConversionFlag::None | ast::ConversionFlag::Str) => {
                                python::str_of(&c)
                            }
                            (Some(c), ast::ConversionFlag::Repr) => python::repr(&c),
                            _ => None,
                        };
                        match rendered {
                            Some(rendered) if known => text.push_str(&rendered),
                            _ => known = false,
                        }
                    }
                }
            }
        }
        known.then_some(Value::Const(Constant::Str(text)))
    }

    /// Facts the runtime has for this exact subscript of an unchanged kernel object.
    fn runtime_subscript(
        &mut self,
        base: &Value,
        slice: &Expr,
        line: u32,
    ) -> Option<Option<Value>> {
        let key = match base {
            Value::Object(obj) => obj.key.clone()?,
            Value::Indexer(obj, indexer) => format!(
                "{}.{}",
                obj.key.clone()?,
                super::value::indexer_name(*indexer)
            ),
            _ => return None,
        };
        let expression = format!("{key}[{}]", render_key(slice)?);
        let var = self.runtime.get(&expression)?;
        if var.error.is_some() {
            // The probe did not evaluate it (a copy too large, user code in the way): the
            // models work it out from the base, as for a subscript the facts do not list.
            return None;
        }
        if var.is_absent() {
            self.lib().absent_subscript(self, base, slice, var, line);
            return Some(None);
        }
        Some(self.kernel_value(&expression))
    }

    fn load_attribute(
        &mut self,
        base: Option<Value>,
        attr: &str,
        line: u32,
        called: bool,
    ) -> Option<Value> {
        let base = base?;
        let key = match &base {
            Value::Object(obj) => obj.key.clone(),
            Value::Qual { key, .. } => key.clone(),
            _ => None,
        };
        if let Some(key) = key {
            let chain = format!("{key}.{attr}");
            if let Some(var) = self.runtime.get(&chain) {
                if var.is_absent() {
                    self.lib().absent_attribute(self, &base, attr, var, line);
                    return None;
                }
                // What a module holds is known by its qualified name; a data object's
                // structure (`df.columns`, `x.shape`) from its own facts.
                if let Value::Object(obj) = &base {
                    let obj = obj.clone();
                    if let Some(value) = self.lib().attribute(self, &obj, attr, line, called, true)
                    {
                        return Some(value);
                    }
                    return self.kernel_value(&chain);
                }
            } else if let Some(owner) = self.runtime.get(&key) {
                if owner.attribute(attr) == Some(crane_runtime::AttrPresence::Absent) {
                    let owner = owner.clone();
                    self.lib().absent_attribute(self, &base, attr, &owner, line);
                    return None;
                }
            }
        }
        match &base {
            Value::Instance(instance) => {
                let attribute = instance.borrow().attributes.get(attr).cloned();
                match attribute {
                    Some(value) => value,
                    None => {
                        let class = instance.borrow().class;
                        let method = self.classes[class].0.get(attr).copied();
                        method.map(|function| Value::BoundMethod(instance.clone(), function))
                    }
                }
            }
            Value::Qual { name, key } => Some(Value::Qual {
                name: format!("{name}.{attr}"),
                key: key.as_ref().map(|key| format!("{key}.{attr}")),
            }),
            Value::Object(obj) => {
                let obj = obj.clone();
                self.lib().attribute(self, &obj, attr, line, called, false)
            }
            // `df.columns.values` holds the same names.
            Value::Seq { .. } if attr == "values" => Some(base.clone()),
            // `NoneType` has no attribute but the dunders of every object.
            Value::Const(Constant::None) if !(attr.starts_with("__") && attr.ends_with("__")) => {
                self.raises(Some("AttributeError"));
                None
            }
            _ => None,
        }
    }

    fn eval_args(&mut self, arguments: &'a ast::Arguments, line: u32) -> Args<'a> {
        let mut args = Args {
            positional: Vec::new(),
            keywords: Vec::new(),
            star: false,
            line,
        };
        for expr in arguments.args.iter() {
            let value = self.eval(expr);
            if expr.is_starred_expr() {
                args.star = true;
            } else {
                args.positional.push(Arg { expr, value });
            }
        }
        for keyword in &arguments.keywords {
            let value = self.eval(&keyword.value);
            match &keyword.arg {
                Some(name) => args.keywords.push((
                    name.as_str(),
                    Arg {
                        expr: &keyword.value,
                        value,
                    },
                )),
                None => args.star = true,
            }
        }
        args
    }

    fn eval_call(&mut self, call: &'a ast::ExprCall, line: u32) -> Option<Value> {
        if let Expr::Attribute(attribute) = call.func.as_ref() {
            // `super().__init__(...)` in a followed class: its base (object or torch's Module)
            // only sets up itself.
            if attribute.attr.as_str() == "__init__"
                && self.in_method
                && is_super_call(&attribute.value)
                && self.builtin_name("super").is_some()
            {
                self.eval_args(&call.arguments, line);
                return Some(Value::Const(Constant::None));
            }
            let receiver = self.eval(&attribute.value);
            let method = self.load_attribute(receiver.clone(), &attribute.attr, line, true);
            if method.is_none() {
                self.unresolved += 1;
            }
            let args = self.eval_args(&call.arguments, line);
            self.lib()
                .check_call(self, &call.func, receiver.as_ref(), method.as_ref(), &args);
            if self.crashed {
                return None;
            }
            return match receiver {
                Some(Value::Qual { .. }) => self.call_value(method, &args, &call.func),
                Some(Value::Instance(_)) => self.call_value(method, &args, &call.func),
                Some(Value::Object(obj)) => {
                    let effect = self.lib().method(self, &obj, &attribute.attr, &args);
                    self.unknown_call = Some("method of a data object not modelled");
                    let result = self.apply(Some(&Value::Object(obj)), &args, effect);
                    self.unknown_call = None;
                    result
                }
                Some(receiver) => {
                    if self.lib().mutates_container(&receiver, &attribute.attr) {
                        self.forget_container(&attribute.value);
                    }
                    let effect = self
                        .lib()
                        .value_method(self, &receiver, &attribute.attr, &args);
                    self.apply(Some(&receiver), &args, effect)
                }
                None => {
                    self.unknown_call = Some("method of an unknown object");
                    self.apply(None, &args, Effect::Unknown)
                }
            };
        }
        let callee = self.eval(&call.func);
        let args = self.eval_args(&call.arguments, line);
        self.lib()
            .check_call(self, &call.func, None, callee.as_ref(), &args);
        if self.crashed {
            return None;
        }
        self.call_value(callee, &args, &call.func)
    }

    /// A list or dict literal bound to a name changed in place: forget what the name holds.
    fn forget_container(&mut self, expr: &Expr) {
        if let Expr::Name(name) = expr {
            if matches!(
                self.load_slot(&name.id),
                Some(Value::Seq { .. } | Value::Dict(_))
            ) {
                self.bind(&name.id, None);
            }
        }
        self.forget_mutable();
    }

    /// A list or dict changed in place: every name may hold it (`b = a`, `[a, 1]`), so every
    /// value holding a list or dict is forgotten.
    pub(crate) fn forget_mutable(&mut self) {
        let mut names = Vec::new();
        for (name, slot) in &mut self.globals {
            if matches!(slot, Slot::Known(value) if holds_mutable(value)) {
                *slot = Slot::Unknown;
                names.push(name.clone());
            }
        }
        for frame in &mut self.frames {
            for slot in frame.slots.values_mut() {
                if matches!(slot, Slot::Known(value) if holds_mutable(value)) {
                    *slot = Slot::Unknown;
                }
            }
        }
        for name in names {
            self.log_name(&name);
        }
    }

    /// What a name holds in the cell so far, without reading the kernel.
    fn load_slot(&self, name: &str) -> Option<Value> {
        if let Some(frame) = self.frames.last() {
            if frame.locals.contains(name) {
                return match frame.slots.get(name) {
                    Some(Slot::Known(value)) => Some(value.clone()),
                    _ => None,
                };
            }
        }
        match self.globals.get(name) {
            Some(Slot::Known(value)) => Some(value.clone()),
            _ => None,
        }
    }

    fn call_value(
        &mut self,
        callee: Option<Value>,
        args: &Args<'a>,
        func: &'a Expr,
    ) -> Option<Value> {
        match callee {
            Some(Value::UserClass(class)) => self.instantiate(class, args, func),
            Some(Value::BoundMethod(instance, function)) => {
                self.call_method(&instance, function, args, func)
            }
            Some(Value::Instance(instance)) => {
                let (methods, module) = &self.classes[instance.borrow().class];
                let called = if *module { "forward" } else { "__call__" };
                match methods.get(called).copied() {
                    Some(function) => self.call_method(&instance, function, args, func),
                    None => self.apply(None, args, Effect::Unknown),
                }
            }
            Some(Value::Qual { name, .. }) => {
                let effect = self.lib().function(self, &name, args);
                self.unknown_call = Some("call into a module crane does not model");
                let result = self.apply(None, args, effect);
                self.unknown_call = None;
                result
            }
            Some(Value::CellFunction(index)) => self.call_cell_function(index, args),
            Some(Value::Object(obj)) if obj.kind().is_callable() => {
                let name = root_name(obj.key.as_deref().unwrap_or_default()).to_owned();
                match self.kernel.functions.get(&name) {
                    Some(false) => None,
                    _ => {
                        self.havoc();
                        self.unknown_call =
                            Some("call of a kernel function whose code is not in the cells");
                        self.apply(None, args, Effect::Unknown)
                    }
                }
            }
            Some(Value::Object(obj)) => {
                let effect = self.lib().call_object(self, &obj, args);
                self.apply(Some(&Value::Object(obj)), args, effect)
            }
            _ => {
                self.unknown_call = Some("call of an unknown callee");
                self.apply(None, args, Effect::Unknown)
            }
        }
    }

    /// A user class whose instances can be followed: plain methods, and bases that are
    /// `object` or torch's `nn.Module` (whose own methods are not followed).
    fn register_class(&mut self, cell: &'a Cell, class: &'a ast::StmtClassDef) -> Option<Value> {
        let methods = plain_methods(class)?;
        let mut module = false;
        for base in class.bases() {
            match self.eval(base) {
                Some(Value::Qual { name, .. }) if name == "builtins.object" => {}
                Some(Value::Qual { name, .. }) if self.lib().is_module_base(&name) => {
                    module = true;
                }
                _ => return None,
            }
        }
        let mut table = HashMap::new();
        for function in methods {
            self.functions.push(Definition { cell, function });
            table.insert(function.name.to_string(), self.functions.len() - 1);
        }
        self.classes.push((table, module));
        Some(Value::UserClass(self.classes.len() - 1))
    }

    /// `Class(args)`: a new instance, with `__init__` followed when the class has one.
    fn instantiate(&mut self, class: usize, args: &Args<'a>, func: &'a Expr) -> Option<Value> {
        let instance = Rc::new(std::cell::RefCell::new(Instance {
            class,
            attributes: HashMap::new(),
        }));
        match self.classes[class].0.get("__init__").copied() {
            Some(init) => {
                self.call_method(&instance, init, args, func)?;
            }
            // object() takes no arguments; nn.Module's own __init__ is not followed.
            None if args.positional.is_empty() && args.keywords.is_empty() && !args.star => {}
            None => return self.apply(None, args, Effect::Unknown),
        }
        Some(Value::Instance(instance))
    }

    /// A method called on an instance: `self` is the instance.
    fn call_method(
        &mut self,
        instance: &Rc<std::cell::RefCell<Instance>>,
        function: usize,
        args: &Args<'a>,
        func: &'a Expr,
    ) -> Option<Value> {
        let mut bound = args.clone();
        bound.positional.insert(
            0,
            Arg {
                expr: func,
                value: Some(Value::Instance(instance.clone())),
            },
        );
        let saved = std::mem::replace(&mut self.in_method, true);
        let result = self.call_cell_function(function, &bound);
        self.in_method = saved;
        result
    }

    fn call_cell_function(&mut self, index: usize, args: &Args<'a>) -> Option<Value> {
        const MAX_DEPTH: usize = 3;
        let Definition { cell, function } = self.functions[index];
        if self.frames.len() >= MAX_DEPTH || self.steps > MAX_STEPS || !runs_when_called(function) {
            self.unknown_call = Some("function not followed (depth, work or generator)");
            self.havoc();
            return self.apply(None, args, Effect::Unknown);
        }
        let mut locals = LocalNames::default();
        for stmt in &function.body {
            locals.visit_stmt(stmt);
        }
        // A call Python cannot bind raises TypeError before the body runs: not followed.
        let Some(slots) = bind_parameters(&function.parameters, args) else {
            self.unknown_call = Some("function call not bindable");
            self.havoc();
            return self.apply(None, args, Effect::Unknown);
        };
        let mut names: HashSet<String> = locals.assigned;
        names.extend(slots.keys().cloned());
        for name in &locals.globals {
            names.remove(name);
        }
        self.frames.push(Frame {
            slots,
            locals: names,
        });
        let caller = self.cell;
        let entered = self.foreign.is_none() && !std::ptr::eq(cell, self.target);
        if entered {
            self.foreign = Some((args.line, function.name.to_string()));
        }
        self.cell = cell;
        let undecided = self.undecided;
        let result = match self.exec_block(&function.body) {
            // After a `return` the facts did not decide, the value is one of several.
            Flow::Leave(value) if self.undecided == undecided => value,
            Flow::Leave(_) => None,
            // Without such a `return`, the call returns `None`.
            Flow::Next if self.undecided == undecided => Some(Value::Const(Constant::None)),
            Flow::Next => None,
            Flow::Break | Flow::Continue => None,
        };
        self.cell = caller;
        if entered {
            self.foreign = None;
        }
        self.frames.pop();
        result
    }
}

/// Bind a call's arguments to a function's parameters as Python does; `None` when Python would
/// raise `TypeError` (too many or missing arguments, an unexpected keyword, a parameter given
/// twice) or the binding is not known (`*args`/`**kwargs` in the call).
fn bind_parameters(parameters: &ast::Parameters, args: &Args) -> Option<HashMap<String, Slot>> {
    if args.star {
        return None;
    }
    let positional: Vec<&ast::ParameterWithDefault> = parameters
        .posonlyargs
        .iter()
        .chain(&parameters.args)
        .collect();
    let value = |arg: &Arg| arg.value.clone().map_or(Slot::Unknown, Slot::Known);
    let mut slots: HashMap<String, Slot> = HashMap::new();
    if args.positional.len() > positional.len() && parameters.vararg.is_none() {
        return None;
    }
    for (parameter, arg) in positional.iter().zip(&args.positional) {
        slots.insert(parameter.parameter.name.to_string(), value(arg));
    }
    if let Some(vararg) = &parameters.vararg {
        let extra = args.positional.iter().skip(positional.len());
        slots.insert(
            vararg.name.to_string(),
            Slot::Known(Value::Seq {
                items: extra.map(|arg| arg.value.clone()).collect(),
                of: Sequence::Tuple,
            }),
        );
    }
    let by_keyword: Vec<&ast::ParameterWithDefault> = parameters
        .args
        .iter()
        .chain(&parameters.kwonlyargs)
        .collect();
    let mut extra_keywords = Vec::new();
    for (name, arg) in &args.keywords {
        if by_keyword
            .iter()
            .any(|p| p.parameter.name.as_str() == *name)
        {
            if slots.contains_key(*name) {
                return None;
            }
            slots.insert((*name).to_owned(), value(arg));
        } else if parameters.kwarg.is_some() {
            extra_keywords.push((
                Some(Value::Const(Constant::Str((*name).to_owned()))),
                arg.value.clone(),
            ));
        } else {
            return None;
        }
    }
    if let Some(kwarg) = &parameters.kwarg {
        slots.insert(
            kwarg.name.to_string(),
            Slot::Known(Value::Dict(extra_keywords)),
        );
    }
    for parameter in positional
        .iter()
        .chain(&parameters.kwonlyargs.iter().collect::<Vec<_>>())
    {
        let name = parameter.parameter.name.as_str();
        if slots.contains_key(name) {
            continue;
        }
        // A default was evaluated when the function was defined: known when it is a literal.
        let default = parameter.default.as_deref()?;
        // A list default may have been changed by earlier calls.
        let slot = constant(default)
            .filter(python::hashable)
            .map(|c| Slot::Known(Value::from_python(c)))
            .unwrap_or(Slot::Unknown);
        slots.insert(name.to_owned(), slot);
    }
    Some(slots)
}

/// Whether a loop body may change what the loop iterates (Python iterates the live object): a
/// name of the iterable expression rebound, subscripted into, or given a method call.
fn changes_iterated(iter: &Expr, body: &[Stmt]) -> bool {
    let mut iterated = BoundNames::default();
    iterated.visit_expr(iter);
    struct Changes<'n> {
        names: &'n [String],
        found: bool,
    }
    impl<'a> Visitor<'a> for Changes<'_> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            let root = |expr: &Expr| match expr {
                Expr::Name(name) => Some(name.id.to_string()),
                _ => None,
            };
            let touched = match expr {
                Expr::Name(name) if name.ctx != ExprContext::Load => Some(name.id.to_string()),
                Expr::Subscript(subscript) if subscript.ctx != ExprContext::Load => {
                    root(&subscript.value)
                }
                Expr::Call(call) => match call.func.as_ref() {
                    Expr::Attribute(method) => root(&method.value),
                    _ => None,
                },
                _ => None,
            };
            if touched.is_some_and(|name| self.names.contains(&name)) {
                self.found = true;
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut changes = Changes {
        names: &iterated.0,
        found: false,
    };
    for stmt in body {
        changes.visit_stmt(stmt);
    }
    changes.found
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

/// The exception classes an `except` clause names, by their last name (`None` for a bare
/// `except` or an expression that is not a name).
fn handler_types(type_: Option<&Expr>) -> Vec<Option<String>> {
    let name = |expr: &Expr| match expr {
        Expr::Name(name) => Some(name.id.to_string()),
        Expr::Attribute(attribute) => Some(attribute.attr.to_string()),
        _ => None,
    };
    match type_ {
        None => vec![None],
        Some(Expr::Tuple(tuple)) => tuple.elts.iter().map(name).collect(),
        Some(other) => vec![name(other)],
    }
}

/// Whether the facts of a name describe the builtin of that name itself (`range` is the class
/// `builtins.range`, `len` the builtin function named `len`), not something bound over it.
fn is_builtin(var: &Variable, name: &str) -> bool {
    let facts_name = var.r.get("name").and_then(|n| n.as_str());
    match var.kind {
        Kind::Class => facts_name == Some(&format!("builtins.{name}")),
        Kind::Builtin => {
            var.type_name == "builtins.builtin_function_or_method" && facts_name == Some(name)
        }
        _ => false,
    }
}

/// Context managers whose `__exit__` never swallows an exception of the body (it returns
/// `None` or a false value), by the qualified name of what the `with` item calls.
const NEVER_SUPPRESSING: &[&str] = &[
    "builtins.open",
    "io.open",
    "numpy.errstate",
    "warnings.catch_warnings",
    "pandas.option_context",
    "matplotlib.rc_context",
    "matplotlib.pyplot.rc_context",
    "matplotlib.pyplot.style.context",
    "torch.no_grad",
    "torch.enable_grad",
    "torch.inference_mode",
    "torch.set_grad_enabled",
    "torch.autocast",
    "torch.amp.autocast",
    "tensorflow.GradientTape",
    "tensorflow.device",
    "tensorflow.name_scope",
];

/// `super()` with no arguments.
fn is_super_call(expr: &Expr) -> bool {
    matches!(expr, Expr::Call(call) if call.arguments.is_empty()
        && matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "super"))
}

/// Whether a handler for `handler` catches an `exception` a rule proves: the handler names the
/// class or one of its bases, or a class crane does not know (which might be a base).
fn catches(handler: Option<&str>, exception: &str) -> bool {
    const BASES: &[(&str, &[&str])] = &[
        ("KeyError", &["LookupError"]),
        ("IndexError", &["LookupError"]),
        ("NotFittedError", &["ValueError", "AttributeError"]),
        ("AxisError", &["ValueError", "IndexError", "LookupError"]),
        ("InvalidParameterError", &["ValueError", "TypeError"]),
        ("LinAlgError", &["ValueError"]),
    ];
    /// Builtin exception classes that are none of the bases of the classes rules prove.
    const OTHERS: &[&str] = &[
        "ArithmeticError",
        "ZeroDivisionError",
        "OverflowError",
        "FloatingPointError",
        "AssertionError",
        "ImportError",
        "ModuleNotFoundError",
        "OSError",
        "IOError",
        "EnvironmentError",
        "FileNotFoundError",
        "FileExistsError",
        "PermissionError",
        "IsADirectoryError",
        "NotADirectoryError",
        "TimeoutError",
        "ConnectionError",
        "EOFError",
        "StopIteration",
        "StopAsyncIteration",
        "KeyboardInterrupt",
        "SystemExit",
        "GeneratorExit",
        "MemoryError",
        "RecursionError",
        "NotImplementedError",
        "UnicodeError",
        "UnicodeDecodeError",
        "UnicodeEncodeError",
        "SyntaxError",
        "UnboundLocalError",
        "NameError",
        "AttributeError",
        "KeyError",
        "IndexError",
        "ValueError",
        "TypeError",
        "RuntimeError",
        "LookupError",
        "Warning",
        "UserWarning",
        "NotFittedError",
        "AxisError",
        "InvalidParameterError",
        "LinAlgError",
    ];
    let Some(handler) = handler else {
        return true;
    };
    if handler == exception || matches!(handler, "Exception" | "BaseException") {
        return true;
    }
    let bases = BASES
        .iter()
        .find(|(name, _)| *name == exception)
        .map_or(&[][..], |(_, bases)| bases);
    bases.contains(&handler) || !OTHERS.contains(&handler)
}

fn slot_holds(slot: &Slot, id: u32) -> bool {
    match slot {
        Slot::Known(Value::Object(obj)) => obj.id == id,
        Slot::Known(Value::Indexer(obj, _)) => obj.id == id,
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

/// Whether a loop body may end the loop early (`break`, `return`, `raise`).
/// How many passes a `for` loop over `iterable` makes, when that is certain.
fn passes(library: &dyn Library, iterable: &Value) -> Option<i64> {
    if let Some((low, high, _)) = library.loop_index(iterable) {
        return Some(high - low + 1);
    }
    match iterable {
        // An unknown item may be a starred one, of any length.
        Value::Seq { items, .. } if items.iter().all(Option::is_some) => {
            i64::try_from(items.len()).ok()
        }
        _ => None,
    }
}

/// Whether a loop body may `continue` (its nested loops aside).
fn continues(body: &[Stmt]) -> bool {
    struct Continues(bool);
    impl<'a> Visitor<'a> for Continues {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::Continue(_) => self.0 = true,
                Stmt::For(_) | Stmt::While(_) | Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                _ => visitor::walk_stmt(self, stmt),
            }
        }
        fn visit_expr(&mut self, _: &'a Expr) {}
    }
    let mut found = Continues(false);
    for stmt in body {
        found.visit_stmt(stmt);
    }
    found.0
}

fn leaves_loop(body: &[Stmt]) -> bool {
    struct Leaves(bool);
    impl<'a> Visitor<'a> for Leaves {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::Return(_) | Stmt::Raise(_) | Stmt::Break(_) => self.0 = true,
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                Stmt::For(inner) => {
                    // A nested loop's `break` ends only that loop.
                    let mut exits = Leaves(false);
                    for stmt in inner.body.iter().chain(&inner.orelse) {
                        exits.visit_stmt(stmt);
                    }
                    self.0 |= exits.0 && contains_exit(&inner.body);
                }
                Stmt::While(inner) => {
                    self.0 |= contains_exit(&inner.body);
                }
                _ => visitor::walk_stmt(self, stmt),
            }
        }
        fn visit_expr(&mut self, _: &'a Expr) {}
    }
    fn contains_exit(body: &[Stmt]) -> bool {
        struct Exits(bool);
        impl<'a> Visitor<'a> for Exits {
            fn visit_stmt(&mut self, stmt: &'a Stmt) {
                match stmt {
                    Stmt::Return(_) | Stmt::Raise(_) => self.0 = true,
                    Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                    _ => visitor::walk_stmt(self, stmt),
                }
            }
            fn visit_expr(&mut self, _: &'a Expr) {}
        }
        let mut exits = Exits(false);
        for stmt in body {
            exits.visit_stmt(stmt);
        }
        exits.0
    }
    let mut leaves = Leaves(false);
    for stmt in body {
        leaves.visit_stmt(stmt);
    }
    leaves.0
}

/// Whether a compound statement may leave its block early (so what follows may not run).
fn may_jump(stmt: &Stmt) -> bool {
    struct Jumps(bool);
    impl<'a> Visitor<'a> for Jumps {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::Return(_) | Stmt::Raise(_) | Stmt::Break(_) | Stmt::Continue(_) => {
                    self.0 = true
                }
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                Stmt::For(_) | Stmt::While(_) => {
                    // `break`/`continue` inside a nested loop stay inside it.
                    struct Exits(bool);
                    impl<'b> Visitor<'b> for Exits {
                        fn visit_stmt(&mut self, stmt: &'b Stmt) {
                            match stmt {
                                Stmt::Return(_) | Stmt::Raise(_) => self.0 = true,
                                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                                _ => visitor::walk_stmt(self, stmt),
                            }
                        }
                        fn visit_expr(&mut self, _: &'b Expr) {}
                    }
                    let mut exits = Exits(false);
                    visitor::walk_stmt(&mut exits, stmt);
                    self.0 |= exits.0;
                }
                _ => visitor::walk_stmt(self, stmt),
            }
        }
        fn visit_expr(&mut self, _: &'a Expr) {}
    }
    match stmt {
        Stmt::If(_)
        | Stmt::For(_)
        | Stmt::While(_)
        | Stmt::Try(_)
        | Stmt::With(_)
        | Stmt::Match(_) => {
            let mut jumps = Jumps(false);
            match stmt {
                Stmt::For(_) | Stmt::While(_) => {
                    // A loop's own `break`/`continue` do not leave the enclosing block.
                    jumps.visit_stmt(stmt);
                }
                _ => visitor::walk_stmt(&mut jumps, stmt),
            }
            jumps.0
        }
        _ => false,
    }
}

/// Names bound by targets and patterns.
#[derive(Default)]
struct BoundNames(Vec<String>);

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
struct LocalNames {
    assigned: HashSet<String>,
    globals: Vec<String>,
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
