//! A cell parsed once, within the bounds of [`crate::bounds`]: the one parse every reader of a
//! cell takes (its analysis, its imports, whether it looks long, whether it can change the
//! kernel's state, its outside effects), so that a cell on its way through the kernel is parsed
//! once and no parse escapes the bounds.
//!
//! A cell that starts with a cell magic (`%%time`) is parsed with the magic line blanked, which
//! keeps every offset of its body valid in the cell; a cell magic whose body is no Python
//! (`%%bash`) is not parsed at all.

use ruff_python_ast::ModModule;
use ruff_python_parser::Parsed;

use crate::bounds::{parse_walked, with_deep_stack, ParseFailure};
use crate::magics::cell_magic;
use crate::position::LineIndex;

/// One cell's source and its bounded parse.
pub struct ParsedCell {
    source: String,
    /// The text that was parsed, when it differs from `source` (a cell magic line blanked).
    masked: Option<String>,
    parse: Parse,
    lines: LineIndex,
}

enum Parse {
    Module {
        parsed: Parsed<ModModule>,
        /// The module holds an IPython escape (`%magic`, `!cmd`, `obj?`) or the cell starts
        /// with a cell magic: it is not plain Python.
        ipython: bool,
    },
    Failed(ParseFailure),
    /// A cell magic whose body is no Python.
    NotPython,
}

impl ParsedCell {
    /// Parses `source` (IPython syntax) on a thread with a deep stack.
    pub fn parse(source: &str) -> ParsedCell {
        with_deep_stack(|| ParsedCell::parse_here(source))
    }

    /// [`ParsedCell::parse`] on the calling thread, which must have a deep stack.
    pub(crate) fn parse_here(source: &str) -> ParsedCell {
        let magic = cell_magic(source);
        let lines = LineIndex::new(source);
        let Some(magic) = magic else {
            return ParsedCell {
                source: source.to_owned(),
                masked: None,
                parse: parse_module(source, false),
                lines,
            };
        };
        if !magic.has_python_body() {
            return ParsedCell {
                source: source.to_owned(),
                masked: None,
                parse: Parse::NotPython,
                lines,
            };
        }
        let mut masked = source.to_owned();
        masked.replace_range(magic.range.clone(), &" ".repeat(magic.range.len()));
        let parse = parse_module(&masked, true);
        ParsedCell {
            source: source.to_owned(),
            masked: Some(masked),
            parse,
            lines,
        }
    }

    /// The cell as it was given.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The text the parse's ranges point into: the source, with a leading cell magic's line
    /// blanked.
    pub fn python_text(&self) -> &str {
        self.masked.as_deref().unwrap_or(&self.source)
    }

    /// The parsed module (IPython escapes included), when the cell is Python within the
    /// bounds.
    pub fn module(&self) -> Option<&ModModule> {
        self.parsed().map(Parsed::syntax)
    }

    /// The parse, with its tokens, when the cell is Python within the bounds.
    pub fn parsed(&self) -> Option<&Parsed<ModModule>> {
        match &self.parse {
            Parse::Module { parsed, .. } => Some(parsed),
            _ => None,
        }
    }

    /// The parsed module when the cell is plain Python: no cell magic, no IPython escape
    /// anywhere in it.
    pub fn plain_python(&self) -> Option<&ModModule> {
        match &self.parse {
            Parse::Module {
                parsed,
                ipython: false,
            } => Some(parsed.syntax()),
            _ => None,
        }
    }

    /// Why the cell's Python could not be parsed within the bounds; `None` when it was, or
    /// when the cell is a cell magic whose body is no Python.
    pub fn failure(&self) -> Option<&ParseFailure> {
        match &self.parse {
            Parse::Failed(failure) => Some(failure),
            _ => None,
        }
    }

    /// 1-based line and column (in characters) of a byte offset in the cell.
    pub fn position(&self, offset: usize) -> (u32, u32) {
        self.lines.position(offset)
    }

    pub(crate) fn lines(&self) -> &LineIndex {
        &self.lines
    }
}

impl std::fmt::Debug for ParsedCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parse: &dyn std::fmt::Debug = match &self.parse {
            Parse::Module { ipython, .. } => match ipython {
                true => &"IPython module",
                false => &"Python module",
            },
            Parse::Failed(failure) => failure,
            Parse::NotPython => &"no Python",
        };
        f.debug_struct("ParsedCell")
            .field("source", &self.source)
            .field("parse", parse)
            .finish()
    }
}

fn parse_module(text: &str, cell_magic: bool) -> Parse {
    match parse_walked(text) {
        Ok((parsed, escapes)) => match parsed.try_into_module() {
            Some(parsed) => Parse::Module {
                parsed,
                ipython: cell_magic || escapes,
            },
            None => Parse::Failed(ParseFailure::ParserFailed),
        },
        Err(failure) => Parse::Failed(failure),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_is_plain_python_only_without_escapes_or_a_cell_magic() {
        let plain = ParsedCell::parse("import numpy as np\nx = np.ones(3)");
        assert!(plain.plain_python().is_some());
        assert_eq!(plain.module().map(|module| module.body.len()), Some(2));
        for ipython in [
            "%time x = 1",
            "def f():\n    x = !ls\n    return x",
            "x?",
            "%%time\nx = 1",
        ] {
            let cell = ParsedCell::parse(ipython);
            assert!(cell.module().is_some(), "{ipython:?}");
            assert!(cell.plain_python().is_none(), "{ipython:?}");
        }
        let bash = ParsedCell::parse("%%bash\nls -la");
        assert!(bash.module().is_none() && bash.failure().is_none());
        assert!(matches!(
            ParsedCell::parse("df[").failure(),
            Some(ParseFailure::Syntax(_))
        ));
        assert!(matches!(
            ParsedCell::parse(&format!("{}1{}", "[".repeat(300), "]".repeat(300))).failure(),
            Some(ParseFailure::TooDeep { .. })
        ));
    }

    #[test]
    fn a_cell_magic_body_keeps_its_offsets() {
        let cell = ParsedCell::parse("%%time\nx = 1");
        assert_eq!(cell.source(), "%%time\nx = 1");
        assert_eq!(cell.python_text(), "      \nx = 1");
        let start = cell
            .module()
            .map(|module| ruff_text_size::Ranged::start(&module.body[0]));
        assert_eq!(
            start.map(|start| cell.position(start.to_usize())),
            Some((2, 1))
        );
    }
}
