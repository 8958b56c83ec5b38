//! The signature snapshot: call signatures of the public callables of the libraries the
//! benchmark uses, generated from the project's environment by `scripts/snapshot-signatures.py`
//! (which documents the format) and compiled in. It stands in for the live facts' signatures
//! where a case has none (recorded JunoBench facts), for the library versions it records.

use std::collections::HashMap;
use std::io::Read;
use std::sync::OnceLock;

use crane_runtime::{Binder, CallSignature, Signature};

static DATA: &[u8] = include_bytes!("../data/signatures.txt.gz");

/// The snapshot's signatures, by the paths and type names that reach them.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// The Python version it was read with.
    pub python: String,
    versions: HashMap<String, String>,
    signatures: Vec<CallSignature>,
    /// A function's or class's public path -> its signature (a class's: its constructor's).
    callables: HashMap<String, usize>,
    /// A class's names -> index into `methods`.
    types: HashMap<String, usize>,
    methods: Vec<HashMap<String, usize>>,
}

/// Why the compiled-in snapshot does not read.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("the signature snapshot does not decompress: {0}")]
    Compressed(#[from] std::io::Error),
    #[error("line {line} of the signature snapshot: {reason}")]
    Line { line: usize, reason: String },
}

/// The compiled-in snapshot, read once; `None` if it does not read (a test checks it does).
pub fn snapshot() -> Option<&'static Snapshot> {
    static SNAPSHOT: OnceLock<Option<Snapshot>> = OnceLock::new();
    SNAPSHOT.get_or_init(|| Snapshot::read(DATA).ok()).as_ref()
}

impl Snapshot {
    /// Read a gzip-compressed snapshot.
    pub fn read(compressed: &[u8]) -> Result<Snapshot, SnapshotError> {
        let mut text = String::new();
        flate2::read::GzDecoder::new(compressed).read_to_string(&mut text)?;
        Snapshot::parse(&text)
    }

    pub fn parse(text: &str) -> Result<Snapshot, SnapshotError> {
        let mut snapshot = Snapshot::default();
        let mut current_type: Option<(usize, String)> = None;
        for (index, line) in text.lines().enumerate() {
            let fail = |reason: &str| SnapshotError::Line {
                line: index + 1,
                reason: reason.to_owned(),
            };
            let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
            match tag {
                "p" => snapshot.python = rest.to_owned(),
                "v" => {
                    let (library, version) = rest.split_once(' ').ok_or_else(|| fail("v"))?;
                    snapshot
                        .versions
                        .insert(library.to_owned(), version.to_owned());
                }
                "f" => {
                    let (paths, entry) = rest.split_once(' ').ok_or_else(|| fail("f"))?;
                    let signature = entry_of(entry).ok_or_else(|| fail("f entry"))?;
                    snapshot.signatures.push(signature);
                    for path in paths.split(',') {
                        snapshot
                            .callables
                            .insert(path.to_owned(), snapshot.signatures.len() - 1);
                    }
                }
                "t" => {
                    snapshot.methods.push(HashMap::new());
                    let at = snapshot.methods.len() - 1;
                    for name in rest.split(',') {
                        snapshot.types.insert(name.to_owned(), at);
                    }
                    current_type = Some((at, rest.to_owned()));
                }
                "c" => {
                    let (_, names) = current_type.as_ref().ok_or_else(|| fail("c outside a t"))?;
                    let signature = entry_of(rest).ok_or_else(|| fail("c entry"))?;
                    snapshot.signatures.push(signature);
                    for name in names.split(',') {
                        snapshot
                            .callables
                            .insert(name.to_owned(), snapshot.signatures.len() - 1);
                    }
                }
                "m" => {
                    let (at, _) = current_type.as_ref().ok_or_else(|| fail("m outside a t"))?;
                    let (attr, entry) = rest.split_once(' ').ok_or_else(|| fail("m"))?;
                    let signature = entry_of(entry).ok_or_else(|| fail("m entry"))?;
                    snapshot.signatures.push(signature);
                    snapshot.methods[*at].insert(attr.to_owned(), snapshot.signatures.len() - 1);
                }
                "" => {}
                _ => return Err(fail("unknown line")),
            }
        }
        Ok(snapshot)
    }

    /// The version of `library` (`pandas`, `sklearn`) the snapshot was read from.
    pub fn version(&self, library: &str) -> Option<&str> {
        self.versions.get(library).map(String::as_str)
    }

    /// The signature a call of the function or class at `path` binds to.
    pub fn callable(&self, path: &str) -> Option<&CallSignature> {
        Some(&self.signatures[*self.callables.get(path)?])
    }

    /// The signature of method `attr` of instances of the type named `type_name`.
    pub fn method(&self, type_name: &str, attr: &str) -> Option<&CallSignature> {
        let methods = &self.methods[*self.types.get(type_name)?];
        Some(&self.signatures[*methods.get(attr)?])
    }

    /// How many signatures it holds.
    pub fn len(&self) -> usize {
        self.signatures.len()
    }

    pub fn is_empty(&self) -> bool {
        self.signatures.is_empty()
    }
}

/// `<callable> <binder> <bound> <name> <parameters>`
fn entry_of(entry: &str) -> Option<CallSignature> {
    let mut parts = entry.splitn(5, ' ');
    let callable = parts.next()?.to_owned();
    let binder = match parts.next()? {
        "i" => Binder::Interpreter,
        "b" => Binder::SignatureBind,
        _ => return None,
    };
    let bound = match parts.next()? {
        "0" => false,
        "1" => true,
        _ => return None,
    };
    let name = parts.next()?.to_owned();
    let parameters = Signature::parse(parts.next()?).ok()?;
    Some(CallSignature {
        callable,
        name,
        parameters,
        bound,
        binder,
    })
}

/// `major.minor` of a version string (`2.15.0+cu132` -> `2.15`).
pub fn major_minor(version: &str) -> &str {
    let mut dots = version.match_indices('.').map(|(at, _)| at);
    let _major = dots.next();
    match dots.next() {
        Some(at) => &version[..at],
        None => version,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_in_snapshot_reads_and_holds_the_libraries_public_callables() {
        let snapshot = Snapshot::read(DATA).expect("reads");
        assert!(snapshot.len() > 5_000, "{}", snapshot.len());
        for library in [
            "pandas",
            "numpy",
            "sklearn",
            "torch",
            "matplotlib",
            "seaborn",
            "statsmodels",
        ] {
            assert!(snapshot.version(library).is_some(), "{library}");
        }
        let read_csv = snapshot.callable("pandas.read_csv").expect("read_csv");
        assert_eq!(read_csv.binder, Binder::Interpreter);
        assert!(!read_csv.bound);
        let split = snapshot
            .callable("sklearn.model_selection.train_test_split")
            .expect("train_test_split");
        assert_eq!(split.binder, Binder::SignatureBind);
        let init = snapshot
            .callable("sklearn.linear_model.LogisticRegression")
            .expect("constructor");
        assert_eq!(init.name, "LogisticRegression.__init__");
        assert!(init.bound);
        assert!(snapshot.method("pandas.DataFrame", "merge").is_some());
        // pandas' deprecate_nonkeyword_arguments wrappers are left out, as in a live kernel.
        assert!(snapshot.method("pandas.DataFrame", "mean").is_none());
    }

    #[test]
    fn versions_compare_by_major_and_minor() {
        assert_eq!(major_minor("2.15.0+cu132"), "2.15");
        assert_eq!(major_minor("1.9"), "1.9");
        assert_eq!(major_minor("3"), "3");
    }
}
