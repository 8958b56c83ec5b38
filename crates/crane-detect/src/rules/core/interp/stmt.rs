//! Statements: running a block and each statement kind (assignments, `del`, `if`, `while`,
//! `for`, `with`, `try`, definitions, imports, IPython magics), with what each means for
//! certainty (`may_jump`: a compound statement that may leave its block early) and which
//! `with` items never swallow an exception of their body.

use crane_analysis::Constant;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, CmpOp, Expr, IpyEscapeKind, Stmt};
use ruff_text_size::Ranged;

use super::bindings::{BoundNames, LocalNames};
use super::loops::{changes_iterated, leaves_loop, passes};
use super::{holds_mutable, Flow, Interp, Slot, MAX_PASSES};
use crate::rules::core::cell::constant;
use crate::rules::core::defs::Definition;
use crate::rules::core::python;
use crate::rules::core::value::{Sequence, Value};

impl<'a> Interp<'a> {
    pub(super) fn exec_block(&mut self, body: &'a [Stmt]) -> Flow {
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

    pub(super) fn exec(&mut self, stmt: &'a Stmt) -> Flow {
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

    pub(super) fn assign(&mut self, target: &'a Expr, value: Option<Value>) {
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

/// Whether a compound statement may leave its block early (so what follows may not run).
pub(super) fn may_jump(stmt: &Stmt) -> bool {
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
