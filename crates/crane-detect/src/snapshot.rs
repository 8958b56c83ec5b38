//! The signature snapshot: call signatures of the public callables of the libraries the
//! benchmark uses, generated from the project's environment by `scripts/snapshot-signatures.py`
//! (which documents the format) and compiled in. It stands in for the live facts' signatures
//! where a case has none (recorded JunoBench facts), for the library versions it records.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::sync::OnceLock;

use crane_runtime::{Binder, CallSignature, Signature};

static DATA: &[u8] = include_bytes!("../data/signatures.txt.gz");

/// The snapshot, indexed by the paths and type names that reach its signatures; a signature
/// is parsed from its line when asked for (most checks ask for few).
#[derive(Debug, Default)]
pub struct Snapshot {
    /// The Python version it was read with.
    pub python: String,
    versions: HashMap<String, String>,
    lines: Vec<&'static str>,
    /// The `s` lines' signatures (unparsed), by number.
    signatures: Vec<&'static str>,
    /// A function's or class's public path -> its signature's number (a class's: its
    /// constructor's).
    callables: HashMap<&'static str, usize>,
    /// A class's names -> the line of its `t`; its `c` and `m` lines follow.
    types: HashMap<&'static str, usize>,
}

/// Why a snapshot does not read.
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

/// The library versions the compiled-in snapshot was read from, from its first lines only: the
/// check that decides whether reading the whole snapshot can help a case.
pub fn versions() -> &'static HashMap<String, String> {
    static VERSIONS: OnceLock<HashMap<String, String>> = OnceLock::new();
    VERSIONS.get_or_init(|| {
        let mut versions = HashMap::new();
        let reader = BufReader::new(flate2::read::GzDecoder::new(DATA));
        for line in reader.lines() {
            let Ok(line) = line else { break };
            match line.split_once(' ') {
                Some(("p", _)) => {}
                Some(("v", rest)) => {
                    if let Some((library, version)) = rest.split_once(' ') {
                        versions.insert(library.to_owned(), version.to_owned());
                    }
                }
                _ => break,
            }
        }
        versions
    })
}

impl Snapshot {
    /// Read a gzip-compressed snapshot. Its text is kept for the life of the process (the
    /// index borrows from it; the compiled-in one is read once).
    pub fn read(compressed: &[u8]) -> Result<Snapshot, SnapshotError> {
        let mut text = String::new();
        flate2::read::GzDecoder::new(compressed).read_to_string(&mut text)?;
        Snapshot::parse(Box::leak(text.into_boxed_str()))
    }

    pub fn parse(text: &'static str) -> Result<Snapshot, SnapshotError> {
        let mut snapshot = Snapshot {
            lines: text.lines().collect(),
            ..Snapshot::default()
        };
        let mut current_type: Option<&'static str> = None;
        for (index, line) in snapshot.lines.iter().enumerate() {
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
                "s" => snapshot.signatures.push(rest),
                "f" => {
                    let (paths, number) = rest.split_once(' ').ok_or_else(|| fail("f"))?;
                    let number = snapshot.number(number).ok_or_else(|| fail("f number"))?;
                    for path in paths.split(',') {
                        snapshot.callables.insert(path, number);
                    }
                }
                "t" => {
                    for name in rest.split(',') {
                        snapshot.types.insert(name, index);
                    }
                    current_type = Some(rest);
                }
                "c" => {
                    let names = current_type.ok_or_else(|| fail("c outside a t"))?;
                    let number = snapshot.number(rest).ok_or_else(|| fail("c number"))?;
                    for name in names.split(',') {
                        snapshot.callables.insert(name, number);
                    }
                }
                "m" => {
                    current_type.ok_or_else(|| fail("m outside a t"))?;
                    let (_, number) = rest.split_once(' ').ok_or_else(|| fail("m"))?;
                    snapshot.number(number).ok_or_else(|| fail("m number"))?;
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

    /// A signature number of an `f`, `c` or `m` line, checked against the `s` lines so far.
    fn number(&self, text: &str) -> Option<usize> {
        text.parse().ok().filter(|n| *n < self.signatures.len())
    }

    /// The signature a call of the function or class at `path` binds to.
    pub fn callable(&self, path: &str) -> Option<CallSignature> {
        entry_of(self.signatures[*self.callables.get(path)?])
    }

    /// The signature of method `attr` of instances of the type named `type_name`.
    pub fn method(&self, type_name: &str, attr: &str) -> Option<CallSignature> {
        let start = *self.types.get(type_name)? + 1;
        for line in &self.lines[start..] {
            match line.split_once(' ')? {
                ("c", _) => continue,
                ("m", rest) => {
                    let (name, number) = rest.split_once(' ')?;
                    if name == attr {
                        return entry_of(self.signatures[self.number(number)?]);
                    }
                }
                _ => return None,
            }
        }
        None
    }

    /// Every signature, parsed (`Err`: the number of one that does not): what a test checks
    /// so that none is silently unreadable.
    pub fn signatures(&self) -> impl Iterator<Item = Result<CallSignature, usize>> + '_ {
        self.signatures
            .iter()
            .enumerate()
            .map(|(number, entry)| entry_of(entry).ok_or(number))
    }

    /// How many signatures it holds.
    pub fn len(&self) -> usize {
        self.signatures().count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
        let unreadable: Vec<usize> = snapshot.signatures().filter_map(Result::err).collect();
        assert!(
            unreadable.is_empty(),
            "lines that do not parse: {unreadable:?}"
        );
        assert!(snapshot.len() > 5_000, "{}", snapshot.len());
        assert_eq!(versions(), &snapshot.versions);
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
