//! The answer cache on disk: one JSON file per (model, parameters, prompt, run), so a repeated
//! check or benchmark costs nothing and gives the same answers. Entries hold the raw answer,
//! its usage and latency, and a description of the request without credentials; API keys are
//! never part of an entry or its key.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::usage::Usage;

/// Bumped when the meaning of an entry changes, so old entries are no longer hit.
const FORMAT: u32 = 1;

/// A directory of cached answers.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
}

/// What identifies a cached answer. Holds no credentials.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CacheKey<'a> {
    /// Canonical model string, endpoint included, URL credentials removed.
    pub model: &'a str,
    /// Generation parameters (reasoning effort, temperature, output limit, schema).
    pub params: &'a Value,
    pub system: &'a str,
    pub user: &'a str,
    /// Index of the repeated run: each of `--runs N` is cached on its own.
    pub run: u32,
}

impl CacheKey<'_> {
    pub fn digest(&self) -> String {
        let mut hasher = Sha256::new();
        hasher.update(FORMAT.to_le_bytes());
        let encoded = serde_json::to_vec(self).unwrap_or_default();
        hasher.update(&encoded);
        hex::encode(hasher.finalize())
    }

    pub fn prompt_digest(&self) -> String {
        let mut hasher = Sha256::new();
        hasher.update(self.system.as_bytes());
        hasher.update([0]);
        hasher.update(self.user.as_bytes());
        hex::encode(hasher.finalize())
    }
}

/// One cached answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheEntry {
    pub format: u32,
    pub model: String,
    pub params: Value,
    pub prompt_sha256: String,
    pub run: u32,
    /// The answer text exactly as the provider returned it.
    pub raw: String,
    pub usage: Usage,
    pub latency_ms: u64,
    pub created_unix: u64,
}

impl CacheEntry {
    pub(crate) fn new(key: &CacheKey<'_>, raw: String, usage: Usage, latency_ms: u64) -> Self {
        CacheEntry {
            format: FORMAT,
            model: key.model.to_string(),
            params: key.params.clone(),
            prompt_sha256: key.prompt_digest(),
            run: key.run,
            raw,
            usage,
            latency_ms,
            created_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        }
    }
}

impl Cache {
    /// Opens (creating if needed) the cache in `dir`.
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Cache> {
        let dir = dir.into();
        crane_fs::create_private_dir(&dir)?;
        Ok(Cache { dir })
    }

    /// `$XDG_CACHE_HOME/crane/llm` (or the platform's cache directory), else `.cache/crane/llm`
    /// under the current directory.
    pub fn default_dir() -> PathBuf {
        dirs::cache_dir()
            .unwrap_or_else(|| PathBuf::from(".cache"))
            .join("crane")
            .join("llm")
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, digest: &str) -> PathBuf {
        self.dir.join(&digest[..2]).join(format!("{digest}.json"))
    }

    /// The entry for `key`; an unreadable, untrusted or foreign entry counts as a miss.
    pub(crate) fn get(&self, key: &CacheKey<'_>) -> Option<CacheEntry> {
        let bytes = crane_fs::read_trusted(&self.path_of(&key.digest()))?;
        let entry: CacheEntry = serde_json::from_slice(&bytes).ok()?;
        (entry.format == FORMAT
            && entry.run == key.run
            && entry.prompt_sha256 == key.prompt_digest())
        .then_some(entry)
    }

    /// Stores `entry` under `key`, atomically, readable by the user alone (prompts and answers
    /// carry the user's data).
    pub(crate) fn put(&self, key: &CacheKey<'_>, entry: &CacheEntry) -> io::Result<()> {
        let text = serde_json::to_string_pretty(entry).map_err(io::Error::other)?;
        crane_fs::write_private(&self.path_of(&key.digest()), text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stores_and_finds_entries_by_every_part_of_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path().join("llm")).unwrap();
        let params = json!({"temperature": 0.0});
        let key = CacheKey {
            model: "openai:gpt-5",
            params: &params,
            system: "instruction",
            user: "prompt",
            run: 0,
        };
        assert!(cache.get(&key).is_none());
        let usage = Usage {
            input_tokens: 100,
            output_tokens: 20,
            estimated: false,
        };
        let entry = CacheEntry::new(&key, "{\"detection\": true}".into(), usage, 1234);
        cache.put(&key, &entry).unwrap();
        assert_eq!(cache.get(&key), Some(entry));

        let other_params = json!({"temperature": 1.0});
        let variants = [
            CacheKey {
                model: "openai:gpt-5-mini",
                ..key.clone()
            },
            CacheKey {
                params: &other_params,
                ..key.clone()
            },
            CacheKey {
                system: "other",
                ..key.clone()
            },
            CacheKey {
                user: "other",
                ..key.clone()
            },
            CacheKey {
                run: 1,
                ..key.clone()
            },
        ];
        for variant in variants {
            assert!(cache.get(&variant).is_none(), "{variant:?} must miss");
        }
    }
}
