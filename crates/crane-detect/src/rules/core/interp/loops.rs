//! Loops and comprehensions: how many passes a `for` loop makes, unrolling a loop over known
//! items pass by pass, counters raised once a pass, comprehensions computed element by element,
//! and whether a body may change what it iterates, `continue` or leave early. Apart from the
//! statements because following a loop pass by pass is its own bounded piece of work.

use std::collections::HashMap;

use crane_analysis::Constant;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprContext, Operator, Stmt};

use super::bindings::{BoundNames, LocalNames};
use super::{Flow, Frame, Interp, Log, COMPREHENSION_WORK, MAX_STEPS};
use crate::rules::core::cell::constant;
use crate::rules::core::value::{Sequence, Value};
use crate::rules::core::Library;

impl<'a> Interp<'a> {
    /// Whether the object an expression denotes may differ between passes of the loops being
    /// run (its root name is bound in a loop body, or it is not a plain reference).
    /// How many passes `for ... in df.items()` makes: one per column. Read before the call,
    /// which may forget the frame.
    pub(super) fn column_passes(&mut self, iter: &'a Expr) -> Option<i64> {
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
    pub(super) fn counters(&self, body: &'a [Stmt], passes: i64) -> Vec<(&'a str, Value)> {
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

    pub(super) fn loop_variant_base(&self, expr: &Expr) -> bool {
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

    /// The first iterable is evaluated in the enclosing scope; the rest runs per element, maybe
    /// never, in a scope of its own. When every iterable's items and every condition are known
    /// (within a work bound), the elements the comprehension yields are returned.
    pub(super) fn comprehension(
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
    pub(super) fn unrolled(
        &mut self,
        for_stmt: &'a ast::StmtFor,
        items: Vec<Option<Value>>,
    ) -> Flow {
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
    pub(super) fn paired_items(&mut self, iter: &'a Expr) -> Option<Vec<Option<Value>>> {
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
}

/// Whether a loop body may change what the loop iterates (Python iterates the live object): a
/// name of the iterable expression rebound, subscripted into, or given a method call.
pub(super) fn changes_iterated(iter: &Expr, body: &[Stmt]) -> bool {
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

/// Whether a loop body may end the loop early (`break`, `return`, `raise`).
/// How many passes a `for` loop over `iterable` makes, when that is certain.
pub(super) fn passes(library: &dyn Library, iterable: &Value) -> Option<i64> {
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

pub(super) fn leaves_loop(body: &[Stmt]) -> bool {
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
