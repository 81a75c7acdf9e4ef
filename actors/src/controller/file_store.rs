//! The controller's store without etcd: local files under `controllerStorePath`, for a single
//! embedded controller (a laptop, a one-NameServer test cluster). It is always the leader.
//!
//! Two files: a snapshot of every broker set (`controller-state.json`) and a journal of the
//! commits since (`controller-state.log`, one JSON line per commit). A commit appends its line
//! and syncs it before it is answered, so an answered change survives a crash (Java's answers
//! come after the DLedger commit), and costs the size of its record, not of the whole state.
//! Once the journal has grown past the snapshot (and at least [`MIN_COMPACTION_BYTES`]), the
//! snapshot is rewritten crash-safely ([`persist`](crate::persist)) and the journal emptied:
//! each commit costs its own size, amortized. At start the snapshot is read, then the journal
//! replayed; lines at or below the snapshot's revision (a crash between the two steps of a
//! compaction) are skipped, a last line cut short by a crash (never answered) is dropped.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use actix::prelude::*;
use serde::{Deserialize, Serialize};
use tracing::{error, info, warn};

use super::broker_set::BrokerSet;
use super::store::{Commit, LeaderInfo, Revision, StoreError, StoreEvent};
use crate::persist::write_atomically;

/// The snapshot's name under `controllerStorePath`.
pub const FILE_NAME: &str = "controller-state.json";
/// The journal's name under `controllerStorePath`.
pub const JOURNAL_NAME: &str = "controller-state.log";

/// Largest snapshot, and journal, read at start: the state is bounded far below
/// (`replicas::MAX_STATE_BYTES`), so what requests sent never reaches it.
const MAX_FILE_BYTES: u64 = 64 << 20;

/// The journal is compacted into the snapshot once larger than the snapshot and this.
const MIN_COMPACTION_BYTES: u64 = 1 << 20;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Saved {
    revision: Revision,
    sets: Vec<SavedSet>,
}

#[derive(Debug, Serialize, Deserialize)]
struct SavedSet {
    revision: Revision,
    set: BrokerSet,
}

/// One line of the journal: set `name`'s record (`None`: removed) at `revision`.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    revision: Revision,
    name: String,
    record: Option<BrokerSet>,
}

/// Why the state could not be read at start.
#[derive(Debug, thiserror::Error)]
pub enum FileStoreError {
    #[error("cannot read the controller state {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the controller state {path} is {len} bytes, over the {MAX_FILE_BYTES}-byte limit")]
    TooLarge { path: PathBuf, len: u64 },
    #[error("the controller state {path} is not valid: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("the controller state {path} is not valid: line {line}: {source}")]
    Journal {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
}

/// The single-node store: sole owner of the state files.
pub struct FileStore {
    path: PathBuf,
    journal_path: PathBuf,
    revision: Revision,
    sets: BTreeMap<String, (BrokerSet, Revision)>,
    me: LeaderInfo,
    /// The journal, open for appending, and its length; `None` when the next commit must
    /// compact first (at start, or after an append that could not be undone).
    journal: Option<(File, u64)>,
    /// The snapshot's length when last written.
    snapshot_len: u64,
    /// The controller, once known ([`FileStore::reporting_to`]).
    events: Option<Recipient<StoreEvent>>,
}

/// Reads `path` whole, `None` when it does not exist.
fn read_bounded(path: &Path) -> Result<Option<Vec<u8>>, FileStoreError> {
    let read = |source| FileStoreError::Read {
        path: path.to_owned(),
        source,
    };
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(read(source)),
        Ok(meta) if meta.len() > MAX_FILE_BYTES => Err(FileStoreError::TooLarge {
            len: meta.len(),
            path: path.to_owned(),
        }),
        Ok(_) => std::fs::read(path).map(Some).map_err(read),
    }
}

impl FileStore {
    /// Reads `<dir>/controller-state.json` and replays `<dir>/controller-state.log` (none yet:
    /// an empty state). Nothing is written until the first commit, which compacts first.
    pub fn open(dir: &Path, me: LeaderInfo) -> Result<Self, FileStoreError> {
        let path = dir.join(FILE_NAME);
        let journal_path = dir.join(JOURNAL_NAME);
        let snapshot = read_bounded(&path)?;
        let snapshot_len = snapshot.as_ref().map_or(0, |b| b.len() as u64);
        let saved: Saved = match snapshot {
            None => Saved::default(),
            Some(bytes) => {
                serde_json::from_slice(&bytes).map_err(|source| FileStoreError::Parse {
                    path: path.clone(),
                    source,
                })?
            }
        };
        let mut store = FileStore {
            revision: saved.revision,
            sets: saved
                .sets
                .into_iter()
                .map(|s| (s.set.name.clone(), (s.set, s.revision)))
                .collect(),
            path,
            journal_path,
            me,
            journal: None,
            snapshot_len,
            events: None,
        };
        store.replay()?;
        Ok(store)
    }

    /// Applies the journal's commits newer than the snapshot.
    fn replay(&mut self) -> Result<(), FileStoreError> {
        let Some(bytes) = read_bounded(&self.journal_path)? else {
            return Ok(());
        };
        let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
        let last = lines.len().saturating_sub(1);
        for (i, line) in lines.iter().enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let entry: Entry = match serde_json::from_slice(line) {
                Ok(entry) => entry,
                // The last line without its newline: a commit cut short by a crash, never
                // answered.
                Err(_) if i == last => {
                    warn!(path = %self.journal_path.display(), "controller journal: an unfinished last line (a crash during a commit) dropped");
                    break;
                }
                Err(source) => {
                    return Err(FileStoreError::Journal {
                        path: self.journal_path.clone(),
                        line: i + 1,
                        source,
                    })
                }
            };
            if entry.revision <= self.revision {
                continue;
            }
            self.revision = entry.revision;
            match entry.record {
                Some(set) => {
                    self.sets.insert(entry.name, (set, entry.revision));
                }
                None => {
                    self.sets.remove(&entry.name);
                }
            }
        }
        Ok(())
    }

    /// Reports to `events` (the controller) once started.
    pub fn reporting_to(mut self, events: Recipient<StoreEvent>) -> Self {
        self.events = Some(events);
        self
    }

    fn tell(&self, event: StoreEvent) {
        if let Some(events) = &self.events {
            events.do_send(event);
        }
    }

    /// Rewrites the snapshot with the whole state and empties the journal.
    fn compact(&mut self) -> std::io::Result<()> {
        self.journal = None;
        let saved = Saved {
            revision: self.revision,
            sets: self
                .sets
                .values()
                .map(|(set, revision)| SavedSet {
                    revision: *revision,
                    set: set.clone(),
                })
                .collect(),
        };
        let bytes = serde_json::to_vec_pretty(&saved).map_err(std::io::Error::other)?;
        write_atomically(&self.path, &bytes)?;
        self.snapshot_len = bytes.len() as u64;
        // Past this point a crash leaves journal lines the snapshot already holds: skipped.
        let journal = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.journal_path)?;
        journal.set_len(0)?;
        journal.sync_all()?;
        self.journal = Some((journal, 0));
        Ok(())
    }

    /// Makes the commit of `name` at the current revision durable: appended to the journal (or,
    /// when the journal is due, in a new snapshot).
    fn persist(&mut self, name: &str, record: Option<&BrokerSet>) -> std::io::Result<()> {
        let due = self
            .journal
            .as_ref()
            .is_none_or(|(_, len)| *len > MIN_COMPACTION_BYTES.max(self.snapshot_len));
        if due {
            return self.compact();
        }
        let mut line = serde_json::to_vec(&Entry {
            revision: self.revision,
            name: name.to_owned(),
            record: record.cloned(),
        })
        .map_err(std::io::Error::other)?;
        line.push(b'\n');
        let Some((journal, len)) = self.journal.as_mut() else {
            return self.compact();
        };
        let appended = journal.write_all(&line).and_then(|()| journal.sync_data());
        match appended {
            Ok(()) => {
                *len += line.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Undo a partial line; if even that fails, the next commit compacts first.
                if journal.set_len(*len).is_err() {
                    self.journal = None;
                }
                Err(e)
            }
        }
    }
}

impl FileStore {
    /// The broker sets held, by name (for the copy into etcd, `etcd_migrate`).
    pub fn broker_sets(&self) -> impl Iterator<Item = &BrokerSet> {
        self.sets.values().map(|(set, _)| set)
    }

    /// The snapshot's path (the journal is beside it).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the controller must know before its first request: the state, and that this node
    /// leads. The caller sends them before anything can connect (so no early request is
    /// answered "not leader").
    pub fn initial_events(&self) -> Vec<StoreEvent> {
        info!(path = %self.path.display(), sets = self.sets.len(), revision = self.revision,
            "controller state loaded (single controller, local files)");
        vec![
            StoreEvent::Loaded {
                sets: self.sets.values().cloned().collect(),
            },
            StoreEvent::Leadership {
                leader: Some(self.me.clone()),
                is_self: true,
                caught_up: 0,
            },
        ]
    }
}

impl Actor for FileStore {
    type Context = Context<Self>;
}

impl Handler<Commit> for FileStore {
    type Result = Result<Revision, StoreError>;

    fn handle(&mut self, commit: Commit, _: &mut Context<Self>) -> Self::Result {
        let current = self.sets.get(&commit.name).map_or(0, |(_, rev)| *rev);
        if current != commit.expected {
            return Err(StoreError::Conflict { current });
        }
        let before = self.sets.get(&commit.name).cloned();
        let previous_revision = self.revision;
        self.revision = self.revision.saturating_add(1);
        let revision = self.revision;
        match &commit.record {
            Some(set) => {
                self.sets
                    .insert(commit.name.clone(), (set.clone(), revision));
            }
            None => {
                self.sets.remove(&commit.name);
            }
        }
        if let Err(e) = self.persist(&commit.name, commit.record.as_ref()) {
            // Not written: the change did not happen.
            match before {
                Some(old) => self.sets.insert(commit.name.clone(), old),
                None => self.sets.remove(&commit.name),
            };
            self.revision = previous_revision;
            error!(path = %self.path.display(), error = %e, "cannot write the controller state");
            return Err(StoreError::Unavailable(format!(
                "cannot write {}: {e}",
                self.path.display()
            )));
        }
        self.tell(StoreEvent::Changed {
            name: commit.name,
            record: commit.record,
            revision,
        });
        Ok(revision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> LeaderInfo {
        LeaderInfo {
            id: "n0".into(),
            address: "127.0.0.1:9878".into(),
        }
    }

    fn dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("rmq-file-store-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn set(name: &str, code: &str) -> BrokerSet {
        serde_json::from_value(serde_json::json!({
            "cluster": "c", "name": name, "next_id": 2,
            "members": {"1": {"address": "127.0.0.1:10911", "check_code": code}},
            "master": null, "master_epoch": 0, "sync_state_set": [], "sync_state_set_epoch": 0
        }))
        .unwrap()
    }

    /// Commits `record` for `name` on `store` as the actor would.
    fn commit(store: &mut FileStore, name: &str, record: Option<BrokerSet>) -> Revision {
        store.revision += 1;
        match &record {
            Some(set) => {
                store
                    .sets
                    .insert(name.to_owned(), (set.clone(), store.revision));
            }
            None => {
                store.sets.remove(name);
            }
        }
        store.persist(name, record.as_ref()).unwrap();
        store.revision
    }

    #[test]
    fn commits_survive_a_restart_through_the_journal_and_compactions() {
        let dir = dir("journal");
        let mut store = FileStore::open(&dir, me()).unwrap();
        let code = "x".repeat(1024);
        for i in 0..2000 {
            commit(
                &mut store,
                &format!("b{}", i % 500),
                Some(set(&format!("b{}", i % 500), &code)),
            );
        }
        commit(&mut store, "b7", None);
        let journal = std::fs::metadata(dir.join(JOURNAL_NAME)).unwrap().len();
        let snapshot = std::fs::metadata(dir.join(FILE_NAME)).unwrap().len();
        assert!(
            journal <= MIN_COMPACTION_BYTES.max(snapshot) + 4096,
            "{journal} {snapshot}"
        );
        let (revision, sets) = (store.revision, store.sets.len());
        drop(store);
        let again = FileStore::open(&dir, me()).unwrap();
        assert_eq!((again.revision, again.sets.len()), (revision, sets));
        assert!(!again.sets.contains_key("b7"));
    }

    #[test]
    fn a_line_cut_by_a_crash_is_dropped_a_corrupt_one_names_the_file() {
        let dir = dir("cut");
        let mut store = FileStore::open(&dir, me()).unwrap();
        commit(&mut store, "a", Some(set("a", "1")));
        commit(&mut store, "b", Some(set("b", "2")));
        drop(store);
        let journal = dir.join(JOURNAL_NAME);
        let mut text = std::fs::read_to_string(&journal).unwrap();
        text.push_str("{\"revision\": 9, \"name\": \"c\", \"rec");
        std::fs::write(&journal, &text).unwrap();
        let store = FileStore::open(&dir, me()).unwrap();
        assert_eq!(store.revision, 2);
        assert_eq!(store.sets.len(), 2);
        drop(store);
        std::fs::write(&journal, format!("not json\n{text}\n")).unwrap();
        let Err(err) = FileStore::open(&dir, me()) else {
            panic!("a corrupt journal line stops the start");
        };
        let err = err.to_string();
        assert!(
            err.contains(JOURNAL_NAME) && err.contains("line 1"),
            "{err}"
        );
    }
}
