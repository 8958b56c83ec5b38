//! The library models: what pandas, numpy, scikit-learn, torch, Keras, matplotlib, seaborn and
//! statsmodels objects and functions do, described by runtime facts and by the contract tables
//! (`crate::rules::contracts`), with the rules that prove a broken contract. [`Libraries`] is
//! the core's [`Library`]: it dispatches by the kind of the object or the qualified name of the
//! function. The dispatch is split by what the core asks: calls (`calls.rs`), attributes and
//! subscripts (`access.rs`), operators (`operators.rs`), and iteration and unpacking
//! (`iteration.rs`); each library's model is its own module.

mod access;
pub(crate) mod attributes;
mod calls;
mod domains;
pub(crate) mod facts;
mod iteration;
mod keras;
mod keys;
mod numpy;
mod objects;
mod operators;
pub(crate) mod pandas;
mod plots;
mod signatures;
mod sklearn;
mod torch;

use crane_runtime::{Kind, Variable};
use ruff_python_ast::{CmpOp, Expr, Operator, UnaryOp};

use crate::rules::core::interp::{Args, Effect, Interp};
use crate::rules::core::value::{Obj, Value};
use crate::rules::core::Library;

use access::{absent_subscript, attribute, delete_subscript, store_subscript, subscript};
use calls::{call_object, function, method, mutates_container, value_method};
pub(crate) use iteration::length_of;
use iteration::{first_item, iteration_items, loop_index, unpack};
use operators::{binary, compare, unary};

/// The models of every library crane knows, as the interpreter's [`Library`].
pub(crate) struct Libraries;

impl Library for Libraries {
    fn function(&self, interp: &mut Interp, name: &str, args: &Args) -> Effect {
        function(interp, name, args)
    }

    fn method(&self, interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Effect {
        method(interp, obj, name, args)
    }

    fn value_method(&self, interp: &mut Interp, value: &Value, name: &str, args: &Args) -> Effect {
        value_method(interp, value, name, args)
    }

    fn mutates_container(&self, value: &Value, name: &str) -> bool {
        mutates_container(value, name)
    }

    fn call_object(&self, interp: &mut Interp, obj: &Obj, args: &Args) -> Effect {
        call_object(interp, obj, args)
    }

    fn check_call(
        &self,
        interp: &mut Interp,
        func: &Expr,
        receiver: Option<&Value>,
        callee: Option<&Value>,
        args: &Args,
    ) {
        signatures::check(interp, func, receiver, callee, args);
    }

    fn attribute(
        &self,
        interp: &mut Interp,
        obj: &Obj,
        attr: &str,
        line: u32,
        called: bool,
        present: bool,
    ) -> Option<Value> {
        attribute(interp, obj, attr, line, called, present)
    }

    fn absent_attribute(
        &self,
        interp: &mut Interp,
        base: &Value,
        attr: &str,
        facts: &Variable,
        line: u32,
    ) {
        objects::absent_attribute(interp, base, attr, facts, line);
    }

    fn subscript(
        &self,
        interp: &mut Interp,
        base: &Value,
        slice: &Expr,
        key: Option<Value>,
        line: u32,
    ) -> Option<Value> {
        subscript(interp, base, slice, key, line)
    }

    fn absent_subscript(
        &self,
        interp: &mut Interp,
        base: &Value,
        slice: &Expr,
        facts: &Variable,
        line: u32,
    ) {
        absent_subscript(interp, base, slice, facts, line);
    }

    fn store_subscript(
        &self,
        interp: &mut Interp,
        base: &Value,
        slice: &Expr,
        key: Option<Value>,
        value: Option<Value>,
        line: u32,
    ) {
        store_subscript(interp, base, slice, key, value, line);
    }

    fn delete_subscript(&self, interp: &mut Interp, base: &Value, slice: &Expr, line: u32) {
        delete_subscript(interp, base, slice, line);
    }

    fn binary(
        &self,
        interp: &mut Interp,
        op: Operator,
        left: Option<Value>,
        right: Option<Value>,
        line: u32,
    ) -> Option<Value> {
        binary(interp, op, left, right, line)
    }

    fn unary(&self, _interp: &mut Interp, op: UnaryOp, operand: Option<Value>) -> Option<Value> {
        unary(op, operand)
    }

    fn compare(
        &self,
        interp: &mut Interp,
        ops: &[CmpOp],
        operands: &[Option<Value>],
    ) -> Option<Value> {
        compare(interp, ops, operands)
    }

    fn iteration_items(&self, value: &Value) -> Option<Vec<Option<Value>>> {
        iteration_items(value)
    }

    fn first_item(&self, _interp: &mut Interp, value: &Value) -> Option<Option<Value>> {
        first_item(value)
    }

    fn loop_index(&self, value: &Value) -> Option<(i64, i64, bool)> {
        loop_index(value)
    }

    fn unpack(
        &self,
        _interp: &mut Interp,
        value: &Value,
        count: usize,
    ) -> Option<Vec<Option<Value>>> {
        unpack(value, count)
    }

    fn column_count(&self, value: &Value) -> Option<usize> {
        let frame = value.obj()?;
        if frame.kind() != Kind::Dataframe {
            return None;
        }
        Some(facts::known_columns(&frame.var)?.len())
    }

    fn is_module_base(&self, qualified_name: &str) -> bool {
        matches!(
            qualified_name,
            "torch.nn.Module" | "torch.nn.modules.module.Module"
        )
    }
}

/// What the cells' code says about how libraries are set up: some library registers methods or
/// accessors on pandas objects (`tqdm.pandas()`, pandarallel), scikit-learn may output frames.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Extensions {
    pub extends_pandas: bool,
    pub frames_from_transformers: bool,
}

impl Extensions {
    pub(crate) fn of(source: &str) -> Extensions {
        Extensions {
            extends_pandas: attributes::PANDAS_EXTENDING_MODULES
                .iter()
                .any(|module| source.contains(module)),
            frames_from_transformers: source.contains("set_output")
                || source.contains("transform_output"),
        }
    }

    /// What these and the cell `source` say together.
    pub(crate) fn and(self, source: &str) -> Extensions {
        let other = Extensions::of(source);
        Extensions {
            extends_pandas: self.extends_pandas || other.extends_pandas,
            frames_from_transformers: self.frames_from_transformers
                || other.frames_from_transformers,
        }
    }
}
