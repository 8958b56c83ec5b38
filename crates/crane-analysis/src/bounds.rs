//! Bounds on the cells crane parses and walks. Parsers, visitors and even dropping an AST
//! recurse once per level of nesting, and the text of every sub-expression is recorded, so an
//! unbounded cell would overflow the stack (a 30,000-term sum or a 50,000-deep attribute chain
//! is valid Python) or need memory quadratic in its length. A cell is parsed on a thread with a
//! large stack and then refused when it is larger or nested deeper than crane analyses; every
//! walk after that recurses at most [`MAX_NESTING`] levels, and the recorded texts total at most
//! [`MAX_NESTING`] times the cell's size.
//!
//! This is the only place crane calls Ruff's parser (the workspace's `clippy.toml` disallows
//! its functions everywhere else); other crates take a cell's one parse from
//! [`crate::ParsedCell`].

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once, PoisonError};

use ruff_python_ast::visitor::source_order::{SourceOrderVisitor, TraversalSignal};
use ruff_python_ast::{AnyNodeRef, Mod};
use ruff_python_parser::{parse, Mode, ParseError, ParseOptions, Parsed};
use ruff_text_size::Ranged;
use serde::Serialize;

/// The largest cell crane analyses.
pub const MAX_CELL_BYTES: usize = 1 << 20;
/// The deepest nesting of expressions and statements crane analyses; real code stays far below.
pub const MAX_NESTING: usize = 200;
/// Virtual stack of the thread that parses, analyses and drops a cell: only the pages used
/// are ever committed.
const DEEP_STACK_BYTES: usize = 512 << 20;

/// A cell crane cannot analyse, though it may be valid Python.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum Unanalysable {
    #[error("the cell is too large to analyse ({bytes} bytes; crane analyses cells up to {max} bytes)", max = MAX_CELL_BYTES)]
    TooLarge { bytes: usize },
    #[error("the cell is too deeply nested to analyse (more than {max} levels at line {line})", max = MAX_NESTING)]
    TooDeep { line: u32 },
    #[error("crane's Python parser cannot read this cell")]
    ParserFailed,
}

/// Why a cell could not be parsed within the bounds.
#[derive(Debug)]
pub enum ParseFailure {
    Syntax(ParseError),
    TooLarge {
        bytes: usize,
    },
    /// With the byte offset where the nesting passed the bound.
    TooDeep {
        at: usize,
    },
    /// The parser panicked (it has `unreachable!`s that some inputs reach).
    ParserFailed,
}

/// Parses `source` (IPython syntax) on a thread with a deep stack; the AST it returns nests at
/// most [`MAX_NESTING`] levels, so walking and dropping it anywhere is safe.
pub fn parse_bounded(source: &str) -> Result<Parsed<Mod>, ParseFailure> {
    with_deep_stack(|| parse_here(source))
}

/// [`parse_bounded`] on the calling thread, which must have a deep stack.
pub(crate) fn parse_here(source: &str) -> Result<Parsed<Mod>, ParseFailure> {
    parse_walked(source).map(|(parsed, _)| parsed)
}

/// [`parse_here`], and whether the AST holds an IPython escape (`%magic`, `!cmd`, `obj?`).
pub(crate) fn parse_walked(source: &str) -> Result<(Parsed<Mod>, bool), ParseFailure> {
    if source.len() > MAX_CELL_BYTES {
        return Err(ParseFailure::TooLarge {
            bytes: source.len(),
        });
    }
    let parsed = parse_catching_panics(source)?;
    let walked = walk(parsed.syntax());
    match walked.too_deep {
        Some(at) => {
            // Dropping a deep AST recurses as deep as it nests: drop it on this thread.
            drop(parsed);
            Err(ParseFailure::TooDeep { at })
        }
        None => Ok((parsed, walked.escapes)),
    }
}

/// How many times crane has called the parser in this process: what the tests that hold a
/// cell to one parse on its way through the kernel read.
#[doc(hidden)]
pub fn parser_calls() -> u64 {
    PARSER_CALLS.load(Ordering::Relaxed)
}

static PARSER_CALLS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static PARSING: Cell<bool> = const { Cell::new(false) };
    /// Set on the threads [`with_deep_stack`] starts.
    static ON_DEEP_STACK: Cell<bool> = const { Cell::new(false) };
}
static QUIET_PARSER_PANICS: Once = Once::new();

/// Ruff's parser, with its panics turned into [`ParseFailure::ParserFailed`]. While it runs,
/// the panic hook stays silent for this thread (a parser panic is an outcome here, not a crash
/// report); every other panic goes to the hook that was installed before.
fn parse_catching_panics(source: &str) -> Result<Parsed<Mod>, ParseFailure> {
    QUIET_PARSER_PANICS.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !PARSING.with(Cell::get) {
                previous(info);
            }
        }));
    });
    PARSING.with(|parsing| parsing.set(true));
    PARSER_CALLS.fetch_add(1, Ordering::Relaxed);
    // The one call of the parser in crane, within the bounds above.
    #[allow(clippy::disallowed_methods)]
    let parsed = std::panic::catch_unwind(|| parse(source, ParseOptions::from(Mode::Ipython)));
    PARSING.with(|parsing| parsing.set(false));
    match parsed {
        Ok(parsed) => parsed.map_err(ParseFailure::Syntax),
        Err(_) => Err(ParseFailure::ParserFailed),
    }
}

/// Runs `work` on a thread with a deep stack (parsers and visitors recurse per nesting level;
/// the caller's thread may be a runtime worker with a small stack). Runs it on the calling
/// thread when that is already such a thread (starting one costs about half a millisecond, and
/// the rules parse every executed cell from inside their own deep-stack work), or when no
/// thread can be started.
pub fn with_deep_stack<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    if ON_DEEP_STACK.with(Cell::get) {
        return work();
    }
    let work = Mutex::new(Some(work));
    let joined = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("crane-analysis".into())
            .stack_size(DEEP_STACK_BYTES)
            .spawn_scoped(scope, || {
                ON_DEEP_STACK.with(|deep| deep.set(true));
                let work = work.lock().unwrap_or_else(PoisonError::into_inner).take();
                work.map(|work| work())
            })
            .ok()
            .map(|handle| handle.join())
    });
    match joined {
        Some(Ok(Some(result))) => result,
        Some(Err(panic)) => std::panic::resume_unwind(panic),
        _ => match work.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some(work) => work(),
            None => unreachable!("a thread that took the work returned its result"),
        },
    }
}

/// What one walk over a parsed cell finds: the start offset of the first node nested deeper
/// than [`MAX_NESTING`], if any, and whether an IPython escape is among the nodes.
struct Walked {
    depth: usize,
    too_deep: Option<usize>,
    escapes: bool,
}

impl<'a> SourceOrderVisitor<'a> for Walked {
    fn enter_node(&mut self, node: AnyNodeRef<'a>) -> TraversalSignal {
        if matches!(
            node,
            AnyNodeRef::StmtIpyEscapeCommand(_) | AnyNodeRef::ExprIpyEscapeCommand(_)
        ) {
            self.escapes = true;
        }
        self.depth += 1;
        if self.depth > MAX_NESTING {
            self.too_deep.get_or_insert(node.start().to_usize());
            return TraversalSignal::Skip;
        }
        if self.too_deep.is_some() {
            return TraversalSignal::Skip;
        }
        TraversalSignal::Traverse
    }

    fn leave_node(&mut self, _node: AnyNodeRef<'a>) {
        self.depth -= 1;
    }
}

fn walk(module: &Mod) -> Walked {
    let mut walked = Walked {
        depth: 0,
        too_deep: None,
        escapes: false,
    };
    match module {
        Mod::Module(module) => walked.visit_body(&module.body),
        Mod::Expression(expression) => walked.visit_expr(&expression.body),
    }
    walked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_deep_stack_work_stays_on_its_thread() {
        let caller = std::thread::current().id();
        let (outer, inner) = with_deep_stack(|| {
            let outer = std::thread::current().id();
            (outer, with_deep_stack(|| std::thread::current().id()))
        });
        assert_ne!(outer, caller);
        assert_eq!(inner, outer);
        assert!(parse_bounded("x = 1").is_ok());
    }
}
