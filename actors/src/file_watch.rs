//! Noticing that files changed, for the actors that reload them (certificates, the ACL file):
//! the files' *directories* are watched (a rename that replaces a file replaces its inode), and
//! a fingerprint of their contents tells a real change from a touch. Where file-system events
//! do not come, the owner's periodic check still compares fingerprints.

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use notify::{RecursiveMode, Watcher};
use tracing::warn;

/// Files larger than this hash as their path and length only (no watched file is that large).
const MAX_HASHED_BYTES: u64 = 16 * 1024 * 1024;

/// A watch on the directories of some files.
#[derive(Default)]
pub struct DirWatch {
    watcher: Option<notify::RecommendedWatcher>,
    dirs: BTreeSet<PathBuf>,
}

impl DirWatch {
    /// Watches the directories of `files` (again, if they changed), calling `changed` on every
    /// event that is not a mere read. `what` names the files in warnings.
    pub fn watch(&mut self, files: &[PathBuf], what: &str, changed: impl Fn() + Send + 'static) {
        let dirs: BTreeSet<PathBuf> = files
            .iter()
            .map(|file| match file.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
                _ => PathBuf::from("."),
            })
            .collect();
        if dirs == self.dirs && self.watcher.is_some() {
            return;
        }
        self.dirs = dirs;
        self.watcher = None;
        if self.dirs.is_empty() {
            return;
        }
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if event.is_ok_and(|e| !e.kind.is_access()) {
                changed();
            }
        });
        match watcher {
            Ok(mut watcher) => {
                for dir in &self.dirs {
                    if let Err(err) = watcher.watch(dir, RecursiveMode::NonRecursive) {
                        warn!(dir = %dir.display(), error = %err, "cannot watch the directory of the {what}; the periodic check still runs");
                    }
                }
                self.watcher = Some(watcher);
            }
            Err(err) => {
                warn!(error = %err, "no file-system events for the {what}; the periodic check still runs")
            }
        }
    }

    /// The watched directories.
    pub fn dirs(&self) -> &BTreeSet<PathBuf> {
        &self.dirs
    }

    /// Stops watching (a restarting owner watches again).
    pub fn clear(&mut self) {
        self.watcher = None;
        self.dirs.clear();
    }
}

/// A hash of the files' paths and contents (a missing, unreadable or oversized file hashes as
/// absent).
pub fn fingerprint(files: &[PathBuf]) -> u64 {
    let mut hasher = DefaultHasher::new();
    for file in files {
        file.hash(&mut hasher);
        let contents = std::fs::metadata(Path::new(file))
            .ok()
            .filter(|m| m.len() <= MAX_HASHED_BYTES)
            .and_then(|_| std::fs::read(file).ok());
        match contents {
            Some(bytes) => bytes.hash(&mut hasher),
            None => 0u8.hash(&mut hasher),
        }
    }
    hasher.finish()
}
