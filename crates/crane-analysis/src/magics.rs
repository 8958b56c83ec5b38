//! IPython escape commands: which magics run Python code, and where that code starts.

/// Cell magics whose body is Python code run in the user namespace.
const PYTHON_CELL_MAGICS: &[&str] = &["time", "timeit", "capture", "prun", "memit", "debug"];

/// Line magics whose argument is a Python statement, with the options that take a value.
const PYTHON_LINE_MAGICS: &[(&str, &[&str])] = &[
    ("time", &[]),
    ("timeit", &["-n", "-r", "-p"]),
    ("prun", &["-D", "-l", "-s", "-T"]),
    ("memit", &["-r", "-t"]),
    ("debug", &["--breakpoint", "-b"]),
];

/// A `%%name args` line that starts a cell.
#[derive(Debug)]
pub(crate) struct CellMagicLine<'s> {
    pub(crate) name: &'s str,
    pub(crate) args: &'s str,
    /// Byte range of the line, without its line break.
    pub(crate) range: std::ops::Range<usize>,
    /// 1-based.
    pub(crate) line: u32,
}

impl CellMagicLine<'_> {
    pub(crate) fn has_python_body(&self) -> bool {
        PYTHON_CELL_MAGICS.contains(&self.name)
    }
}

/// The cell magic on the first non-blank line of the cell, if any.
pub(crate) fn cell_magic(source: &str) -> Option<CellMagicLine<'_>> {
    let mut start = 0;
    let mut line = 1;
    for text in source.split_inclusive('\n') {
        let content = text.trim_end_matches(['\n', '\r']);
        if content.trim().is_empty() {
            start += text.len();
            line += 1;
            continue;
        }
        let magic = content.strip_prefix("%%")?;
        let (name, args) = split_name(magic);
        return Some(CellMagicLine {
            name,
            args,
            range: start..start + content.len(),
            line,
        });
    }
    None
}

/// Splits `name rest of line` at the first whitespace.
pub(crate) fn split_name(value: &str) -> (&str, &str) {
    let value = value.trim_start();
    match value.find(char::is_whitespace) {
        Some(end) => (&value[..end], value[end..].trim()),
        None => (value, ""),
    }
}

/// For a line magic running a Python statement (`time x = f(y)`, `timeit -n 10 f()`), the
/// statement: a subslice of `value`.
pub(crate) fn line_magic_body(value: &str) -> Option<&str> {
    let (name, _) = split_name(value);
    let (_, value_options) = PYTHON_LINE_MAGICS
        .iter()
        .find(|(magic, _)| *magic == name)?;
    let mut rest = value.trim_start()[name.len()..].trim_start();
    while rest.starts_with('-') {
        let (option, after) = split_name(rest);
        rest = after;
        if value_options.contains(&option) {
            rest = split_name(rest).1;
        }
    }
    let body = rest.trim();
    (!body.is_empty()).then_some(body)
}
