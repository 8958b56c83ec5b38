//! Calls: evaluating a call's arguments, binding them to a cell function's parameters as Python
//! does, following calls of functions and instances of classes the cells define (frames, `super()`,
//! methods), and applying the [`Effect`] a library call has on its receiver and arguments.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crane_analysis::Constant;
use ruff_python_ast::visitor::Visitor;
use ruff_python_ast::{self as ast, Expr};

use super::bindings::LocalNames;
use super::{root_name, Arg, Args, Effect, Flow, Frame, Interp, Slot, MAX_STEPS};
use crate::rules::core::cell::{constant, Cell};
use crate::rules::core::defs::{plain_methods, runs_when_called, Definition};
use crate::rules::core::python;
use crate::rules::core::value::{Instance, Obj, Sequence, Value};

impl<'a> Interp<'a> {
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

    pub(super) fn eval_call(&mut self, call: &'a ast::ExprCall, line: u32) -> Option<Value> {
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
    pub(super) fn register_class(
        &mut self,
        cell: &'a Cell,
        class: &'a ast::StmtClassDef,
    ) -> Option<Value> {
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

/// `super()` with no arguments.
fn is_super_call(expr: &Expr) -> bool {
    matches!(expr, Expr::Call(call) if call.arguments.is_empty()
        && matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "super"))
}
