//! Fingerprints of the kernel's objects, to tell from evidence whether the part of a failed
//! cell that ran changed what existed before it (`python/crane_fingerprint.py`): the kernel
//! and its snapshot from before the cell each digest the objects the cell read by name, and
//! equal digests mean those objects are as they were. Asked of the kernel through crane's call
//! message ([`in_kernel`]) and of a snapshot through its socket ([`in_snapshot`]), never by an
//! execute request.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crane_kernel::KernelSession;
use serde::Deserialize;
use serde_json::json;

use crate::run_module;
use crate::run_report::DryRunError;

/// The fingerprint of each name asked for: a digest, `"absent"` where the namespace has no
/// such name, `None` where crane cannot read the object's whole value without running code of
/// its (a function or an object of the notebook's, a tensor, a model).
pub type Fingerprints = BTreeMap<String, Option<String>>;

#[derive(Deserialize)]
struct Answer {
    fingerprints: Fingerprints,
}

/// The fingerprints of the objects `names` hold in the kernel.
pub async fn in_kernel(
    session: &mut KernelSession,
    names: &[String],
    timeout: Duration,
) -> Result<Fingerprints, DryRunError> {
    let request = json!({ "names": names });
    let answer = run_module::call(session, "fingerprint", &request, timeout).await?;
    let answer: Answer = serde_json::from_value(answer).map_err(DryRunError::Malformed)?;
    Ok(answer.fingerprints)
}

/// What the kernel says of the names a held cell reads ([`data_names`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct DataNames {
    /// Those holding data whose reads change nothing: a numpy array or a pandas series, frame
    /// or index of immutable scalars (`crane_analysis::Prior::Data`).
    pub data: Vec<String>,
    /// Of those, the numpy arrays only the notebook's namespace reaches (no other object, no
    /// function the kernel ran names them), each with the names bound to the arrays of its
    /// memory (`python/crane_alone.py`): a statement that only reads them runs before statements
    /// that show none of those names, whatever those do (`crane_analysis::out_of_order`).
    #[serde(default)]
    pub alone: HashMap<String, Vec<String>>,
}

/// What the kernel says of `names`: which hold data, and which of those arrays only the
/// namespace reaches ([`DataNames`]).
pub async fn data_names(
    session: &mut KernelSession,
    names: &[String],
    timeout: Duration,
) -> Result<DataNames, DryRunError> {
    let answer =
        run_module::call(session, "data_names", &json!({ "names": names }), timeout).await?;
    serde_json::from_value(answer).map_err(DryRunError::Malformed)
}

/// The fingerprints of the objects `names` hold in the snapshot listening at `socket`, which
/// reads them and stays the state it was. Blocking: the caller runs it off its event loop.
pub fn in_snapshot(
    socket: &Path,
    names: &[String],
    timeout: Duration,
) -> std::io::Result<Fingerprints> {
    let mut stream = UnixStream::connect(socket)?;
    stream.set_read_timeout(Some(timeout))?;
    let request = json!({ "names": names });
    stream.write_all(format!("fingerprint {request}\n").as_bytes())?;
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line)?;
    let answer: Answer = serde_json::from_str(&line)
        .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))?;
    Ok(answer.fingerprints)
}

/// Whether every name either side fingerprinted (`names` and the globals the notebook's code
/// they hold can read) has a fingerprint on both sides, the same.
pub fn unchanged(names: &[String], kernel: &Fingerprints, snapshot: &Fingerprints) -> bool {
    first_unsure(names, kernel, snapshot).is_none()
}

/// The first name, of `names` and then of the others either side fingerprinted, whose object
/// crane found changed (`true`) or could not fingerprint on both sides (`false`).
pub fn first_unsure<'n>(
    names: &'n [String],
    kernel: &'n Fingerprints,
    snapshot: &'n Fingerprints,
) -> Option<(&'n str, bool)> {
    let others = kernel
        .keys()
        .chain(snapshot.keys())
        .filter(|name| !names.contains(name));
    names
        .iter()
        .chain(others)
        .find_map(|name| match (kernel.get(name), snapshot.get(name)) {
            (Some(Some(now)), Some(Some(before))) if now == before => None,
            (Some(Some(_)), Some(Some(_))) => Some((name.as_str(), true)),
            _ => Some((name.as_str(), false)),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prints(pairs: &[(&str, Option<&str>)]) -> Fingerprints {
        pairs
            .iter()
            .map(|(name, print)| ((*name).to_owned(), print.map(str::to_owned)))
            .collect()
    }

    #[test]
    fn unchanged_only_when_every_name_has_the_same_fingerprint() {
        let names = vec!["X".to_owned(), "pipe".to_owned()];
        let before = prints(&[("X", Some("aa")), ("pipe", Some("bb"))]);
        assert!(unchanged(&names, &before.clone(), &before));
        let fitted = prints(&[("X", Some("aa")), ("pipe", Some("cc"))]);
        assert!(!unchanged(&names, &fitted, &before));
        assert_eq!(first_unsure(&names, &fitted, &before), Some(("pipe", true)));
        let unknown = prints(&[("X", Some("aa")), ("pipe", None)]);
        assert!(!unchanged(&names, &unknown, &unknown));
        assert_eq!(
            first_unsure(&names, &unknown, &unknown),
            Some(("pipe", false))
        );
        // A name one side did not answer for.
        assert!(!unchanged(&names, &prints(&[("X", Some("aa"))]), &before));
        // A global the notebook's code reads, changed.
        let with_global = prints(&[
            ("X", Some("aa")),
            ("pipe", Some("bb")),
            ("count", Some("1")),
        ]);
        let counted = prints(&[
            ("X", Some("aa")),
            ("pipe", Some("bb")),
            ("count", Some("2")),
        ]);
        assert_eq!(
            first_unsure(&names, &counted, &with_global),
            Some(("count", true))
        );
    }
}
