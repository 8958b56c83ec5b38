//! Canonical expression strings and constant values (conventions in the crate docs).

use ruff_python_ast::{self as ast, ArgOrKeyword, Expr, Number, UnaryOp};
use ruff_text_size::Ranged;

use crate::model::{Constant, ExprKind};
use crate::repr::python_repr;

/// Renders expressions of one source text (the text their ranges point into).
#[derive(Clone, Copy)]
pub(crate) struct Renderer<'s> {
    source: &'s str,
}

impl<'s> Renderer<'s> {
    pub(crate) fn new(source: &'s str) -> Self {
        Self { source }
    }

    pub(crate) fn text(&self, node: &impl Ranged) -> &'s str {
        self.source
            .get(node.range().to_std_range())
            .unwrap_or_default()
    }

    /// The canonical expression string of `expr`.
    pub(crate) fn render(&self, expr: &Expr) -> String {
        match expr {
            Expr::Name(name) => name.id.to_string(),
            Expr::Attribute(attribute) => {
                format!(
                    "{}.{}",
                    self.render_postfix(&attribute.value),
                    attribute.attr
                )
            }
            Expr::Subscript(subscript) => format!(
                "{}[{}]",
                self.render_postfix(&subscript.value),
                self.render_key(&subscript.slice)
            ),
            Expr::Call(call) => {
                let arguments: Vec<String> = call
                    .arguments
                    .iter_source_order()
                    .map(|argument| match argument {
                        ArgOrKeyword::Arg(arg) => self.render_item(arg),
                        ArgOrKeyword::Keyword(keyword) => match &keyword.arg {
                            Some(name) => format!("{name}={}", self.render_item(&keyword.value)),
                            None => format!("**{}", self.render_item(&keyword.value)),
                        },
                    })
                    .collect();
                format!(
                    "{}({})",
                    self.render_postfix(&call.func),
                    arguments.join(", ")
                )
            }
            Expr::StringLiteral(string) => python_repr(string.value.to_str()),
            Expr::BytesLiteral(bytes) => {
                python_bytes_repr(&bytes.value.bytes().collect::<Vec<_>>())
            }
            Expr::NumberLiteral(number) => match &number.value {
                Number::Int(int) => match int.as_i64() {
                    Some(value) => value.to_string(),
                    None => self.text(expr).replace('_', ""),
                },
                Number::Float(value) => {
                    if value.is_finite() {
                        crate::python_float_repr(*value)
                    } else {
                        self.text(expr).to_owned()
                    }
                }
                Number::Complex { .. } => self.text(expr).replace('_', ""),
            },
            Expr::BooleanLiteral(boolean) => python_bool(boolean.value).to_owned(),
            Expr::NoneLiteral(_) => "None".to_owned(),
            Expr::EllipsisLiteral(_) => "...".to_owned(),
            Expr::List(list) => format!("[{}]", self.render_items(&list.elts)),
            Expr::Tuple(tuple) => match tuple.elts.as_slice() {
                [single] => format!("({},)", self.render_item(single)),
                elts => format!("({})", self.render_items(elts)),
            },
            Expr::Set(set) => format!("{{{}}}", self.render_items(&set.elts)),
            Expr::Dict(dict) => {
                let items: Vec<String> = dict
                    .iter()
                    .map(|item| match &item.key {
                        Some(key) => {
                            format!(
                                "{}: {}",
                                self.render_item(key),
                                self.render_item(&item.value)
                            )
                        }
                        None => format!("**{}", self.render_postfix(&item.value)),
                    })
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
            Expr::UnaryOp(unary) => {
                let operand = match &*unary.operand {
                    Expr::NumberLiteral(_) => self.render(&unary.operand),
                    other => self.render_postfix(other),
                };
                match unary.op {
                    UnaryOp::Not => format!("not {operand}"),
                    op => format!("{}{operand}", op.as_str()),
                }
            }
            Expr::Starred(starred) => format!("*{}", self.render_postfix(&starred.value)),
            _ => self.text(expr).to_owned(),
        }
    }

    /// A subscript key: a tuple is printed without parentheses (`x[:, 0]`), slices as Python
    /// prints them (`x[1:3]`, `x[::2]`).
    pub(crate) fn render_key(&self, key: &Expr) -> String {
        match key {
            Expr::Tuple(tuple) => match tuple.elts.as_slice() {
                [single] => format!("{},", self.render_slice_item(single)),
                elts => elts
                    .iter()
                    .map(|elt| self.render_slice_item(elt))
                    .collect::<Vec<_>>()
                    .join(", "),
            },
            other => self.render_slice_item(other),
        }
    }

    fn render_slice_item(&self, item: &Expr) -> String {
        match item {
            Expr::Slice(slice) => {
                let bound = |part: &Option<Box<Expr>>| {
                    part.as_deref()
                        .map(|expr| self.render_item(expr))
                        .unwrap_or_default()
                };
                let mut text = format!("{}:{}", bound(&slice.lower), bound(&slice.upper));
                if let Some(step) = &slice.step {
                    text.push(':');
                    text.push_str(&self.render_item(step));
                }
                text
            }
            other => self.render_item(other),
        }
    }

    fn render_items(&self, items: &[Expr]) -> String {
        items
            .iter()
            .map(|item| self.render_item(item))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// An expression inside brackets or an argument list.
    fn render_item(&self, expr: &Expr) -> String {
        match expr {
            Expr::Named(_) | Expr::Yield(_) | Expr::YieldFrom(_) | Expr::Generator(_) => {
                format!("({})", self.render(expr))
            }
            _ => self.render(expr),
        }
    }

    /// An expression followed by `.attr`, `[key]` or `(args)`.
    fn render_postfix(&self, expr: &Expr) -> String {
        match expr {
            Expr::Name(_)
            | Expr::Attribute(_)
            | Expr::Subscript(_)
            | Expr::Call(_)
            | Expr::StringLiteral(_)
            | Expr::BytesLiteral(_)
            | Expr::BooleanLiteral(_)
            | Expr::NoneLiteral(_)
            | Expr::List(_)
            | Expr::Tuple(_)
            | Expr::Set(_)
            | Expr::Dict(_)
            | Expr::ListComp(_)
            | Expr::SetComp(_)
            | Expr::DictComp(_)
            | Expr::FString(_) => self.render(expr),
            _ => format!("({})", self.render(expr)),
        }
    }
}

/// The root name of a *reference*: a name, an attribute of a reference, or a subscript of a
/// reference with a constant key.
pub(crate) fn reference_root(expr: &Expr) -> Option<&ast::ExprName> {
    match expr {
        Expr::Name(name) => Some(name),
        Expr::Attribute(attribute) => reference_root(&attribute.value),
        Expr::Subscript(subscript) if is_constant_key(&subscript.slice) => {
            reference_root(&subscript.value)
        }
        _ => None,
    }
}

/// A subscript key made only of constants: literals, lists/tuples of them, constant slices.
pub(crate) fn is_constant_key(key: &Expr) -> bool {
    match key {
        Expr::Tuple(tuple) => tuple.elts.iter().all(is_constant_key),
        Expr::Slice(slice) => [&slice.lower, &slice.upper, &slice.step]
            .into_iter()
            .flatten()
            .all(|bound| constant(bound).is_some()),
        Expr::EllipsisLiteral(_) => true,
        other => constant(other).is_some(),
    }
}

/// The value of a constant literal expression.
pub(crate) fn constant(expr: &Expr) -> Option<Constant> {
    Some(match expr {
        Expr::StringLiteral(string) => Constant::Str(string.value.to_str().to_owned()),
        Expr::BytesLiteral(bytes) => Constant::Bytes(bytes.value.bytes().collect()),
        Expr::NumberLiteral(number) => number_constant(&number.value, false)?,
        Expr::BooleanLiteral(boolean) => Constant::Bool(boolean.value),
        Expr::NoneLiteral(_) => Constant::None,
        Expr::UnaryOp(unary) => match (&unary.op, &*unary.operand) {
            (UnaryOp::USub, Expr::NumberLiteral(number)) => number_constant(&number.value, true)?,
            (UnaryOp::UAdd, Expr::NumberLiteral(number)) => number_constant(&number.value, false)?,
            _ => return None,
        },
        Expr::List(list) => Constant::List(list.elts.iter().map(constant).collect::<Option<_>>()?),
        Expr::Tuple(tuple) => {
            Constant::Tuple(tuple.elts.iter().map(constant).collect::<Option<_>>()?)
        }
        _ => return None,
    })
}

fn number_constant(number: &Number, negative: bool) -> Option<Constant> {
    match number {
        Number::Int(int) => Some(match int.as_i64() {
            Some(value) if negative => Constant::Int(-value),
            Some(value) => Constant::Int(value),
            None => {
                let digits = int.to_string().replace('_', "");
                Constant::BigInt(if negative {
                    format!("-{digits}")
                } else {
                    digits
                })
            }
        }),
        Number::Float(value) => Some(Constant::Float(if negative { -value } else { *value })),
        Number::Complex { .. } => None,
    }
}

pub(crate) fn expr_kind(expr: &Expr) -> ExprKind {
    match expr {
        Expr::Name(_) => ExprKind::Name,
        Expr::Attribute(_) => ExprKind::Attribute,
        Expr::Subscript(_) => ExprKind::Subscript,
        Expr::Call(_) => ExprKind::Call,
        Expr::StringLiteral(_)
        | Expr::BytesLiteral(_)
        | Expr::NumberLiteral(_)
        | Expr::BooleanLiteral(_)
        | Expr::NoneLiteral(_)
        | Expr::EllipsisLiteral(_) => ExprKind::Constant,
        Expr::List(_) => ExprKind::List,
        Expr::Tuple(_) => ExprKind::Tuple,
        Expr::Set(_) => ExprKind::Set,
        Expr::Dict(_) => ExprKind::Dict,
        Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) | Expr::Generator(_) => {
            ExprKind::Comprehension
        }
        Expr::Lambda(_) => ExprKind::Lambda,
        Expr::BinOp(_) => ExprKind::BinaryOperation,
        Expr::UnaryOp(_) => ExprKind::UnaryOperation,
        Expr::BoolOp(_) => ExprKind::BooleanOperation,
        Expr::Compare(_) => ExprKind::Comparison,
        Expr::If(_) => ExprKind::Conditional,
        Expr::FString(_) | Expr::TString(_) => ExprKind::FString,
        Expr::Starred(_) => ExprKind::Starred,
        Expr::Slice(_) => ExprKind::Slice,
        Expr::Named(_) => ExprKind::Walrus,
        Expr::Await(_) => ExprKind::Await,
        Expr::Yield(_) | Expr::YieldFrom(_) => ExprKind::Yield,
        Expr::IpyEscapeCommand(_) => ExprKind::IpyEscape,
    }
}

fn python_bool(value: bool) -> &'static str {
    if value {
        "True"
    } else {
        "False"
    }
}

/// `repr(b)` for a Python `bytes`.
pub(crate) fn python_bytes_repr(bytes: &[u8]) -> String {
    let quote = if bytes.contains(&b'\'') && !bytes.contains(&b'"') {
        b'"'
    } else {
        b'\''
    };
    let mut out = String::with_capacity(bytes.len() + 3);
    out.push('b');
    out.push(char::from(quote));
    for &byte in bytes {
        match byte {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            byte if byte == quote => {
                out.push('\\');
                out.push(char::from(byte));
            }
            0x20..=0x7e => out.push(char::from(byte)),
            byte => out.push_str(&format!("\\x{byte:02x}")),
        }
    }
    out.push(char::from(quote));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_python_repr() {
        let cases = [
            (1e22, "1e+22"),
            (1.5e-7, "1.5e-07"),
            (123_456_789_012_345_680.0, "1.2345678901234568e+17"),
            (0.1, "0.1"),
            (100.0, "100.0"),
            (1e15, "1000000000000000.0"),
            (5e-324, "5e-324"),
            (0.0001, "0.0001"),
            (0.000_012_34, "1.234e-05"),
            (9_999_999_999_999_998.0, "9999999999999998.0"),
            (-2.5, "-2.5"),
            (0.0, "0.0"),
        ];
        for (value, expected) in cases {
            assert_eq!(crate::python_float_repr(value), expected);
        }
    }

    #[test]
    fn bytes_print_like_python_repr() {
        assert_eq!(python_bytes_repr(b"x'\xff"), "b\"x'\\xff\"");
    }
}
