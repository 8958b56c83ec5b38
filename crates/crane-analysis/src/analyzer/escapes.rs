//! The bodies of a cell's line magics (`%time x = f(y)`), parsed as Python, which the walk
//! reads as the cell's own statements.

use super::*;

/// Parsed Python bodies of line magics (`%time x = f(y)`), by offset of the magic in the cell.
pub(super) type MagicBodies = HashMap<usize, MagicBody>;

pub(super) struct MagicBody {
    pub(super) frame_base: usize,
    pub(super) exact: bool,
    pub(super) text: String,
    pub(super) parsed: Parsed<ModModule>,
}

pub(super) fn collect_magic_bodies(source: &str, suite: &[Stmt]) -> MagicBodies {
    let mut collector = EscapeCollector {
        source,
        bodies: HashMap::new(),
    };
    collector.visit_body(suite);
    collector.bodies
}

struct EscapeCollector<'s> {
    source: &'s str,
    bodies: HashMap<usize, MagicBody>,
}

impl EscapeCollector<'_> {
    fn add(&mut self, range: TextRange, kind: IpyEscapeKind, value: &str) {
        if kind != IpyEscapeKind::Magic {
            return;
        }
        let Some(body) = line_magic_body(value) else {
            return;
        };
        let Ok(parsed) = parse_here(body) else {
            return;
        };
        let Some(parsed) = parsed.try_into_module() else {
            return;
        };
        let start = range.start().to_usize();
        let node_text = self.source.get(range.to_std_range()).unwrap_or_default();
        let (frame_base, exact) = match node_text.find(body) {
            Some(offset) => (start + offset, true),
            None => (start, false),
        };
        self.bodies.insert(
            start,
            MagicBody {
                frame_base,
                exact,
                text: body.to_owned(),
                parsed,
            },
        );
    }
}

impl<'a> Visitor<'a> for EscapeCollector<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::IpyEscapeCommand(escape) = stmt {
            self.add(escape.range, escape.kind, &escape.value);
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::IpyEscapeCommand(escape) = expr {
            self.add(escape.range, escape.kind, &escape.value);
        }
        visitor::walk_expr(self, expr);
    }
}
