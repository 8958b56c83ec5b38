//! Everything that can be wrong with a notebook or a cell selection, each with a message that
//! names the file and the problem.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum NotebookError {
    // The I/O error is part of the message, not a `source`: printed as a chain it would
    // appear twice.
    #[error("cannot read {}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot write {}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{} is not UTF-8 text (invalid byte at offset {offset})", path.display())]
    NotUtf8 { path: PathBuf, offset: usize },
    #[error("{} is not valid JSON{}: {message}", path.display(), if *truncated { " (it ends early: truncated file?)" } else { "" })]
    NotJson {
        path: PathBuf,
        line: usize,
        column: usize,
        truncated: bool,
        message: String,
    },
    #[error("{} is not a Jupyter notebook: {reason}", path.display())]
    NotANotebook { path: PathBuf, reason: String },
    #[error("{} is nbformat {major}.{minor}; crane reads nbformat 4 (convert it with `jupyter nbconvert --to notebook --nbformat 4`)", path.display())]
    UnsupportedVersion {
        path: PathBuf,
        major: u64,
        minor: u64,
    },
    #[error("{} has a malformed cell at position {position}: {reason}", path.display())]
    BadCell {
        path: PathBuf,
        position: usize,
        reason: String,
    },
    #[error("the notebook has no code cells")]
    NoCodeCells,
    #[error("--cell {requested} is out of range: the notebook has {count} code cells (0 to {})", count.saturating_sub(1))]
    CellOutOfRange { requested: usize, count: usize },
    #[error(
        "--cell -{requested} is out of range: the notebook has {count} code cells (-1 is the last)"
    )]
    CellFromEndOutOfRange { requested: usize, count: usize },
    #[error("no code cell has id `{0}`")]
    CellIdNotFound(String),
    #[error("every code cell has been executed, so there is no default target: choose one with --cell N or --cell-id ID")]
    NoUnexecutedCell,
}
