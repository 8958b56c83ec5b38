//! The comments of a cell, as Python's tokenizer sees them: a `#` inside a string is not one.

use ruff_python_ast::token::TokenKind;
use ruff_text_size::Ranged;
use serde::Serialize;

use crate::bounds::{parse_here, with_deep_stack};
use crate::magics::cell_magic;
use crate::position::LineIndex;

/// One `# ...` comment of a cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comment {
    /// 1-based line of the cell.
    pub line: u32,
    /// The comment, from its `#` to the end of the line.
    pub text: String,
    /// Nothing but blanks precede it on its line.
    pub own_line: bool,
}

/// The comments of a cell in source order; none for a cell that does not parse (or whose cell
/// magic runs something else than Python).
pub fn comments(source: &str) -> Vec<Comment> {
    let masked;
    let python = match cell_magic(source) {
        Some(magic) if !magic.has_python_body() => return Vec::new(),
        Some(magic) => {
            let mut text = source.to_owned();
            text.replace_range(magic.range.clone(), &" ".repeat(magic.range.len()));
            masked = text;
            masked.as_str()
        }
        None => source,
    };
    let lines = LineIndex::new(python);
    with_deep_stack(|| {
        let Ok(parsed) = parse_here(python) else {
            return Vec::new();
        };
        parsed
            .tokens()
            .iter()
            .filter(|token| token.kind() == TokenKind::Comment)
            .map(|token| {
                let start = token.start().to_usize();
                let text = python[token.range()].to_owned();
                let line_start = python[..start].rfind('\n').map_or(0, |at| at + 1);
                Comment {
                    line: lines.position(start).0,
                    text,
                    own_line: python[line_start..start].trim().is_empty(),
                }
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_tokens_not_hashes_in_strings() {
        let found = comments("x = '# not a comment'  # one\n    # two\ny = 1\n");
        assert_eq!(
            found,
            vec![
                Comment {
                    line: 1,
                    text: "# one".into(),
                    own_line: false
                },
                Comment {
                    line: 2,
                    text: "# two".into(),
                    own_line: true
                },
            ]
        );
    }

    #[test]
    fn magic_cells_and_broken_cells() {
        assert_eq!(comments("%%time\nx = 1  # a")[0].line, 2);
        assert!(comments("%%bash\necho hi  # a").is_empty());
        assert!(comments("x = (  # a").is_empty());
        assert_eq!(comments("%matplotlib inline\n# a")[0].line, 2);
    }
}
