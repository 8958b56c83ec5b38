//! The compiled form of crane's kernel modules, kept on disk per module version and Python
//! bytecode version: compiling the probe's 2,500 lines costs the kernel about 20 ms at every
//! injection, loading its marshalled code about 1 ms. The first injection into a kernel of a
//! given bytecode version (its `MAGIC_NUMBER`) compiles the source and returns the code
//! marshalled, as hex; later injections into any kernel of that version load it.
//!
//! The files hold only crane's own compiled modules, never user data; since their code runs in
//! every kernel, they are written private (`crane-fs`) and loaded only when the file and its
//! directory belong to the user and nobody else can write them. They live in
//! `$XDG_CACHE_HOME/crane/probe` (or the platform's cache directory); a missing, unreadable,
//! untrusted or damaged file only means the source is compiled again. Storing a file removes the files of
//! other versions of the same module not written for a week, so old crane versions do not
//! pile up.

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// How long the compiled code of another version of a module is kept after it was written.
const KEEP_OTHER_VERSIONS: Duration = Duration::from_secs(7 * 24 * 3600);

/// The directory of compiled modules, or none when the platform has no cache directory.
#[derive(Debug, Clone)]
pub(crate) struct BytecodeCache {
    dir: Option<PathBuf>,
}

impl BytecodeCache {
    pub(crate) fn default_location() -> Self {
        BytecodeCache {
            dir: dirs::cache_dir().map(|dir| dir.join("crane").join("probe")),
        }
    }

    fn path(&self, module: &str, digest: &str, magic: &Magic) -> Option<PathBuf> {
        Some(
            self.dir
                .as_ref()?
                .join(format!("{module}-{digest}-{}.hex", magic.0)),
        )
    }

    /// The marshalled code for `magic`, as lowercase hex, when a well-formed file holds it.
    pub(crate) fn load(&self, module: &str, digest: &str, magic: &Magic) -> Option<String> {
        let bytes = crane_fs::read_trusted(&self.path(module, digest, magic)?)?;
        let text = String::from_utf8(bytes).ok()?;
        is_hex(&text).then_some(text)
    }

    /// Stores `hex` for `magic` atomically; a cache that cannot be written is no error.
    pub(crate) fn store(&self, module: &str, digest: &str, magic: &Magic, hex: &str) {
        let (Some(path), true) = (self.path(module, digest, magic), is_hex(hex)) else {
            return;
        };
        let written = crane_fs::write_private(&path, hex.as_bytes());
        if written.is_ok() {
            self.prune(module, digest, SystemTime::now());
        }
    }

    /// Removes the files of other versions of `module` written before `now` minus a week.
    fn prune(&self, module: &str, digest: &str, now: SystemTime) {
        let Some(entries) = self.dir.as_ref().and_then(|dir| fs::read_dir(dir).ok()) else {
            return;
        };
        let (same_module, ours) = (format!("{module}-"), format!("{module}-{digest}-"));
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            if !name.starts_with(&same_module) || name.starts_with(&ours) || !name.ends_with(".hex")
            {
                continue;
            }
            let written = entry.metadata().and_then(|meta| meta.modified());
            let stale = written.is_ok_and(|written| {
                now.duration_since(written)
                    .is_ok_and(|age| age > KEEP_OTHER_VERSIONS)
            });
            if stale {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// Forgets the file for `magic` (the kernel could not load it).
    pub(crate) fn remove(&self, module: &str, digest: &str, magic: &Magic) {
        if let Some(path) = self.path(module, digest, magic) {
            let _ = fs::remove_file(path);
        }
    }
}

/// A kernel's bytecode version: `importlib`'s `MAGIC_NUMBER` in hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Magic(String);

impl Magic {
    /// A magic number as the kernel reports it; `None` when it reports none (another Python
    /// implementation), so nothing is cached.
    pub(crate) fn parse(hex: &str) -> Option<Self> {
        (!hex.is_empty() && hex.len() <= 16 && is_hex(hex)).then(|| Magic(hex.to_owned()))
    }
}

/// Lowercase hex digits only (and at least one): safe to place inside a Python string literal.
fn is_hex(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_and_loads_per_version_and_rejects_damaged_files() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let cache = BytecodeCache {
            dir: Some(dir.path().join("probe")),
        };
        let magic = Magic::parse("a70d0d0a").expect("a magic number");
        let other = Magic::parse("cb0d0d0a").expect("a magic number");
        assert_eq!(cache.load("m", "d1", &magic), None);
        cache.store("m", "d1", &magic, "e3000000");
        assert_eq!(cache.load("m", "d1", &magic).as_deref(), Some("e3000000"));
        assert_eq!(cache.load("m", "d1", &other), None);
        assert_eq!(cache.load("m", "d2", &magic), None, "another probe version");

        let path = cache.path("m", "d1", &magic).expect("a path");
        fs::write(&path, "e3'); import os #").expect("writes");
        assert_eq!(
            cache.load("m", "d1", &magic),
            None,
            "only hex reaches the kernel"
        );
        cache.remove("m", "d1", &magic);
        assert!(!path.exists());

        cache.store("m", "d1", &magic, "not hex");
        assert!(!path.exists());
        assert_eq!(Magic::parse(""), None);
        assert_eq!(Magic::parse("A70D"), None);
    }

    #[test]
    fn storing_removes_other_versions_older_than_a_week() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let cache = BytecodeCache {
            dir: Some(dir.path().to_path_buf()),
        };
        let magic = Magic::parse("a70d0d0a").expect("a magic number");
        cache.store("m", "old", &magic, "e3");
        cache.store("m", "recent", &magic, "e3");
        let old = cache.path("m", "old", &magic).expect("a path");
        let recent = cache.path("m", "recent", &magic).expect("a path");
        let unrelated = dir.path().join("notes.txt");
        fs::write(&unrelated, "kept").expect("writes");
        cache.store("other", "old", &magic, "e3");
        let other_module = cache.path("other", "old", &magic).expect("a path");
        let eight_days_ago = SystemTime::now() - Duration::from_secs(8 * 24 * 3600);
        for path in [&old, &unrelated, &other_module] {
            fs::File::options()
                .write(true)
                .open(path)
                .and_then(|file| file.set_modified(eight_days_ago))
                .expect("sets the time");
        }

        cache.store("m", "current", &magic, "e3");
        assert!(!old.exists(), "another version, written eight days ago");
        assert!(recent.exists(), "another version, written just now");
        assert!(unrelated.exists(), "not a compiled module");
        assert!(other_module.exists(), "another module's version");
        assert_eq!(cache.load("m", "current", &magic).as_deref(), Some("e3"));
    }

    #[test]
    fn no_cache_directory_means_nothing_is_kept() {
        let cache = BytecodeCache { dir: None };
        let magic = Magic::parse("a70d0d0a").expect("a magic number");
        cache.store("m", "d1", &magic, "e3");
        assert_eq!(cache.load("m", "d1", &magic), None);
    }
}
