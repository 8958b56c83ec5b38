//! Files that hold secrets or user data: kernel connection files (their key lets anyone run
//! code in the kernel), LLM answers (prompts carry user data), crane's compiled kernel modules
//! (loaded into every kernel). Directories are created `0700`, files `0600`, writes are atomic
//! (a temporary file renamed into place), and a file is trusted for reading only when it and
//! its directory belong to the current user and nobody else can write them.
//!
//! Written by hand because it is a handful of calls on std's Unix extensions; no crate bundles
//! "create private, check owner" on its own.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

/// Mode bits of a private directory and a private file.
pub const PRIVATE_DIR: u32 = 0o700;
pub const PRIVATE_FILE: u32 = 0o600;

/// Creates `dir` and any missing parents; the directories it creates are `0700`, and `dir`
/// itself is made `0700` when it is ours (an existing shared cache directory is tightened).
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR)
        .create(dir)?;
    let meta = fs::metadata(dir)?;
    if meta.uid() == current_uid() && meta.mode() & 0o777 != PRIVATE_DIR {
        fs::set_permissions(dir, fs::Permissions::from_mode(PRIVATE_DIR))?;
    }
    Ok(())
}

/// Writes `contents` to `path` as a `0600` file, atomically, creating its directory private.
pub fn write_private(path: &Path, contents: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    // tempfile creates its files 0600.
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(contents)?;
    file.as_file().sync_data()?;
    file.persist(path).map_err(|error| error.error)?;
    Ok(())
}

/// The contents of `path` when it can be trusted: a regular file (not a link) owned by the
/// current user in a directory owned by the current user, neither writable by group or
/// others. `None` for a missing, unreadable or untrusted file.
pub fn read_trusted(path: &Path) -> Option<Vec<u8>> {
    if !is_trusted(path) {
        return None;
    }
    fs::read(path).ok()
}

/// The contents of a secret's file: as [`read_trusted`], and readable by nobody else either
/// (`None` for a file group or others can read: its secret is no longer one).
pub fn read_private(path: &Path) -> Option<Vec<u8>> {
    let private = fs::symlink_metadata(path).is_ok_and(|meta| meta.mode() & 0o077 == 0);
    if private {
        read_trusted(path)
    } else {
        None
    }
}

/// Whether `path` passes the checks of [`read_trusted`].
pub fn is_trusted(path: &Path) -> bool {
    let uid = current_uid();
    let owned_private = |meta: &fs::Metadata| meta.uid() == uid && meta.mode() & 0o022 == 0;
    let Ok(file) = fs::symlink_metadata(path) else {
        return false;
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    file.file_type().is_file()
        && owned_private(&file)
        && fs::metadata(dir).is_ok_and(|meta| owned_private(&meta))
}

fn current_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).expect("stat").mode() & 0o777
    }

    #[test]
    fn private_files_in_private_directories() {
        let root = tempfile::tempdir().expect("temporary directory");
        let path = root.path().join("a/b/secret.json");
        write_private(&path, b"{}").expect("writes");
        assert_eq!(mode(&path), PRIVATE_FILE);
        assert_eq!(mode(&root.path().join("a/b")), PRIVATE_DIR);
        assert_eq!(mode(&root.path().join("a")), PRIVATE_DIR);
        assert_eq!(read_trusted(&path).as_deref(), Some(&b"{}"[..]));

        write_private(&path, b"[1]").expect("overwrites");
        assert_eq!(read_trusted(&path).as_deref(), Some(&b"[1]"[..]));
        assert_eq!(mode(&path), PRIVATE_FILE);
    }

    #[test]
    fn an_existing_open_directory_is_tightened() {
        let root = tempfile::tempdir().expect("temporary directory");
        let dir = root.path().join("cache");
        fs::create_dir(&dir).expect("creates");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod");
        create_private_dir(&dir).expect("creates");
        assert_eq!(mode(&dir), PRIVATE_DIR);
    }

    #[test]
    fn writable_by_others_or_linked_is_not_trusted() {
        let root = tempfile::tempdir().expect("temporary directory");
        let path = root.path().join("code.hex");
        write_private(&path, b"e3").expect("writes");
        assert!(is_trusted(&path));

        fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).expect("chmod");
        assert_eq!(read_trusted(&path), None, "world-writable file");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");

        fs::set_permissions(root.path(), fs::Permissions::from_mode(0o777)).expect("chmod");
        assert_eq!(read_trusted(&path), None, "world-writable directory");
        fs::set_permissions(root.path(), fs::Permissions::from_mode(0o700)).expect("chmod");

        assert_eq!(read_private(&path).as_deref(), Some(&b"e3"[..]));
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(read_trusted(&path).is_some());
        assert_eq!(read_private(&path), None, "readable by others");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");

        let link = root.path().join("link.hex");
        std::os::unix::fs::symlink(&path, &link).expect("links");
        assert_eq!(read_trusted(&link), None, "a symbolic link");
        assert_eq!(read_trusted(&root.path().join("missing")), None);
    }
}
