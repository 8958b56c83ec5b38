//! Expressions: evaluating each expression kind to an abstract value (names, attributes,
//! subscripts, operators, comparisons, f-strings, displays), asking the [`Library`] for what a
//! data object does and Python's rules (`python.rs`) for plain values.

use crane_analysis::Constant;
use ruff_python_ast::{self as ast, Expr, ExprContext};

use super::Interp;
use crate::rules::core::cell::{constant, render_key};
use crate::rules::core::value::{Sequence, Value};
use crate::rules::core::{names, python};

impl<'a> Interp<'a> {
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

    /// A builtin a plain name stands for, when nothing in the cell or the kernel rebinds it.
    pub(super) fn builtin_name(&self, name: &str) -> Option<Value> {
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
                crate::rules::core::value::indexer_name(*indexer)
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

    pub(super) fn load_attribute(
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
}
