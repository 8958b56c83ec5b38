//! Where each cell's source starts in the file, so a line of a cell can be named as a line of
//! the `.ipynb` file (CI annotations point at file lines). Found in the text as nbformat writes
//! it (keys sorted, one source line per JSON line) and checked against the parsed source: a
//! layout crane cannot confirm gives no line rather than a wrong one.

use serde_json::Value;

/// The 1-based file line of each cell's first source line, by position among all cells.
pub(crate) fn source_lines(text: &str, cells: &[Value]) -> Vec<Option<usize>> {
    let mut found = Vec::with_capacity(cells.len());
    let mut cursor = 0;
    // Lines are counted once over the file, from one found source to the next.
    let (mut counted_to, mut line) = (0, 1);
    for cell in cells {
        let located = locate(text, cursor, cell);
        found.push(located.map(|(offset, lines_down, end)| {
            line += text.as_bytes()[counted_to..offset]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            counted_to = offset;
            cursor = end;
            line + lines_down
        }));
    }
    found
}

/// Where `cell`'s source value starts, how many lines below that its first line is, and where
/// to search for the next cell.
fn locate(text: &str, cursor: usize, cell: &Value) -> Option<(usize, usize, usize)> {
    let start = cursor + text.get(cursor..)?.find("\"cell_type\"")?;
    let key = start + text[start..].find("\"source\": ")?;
    let value_at = key + "\"source\": ".len();
    let rest = &text[value_at..];
    match cell.get("source")? {
        Value::String(source) if !source.contains('\n') => {
            let encoded = serde_json::to_string(source).ok()?;
            rest.starts_with(&encoded)
                .then(|| (value_at, 0, value_at + encoded.len()))
        }
        Value::Array(parts) if !parts.is_empty() => {
            let mut lines = rest.strip_prefix("[\n")?.lines();
            for (index, part) in parts.iter().enumerate() {
                let encoded = serde_json::to_string(part.as_str()?).ok()?;
                let line = lines.next()?.trim_start();
                let expected_end = if index + 1 < parts.len() { "," } else { "" };
                if line != format!("{encoded}{expected_end}") {
                    return None;
                }
            }
            Some((value_at, 1, value_at + 2))
        }
        _ => None,
    }
}
