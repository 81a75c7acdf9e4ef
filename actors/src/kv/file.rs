//! The file backend of the KV store (`kv.backend = "file"`, the default): the tables in Java's
//! kvConfig.json format at `kv.path`, this NameServer's own. Writes go to a blocking thread, one
//! at a time; a change's reply waits for the write that contains it, but the actor keeps serving
//! reads meanwhile.

use std::path::{Path, PathBuf};

use actix::prelude::*;
use tokio::sync::oneshot;
use tracing::{error, warn};

use super::{Backend, KvStore, KvTables};
use crate::messages::KvReplyError;
use crate::persist::write_atomically;

/// The file and its write bookkeeping.
pub(super) struct FileSync {
    path: PathBuf,
    /// Bumped by every change; `persisted` is the last version on disk.
    version: u64,
    persisted: u64,
    writing: bool,
    /// Bumped by every reset (a contained panic, a restart): a write started before it is
    /// stale when it ends.
    epoch: u64,
    waiters: Vec<(u64, oneshot::Sender<Result<(), String>>)>,
}

impl FileSync {
    pub(super) fn new(path: PathBuf) -> Self {
        Self {
            path,
            version: 0,
            persisted: 0,
            writing: false,
            epoch: 0,
            waiters: Vec::new(),
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl KvStore {
    fn file(&mut self) -> Option<&mut FileSync> {
        match &mut self.backend {
            Backend::File(file) => Some(file),
            Backend::Etcd(_) => None,
        }
    }

    /// Records a change made in memory and returns a future resolving when it is on disk.
    pub(super) fn file_changed(
        &mut self,
        namespace: &str,
        key: &str,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<(), KvReplyError>> {
        let routes_updated = self.routes_update(namespace, key);
        let Some(file) = self.file() else {
            return Box::pin(async { Ok(()) });
        };
        file.version += 1;
        let (tx, rx) = oneshot::channel();
        file.waiters.push((file.version, tx));
        self.start_write(ctx);
        Box::pin(async move {
            if let Some(updated) = routes_updated {
                // Unreachable only while the registry is gone; its supervisor brings it back.
                let _ = updated.await;
            }
            match rx.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(reason)) => Err(KvReplyError::NotPersisted(reason)),
                Err(_) => Err(KvReplyError::NotPersisted("the KV store stopped".into())),
            }
        })
    }

    /// FlushKv: resolves once every change so far is on disk (true) or its write failed.
    pub(super) fn file_flush(&mut self, ctx: &mut Context<Self>) -> ResponseFuture<bool> {
        let Some(file) = self.file() else {
            return Box::pin(async { true });
        };
        if file.persisted == file.version {
            return Box::pin(async { true });
        }
        let (tx, rx) = oneshot::channel();
        file.waiters.push((file.version, tx));
        // After a failed save nothing else would write again until the next change: try now, so
        // the flush is answered by this attempt (a stop must not hang).
        self.start_write(ctx);
        Box::pin(async move { matches!(rx.await, Ok(Ok(()))) })
    }

    /// Starts a write of the table unless one is running (changes made meanwhile go out with
    /// the next, one write per round) or the file is current: a flood of changes costs one copy
    /// of the table per write, not per change.
    fn start_write(&mut self, ctx: &mut Context<Self>) {
        let Some(file) = self.file() else {
            return;
        };
        if file.writing || file.persisted == file.version {
            return;
        }
        file.writing = true;
        // Encoding a large table takes a while: only the copy happens on the actor.
        let snapshot = self.tables.clone();
        let Some(file) = self.file() else {
            return;
        };
        let version = file.version;
        let epoch = file.epoch;
        let path = file.path.clone();
        let write = crate::background::spawn(move || write_atomically(&path, &snapshot.to_json()));
        write
            .into_actor(self)
            .map(move |result, act, ctx| {
                let Some(file) = act.file() else {
                    return;
                };
                file.writing = false;
                if epoch != file.epoch {
                    // Started before a reset, which failed its waiters and reloaded the table:
                    // if it reached the file, the file now holds what the table no longer does;
                    // write the table again (changes made since the reset go with it).
                    if matches!(result, Ok(Ok(()))) {
                        file.persisted = 0;
                    }
                    act.start_write(ctx);
                    return;
                }
                let outcome = match result {
                    Ok(Ok(())) => {
                        file.persisted = version;
                        Ok(())
                    }
                    Ok(Err(err)) => Err(err.to_string()),
                    Err(join) => Err(format!("write task failed: {join}")),
                };
                if let Err(reason) = &outcome {
                    error!(path = %file.path.display(), error = %reason, "KV file not saved; kept in memory, retried with the next change");
                }
                let (done, pending): (Vec<_>, Vec<_>) =
                    file.waiters.drain(..).partition(|(v, _)| *v <= version);
                file.waiters = pending;
                for (_, waiter) in done {
                    let _ = waiter.send(outcome.clone());
                }
                // Changes made during the write go out now.
                let more = file.version > version;
                if outcome.is_err() {
                    act.save_failures += 1;
                }
                if more {
                    act.start_write(ctx);
                }
            })
            .spawn(ctx);
    }

    /// Back to what the file holds, as after a restart: changes not yet acknowledged are gone
    /// (their askers hear so), acknowledged ones are in the file. A write still running goes on
    /// (its end is recognised as stale): one write at a time, always, so that two never race
    /// on the temporary file. `write_lost`: the write's completion will never arrive (an actor
    /// restart drops the futures of its context).
    pub(super) fn file_reload(&mut self, write_lost: bool) {
        let Backend::File(file) = &mut self.backend else {
            return;
        };
        match KvTables::load(&file.path) {
            Ok(tables) => {
                warn!(path = %file.path.display(), "KV store restarting; reloaded from its file");
                self.tables = tables;
            }
            Err(err) => {
                warn!(error = %err, "KV store restarting; file unreadable, keeping the in-memory table")
            }
        }
        file.epoch += 1;
        if write_lost {
            file.writing = false;
        }
        file.persisted = file.version;
        for (_, waiter) in file.waiters.drain(..) {
            let _ = waiter.send(Err("the KV store restarted".into()));
        }
    }
}
