//! Reading IPython tracebacks: plain text without ANSI colours, and the line of the executed
//! cell where the exception passed (`Cell In[7], line 3` in IPython 8+, `<ipython-input-7-...>`
//! frames before it).

use crate::execute::ErrorInfo;

impl ErrorInfo {
    /// The traceback as plain text lines, colours removed.
    pub fn plain_traceback(&self) -> Vec<String> {
        self.traceback
            .iter()
            .flat_map(|chunk| {
                strip_ansi(chunk)
                    .lines()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The 1-based line of the executed cell in the outermost frame of the traceback: the
    /// statement of the cell that raised (directly or through the calls it made).
    pub fn cell_line(&self) -> Option<u32> {
        let lines = self.plain_traceback();
        lines.iter().enumerate().find_map(|(at, line)| {
            cell_frame_line(line).or_else(|| {
                // IPython 7's verbose frame, `<ipython-input-7-...> in <module>`, names no
                // line: its `---->` arrow below does (`----> 3 x = 1`).
                line.trim_start().starts_with("<ipython-input-").then(|| {
                    lines[at + 1..]
                        .iter()
                        .find_map(|below| below.trim_start().strip_prefix("---->"))
                        .and_then(|arrow| leading_number(arrow.trim_start()))
                })?
            })
        })
    }

    /// `ename: evalue` on one line, the way Python prints the last line of a traceback.
    pub fn summary(&self) -> String {
        let value = self.evalue.lines().next().unwrap_or_default();
        if value.is_empty() {
            self.ename.clone()
        } else {
            format!("{}: {value}", self.ename)
        }
    }
}

fn cell_frame_line(line: &str) -> Option<u32> {
    let line = line.trim_start();
    if let Some(rest) = line.strip_prefix("Cell In[") {
        // `Cell In[7], line 3` (IPython 8) and `Cell In[7], line 3, in f()`.
        let after = rest.split_once("], line ")?.1;
        return leading_number(after);
    }
    if line.starts_with("File \"<ipython-input-") || line.starts_with("<ipython-input-") {
        let after = line.split_once(", line ")?.1;
        return leading_number(after);
    }
    None
}

fn leading_number(text: &str) -> Option<u32> {
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Removes ANSI escape sequences (CSI `ESC [ ... final`, and two-byte escapes).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(traceback: &[&str]) -> ErrorInfo {
        ErrorInfo {
            ename: "KeyError".into(),
            evalue: "'price'".into(),
            traceback: traceback.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn finds_the_cell_line_in_ipython8_tracebacks() {
        let e = error(&[
            "\u{1b}[31m---------------------------------------------------------------------------\u{1b}[39m",
            "\u{1b}[31mKeyError\u{1b}[39m                                  Traceback (most recent call last)",
            "\u{1b}[36mCell\u{1b}[39m\u{1b}[36m \u{1b}[39m\u{1b}[32mIn[4]\u{1b}[39m\u{1b}[32m, line 3\u{1b}[39m\n      1 x = 1\n----> 3 df['price']",
            "File \u{1b}[32m/lib/pandas/core/frame.py:4107\u{1b}[39m, in \u{1b}[36mDataFrame.__getitem__\u{1b}[39m",
            "Cell In[2], line 9, in helper()",
        ]);
        assert_eq!(e.cell_line(), Some(3));
        assert!(e.plain_traceback().iter().all(|l| !l.contains('\u{1b}')));
        assert_eq!(e.summary(), "KeyError: 'price'");
    }

    #[test]
    fn no_cell_frame_means_no_line() {
        assert_eq!(error(&["KeyError: 'x'"]).cell_line(), None);
        assert_eq!(
            error(&["  File \"<ipython-input-3-abc>\", line 12, in <module>"]).cell_line(),
            Some(12)
        );
    }
}
