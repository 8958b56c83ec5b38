//! The interpreter core: Python's semantics over abstract values. It runs the cell's statements,
//! follows functions and classes from the cells, loops and decided branches, and evaluates plain
//! values exactly as CPython does; it names no library. Whatever a library object or function
//! does, the core asks the [`Library`] it was given (the models), so the dependency runs one way:
//! models on core, never core on models.

pub(crate) mod cell;
pub(crate) mod defs;
pub(crate) mod interp;
pub(crate) mod kernel;
pub(crate) mod names;
pub(crate) mod python;
pub(crate) mod value;

use crane_runtime::Variable;
use ruff_python_ast::{CmpOp, Expr, Operator, UnaryOp};

use interp::{Args, Effect, Interp};
use value::{Obj, Value};

/// What the libraries do, as the interpreter needs to know it. Each method answers for values
/// the core cannot judge by Python's rules alone (data objects described by facts, library
/// functions); `None`/[`Effect::Unknown`] means "cannot say", and the core then forgets what the
/// call may have touched.
pub(crate) trait Library {
    /// A call of a function known by its qualified name (`pandas.read_csv`, `builtins.len`).
    fn function(&self, interp: &mut Interp, name: &str, args: &Args) -> Effect;
    /// A method call on a data object.
    fn method(&self, interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Effect;
    /// A method call on a value that is not a data object (a list, a string, a dict).
    fn value_method(&self, interp: &mut Interp, value: &Value, name: &str, args: &Args) -> Effect;
    /// Whether the method changes the container it is called on (`append`, `pop`).
    fn mutates_container(&self, value: &Value, name: &str) -> bool;
    /// A call of a data object itself (`model(x)`).
    fn call_object(&self, interp: &mut Interp, obj: &Obj, args: &Args) -> Effect;
    /// Before a call of `func` (`receiver.attr(...)` or `callee(...)`) runs, once its arguments
    /// are evaluated: report the `TypeError` of arguments the library callee does not bind.
    fn check_call(
        &self,
        interp: &mut Interp,
        func: &Expr,
        receiver: Option<&Value>,
        callee: Option<&Value>,
        args: &Args,
    );
    /// An attribute of a data object; `present`: the facts list it as present.
    fn attribute(
        &self,
        interp: &mut Interp,
        obj: &Obj,
        attr: &str,
        line: u32,
        called: bool,
        present: bool,
    ) -> Option<Value>;
    /// An attribute the facts record as absent on the object it is looked up on.
    fn absent_attribute(
        &self,
        interp: &mut Interp,
        base: &Value,
        attr: &str,
        facts: &Variable,
        line: u32,
    );
    /// `base[slice]`; `key` is the slice's value when known.
    fn subscript(
        &self,
        interp: &mut Interp,
        base: &Value,
        slice: &Expr,
        key: Option<Value>,
        line: u32,
    ) -> Option<Value>;
    /// A subscript whose item the facts record as absent.
    fn absent_subscript(
        &self,
        interp: &mut Interp,
        base: &Value,
        slice: &Expr,
        facts: &Variable,
        line: u32,
    );
    /// `base[slice] = value`.
    fn store_subscript(
        &self,
        interp: &mut Interp,
        base: &Value,
        slice: &Expr,
        key: Option<Value>,
        value: Option<Value>,
        line: u32,
    );
    /// `del base[slice]`.
    fn delete_subscript(&self, interp: &mut Interp, base: &Value, slice: &Expr, line: u32);
    fn binary(
        &self,
        interp: &mut Interp,
        op: Operator,
        left: Option<Value>,
        right: Option<Value>,
        line: u32,
    ) -> Option<Value>;
    fn unary(&self, interp: &mut Interp, op: UnaryOp, operand: Option<Value>) -> Option<Value>;
    fn compare(
        &self,
        interp: &mut Interp,
        ops: &[CmpOp],
        operands: &[Option<Value>],
    ) -> Option<Value>;
    /// The items a `for` loop takes from the value, when all are known.
    fn iteration_items(&self, value: &Value) -> Option<Vec<Option<Value>>>;
    /// The first item (`Some(None)`: there is one, unknown), when the value certainly has one.
    fn first_item(&self, interp: &mut Interp, value: &Value) -> Option<Option<Value>>;
    /// A loop over consecutive integers: `(low, high, from_enumerate)`.
    fn loop_index(&self, value: &Value) -> Option<(i64, i64, bool)>;
    /// `a, b = value` with this many targets.
    fn unpack(
        &self,
        interp: &mut Interp,
        value: &Value,
        count: usize,
    ) -> Option<Vec<Option<Value>>>;
    /// How many columns a frame has, when all are known (passes of `for ... in df.items()`).
    fn column_count(&self, value: &Value) -> Option<usize>;
    /// Whether a class deriving from this base calls `forward` when its instance is called.
    fn is_module_base(&self, qualified_name: &str) -> bool;
}
