//! The target cell's syntax tree, with lines and the canonical expression strings that key the
//! runtime facts (the conventions of `crane_analysis`).

use crane_analysis::{python_repr, Constant, ParsedCell};
use ruff_python_ast::{self as ast, Expr, Number, UnaryOp};
use ruff_text_size::{Ranged, TextSize};

/// A parsed cell.
#[derive(Clone)]
pub(crate) struct Cell {
    pub body: Vec<ast::Stmt>,
    source: String,
    line_starts: Vec<u32>,
}

impl Cell {
    /// [`Cell::from_parsed`] of a cell given as text, for tests.
    #[cfg(test)]
    pub(crate) fn parse(source: &str) -> Option<Cell> {
        Cell::from_parsed(&ParsedCell::parse(source))
    }

    /// The cell of a parse crane-analysis made. A leading cell magic that runs its body as
    /// Python in the kernel (`%%time`, `%%capture out`) is blanked out, so the body is judged
    /// like any cell, at the same lines. The cell's statements are the parse's, unless the
    /// parse blanked other lines than the rules do (a cell magic whose body the rules do not
    /// read as Python, such as `%%debug`), when the text the rules read is parsed on its own.
    pub(crate) fn from_parsed(parsed: &ParsedCell) -> Option<Cell> {
        let source = &without_python_cell_magic(parsed.source());
        let body = if parsed.python_text() == source.as_str() && parsed.parsed().is_some() {
            parsed.module()?.body.iter().cloned().collect()
        } else if parsed.python_text() == source.as_str() && parsed.failure().is_some() {
            return None;
        } else {
            crane_analysis::bounds::with_deep_stack(|| {
                ParsedCell::parse(source)
                    .module()
                    .map(|module| module.body.iter().cloned().collect())
            })?
        };
        let mut line_starts = vec![0];
        line_starts.extend(
            source
                .match_indices('\n')
                .map(|(offset, _)| offset as u32 + 1),
        );
        Some(Cell {
            body,
            source: source.to_owned(),
            line_starts,
        })
    }

    /// The text parsed: the cell's source, with a leading Python cell magic blanked out.
    pub(crate) fn source(&self) -> &str {
        &self.source
    }

    /// The source text of a node, shortened for diagnoses.
    pub(crate) fn text(&self, node: &impl Ranged) -> String {
        const LIMIT: usize = 60;
        let text = self
            .source
            .get(node.range().to_std_range())
            .unwrap_or_default();
        let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.chars().count() > LIMIT {
            let short: String = text.chars().take(LIMIT).collect();
            format!("{short}...")
        } else {
            text
        }
    }

    /// 1-based line of a node's start.
    pub(crate) fn line(&self, node: &impl Ranged) -> u32 {
        self.line_of(node.start())
    }

    pub(crate) fn line_of(&self, offset: TextSize) -> u32 {
        let offset = u32::from(offset);
        self.line_starts.partition_point(|&start| start <= offset) as u32
    }
}

/// The constant an expression denotes, when it is a literal (or a list/tuple of literals).
pub(crate) fn constant(expr: &Expr) -> Option<Constant> {
    Some(match expr {
        Expr::StringLiteral(string) => Constant::Str(string.value.to_str().to_owned()),
        Expr::NumberLiteral(number) => match &number.value {
            Number::Int(int) => Constant::Int(int.as_i64()?),
            Number::Float(value) => Constant::Float(*value),
            Number::Complex { .. } => return None,
        },
        Expr::BooleanLiteral(boolean) => Constant::Bool(boolean.value),
        Expr::NoneLiteral(_) => Constant::None,
        Expr::UnaryOp(unary) if unary.op == UnaryOp::USub => match constant(&unary.operand)? {
            Constant::Int(value) => Constant::Int(value.checked_neg()?),
            Constant::Float(value) => Constant::Float(-value),
            _ => return None,
        },
        Expr::List(list) => Constant::List(list.elts.iter().map(constant).collect::<Option<_>>()?),
        Expr::Tuple(tuple) => {
            Constant::Tuple(tuple.elts.iter().map(constant).collect::<Option<_>>()?)
        }
        _ => return None,
    })
}

/// The canonical string of a subscript key made of constants and slices of constants
/// (`'a'`, `['a', 'b']`, `:, 0`, `1:3`), as the runtime facts key it.
pub(crate) fn render_key(key: &Expr) -> Option<String> {
    match key {
        Expr::Tuple(tuple) if !tuple.parenthesized => match tuple.elts.as_slice() {
            [single] => Some(format!("{},", render_key_item(single)?)),
            items => Some(
                items
                    .iter()
                    .map(render_key_item)
                    .collect::<Option<Vec<_>>>()?
                    .join(", "),
            ),
        },
        other => render_key_item(other),
    }
}

fn render_key_item(item: &Expr) -> Option<String> {
    match item {
        Expr::Slice(slice) => {
            let part = |bound: &Option<Box<Expr>>| match bound {
                Some(expr) => render_constant_expr(expr),
                None => Some(String::new()),
            };
            let mut text = format!("{}:{}", part(&slice.lower)?, part(&slice.upper)?);
            if let Some(step) = &slice.step {
                text.push(':');
                text.push_str(&render_constant_expr(step)?);
            }
            Some(text)
        }
        Expr::EllipsisLiteral(_) => Some("...".to_owned()),
        other => render_constant_expr(other),
    }
}

fn render_constant_expr(expr: &Expr) -> Option<String> {
    render_constant(&constant(expr)?)
}

/// A constant as Python's `repr` prints it (floats only when they are whole or simple).
pub(crate) fn render_constant(constant: &Constant) -> Option<String> {
    Some(match constant {
        Constant::None => "None".to_owned(),
        Constant::Bool(true) => "True".to_owned(),
        Constant::Bool(false) => "False".to_owned(),
        Constant::Int(value) => value.to_string(),
        Constant::BigInt(text) => text.clone(),
        Constant::Float(value) => {
            if !value.is_finite() {
                return None;
            }
            let text = format!("{value:?}");
            if text.contains('e') {
                return None;
            }
            text
        }
        Constant::Str(text) => python_repr(text),
        Constant::Bytes(_) => return None,
        Constant::List(items) => format!(
            "[{}]",
            items
                .iter()
                .map(render_constant)
                .collect::<Option<Vec<_>>>()?
                .join(", ")
        ),
        Constant::Tuple(items) => match items.as_slice() {
            [single] => format!("({},)", render_constant(single)?),
            items => format!(
                "({})",
                items
                    .iter()
                    .map(render_constant)
                    .collect::<Option<Vec<_>>>()?
                    .join(", ")
            ),
        },
    })
}

/// Cell magics whose body is Python run in the kernel itself.
const PYTHON_CELL_MAGICS: &[&str] = &["time", "timeit", "capture", "prun", "memit"];

fn without_python_cell_magic(source: &str) -> String {
    let Some(first) = source.lines().find(|line| !line.trim().is_empty()) else {
        return source.to_owned();
    };
    let name = first
        .trim_start()
        .strip_prefix("%%")
        .and_then(|rest| rest.split_whitespace().next());
    match name {
        Some(name) if PYTHON_CELL_MAGICS.contains(&name) => {
            let start = source.find(first).unwrap_or(0);
            let mut text = source.to_owned();
            text.replace_range(start..start + first.len(), &" ".repeat(first.len()));
            text
        }
        _ => source.to_owned(),
    }
}
