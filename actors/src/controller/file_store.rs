//! The controller's store without etcd: one local file under `controllerStorePath`, for a
//! single embedded controller (a laptop, a one-NameServer test cluster). It is always the
//! leader. Every commit rewrites the file crash-safely ([`persist`](crate::persist)) before it
//! is answered, so an answered change survives a crash, as Java's answers come after the
//! DLedger commit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use actix::prelude::*;
use serde::{Deserialize, Serialize};
use tracing::{error, info};

use super::replicas::BrokerSet;
use super::store::{Commit, LeaderInfo, Revision, StoreError, StoreEvent};
use crate::persist::write_atomically;

/// The file's name under `controllerStorePath`.
pub const FILE_NAME: &str = "controller-state.json";

/// Largest state file read at start: thousands of broker sets fit in a few MiB.
const MAX_FILE_BYTES: u64 = 64 << 20;

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

/// Why the state file could not be read at start.
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
}

/// The single-node store: sole owner of the state file.
pub struct FileStore {
    path: PathBuf,
    revision: Revision,
    sets: BTreeMap<String, (BrokerSet, Revision)>,
    me: LeaderInfo,
    /// The controller, once known ([`FileStore::reporting_to`]).
    events: Option<Recipient<StoreEvent>>,
}

impl FileStore {
    /// Reads `<dir>/controller-state.json` (none yet: an empty state). Nothing is written
    /// until the first commit.
    pub fn open(dir: &Path, me: LeaderInfo) -> Result<Self, FileStoreError> {
        let path = dir.join(FILE_NAME);
        let saved = match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Saved::default(),
            Err(source) => return Err(FileStoreError::Read { path, source }),
            Ok(meta) if meta.len() > MAX_FILE_BYTES => {
                return Err(FileStoreError::TooLarge {
                    len: meta.len(),
                    path,
                })
            }
            Ok(_) => {
                let bytes = std::fs::read(&path).map_err(|source| FileStoreError::Read {
                    path: path.clone(),
                    source,
                })?;
                serde_json::from_slice(&bytes).map_err(|source| FileStoreError::Parse {
                    path: path.clone(),
                    source,
                })?
            }
        };
        let sets = saved
            .sets
            .into_iter()
            .map(|s| (s.set.name.clone(), (s.set, s.revision)))
            .collect();
        Ok(FileStore {
            path,
            revision: saved.revision,
            sets,
            me,
            events: None,
        })
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

    fn save(&self) -> std::io::Result<()> {
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
        write_atomically(&self.path, &bytes)
    }
}

impl FileStore {
    /// What the controller must know before its first request: the state, and that this node
    /// leads. The caller sends them before anything can connect (so no early request is
    /// answered "not leader").
    pub fn initial_events(&self) -> Vec<StoreEvent> {
        info!(path = %self.path.display(), sets = self.sets.len(), revision = self.revision,
            "controller state loaded (single controller, local file)");
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
        let revision = self.revision.saturating_add(1);
        match &commit.record {
            Some(set) => {
                self.sets
                    .insert(commit.name.clone(), (set.clone(), revision));
            }
            None => {
                self.sets.remove(&commit.name);
            }
        }
        if let Err(e) = self.save() {
            // Not written: the change did not happen.
            match before {
                Some(old) => self.sets.insert(commit.name.clone(), old),
                None => self.sets.remove(&commit.name),
            };
            error!(path = %self.path.display(), error = %e, "cannot write the controller state");
            return Err(StoreError::Unavailable(format!(
                "cannot write {}: {e}",
                self.path.display()
            )));
        }
        self.revision = revision;
        self.tell(StoreEvent::Changed {
            name: commit.name,
            record: commit.record,
            revision,
        });
        Ok(revision)
    }
}
