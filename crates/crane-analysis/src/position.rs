//! Byte offsets to 1-based line and character column.

pub(crate) struct LineIndex {
    text: String,
    line_starts: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> Self {
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(index, _)| index + 1))
            .collect();
        Self {
            text: text.to_owned(),
            line_starts,
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub(crate) fn position(&self, offset: usize) -> (u32, u32) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&start| start <= offset);
        let line_start = self.line_starts[line.saturating_sub(1)];
        let column = self
            .text
            .get(line_start..offset)
            .map_or(offset - line_start, |prefix| prefix.chars().count());
        (to_u32(line), to_u32(column + 1))
    }
}

fn to_u32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}
