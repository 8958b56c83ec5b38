//! Expressions built only from what they read: names, literals, attributes, subscripts,
//! slices, operators, comparisons and displays of those, and the calls a caller allows. The
//! shape two judgements share: a cell that cannot change the kernel's state (crane-probe's
//! snapshots) and a statement whose value cannot hang on statements left out
//! ([`crate::out_of_order`]).

use ruff_python_ast::{Expr, ExprCall};

/// Whether `expr` is built only from what it reads, calling nothing but the calls `call`
/// allows. A walrus, lambda, await, yield, comprehension, f-string or starred expression may
/// bind, run or change something: never.
pub fn built_from_reads(expr: &Expr, call: &dyn Fn(&ExprCall) -> bool) -> bool {
    let of = |expr: &Expr| built_from_reads(expr, call);
    let all = |exprs: &[Expr]| exprs.iter().all(of);
    let optional = |expr: &Option<Box<Expr>>| expr.as_deref().is_none_or(of);
    match expr {
        Expr::Name(_)
        | Expr::NumberLiteral(_)
        | Expr::StringLiteral(_)
        | Expr::BytesLiteral(_)
        | Expr::BooleanLiteral(_)
        | Expr::NoneLiteral(_)
        | Expr::EllipsisLiteral(_) => true,
        Expr::Attribute(attribute) => of(&attribute.value),
        Expr::Subscript(subscript) => of(&subscript.value) && of(&subscript.slice),
        Expr::Slice(slice) => {
            optional(&slice.lower) && optional(&slice.upper) && optional(&slice.step)
        }
        Expr::BinOp(op) => of(&op.left) && of(&op.right),
        Expr::UnaryOp(op) => of(&op.operand),
        Expr::Compare(compare) => of(&compare.left) && all(&compare.comparators),
        Expr::BoolOp(op) => all(&op.values),
        Expr::Tuple(tuple) => all(&tuple.elts),
        Expr::List(list) => all(&list.elts),
        Expr::Dict(dict) => dict
            .items
            .iter()
            .all(|item| item.key.as_ref().is_none_or(of) && of(&item.value)),
        Expr::Call(called) => call(called),
        _ => false,
    }
}
