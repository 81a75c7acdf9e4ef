//! The route cache of a connection thread: encoded route bodies, so that a route query is
//! answered on the thread that read it — a hash lookup and a reference-count bump — instead of a
//! round trip to the registry's thread (docs/actors.md#route-queries).
//!
//! The RouteRegistry stays the only owner of the routes. It answers a miss with the body and its
//! *generation* (a counter it bumps whenever routes change), and it sends every change to every
//! worker's [`RouteCacheKeeper`] ([`InvalidateRoutes`]) — waiting for their acknowledgements
//! before it answers the request that caused the change, so that no client can see an old route
//! after the reply to its change. Only immutable data crosses threads: `Bytes` bodies and
//! `Arc`-shared change lists. The cache itself is owned by its worker thread (a thread-local,
//! one per NameServer) and touched only there: by the keeper applying changes and by the
//! connections of that thread looking up and filling.
//!
//! A fill can race with a change: a body the registry produced before a change may arrive after
//! the change's invalidation. Bodies carry the generation they were produced at, and the cache
//! remembers the generation of the newest change it applied, so such a body is refused (as is,
//! rarely, a body that raced with a change of another topic: one more miss). Only topics with a
//! body have an entry, so a change of many topics the thread never held costs a lookup each.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use actix::prelude::*;
use bytes::Bytes;
use rmq_protocol::custom_headers::RouteQuery;
use rmq_protocol::fastjson::JsonStyle;
use rmq_protocol::RemotingCommand;
use tracing::debug;

use crate::contain::{contain, Contained, Recover};
use crate::messages::InvalidateRoutes;
use crate::route::{RouteChanges, TopicName};

/// Topics a worker keeps bodies of, at most (the byte budget usually binds first).
const MAX_ENTRIES: usize = 256 * 1024;

/// Which NameServer a worker cache belongs to (several can run in one process).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheId(u64);

impl CacheId {
    /// A new id, unique in the process.
    pub fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// One topic in a worker cache: at least one of its bodies (legacy and standard JSON).
#[derive(Debug, Default)]
struct Cached {
    bodies: [Option<Bytes>; 2],
}

fn slot(style: JsonStyle) -> usize {
    match style {
        JsonStyle::Legacy => 0,
        JsonStyle::Standard => 1,
    }
}

/// The routes one worker thread holds. Only topics with a body have an entry: a change to a
/// topic the worker does not hold costs one lookup and leaves nothing behind, so a registration
/// of 100,000 new topics does not fill the cache with their names.
#[derive(Debug)]
pub struct WorkerRoutes {
    entries: HashMap<TopicName, Cached>,
    /// No body produced before this generation may be filled in for a topic without an entry:
    /// the newest change seen of any topic the worker did not hold (or dropped). A fill that
    /// races with a change of another topic is refused too, which only costs one more miss.
    floor: u64,
    bytes: usize,
    limit: usize,
}

impl WorkerRoutes {
    /// An empty cache holding at most `limit` bytes of bodies.
    pub fn new(limit: usize) -> Self {
        Self {
            entries: HashMap::new(),
            floor: 0,
            bytes: 0,
            limit,
        }
    }

    /// The cached body of `topic` in `style`.
    pub fn get(&self, topic: &str, style: JsonStyle) -> Option<Bytes> {
        self.entries.get(topic)?.bodies[slot(style)].clone()
    }

    /// Keeps a body the registry produced at `generation`, unless its topic may have changed
    /// since.
    pub fn fill(&mut self, topic: &str, style: JsonStyle, body: Bytes, generation: u64) {
        if generation < self.floor || self.bytes + body.len() > self.limit {
            return;
        }
        if self.entries.len() >= MAX_ENTRIES && !self.entries.contains_key(topic) {
            return;
        }
        let cached = match self.entries.get_mut(topic) {
            Some(cached) => cached,
            None => self.entries.entry(TopicName::new(topic)).or_default(),
        };
        let slot = &mut cached.bodies[slot(style)];
        self.bytes = self.bytes - slot.as_ref().map_or(0, Bytes::len) + body.len();
        *slot = Some(body);
    }

    /// Applies a change of the registry.
    pub fn invalidate(&mut self, change: &InvalidateRoutes) {
        self.floor = self.floor.max(change.generation);
        if change.changes.all {
            self.entries.clear();
            self.bytes = 0;
            return;
        }
        for topic in &change.changes.topics {
            if let Some(cached) = self.entries.remove(topic.as_str()) {
                let held: usize = cached.bodies.iter().flatten().map(Bytes::len).sum();
                self.bytes = self.bytes.saturating_sub(held);
            }
        }
    }

    /// Bytes of bodies held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Topics held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

thread_local! {
    static CACHES: RefCell<HashMap<CacheId, WorkerCache>> = RefCell::new(HashMap::new());
}

/// This thread's route cache of one NameServer, as its connections hold it.
#[derive(Debug, Clone)]
pub struct WorkerCache(Rc<RefCell<WorkerRoutes>>);

impl WorkerCache {
    /// This thread's cache of NameServer `id`, if its keeper runs here.
    pub fn of_this_thread(id: CacheId) -> Option<Self> {
        CACHES.with(|caches| caches.borrow().get(&id).cloned())
    }

    /// GET_ROUTEINFO_BY_TOPIC from this cache, read from the header without copying anything:
    /// `Some(hit)` when the cache was asked (not for a zone-filtered query or one without a
    /// topic, which the registry answers).
    pub fn answer(&self, cmd: &RemotingCommand) -> Option<Option<Bytes>> {
        let query = RouteQuery::of(cmd);
        match (query.topic, query.zone) {
            (Some(topic), None) => Some(self.lookup(topic, query.style)),
            _ => None,
        }
    }

    /// The body of `topic` in `style`.
    pub fn lookup(&self, topic: &str, style: JsonStyle) -> Option<Bytes> {
        self.0.try_borrow().ok()?.get(topic, style)
    }

    /// Bytes of bodies held (0 while the cache is being changed).
    pub fn bytes(&self) -> usize {
        self.0.try_borrow().map_or(0, |routes| routes.bytes())
    }

    /// Keeps a body the registry produced at `generation` (see [`WorkerRoutes::fill`]).
    pub fn fill(&self, topic: &str, style: JsonStyle, body: Bytes, generation: u64) {
        if let Ok(mut routes) = self.0.try_borrow_mut() {
            routes.fill(topic, style, body, generation);
        }
    }

    fn invalidate(&self, change: &InvalidateRoutes) {
        if let Ok(mut routes) = self.0.try_borrow_mut() {
            routes.invalidate(change);
        }
    }
}

/// The actor of a worker thread that applies the registry's changes to the thread's cache; it
/// creates the cache when it starts and drops it when it stops.
pub struct RouteCacheKeeper {
    pub(crate) id: CacheId,
    limit: usize,
    /// The generation of the last change it was sent.
    generation: u64,
    /// Handler panics contained so far.
    panics: u64,
}

impl RouteCacheKeeper {
    pub fn new(id: CacheId, limit: usize) -> Self {
        Self {
            id,
            limit,
            generation: 0,
            panics: 0,
        }
    }
}

impl Recover for RouteCacheKeeper {
    const NAME: &'static str = "route cache keeper";

    /// A change half applied could leave a stale route: the whole cache goes, and bodies older
    /// than the change are refused.
    fn recover(&mut self, _: &mut Self::Context) {
        if let Some(cache) = WorkerCache::of_this_thread(self.id) {
            cache.invalidate(&InvalidateRoutes {
                generation: self.generation,
                changes: Arc::new(RouteChanges {
                    all: true,
                    topics: Vec::new(),
                }),
            });
        }
    }

    fn count_panic(&mut self) {
        self.panics += 1;
    }

    fn panics(&self) -> u64 {
        self.panics
    }
}

contained_actor!(RouteCacheKeeper);

impl Actor for RouteCacheKeeper {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Self::Context) {
        let cache = WorkerCache(Rc::new(RefCell::new(WorkerRoutes::new(self.limit))));
        CACHES.with(|caches| caches.borrow_mut().insert(self.id, cache));
        debug!(cache = ?self.id, "worker route cache ready");
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        CACHES.with(|caches| caches.borrow_mut().remove(&self.id));
    }
}

impl Handler<InvalidateRoutes> for RouteCacheKeeper {
    type Result = Contained<()>;

    fn handle(&mut self, msg: InvalidateRoutes, ctx: &mut Context<Self>) -> Self::Result {
        self.generation = self.generation.max(msg.generation);
        contain(self, ctx, "InvalidateRoutes", move |this, _| {
            if let Some(cache) = WorkerCache::of_this_thread(this.id) {
                cache.invalidate(&msg);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::route::RouteChanges;

    fn change(generation: u64, topics: &[&str], all: bool) -> InvalidateRoutes {
        InvalidateRoutes {
            generation,
            changes: Arc::new(RouteChanges {
                all,
                topics: topics.iter().map(|t| TopicName::new(t)).collect(),
            }),
        }
    }

    #[test]
    fn a_body_older_than_its_topics_change_is_refused() {
        let mut cache = WorkerRoutes::new(1 << 20);
        cache.fill("T", JsonStyle::Standard, Bytes::from_static(b"v1"), 1);
        assert_eq!(cache.get("T", JsonStyle::Standard).unwrap(), "v1");
        assert_eq!(cache.get("T", JsonStyle::Legacy), None);
        cache.invalidate(&change(2, &["T"], false));
        assert_eq!(cache.get("T", JsonStyle::Standard), None);
        // A reply produced before the change arrives late: refused.
        cache.fill("T", JsonStyle::Standard, Bytes::from_static(b"v1"), 1);
        assert_eq!(cache.get("T", JsonStyle::Standard), None);
        // One produced after it is kept.
        cache.fill("T", JsonStyle::Standard, Bytes::from_static(b"v2"), 2);
        assert_eq!(cache.get("T", JsonStyle::Standard).unwrap(), "v2");
        // Other topics are untouched by a change of T.
        cache.fill("U", JsonStyle::Legacy, Bytes::from_static(b"u"), 2);
        cache.invalidate(&change(3, &["T"], false));
        assert_eq!(cache.get("U", JsonStyle::Legacy).unwrap(), "u");
        // All changed: everything goes, and nothing older comes back.
        cache.invalidate(&change(4, &[], true));
        assert_eq!(cache.get("U", JsonStyle::Legacy), None);
        cache.fill("U", JsonStyle::Legacy, Bytes::from_static(b"u"), 3);
        assert_eq!(cache.get("U", JsonStyle::Legacy), None);
        assert_eq!(cache.bytes(), 0);
    }

    #[test]
    fn the_budget_is_kept() {
        let mut cache = WorkerRoutes::new(4);
        cache.fill("A", JsonStyle::Legacy, Bytes::from_static(b"abc"), 1);
        cache.fill("B", JsonStyle::Legacy, Bytes::from_static(b"abc"), 1);
        assert!(cache.get("B", JsonStyle::Legacy).is_none());
        assert_eq!(cache.bytes(), 3);
    }

    #[test]
    fn a_change_of_topics_not_held_leaves_nothing_behind() {
        let mut cache = WorkerRoutes::new(1 << 20);
        cache.fill("Keep", JsonStyle::Legacy, Bytes::from_static(b"k"), 5);
        let many: Vec<String> = (0..MAX_ENTRIES + 1).map(|i| format!("t{i}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        cache.invalidate(&change(9, &refs, false));
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get("Keep", JsonStyle::Legacy).unwrap(), "k");
        // A late body of a changed topic is still refused; a newer one is kept.
        cache.fill("t7", JsonStyle::Legacy, Bytes::from_static(b"old"), 8);
        assert_eq!(cache.get("t7", JsonStyle::Legacy), None);
        cache.fill("t7", JsonStyle::Legacy, Bytes::from_static(b"new"), 9);
        assert_eq!(cache.get("t7", JsonStyle::Legacy).unwrap(), "new");
    }
}
