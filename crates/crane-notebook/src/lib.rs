//! Jupyter notebooks as crane sees them: nbformat 4 documents, their code cells, the order in
//! which those cells ran, and which cell is the target of a check.
//!
//! The document is kept as the JSON it was read from and cells are a typed view over it, so
//! writing a notebook back preserves everything crane did not change (unknown metadata, cell
//! attachments, key order). The runtimed `nbformat` crate models notebooks as typed structs and
//! re-serializes them, which loses that fidelity, hence this small hand-written layer.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

mod error;
mod lenient;
mod lines;
mod order;

pub use error::NotebookError;
pub use order::{ExecutionOrder, TargetSelector};

/// The oldest minor version of nbformat 4 crane reads; older 4.x files differ only in optional
/// fields (cell ids arrived in 4.5), so they are read as they are.
const SUPPORTED_MAJOR: u64 = 4;

/// A code cell: its position among code cells, its source and what the notebook recorded
/// about its last execution.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CodeCell {
    /// 0-based index among the notebook's code cells (the `--cell N` numbering).
    pub index: usize,
    /// 0-based index among all cells of the notebook.
    pub position: usize,
    /// The nbformat 4.5 cell id, when the notebook has one.
    pub id: Option<String>,
    /// The source, joined into one string.
    pub source: String,
    /// The recorded execution count; `None` for a cell that was never executed.
    pub execution_count: Option<u64>,
    /// `metadata.tags` (such as papermill's `parameters`).
    pub tags: Vec<String>,
    /// The 1-based line of the file on which the cell's source starts, when the file's layout
    /// shows it (as nbformat writes notebooks); `None` for notebooks crane built or changed.
    pub source_line: Option<usize>,
}

impl CodeCell {
    /// A short label for messages, as `cell_label` writes it.
    pub fn label(&self) -> String {
        cell_label(
            self.index,
            Some(self.position),
            self.execution_count,
            self.id.as_deref(),
        )
    }
}

/// How every message names a cell: the 0-based code-cell index `--cell` takes, then what a
/// Jupyter user sees where it differs from it: the cell's 1-based place among all the
/// notebook's cells (markdown included), its `In [n]` execution count, its id.
/// `cell 3 (5th in the notebook, In [7], id a1b2)`; `cell 0` when there is nothing to add.
pub fn cell_label(
    index: usize,
    position: Option<usize>,
    execution_count: Option<u64>,
    id: Option<&str>,
) -> String {
    let mut details = Vec::new();
    if let Some(position) = position.filter(|position| *position != index) {
        details.push(format!("{} in the notebook", ordinal(position + 1)));
    }
    if let Some(count) = execution_count {
        details.push(format!("In [{count}]"));
    }
    if let Some(id) = id {
        details.push(format!("id {id}"));
    }
    if details.is_empty() {
        format!("cell {index}")
    } else {
        format!("cell {index} ({})", details.join(", "))
    }
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// A notebook read from disk.
#[derive(Debug, Clone)]
pub struct Notebook {
    path: PathBuf,
    document: Map<String, Value>,
    code_cells: Vec<CodeCell>,
}

impl Notebook {
    /// Reads and validates a notebook file.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, NotebookError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|error| NotebookError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        Self::from_bytes(path, &bytes)
    }

    /// Parses a notebook from bytes; `path` is only used in messages and as its identity.
    pub fn from_bytes(path: impl AsRef<Path>, bytes: &[u8]) -> Result<Self, NotebookError> {
        let path = path.as_ref().to_path_buf();
        let text = std::str::from_utf8(bytes).map_err(|err| NotebookError::NotUtf8 {
            path: path.clone(),
            offset: err.valid_up_to(),
        })?;
        let text = lenient::normalize(text);
        let value: Value = serde_json::from_str(&text).map_err(|err| NotebookError::NotJson {
            path: path.clone(),
            line: err.line(),
            column: err.column(),
            truncated: err.is_eof(),
            message: err.to_string(),
        })?;
        let Value::Object(document) = value else {
            return Err(NotebookError::NotANotebook {
                path,
                reason: "the top-level JSON value is not an object".into(),
            });
        };
        let mut code_cells = read_code_cells(&path, &document)?;
        if let Some(Value::Array(cells)) = document.get("cells") {
            let lines = lines::source_lines(&text, cells);
            for cell in &mut code_cells {
                cell.source_line = lines.get(cell.position).copied().flatten();
            }
        }
        Ok(Self {
            path,
            document,
            code_cells,
        })
    }

    /// The path the notebook was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// All code cells in visual order.
    pub fn code_cells(&self) -> &[CodeCell] {
        &self.code_cells
    }

    /// The code cell with the given 0-based code-cell index.
    pub fn code_cell(&self, index: usize) -> Option<&CodeCell> {
        self.code_cells.get(index)
    }

    /// The notebook's kernelspec name (`metadata.kernelspec.name`), when it records one.
    pub fn kernelspec_name(&self) -> Option<&str> {
        self.document
            .get("metadata")?
            .get("kernelspec")?
            .get("name")?
            .as_str()
    }

    /// The notebook's kernelspec as recorded: its name and its language, when it says.
    pub fn kernelspec(&self) -> Option<Kernelspec> {
        let metadata = self.document.get("metadata")?;
        let spec = metadata.get("kernelspec");
        let name = spec?.get("name")?.as_str()?.to_owned();
        let language = spec
            .and_then(|spec| spec.get("language"))
            .or_else(|| metadata.get("language_info")?.get("name"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        Some(Kernelspec { name, language })
    }

    /// Cell ids that more than one code cell carries, each with those cells' indices in
    /// visual order (`--cell-id` picks the first).
    pub fn duplicate_ids(&self) -> Vec<(String, Vec<usize>)> {
        let mut seen: Vec<(String, Vec<usize>)> = Vec::new();
        for cell in &self.code_cells {
            let Some(id) = &cell.id else { continue };
            match seen.iter_mut().find(|(known, _)| known == id) {
                Some((_, indices)) => indices.push(cell.index),
                None => seen.push((id.clone(), vec![cell.index])),
            }
        }
        seen.retain(|(_, indices)| indices.len() > 1);
        seen
    }

    /// Whether any code cell records an execution count (a notebook saved after "Clear All
    /// Outputs", or stripped by nbstripout, records none).
    pub fn has_execution_counts(&self) -> bool {
        self.code_cells
            .iter()
            .any(|cell| cell.execution_count.is_some())
    }

    /// Sets `metadata.<key>` of the notebook itself.
    pub fn set_metadata(&mut self, key: &str, value: Value) {
        let metadata = self
            .document
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !metadata.is_object() {
            *metadata = Value::Object(Map::new());
        }
        if let Value::Object(metadata) = metadata {
            metadata.insert(key.to_owned(), value);
        }
    }

    /// Inserts a new cell before the cell at `position` (among all cells; the number of cells
    /// appends it), with a fresh id when the notebook's version has ids. Code-cell indices
    /// after it shift by one for a code cell.
    pub fn insert_cell(&mut self, position: usize, cell: NewCell) -> Result<(), NotebookError> {
        let with_ids = self
            .document
            .get("nbformat_minor")
            .and_then(Value::as_u64)
            .is_some_and(|minor| minor >= 5);
        let value = cell.into_json(with_ids.then(random_cell_id));
        let cells = self.cells_mut()?;
        let position = position.min(cells.len());
        cells.insert(position, value);
        self.reindex()
    }

    /// The position (among all cells) of the first cell of any type tagged `tag`.
    pub fn position_of_tagged(&self, tag: &str) -> Option<usize> {
        self.document
            .get("cells")?
            .as_array()?
            .iter()
            .position(|cell| {
                cell.get("metadata")
                    .and_then(|metadata| metadata.get("tags"))
                    .and_then(Value::as_array)
                    .is_some_and(|tags| tags.iter().any(|t| t.as_str() == Some(tag)))
            })
    }

    /// Removes the cell at `position` (among all cells).
    pub fn remove_cell(&mut self, position: usize) -> Result<(), NotebookError> {
        let cells = self.cells_mut()?;
        if position < cells.len() {
            cells.remove(position);
        }
        self.reindex()
    }

    /// Replaces a code cell's outputs and execution count (as a kernel run produced them).
    pub fn set_execution(
        &mut self,
        index: usize,
        execution_count: Option<u64>,
        outputs: Vec<Value>,
    ) -> Result<(), NotebookError> {
        let cell = self.cell_object_mut(index)?;
        cell.insert(
            "execution_count".into(),
            execution_count.map_or(Value::Null, Value::from),
        );
        cell.insert("outputs".into(), Value::Array(outputs));
        if let Some(code_cell) = self.code_cells.get_mut(index) {
            code_cell.execution_count = execution_count;
        }
        Ok(())
    }

    /// Sets `metadata.<key>` on a code cell, leaving the rest of its metadata untouched.
    pub fn set_cell_metadata(
        &mut self,
        index: usize,
        key: &str,
        value: Value,
    ) -> Result<(), NotebookError> {
        let cell = self.cell_object_mut(index)?;
        let metadata = cell
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !metadata.is_object() {
            *metadata = Value::Object(Map::new());
        }
        if let Value::Object(metadata) = metadata {
            metadata.insert(key.to_owned(), value);
        }
        Ok(())
    }

    /// Serializes the notebook the way Jupyter writes it (one-space indent, UTF-8 kept as is,
    /// final newline), so an unchanged notebook written by Jupyter round-trips byte for byte.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4096);
        let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
        let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
        // A map of JSON values always serializes.
        let _ = serde::Serialize::serialize(&self.document, &mut serializer);
        out.push(b'\n');
        out
    }

    /// Writes the notebook to `path` atomically (temporary file, then rename), so an
    /// interrupted write never leaves a truncated notebook behind.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<(), NotebookError> {
        let path = path.as_ref();
        let io_error = |error| NotebookError::Write {
            path: path.to_path_buf(),
            error,
        };
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let file_name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| "notebook.ipynb".into());
        let temp = dir.join(format!(".{file_name}.crane-tmp-{}", std::process::id()));
        std::fs::write(&temp, self.to_bytes()).map_err(io_error)?;
        std::fs::rename(&temp, path).map_err(|source| {
            let _ = std::fs::remove_file(&temp);
            io_error(source)
        })
    }

    fn cells_mut(&mut self) -> Result<&mut Vec<Value>, NotebookError> {
        let path = self.path.clone();
        self.document
            .get_mut("cells")
            .and_then(Value::as_array_mut)
            .ok_or(NotebookError::NotANotebook {
                path,
                reason: "it has no `cells` list".into(),
            })
    }

    fn reindex(&mut self) -> Result<(), NotebookError> {
        self.code_cells = read_code_cells(&self.path, &self.document)?;
        Ok(())
    }

    fn cell_object_mut(&mut self, index: usize) -> Result<&mut Map<String, Value>, NotebookError> {
        let count = self.code_cells.len();
        let position = self.code_cells.get(index).map(|cell| cell.position).ok_or(
            NotebookError::CellOutOfRange {
                requested: index,
                count,
            },
        )?;
        self.document
            .get_mut("cells")
            .and_then(Value::as_array_mut)
            .and_then(|cells| cells.get_mut(position))
            .and_then(Value::as_object_mut)
            .ok_or(NotebookError::CellOutOfRange {
                requested: index,
                count,
            })
    }
}

fn read_code_cells(
    path: &Path,
    document: &Map<String, Value>,
) -> Result<Vec<CodeCell>, NotebookError> {
    let not_a_notebook = |reason: String| NotebookError::NotANotebook {
        path: path.to_path_buf(),
        reason,
    };
    let major = match document.get("nbformat") {
        Some(Value::Number(n)) => n
            .as_u64()
            .ok_or_else(|| not_a_notebook(format!("`nbformat` is {n}, not a version number")))?,
        Some(other) => {
            return Err(not_a_notebook(format!(
                "`nbformat` is {other}, not a version number"
            )))
        }
        None => return Err(not_a_notebook("it has no `nbformat` field".into())),
    };
    let minor = document
        .get("nbformat_minor")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if major != SUPPORTED_MAJOR {
        return Err(NotebookError::UnsupportedVersion {
            path: path.to_path_buf(),
            major,
            minor,
        });
    }
    let cells = match document.get("cells") {
        Some(Value::Array(cells)) => cells,
        Some(_) => return Err(not_a_notebook("`cells` is not a list".into())),
        None => return Err(not_a_notebook("it has no `cells` list".into())),
    };

    let mut code_cells = Vec::new();
    for (position, cell) in cells.iter().enumerate() {
        let bad_cell = |reason: &str| NotebookError::BadCell {
            path: path.to_path_buf(),
            position,
            reason: reason.to_owned(),
        };
        let Value::Object(cell) = cell else {
            return Err(bad_cell("it is not a JSON object"));
        };
        let cell_type = cell
            .get("cell_type")
            .and_then(Value::as_str)
            .ok_or_else(|| bad_cell("it has no `cell_type` string"))?;
        let source = join_source(cell.get("source")).map_err(bad_cell)?;
        if cell_type != "code" {
            continue;
        }
        let execution_count = match cell.get("execution_count") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => Some(
                n.as_u64()
                    .ok_or_else(|| bad_cell("`execution_count` is not a whole number"))?,
            ),
            Some(_) => return Err(bad_cell("`execution_count` is neither a number nor null")),
        };
        code_cells.push(CodeCell {
            index: code_cells.len(),
            position,
            id: cell.get("id").and_then(Value::as_str).map(str::to_owned),
            source,
            execution_count,
            tags: cell
                .get("metadata")
                .and_then(|metadata| metadata.get("tags"))
                .and_then(Value::as_array)
                .map(|tags| {
                    tags.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            source_line: None,
        });
    }
    Ok(code_cells)
}

/// A notebook's kernelspec metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernelspec {
    /// `metadata.kernelspec.name`.
    pub name: String,
    /// `metadata.kernelspec.language`, else `metadata.language_info.name`.
    pub language: Option<String>,
}

impl Kernelspec {
    /// Whether the notebook is a Python notebook (a notebook that does not say is taken to be).
    pub fn is_python(&self) -> bool {
        self.language
            .as_deref()
            .is_none_or(|language| language.eq_ignore_ascii_case("python"))
    }
}

/// A cell to insert: its kind, source and metadata.
#[derive(Debug, Clone)]
pub struct NewCell {
    pub kind: CellKind,
    pub source: String,
    pub metadata: Map<String, Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellKind {
    Code,
    Markdown,
}

impl NewCell {
    fn into_json(self, id: Option<String>) -> Value {
        let mut cell = Map::new();
        let kind = match self.kind {
            CellKind::Code => "code",
            CellKind::Markdown => "markdown",
        };
        cell.insert("cell_type".into(), kind.into());
        if self.kind == CellKind::Code {
            cell.insert("execution_count".into(), Value::Null);
        }
        if let Some(id) = id {
            cell.insert("id".into(), id.into());
        }
        cell.insert("metadata".into(), Value::Object(self.metadata));
        if self.kind == CellKind::Code {
            cell.insert("outputs".into(), Value::Array(Vec::new()));
        }
        // nbformat writes a source as its lines, each with its newline.
        let lines: Vec<Value> = self
            .source
            .split_inclusive('\n')
            .map(|line| Value::String(line.to_owned()))
            .collect();
        cell.insert("source".into(), Value::Array(lines));
        Value::Object(cell)
    }
}

/// A cell id as nbformat makes them: 8 random hexadecimal digits.
fn random_cell_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_owned()
}

/// nbformat allows a source as one string or as a list of strings (lines with their newlines).
fn join_source(source: Option<&Value>) -> Result<String, &'static str> {
    match source {
        None => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|part| {
                part.as_str()
                    .ok_or("its `source` list holds something other than strings")
            })
            .collect(),
        Some(_) => Err("its `source` is neither a string nor a list of strings"),
    }
}
