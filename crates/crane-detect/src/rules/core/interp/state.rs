//! What names hold and what is forgotten: the global and frame slots, binding and loading a
//! name (from the cell, else the kernel's facts, else a builtin), and forgetting whatever code
//! that is not followed or may not run could have bound or changed (logged names and objects,
//! containers shared by every name holding them). Kept apart from running code so that what the
//! interpreter knows at a point has one owner.

use std::rc::Rc;

use crane_runtime::{Kind, Variable};
use ruff_python_ast::Expr;

use super::{holds_mutable, root_name, Interp, Log, Slot};
use crate::rules::core::names;
use crate::rules::core::value::{Obj, Value};

impl<'a> Interp<'a> {
    fn slots_mut(&mut self) -> impl Iterator<Item = &mut Slot> {
        self.globals.values_mut().chain(
            self.frames
                .iter_mut()
                .flat_map(|frame| frame.slots.values_mut()),
        )
    }

    /// Forget what uncertain code may have bound or changed: the names and objects it logged.
    pub(super) fn forget_logged(&mut self, log: &Log) {
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

    pub(super) fn havoc(&mut self) {
        self.runtime_stale = true;
        for slot in self.slots_mut() {
            if let Slot::Known(Value::Object(obj)) = slot {
                if obj.key.is_some() {
                    *slot = Slot::Unknown;
                }
            }
        }
    }

    pub(super) fn log_name(&mut self, name: &str) {
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
    pub(super) fn forgetting(&mut self, certain: bool, f: impl FnOnce(&mut Self)) {
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

    pub(super) fn set_slot(&mut self, name: &str, slot: Slot) {
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

    pub(super) fn load_name(&mut self, name: &str, line: u32) -> Option<Value> {
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

    /// A list or dict literal bound to a name changed in place: forget what the name holds.
    pub(super) fn forget_container(&mut self, expr: &Expr) {
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
    pub(super) fn load_slot(&self, name: &str) -> Option<Value> {
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
}

/// Whether the facts of a name describe the builtin of that name itself (`range` is the class
/// `builtins.range`, `len` the builtin function named `len`), not something bound over it.
pub(super) fn is_builtin(var: &Variable, name: &str) -> bool {
    let facts_name = var.r.get("name").and_then(|n| n.as_str());
    match var.kind {
        Kind::Class => facts_name == Some(&format!("builtins.{name}")),
        Kind::Builtin => {
            var.type_name == "builtins.builtin_function_or_method" && facts_name == Some(name)
        }
        _ => false,
    }
}

fn slot_holds(slot: &Slot, id: u32) -> bool {
    match slot {
        Slot::Known(Value::Object(obj)) => obj.id == id,
        Slot::Known(Value::Indexer(obj, _)) => obj.id == id,
        _ => false,
    }
}
