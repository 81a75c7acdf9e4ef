//! A scrape's visit to a connection thread: the thread's [`RouteCacheKeeper`] answers
//! [`CollectWorkerMetrics`] with a copy of what the thread counted (crate::metrics), its route
//! cache's bytes and its requests waiting for an actor.

use actix::prelude::*;

use crate::metrics::{self, CollectWorkerMetrics};
use crate::route_cache::{RouteCacheKeeper, WorkerCache};
use crate::worker::WorkerShare;

impl Handler<CollectWorkerMetrics> for RouteCacheKeeper {
    type Result = MessageResult<CollectWorkerMetrics>;

    fn handle(&mut self, _: CollectWorkerMetrics, _: &mut Context<Self>) -> Self::Result {
        let mut snapshot = metrics::of_this_thread(self.id)
            .try_borrow_mut()
            .map(|mut m| {
                m.settle();
                m.snapshot()
            })
            .unwrap_or_default();
        snapshot.route_cache_bytes = WorkerCache::of_this_thread(self.id).map_or(0, |c| c.bytes());
        snapshot.pending_requests =
            WorkerShare::find(self.id).map_or(0, |share| share.bounds.pending());
        MessageResult(snapshot)
    }
}
