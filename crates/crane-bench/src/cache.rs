//! Per-case result cache, so an interrupted run resumes where it stopped.
//!
//! One directory per run setup (detector, model, configuration, runs, judge), one JSON file per
//! case holding the case's fingerprint and its result. A result is reused only when the case's
//! content is unchanged. Results with an error (the detector or the judge failed) are not stored:
//! those cases are tried again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::dataset::BenchCase;
use crate::report::CaseResult;

#[derive(Debug, thiserror::Error)]
#[error("cannot write the result cache at {path}: {source}")]
pub struct CacheError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

#[derive(Debug, Clone)]
pub struct ResultCache {
    dir: PathBuf,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    fingerprint: String,
    result: CaseResult,
}

impl ResultCache {
    /// The cache of one run setup under `root`. `label` names the directory for people
    /// (e.g. `llm-with_runtime`); `setup` is everything that changes results.
    pub fn open(
        root: &Path,
        label: &str,
        setup: &impl Serialize,
    ) -> Result<ResultCache, CacheError> {
        let setup = serde_json::to_vec(setup).unwrap_or_default();
        let hash = hex::encode(Sha256::digest(setup));
        let dir = root.join(format!("{}-{}", file_safe(label), &hash[..12]));
        crane_fs::create_private_dir(&dir).map_err(|source| CacheError {
            path: dir.clone(),
            source,
        })?;
        Ok(ResultCache { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The stored result of `case`, if its content has not changed since. An unreadable entry is
    /// a miss: the case is judged again and the entry rewritten.
    pub fn get(&self, case: &BenchCase) -> Option<CaseResult> {
        let bytes = crane_fs::read_trusted(&self.path(&case.id))?;
        let entry: Entry = serde_json::from_slice(&bytes).ok()?;
        (entry.fingerprint == case.fingerprint && entry.result.id == case.id)
            .then_some(entry.result)
    }

    /// Store a result (atomically: a killed run leaves no half-written entry). Results with an
    /// error are not stored.
    pub fn put(&self, case: &BenchCase, result: &CaseResult) -> Result<(), CacheError> {
        if result.error.is_some() {
            return Ok(());
        }
        let path = self.path(&case.id);
        let entry = Entry {
            fingerprint: case.fingerprint.clone(),
            result: result.clone(),
        };
        let bytes = serde_json::to_vec_pretty(&entry).unwrap_or_default();
        crane_fs::write_private(&path, &bytes).map_err(|source| CacheError { path, source })
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{}.json", file_safe(id)))
    }
}

fn file_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect::<String>()
        .trim_start_matches('.')
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_safe() {
        assert_eq!(file_safe("-S"), "-S");
        assert_eq!(file_safe("../x/y"), "_x_y");
        assert_eq!(file_safe("a b:c"), "a_b_c");
    }
}
