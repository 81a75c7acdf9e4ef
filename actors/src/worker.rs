//! What the connections of one worker thread share: the services and settings (one copy per
//! thread, not per connection), and the thread's share of two server-wide bounds — requests
//! waiting for an actor (admission) and bytes queued for peers (the outbound budget). Each
//! bound is split evenly between the worker threads, so each thread enforces its share on its
//! own, without a lock or a message per request; the server-wide bound is the sum of the shares.
//! Only the connections of that thread touch it (it is `Rc`, never sent to another thread).
//!
//! Admission (docs/limits.md#overload): a request that must wait for an actor counts as pending
//! on its thread until answered. Writes (registrations, admin) are refused beyond
//! `max_pending_writes` pending requests of any class, reads (routes, cluster info, topic lists,
//! KV reads) only beyond `max_pending_reads`, which is larger: reads keep priority. Shedding is
//! fair per connection: one connection may hold at most a quarter of a bound, and past half of
//! it only connections with fewer than [`FAIR_PENDING`] pending requests are admitted, so a
//! client that floods cannot take the places of the others.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use actix::Recipient;

use crate::codes::Class;
use crate::messages::ConnectionClosed;
use crate::metrics::SharedMetrics;
use crate::route_cache::CacheId;
use crate::services::{Port, Services};
use crate::settings::ServerSettings;

/// Past half a bound, connections with at least this many pending requests wait their turn.
pub const FAIR_PENDING: usize = 4;

/// The shared state of one server's connections on one thread.
pub struct WorkerShare {
    pub services: Services,
    pub settings: ServerSettings,
    /// Told when a connection stops, to free its slot.
    pub listener: Recipient<ConnectionClosed>,
    pub bounds: Bounds,
    /// What this thread's connections count for `/metrics` (crate::metrics).
    pub metrics: SharedMetrics,
}

/// This thread's shares of the admission and outbound bounds, and what they count.
#[derive(Debug)]
pub struct Bounds {
    pending: Cell<usize>,
    read_bound: usize,
    write_bound: usize,
    queued: Cell<usize>,
    queued_bound: usize,
}

thread_local! {
    /// By server and port: (its cache id, whether the port is the controller's).
    static SHARES: RefCell<HashMap<(CacheId, Port), Weak<WorkerShare>>> = RefCell::new(HashMap::new());
}

impl WorkerShare {
    /// This thread's share for the server and port whose services these are; made by its
    /// first connection here, dropped with its last.
    pub fn of_this_thread(
        services: &Services,
        settings: &ServerSettings,
        listener: &Recipient<ConnectionClosed>,
    ) -> Rc<WorkerShare> {
        SHARES.with(|shares| {
            let mut shares = shares.borrow_mut();
            let key = (services.route_cache, services.port);
            if let Some(share) = shares.get(&key).and_then(Weak::upgrade) {
                return share;
            }
            shares.retain(|_, share| share.strong_count() > 0);
            let share = Rc::new(WorkerShare::new(
                services.clone(),
                settings.clone(),
                listener.clone(),
            ));
            shares.insert(key, Rc::downgrade(&share));
            share
        })
    }

    pub fn new(
        services: Services,
        settings: ServerSettings,
        listener: Recipient<ConnectionClosed>,
    ) -> Self {
        let workers = settings.worker_count().max(1);
        let per_worker = |bound: usize| (bound / workers).max(1);
        WorkerShare {
            bounds: Bounds::new(
                per_worker(settings.max_pending_reads),
                per_worker(settings.max_pending_writes),
                per_worker(settings.max_queued_bytes),
            ),
            metrics: crate::metrics::of_this_thread(services.route_cache),
            services,
            settings,
            listener,
        }
    }

    /// Counts into this thread's metrics (skipped in the impossible case that they are being
    /// counted into already: one thread, no re-entry).
    pub fn count(&self, counting: impl FnOnce(&mut crate::metrics::WorkerMetrics)) {
        if let Ok(mut metrics) = self.metrics.try_borrow_mut() {
            counting(&mut metrics);
        }
    }

    /// This thread's share of NameServer `id`'s own port, while a connection holds it.
    pub fn find(id: CacheId) -> Option<Rc<WorkerShare>> {
        SHARES.with(|shares| {
            shares
                .borrow()
                .get(&(id, Port::NameServer))
                .and_then(Weak::upgrade)
        })
    }
}

impl Bounds {
    pub fn new(read_bound: usize, write_bound: usize, queued_bound: usize) -> Self {
        Bounds {
            pending: Cell::new(0),
            read_bound,
            write_bound,
            queued: Cell::new(0),
            queued_bound,
        }
    }

    /// Whether a request of `class` from a connection with `mine` pending requests may wait for
    /// an actor now (see the module docs).
    pub fn admits(&self, class: Class, mine: usize) -> bool {
        let bound = match class {
            Class::Read => self.read_bound,
            Class::Write => self.write_bound,
        };
        let pending = self.pending.get();
        if pending >= bound || mine >= (bound / 4).max(1) {
            return false;
        }
        pending < bound / 2 || mine < FAIR_PENDING
    }

    /// A request started waiting for an actor.
    /// Requests of this thread waiting for an actor.
    pub fn pending(&self) -> usize {
        self.pending.get()
    }

    pub fn pending_started(&self) {
        self.pending.set(self.pending.get() + 1);
    }

    /// A request got its answer.
    pub fn pending_done(&self) {
        self.pending.set(self.pending.get().saturating_sub(1));
    }

    /// Bytes queued for peers on this thread went from `before` to `after` on one connection.
    pub fn queued_changed(&self, before: usize, after: usize) {
        self.queued
            .set((self.queued.get() + after).saturating_sub(before));
    }

    /// Whether this thread's connections queue more than its share of `max_queued_bytes`.
    pub fn over_queued_budget(&self) -> bool {
        self.queued.get() > self.queued_bound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(reads: usize, writes: usize) -> Bounds {
        Bounds::new(reads, writes, 100)
    }

    #[test]
    fn reads_keep_priority_and_a_flooder_is_capped() {
        let share = share(64, 32);
        // One connection alone may hold a quarter of the write bound.
        for mine in 0..8 {
            assert!(share.admits(Class::Write, mine));
            share.pending_started();
        }
        assert!(!share.admits(Class::Write, 8));
        // Others come in; past half the bound only those with few pending are admitted.
        for _ in 8..16 {
            share.pending_started();
        }
        assert!(!share.admits(Class::Write, FAIR_PENDING));
        assert!(share.admits(Class::Write, 0));
        for _ in 16..32 {
            share.pending_started();
        }
        // Writes are full; reads still come in.
        assert!(!share.admits(Class::Write, 0));
        assert!(share.admits(Class::Read, 0));
        for _ in 0..32 {
            share.pending_done();
        }
        assert!(share.admits(Class::Write, 0));
    }

    #[test]
    fn queued_bytes_are_summed_per_thread() {
        let share = share(1, 1);
        share.queued_changed(0, 80);
        share.queued_changed(0, 30);
        assert!(share.over_queued_budget());
        share.queued_changed(80, 0);
        assert!(!share.over_queued_budget());
    }
}
