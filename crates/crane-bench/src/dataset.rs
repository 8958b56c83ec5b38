//! The two dataset formats, told apart by their layout:
//!
//! - offline cases: a directory of JunoBench case files (`*.json`), each a notebook executed up
//!   to a target cell with its recorded runtime information and LLM answers;
//! - runnable pairs: a directory with `manifest.json` (a list of [`ManifestEntry`]) and, per
//!   case, a folder holding `buggy.ipynb` and `fixed.ipynb` plus the files they read.
//!
//! Both become a list of [`BenchCase`]s sorted by id, one per notebook variant.

use std::fmt;
use std::path::{Path, PathBuf};

use crane_runtime::junobench::{self, Case, CaseError, Variant};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub const MANIFEST: &str = "manifest.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DatasetKind {
    OfflineCases,
    RunnablePairs,
}

impl fmt::Display for DatasetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DatasetKind::OfflineCases => "offline cases",
            DatasetKind::RunnablePairs => "runnable pairs",
        })
    }
}

/// A loaded dataset.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub root: PathBuf,
    pub kind: DatasetKind,
    /// Sorted by id.
    pub cases: Vec<BenchCase>,
}

/// One notebook variant to judge, with its ground truth.
#[derive(Debug, Clone)]
pub struct BenchCase {
    pub id: String,
    pub pair: String,
    pub variant: Variant,
    pub labels: Labels,
    /// Hash of everything the case is made of; a cached result is reused only for the same one.
    pub fingerprint: String,
    pub source: CaseSource,
}

/// Ground truth and grouping keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Labels {
    /// The target cell crashes.
    pub crash: bool,
    /// JunoBench's group (tensorflow, torch, ..., NBspecific), or the pair's library.
    pub group: String,
    /// The library the crash comes from (`none` for notebook-specific crashes).
    pub library: String,
    pub root_cause: String,
    /// The exception class of the crash (crashing variants only), e.g. `TypeError`.
    pub exception: Option<String>,
    /// Ground-truth explanation of the crash (crashing variants only).
    pub diagnosis: Option<String>,
    /// Whether the crash can only be seen with runtime information (runnable pairs only).
    pub needs_runtime: Option<bool>,
}

#[derive(Debug, Clone)]
pub enum CaseSource {
    /// Recorded code, runtime information and LLM answers.
    Offline(Box<Case>),
    /// A notebook to execute live up to its target cell.
    Runnable(RunnableNotebook),
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunnableNotebook {
    /// The case folder: the kernel's working directory.
    pub dir: PathBuf,
    pub notebook: PathBuf,
    /// 0-based index among code cells.
    pub target_cell: usize,
    /// Text the crash's message contains (crashing variants only).
    pub message_contains: Option<String>,
}

/// One line of a runnable-pairs `manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// The case folder's name.
    pub case: String,
    pub library: String,
    /// 0-based index among code cells, the same in both notebooks.
    pub target_cell: usize,
    /// Exception class raised by the buggy notebook's target cell.
    pub exception: String,
    pub message_contains: String,
    pub diagnosis: String,
    pub needs_runtime: bool,
    pub category: String,
}

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("dataset {0} does not exist")]
    NotFound(PathBuf),
    #[error(
        "{0} is neither a directory of JunoBench case files (*.json) nor a directory of runnable \
         pairs (manifest.json)"
    )]
    Unrecognized(PathBuf),
    #[error(transparent)]
    Cases(#[from] CaseError),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a valid manifest (a JSON list of cases): {source}")]
    Manifest {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("manifest case {case:?}: {problem}")]
    Entry { case: String, problem: String },
    #[error("two cases have the id {0:?}")]
    DuplicateId(String),
}

/// Tell the format of the dataset at `path` without loading it. `path` may also name the
/// manifest itself.
pub fn detect(path: &Path) -> Result<DatasetKind, DatasetError> {
    if !path.exists() {
        return Err(DatasetError::NotFound(path.to_owned()));
    }
    if path.file_name().is_some_and(|name| name == MANIFEST) || path.join(MANIFEST).is_file() {
        return Ok(DatasetKind::RunnablePairs);
    }
    let read_error = |source| DatasetError::Read {
        path: path.to_owned(),
        source,
    };
    if path.is_dir() {
        for entry in std::fs::read_dir(path).map_err(read_error)? {
            if entry
                .map_err(read_error)?
                .path()
                .extension()
                .is_some_and(|ext| ext == "json")
            {
                return Ok(DatasetKind::OfflineCases);
            }
        }
    }
    Err(DatasetError::Unrecognized(path.to_owned()))
}

/// Detect the format and load every case.
pub fn load(path: &Path) -> Result<Dataset, DatasetError> {
    let kind = detect(path)?;
    let root = if path.is_file() {
        path.parent().unwrap_or(Path::new(".")).to_owned()
    } else {
        path.to_owned()
    };
    let mut cases = match kind {
        DatasetKind::OfflineCases => load_offline(&root)?,
        DatasetKind::RunnablePairs => load_runnable(&root)?,
    };
    cases.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some(pair) = cases.windows(2).find(|pair| pair[0].id == pair[1].id) {
        return Err(DatasetError::DuplicateId(pair[0].id.clone()));
    }
    Ok(Dataset { root, kind, cases })
}

fn load_offline(dir: &Path) -> Result<Vec<BenchCase>, DatasetError> {
    let cases = junobench::load_cases(dir)?;
    Ok(cases
        .into_iter()
        .map(|case| {
            let crash = case.crash;
            let labels = Labels {
                crash,
                group: case.group.clone(),
                library: case
                    .crash_labels
                    .library
                    .clone()
                    .unwrap_or_else(|| "none".to_owned()),
                root_cause: case.crash_labels.label_root_cause.clone(),
                exception: crash.then(|| exception_class(&case.crash_labels.ename)),
                diagnosis: case.diagnosis.clone().filter(|_| crash),
                needs_runtime: None,
            };
            // Serializing a parsed case cannot fail: it came from JSON.
            let bytes = serde_json::to_vec(&case).unwrap_or_default();
            BenchCase {
                id: case.id.clone(),
                pair: case.pair.clone(),
                variant: case.variant,
                labels,
                fingerprint: hex::encode(Sha256::digest(bytes)),
                source: CaseSource::Offline(Box::new(case)),
            }
        })
        .collect())
}

fn load_runnable(root: &Path) -> Result<Vec<BenchCase>, DatasetError> {
    let manifest_path = root.join(MANIFEST);
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| DatasetError::Read {
            path: path.to_owned(),
            source,
        })
    };
    let manifest_bytes = read(&manifest_path)?;
    let entries: Vec<ManifestEntry> =
        serde_json::from_slice(&manifest_bytes).map_err(|source| DatasetError::Manifest {
            path: manifest_path.clone(),
            source,
        })?;
    let mut cases = Vec::with_capacity(entries.len() * 2);
    for entry in entries {
        let invalid = |problem: String| DatasetError::Entry {
            case: entry.case.clone(),
            problem,
        };
        if entry.case.is_empty() || entry.case.contains(['/', '\\']) || entry.case.starts_with('.')
        {
            return Err(invalid(
                "the case name must be a plain folder name".to_owned(),
            ));
        }
        let dir = root.join(&entry.case);
        for variant in [Variant::Buggy, Variant::Fixed] {
            let notebook = dir.join(format!("{variant}.ipynb"));
            if !notebook.is_file() {
                return Err(invalid(format!("{} is missing", notebook.display())));
            }
            let crash = variant == Variant::Buggy;
            let mut hasher = Sha256::new();
            hasher.update(serde_json::to_vec(&entry).unwrap_or_default());
            hasher.update(read(&notebook)?);
            cases.push(BenchCase {
                id: format!("{}_{variant}", entry.case),
                pair: entry.case.clone(),
                variant,
                labels: Labels {
                    crash,
                    group: entry.library.clone(),
                    library: entry.library.clone(),
                    root_cause: entry.category.clone(),
                    exception: crash.then(|| exception_class(&entry.exception)),
                    diagnosis: crash.then(|| entry.diagnosis.clone()),
                    needs_runtime: Some(entry.needs_runtime),
                },
                fingerprint: hex::encode(hasher.finalize()),
                source: CaseSource::Runnable(RunnableNotebook {
                    dir: dir.clone(),
                    notebook,
                    target_cell: entry.target_cell,
                    message_contains: crash.then(|| entry.message_contains.clone()),
                }),
            });
        }
    }
    Ok(cases)
}

/// The canonical spelling of an exception class, so that labels and predictions compare:
/// JunoBench writes `typeerror`, tracebacks `builtins.TypeError` or `KeyError: 'x'`, models
/// `TypeError`. Known Python exception names get their usual capitalization; others keep theirs.
pub fn exception_class(name: &str) -> String {
    let name = name.trim();
    let name = name.split(':').next().unwrap_or(name).trim();
    let name = name.rsplit('.').next().unwrap_or(name);
    KNOWN_EXCEPTIONS
        .iter()
        .find(|known| known.eq_ignore_ascii_case(name))
        .map_or_else(|| name.to_owned(), |known| (*known).to_owned())
}

/// Whether two exception class names denote the same class.
pub fn same_exception(a: &str, b: &str) -> bool {
    exception_class(a).eq_ignore_ascii_case(&exception_class(b))
}

const KNOWN_EXCEPTIONS: &[&str] = &[
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "AxisError",
    "FileNotFoundError",
    "ImportError",
    "IndexError",
    "KeyError",
    "LookupError",
    "MemoryError",
    "ModuleNotFoundError",
    "NameError",
    "NotImplementedError",
    "OSError",
    "OverflowError",
    "RecursionError",
    "RuntimeError",
    "StopIteration",
    "SyntaxError",
    "TypeError",
    "UnboundLocalError",
    "UnicodeDecodeError",
    "ValueError",
    "ZeroDivisionError",
    "IndexingError",
    "InvalidArgumentError",
    "InvalidIndexError",
    "LinAlgError",
    "NotFittedError",
    "ParserError",
    "ResourceExhaustedError",
    "SettingWithCopyError",
    "UFuncTypeError",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exception_spellings_compare() {
        assert_eq!(exception_class("typeerror"), "TypeError");
        assert_eq!(exception_class("builtins.KeyError"), "KeyError");
        assert_eq!(exception_class("KeyError: 'price'"), "KeyError");
        assert_eq!(exception_class("CustomThing"), "CustomThing");
        assert!(same_exception("valueerror", "numpy.ValueError"));
        assert!(same_exception("customthing", "CustomThing"));
        assert!(!same_exception("KeyError", "IndexError"));
    }
}
