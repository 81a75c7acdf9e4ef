//! Crash-safe file replacement for the KV store and the runtime-config file.
//!
//! The new content goes to `<file>.tmp` and is fsynced; the current file is copied to
//! `<file>.bak` (as Java keeps one); the temp file is renamed over the file and the directory
//! fsynced. A crash at any point leaves the main file either wholly old or wholly new; at worst a
//! stale `.tmp` stays behind, which the next write replaces.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// `<file>.tmp`.
pub fn temp_path(path: &Path) -> PathBuf {
    with_suffix(path, ".tmp")
}

/// `<file>.bak`.
pub fn backup_path(path: &Path) -> PathBuf {
    with_suffix(path, ".bak")
}

/// Replaces `path` with `content` crash-safely (see the module docs). Creates parent directories.
pub fn write_atomically(path: &Path, content: &[u8]) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir)?;
    }
    let tmp = temp_path(path);
    {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(content)?;
        file.sync_all()?;
    }
    if path.exists() {
        fs::copy(path, backup_path(path))?;
    }
    fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        // Makes the rename durable; not every platform can open a directory, so best effort.
        if let Ok(dir) = fs::File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "rmq-persist-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn writes_keep_a_backup_and_leave_no_temp() {
        let dir = dir();
        let file = dir.join("sub/kv.json");
        write_atomically(&file, b"one").unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"one");
        assert!(!backup_path(&file).exists());
        write_atomically(&file, b"two").unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"two");
        assert_eq!(fs::read(backup_path(&file)).unwrap(), b"one");
        assert!(!temp_path(&file).exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failed_write_leaves_the_file_intact() {
        let dir = dir();
        let file = dir.join("kv.json");
        write_atomically(&file, b"good").unwrap();
        // A directory where the temp file must go: the write fails before touching the file.
        fs::create_dir_all(temp_path(&file)).unwrap();
        assert!(write_atomically(&file, b"bad").is_err());
        assert_eq!(fs::read(&file).unwrap(), b"good");
        fs::remove_dir_all(temp_path(&file)).unwrap();
        // A stale temp file from a crash is simply replaced.
        fs::write(temp_path(&file), b"partial garbage").unwrap();
        write_atomically(&file, b"next").unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"next");
        let _ = fs::remove_dir_all(&dir);
    }
}
