//! Warm restart (`registry.warm_restart`, docs/route-rules.md#warm-restart): the registry writes
//! its tables to `registry.snapshot_path` every `registry.snapshot_interval` when they changed,
//! and when the server stops ([`SaveRoutes`]); a start reads the file back ([`load`]) and the
//! registry serves what it restored at once ([`RouteRegistry::with_restored`]).
//!
//! The snapshot is taken on the registry's thread (one pass over the tables); encoding it and
//! writing it crash-safely (`persist::write_atomically`) run on a writer thread of their own,
//! one at a time.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use actix::prelude::*;
use tracing::{info, warn};

use super::RouteRegistry;
use crate::messages::SaveRoutes;
use crate::route::RouteSnapshot;

/// A snapshot file above this size is not read (about 10 million topics).
pub const MAX_SNAPSHOT_BYTES: u64 = 1 << 30;

/// Milliseconds since the Unix epoch now (0 on a clock before 1970).
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Reads the snapshot at `path`. No file: `Ok(None)`. A file that cannot be read or decoded is
/// the error's text: the caller logs it and starts empty (never fatal).
pub fn load(path: &Path) -> Result<Option<RouteSnapshot>, String> {
    let size = match std::fs::metadata(path) {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    if size > MAX_SNAPSHOT_BYTES {
        return Err(format!(
            "{}: {size} bytes, above the {MAX_SNAPSHOT_BYTES} a snapshot may have",
            path.display()
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| format!("{}: not a route snapshot: {e}", path.display()))
}

/// What the registry knows of its snapshots.
pub(super) struct Snapshots {
    /// Writes one snapshot at a time, on a thread of its own.
    writer: Addr<SnapshotWriter>,
    /// The state the file holds (see [`RouteRegistry::snapshot_key`]); `None`: nothing saved.
    saved: Option<SnapshotKey>,
    /// A periodic write is under way: the next periodic one is skipped meanwhile.
    writing: bool,
}

/// Changes when the tables change in a way a snapshot shows.
pub(super) type SnapshotKey = (u64, u64, u64, u64, usize);

impl RouteRegistry {
    /// Restores the tables from `snapshot` (brokers unconfirmed, docs); a snapshot that does not
    /// fit (too old, from the future, another format) is logged and left.
    pub fn with_restored(mut self, snapshot: RouteSnapshot) -> Self {
        let grace = self.settings.restore_grace;
        match self
            .tables
            .restore(snapshot, Instant::now(), unix_ms(), grace)
        {
            Ok(brokers) => {
                self.restored = brokers;
                info!(
                    brokers,
                    topics = self.tables.topic_count(),
                    grace = ?grace,
                    "routes restored from the snapshot; each broker is unconfirmed until it registers"
                );
            }
            Err(why) => warn!(reason = %why, "route snapshot not restored; starting empty"),
        }
        self
    }

    /// Writes the tables every `snapshot_interval` while warm restart is on.
    pub(super) fn start_snapshots(&mut self, ctx: &mut Context<Self>) {
        if !self.settings.warm_restart {
            return;
        }
        // A restarted registry (Supervised) keeps its writer; its timers start again.
        if self.snapshots.is_none() {
            let path = crate::settings::expand_home(&self.settings.snapshot_path);
            self.snapshots = Some(Snapshots {
                writer: SyncArbiter::start(1, move || SnapshotWriter { path: path.clone() }),
                saved: None,
                writing: false,
            });
        }
        ctx.run_interval(self.settings.snapshot_interval, |act, ctx| {
            let key = act.snapshot_key();
            let Some(duty) = act.snapshots.as_mut() else {
                return;
            };
            if duty.writing || duty.saved == Some(key) {
                return;
            }
            duty.writing = true;
            let write = duty
                .writer
                .send(WriteSnapshot(act.tables.snapshot(unix_ms())));
            ctx.spawn(write.into_actor(act).map(move |result, act, _| {
                if let Some(duty) = act.snapshots.as_mut() {
                    duty.writing = false;
                    if matches!(result, Ok(Ok(()))) {
                        duty.saved = Some(key);
                    }
                }
            }));
        });
    }

    fn snapshot_key(&self) -> SnapshotKey {
        let c = self.tables.counters();
        (
            self.generation,
            c.registrations_new,
            c.expiries,
            c.channel_close_removals,
            self.tables.live_count(),
        )
    }
}

/// One snapshot to write.
#[derive(Message)]
#[rtype(result = "Result<(), String>")]
struct WriteSnapshot(RouteSnapshot);

/// Encodes and writes snapshots, one at a time, crash-safely.
struct SnapshotWriter {
    path: PathBuf,
}

impl Actor for SnapshotWriter {
    type Context = SyncContext<Self>;
}

impl Handler<WriteSnapshot> for SnapshotWriter {
    type Result = Result<(), String>;

    fn handle(&mut self, msg: WriteSnapshot, _: &mut SyncContext<Self>) -> Self::Result {
        let bytes = serde_json::to_vec(&msg.0).map_err(|e| e.to_string())?;
        let written = crate::persist::write_atomically(&self.path, &bytes)
            .map_err(|e| format!("{}: {e}", self.path.display()));
        if let Err(why) = &written {
            warn!(error = %why, "route snapshot not written");
        }
        written
    }
}

impl Handler<SaveRoutes> for RouteRegistry {
    type Result = ResponseFuture<Result<(), String>>;

    /// The server stops: the tables as they are now are written (after any write under way).
    fn handle(&mut self, _: SaveRoutes, _: &mut Context<Self>) -> Self::Result {
        let Some(duty) = &self.snapshots else {
            return Box::pin(async { Ok(()) });
        };
        let snapshot = self.tables.snapshot(unix_ms());
        let brokers = snapshot.brokers.len();
        let write = duty.writer.send(WriteSnapshot(snapshot));
        Box::pin(async move {
            let written = write.await.map_err(|e| e.to_string()).and_then(|r| r);
            if written.is_ok() {
                info!(brokers, "route snapshot written for the next start");
            }
            written
        })
    }
}
