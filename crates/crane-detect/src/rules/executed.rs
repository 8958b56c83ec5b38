//! The cells executed before the target, with what the rules draw from each of them worked out
//! once, when the cell is added: a session that checks cell after cell adds each cell as it
//! runs instead of reading every earlier cell again for every check.

use crane_analysis::{AnalysisError, Bindings, CellAnalysis, ParsedCell};

use super::core::cell::Cell;
use super::core::defs::Executed;
use super::core::kernel::Kernel;
use super::models::Extensions;

/// The cells executed before the target, in execution order, each parsed and scanned once.
/// Adding cells one by one with [`ExecutedCells::push`] gives what [`ExecutedCells::new`] gives
/// for all of them.
#[derive(Clone, Default)]
pub struct ExecutedCells {
    /// What is kept of each cell's source (see [`kept`]).
    sources: Vec<String>,
    /// The size of the cells' sources as they ran.
    bytes: usize,
    /// Each cell's analysis, or why it was not analysed.
    analyses: Vec<Result<CellAnalysis, AnalysisError>>,
    /// Where the cells last bound each name.
    bindings: Bindings,
    /// What scanning the cells in order tells about the kernel; their bindings are added to it
    /// for each check (a later cell may delete a name an earlier one bound).
    scanned: Kernel,
    parsed: Executed,
    extensions: Extensions,
}

impl std::fmt::Debug for ExecutedCells {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutedCells")
            .field("sources", &self.sources)
            .finish_non_exhaustive()
    }
}

impl ExecutedCells {
    /// These cells, executed in this order.
    pub fn new<S: AsRef<str> + Sync>(sources: &[S]) -> ExecutedCells {
        crane_analysis::bounds::with_deep_stack(|| {
            let mut cells = ExecutedCells::default();
            for source in sources {
                cells.add(source.as_ref().to_owned());
            }
            cells
        })
    }

    /// One more cell executed after the others.
    pub fn push(&mut self, source: impl Into<String>) {
        let source = source.into();
        crane_analysis::bounds::with_deep_stack(|| self.add(source));
    }

    /// [`ExecutedCells::push`] of a cell the caller has parsed: the cell is read from that
    /// parse.
    pub fn push_parsed(&mut self, parsed: &ParsedCell) {
        crane_analysis::bounds::with_deep_stack(|| self.add_parsed(parsed));
    }

    /// Hold `sources`, the cells executed so far: when they are the cells held followed by new
    /// ones, only those are added; otherwise (a restarted kernel, another history) everything
    /// is read again. Returns whether the cells held were kept.
    pub fn update(&mut self, sources: &[String]) -> bool {
        let extends = sources.len() >= self.sources.len()
            && sources[..self.sources.len()] == self.sources[..];
        if !extends {
            *self = ExecutedCells::new(sources);
            return false;
        }
        let new = &sources[self.sources.len()..];
        if !new.is_empty() {
            crane_analysis::bounds::with_deep_stack(|| {
                for source in new {
                    self.add(source.clone());
                }
            });
        }
        true
    }

    /// The cells' sources, in execution order; a cell larger than crane analyses is kept as
    /// its beginning (see [`KEPT_OF_A_LARGE_CELL`]).
    pub fn sources(&self) -> &[String] {
        &self.sources
    }

    pub fn len(&self) -> usize {
        self.sources.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Where the cells last bound each name, as [`crane_analysis::bindings`] gives it.
    pub fn bindings(&self) -> &Bindings {
        &self.bindings
    }

    /// Must run on a deep stack: it parses and walks the cell.
    fn add(&mut self, source: String) {
        self.add_parsed(&ParsedCell::parse(&source));
    }

    /// Must run on a deep stack: it walks the cell.
    fn add_parsed(&mut self, parsed: &ParsedCell) {
        let source = parsed.source().to_owned();
        let cell = Cell::from_parsed(parsed);
        match &cell {
            // Without a cell magic to blank, the cell's statements are what the scan parses.
            Some(cell) if cell.source() == source => self.scanned.scan_parsed(&source, &cell.body),
            _ => self.scanned.scan_cell(&source),
        }
        self.parsed.push(cell);
        let analysis = self.bindings.add_parsed_cell(self.sources.len(), parsed);
        self.analyses.push(analysis);
        self.extensions = self.extensions.and(&source);
        self.bytes += source.len();
        self.sources.push(kept(source));
    }

    /// What the cells tell about the kernel, with the libraries' set-up of the target cell too.
    pub(crate) fn kernel(&self, target_source: &str) -> Kernel {
        let mut kernel = self.scanned.clone();
        kernel.add_bindings(&self.bindings);
        let extensions = self.extensions.and(target_source);
        kernel.extends_pandas |= extensions.extends_pandas;
        kernel.frames_from_transformers |= extensions.frames_from_transformers;
        kernel
    }

    /// The cells parsed, with the functions and classes they define.
    pub(crate) fn parsed(&self) -> &Executed {
        &self.parsed
    }

    /// Each cell's analysis, in execution order.
    pub(crate) fn analyses(&self) -> &[Result<CellAnalysis, AnalysisError>] {
        &self.analyses
    }

    /// The size of the cells' sources, in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

/// How much of a cell larger than [`crane_analysis::bounds::MAX_CELL_BYTES`] is kept: such a
/// cell is not parsed, so nothing but its beginning (for an LLM's prompt) is of use later.
pub const KEPT_OF_A_LARGE_CELL: usize = 4096;

/// What is kept of a cell's source once it has been read: all of it, or the beginning of a
/// cell larger than crane analyses, with a line that says how much was left out.
fn kept(mut source: String) -> String {
    if source.len() <= crane_analysis::bounds::MAX_CELL_BYTES {
        return source;
    }
    let mut end = KEPT_OF_A_LARGE_CELL;
    while !source.is_char_boundary(end) {
        end -= 1;
    }
    let left_out = source.len() - end;
    source.truncate(end);
    source.push_str(&format!(
        "\n# ... {left_out} more bytes of this cell, not kept\n"
    ));
    source.shrink_to_fit();
    source
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the kernel scan reads: imports, magics that bind or may bind names, a blanked cell
    /// magic, index-naming calls, attribute assignments, functions that change globals, a
    /// deletion, a walrus, `match`, libraries set up, a star import, a cell that does not parse.
    const CELLS: &[&str] = &[
        "import numpy as np\nfrom sklearn.model_selection import train_test_split as tts",
        "%%capture out\ndf = pd.read_csv('x.csv', index_col=0)\nobj.attr = 1",
        "%time import os.path\ndef f():\n    global g\n    g = 1\ndef m(frame):\n    frame['a'] = 1",
        "%%time\ngrouped = df.groupby('a').sum()\nnp = 3",
        "del grouped\n[y := v for v in range(3)]\nclass f:\n    pass",
        "import tqdm\ntqdm.tqdm.pandas()\nfrom sklearn import set_config\nset_config(transform_output='pandas')",
        "match point:\n    case (a, b):\n        pass",
        "%run helpers.py",
        "from os.path import *",
        "z = (",
        "w = 1",
    ];

    /// The kernel as the rules drew it from all the cells at once.
    fn from_scratch(sources: &[&str], target: &str) -> Kernel {
        let mut kernel = Kernel::default();
        for source in sources {
            kernel.scan_cell(source);
        }
        kernel.add_bindings(&crane_analysis::bindings(sources));
        for source in sources.iter().chain([&target]) {
            let extensions = Extensions::of(source);
            kernel.extends_pandas |= extensions.extends_pandas;
            kernel.frames_from_transformers |= extensions.frames_from_transformers;
        }
        kernel
    }

    #[test]
    fn a_cell_too_large_to_analyse_is_kept_as_its_beginning() {
        let large = format!(
            "x = 1\ns = '{}'\n",
            "é".repeat(crane_analysis::bounds::MAX_CELL_BYTES)
        );
        let mut executed = ExecutedCells::default();
        executed.push("import numpy as np");
        executed.push(large.clone());
        let kept = &executed.sources()[1];
        assert!(
            kept.len() < KEPT_OF_A_LARGE_CELL + 100,
            "{} bytes kept",
            kept.len()
        );
        assert!(kept.starts_with("x = 1\ns = 'é"), "{kept:.40}");
        assert_eq!(executed.bytes(), "import numpy as np".len() + large.len());
        // Unread, it may have bound any name.
        assert!(executed.kernel("np.zeros(3)").dynamic_names);
    }

    #[test]
    fn the_kernel_kept_cell_by_cell_is_the_one_drawn_from_scratch() {
        let mut executed = ExecutedCells::default();
        for count in 0..=CELLS.len() {
            if count > 0 {
                executed.push(CELLS[count - 1]);
            }
            for target in ["x = 1", "import pandarallel"] {
                let kernel = executed.kernel(target);
                assert_eq!(
                    kernel,
                    from_scratch(&CELLS[..count], target),
                    "{count} cells"
                );
            }
            let analyses: Vec<_> = CELLS[..count]
                .iter()
                .map(|source| crane_analysis::analyze_cell(source))
                .collect();
            assert_eq!(executed.analyses(), analyses);
            assert_eq!(
                executed.bytes(),
                CELLS[..count].iter().map(|s| s.len()).sum::<usize>()
            );
        }
        // The scan saw what the cells say, so the comparison is not between empty kernels.
        let known = executed_kernel(6);
        assert!(!known.dynamic_names);
        assert!(known.bound.contains("out") && known.bound.contains("g"));
        assert_eq!(
            known.imports.get("tts").map(String::as_str),
            Some("sklearn.model_selection.train_test_split")
        );
        assert!(!known.imports.contains_key("np"));
        assert!(known.named_index.contains("grouped"));
        assert_eq!(known.functions.get("m"), Some(&true));
        assert!(known.extends_pandas && known.frames_from_transformers);
        assert!(executed.kernel("x = 1").dynamic_names);
    }

    fn executed_kernel(count: usize) -> Kernel {
        ExecutedCells::new(&CELLS[..count]).kernel("x = 1")
    }
}
