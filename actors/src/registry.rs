//! RouteRegistry: the single owner of the route tables, and nothing else: its handlers answer
//! with domain values (encoding is the connection's concern) and its notifications go as events
//! to the notifier. The rules live in [`crate::route`]; every change runs through one mechanism
//! ([`turns`], what each change does in [`changes`]), the questions are in [`reads`]. When a
//! change touches routes, it goes to every connection thread's route cache and the change's
//! answer waits until all of them applied it (docs/actors.md#route-queries).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use rmq_protocol::body::{KvTable, SharedRoute};
use tracing::{info, warn};

use crate::contain::Recover;
use crate::messages::*;
use crate::outbound::Notify;
use crate::route::RouteTables;
use crate::settings::RegistrySettings;

mod changes;
mod lists;
mod reads;
pub mod snapshots;
mod turns;

use turns::Turns;
pub use turns::{Change, TOPICS_PER_STEP};

/// Mailbox capacity: senders wait (backpressure) once this many messages are queued.
pub const REGISTRY_MAILBOX: usize = 16 * 1024;

/// The route registry actor. Its state is soft: brokers re-register every 30 s, so a restarted
/// registry (see [`actix::Supervised`]) is complete again within one registration period.
pub struct RouteRegistry {
    tables: RouteTables,
    /// Read at every use, so an `ApplySettings` takes effect at once.
    settings: RegistrySettings,
    /// Cluster-test mode: routes always carry orderTopicConf.
    cluster_test: bool,
    /// A copy of the KV namespace ORDER_TOPIC_CONFIG, kept current by the KV store's changes;
    /// `None` when it does not exist. Shared with the REGISTER_BROKER replies that carry it.
    order_topic_conf: Option<Arc<KvTable>>,
    /// When this registry started; route queries may wait `wait_for_service` after it.
    started_at: Instant,
    /// Bumped at every route change; survives restarts (worker caches compare against it).
    generation: u64,
    /// The route caches of the connection threads.
    workers: Vec<Recipient<InvalidateRoutes>>,
    /// Handler panics contained so far.
    panics: u64,
    /// The change being walked in turns, and the changes waiting for it.
    turns: Turns,
    /// Where NOTIFY_MIN_BROKER_ID_CHANGE goes (crate::outbound), when brokers are notified.
    notifier: Option<Recipient<Notify>>,
    /// Broker instances restored from a snapshot at start (`registry.warm_restart`).
    restored: usize,
    /// The snapshot writer, while warm restart is on.
    snapshots: Option<snapshots::Snapshots>,
    /// The topic lists, kept encoded while the tables stay as they are.
    topic_lists: lists::TopicLists,
}

fn new_tables(settings: &RegistrySettings) -> RouteTables {
    RouteTables::new(settings.route_options()).with_default_expiry(settings.broker_expiry)
}

impl RouteRegistry {
    /// `cluster_test`: Java's `clusterTest` mode (see docs/route-rules.md#cluster-test-mode).
    /// `workers`: the route caches of the connection threads, told of every route change.
    pub fn new(
        settings: RegistrySettings,
        cluster_test: bool,
        workers: Vec<Recipient<InvalidateRoutes>>,
    ) -> Self {
        Self {
            tables: new_tables(&settings),
            settings,
            cluster_test,
            order_topic_conf: None,
            started_at: Instant::now(),
            generation: 0,
            workers,
            panics: 0,
            turns: Turns::default(),
            notifier: None,
            restored: 0,
            snapshots: None,
            topic_lists: lists::TopicLists::default(),
        }
    }

    /// Sends NOTIFY_MIN_BROKER_ID_CHANGE through `notifier`.
    pub fn with_notifier(mut self, notifier: Recipient<Notify>) -> Self {
        self.notifier = Some(notifier);
        self
    }

    /// The route of `topic`, with its ORDER_TOPIC_CONFIG value when routes show it.
    fn route(&self, topic: &str) -> Option<SharedRoute> {
        let mut route = self.tables.shared_route(topic)?;
        if self.settings.order_message_enable || self.cluster_test {
            route.order_topic_conf = self
                .order_topic_conf
                .as_ref()
                .and_then(|conf| conf.table.get(topic).cloned());
        }
        Some(route)
    }

    /// Applies a change of ORDER_TOPIC_CONFIG. Routes show a value only with
    /// orderMessageEnable, but it may be switched on later: every topic whose value changed
    /// counts as changed either way.
    fn change_order_conf(&mut self, change: OrderTopicConf) {
        match change {
            OrderTopicConf::Whole(new) => {
                let old = self.order_topic_conf.take();
                let empty = BTreeMap::new();
                let old_table = old.as_ref().map_or(&empty, |conf| &conf.table);
                let new_table = new.as_ref().unwrap_or(&empty);
                for topic in old_table.keys().chain(new_table.keys()) {
                    if old_table.get(topic) != new_table.get(topic) {
                        self.tables.invalidate_topic(topic);
                    }
                }
                self.order_topic_conf = new.map(|table| Arc::new(KvTable { table }));
            }
            OrderTopicConf::Entry { key, value } => {
                let conf = self.order_topic_conf.get_or_insert_with(Default::default);
                let table = &mut Arc::make_mut(conf).table;
                let unchanged = match value {
                    Some(value) => table.insert(key.clone(), value.clone()) == Some(value),
                    None => table.remove(&key).is_none(),
                };
                if !unchanged {
                    self.tables.invalidate_topic(&key);
                }
            }
        }
    }

    /// NOTIFY_MIN_BROKER_ID_CHANGE (905) for the groups whose smallest broker id changed, when
    /// `notify_min_broker_id_changed` is on (Java's `notifyMinBrokerIdChanged`).
    fn notify_min_id_changes(&mut self) {
        let changes = self.tables.take_min_id_changes();
        if !self.settings.notify_min_broker_id_changed {
            return;
        }
        let Some(notifier) = &self.notifier else {
            return;
        };
        for change in changes {
            if let Some(notify) = Notify::min_broker_id_changed(&change) {
                info!(broker = %change.name, min = ?change.addrs.keys().next(), notify = ?notify.to,
                    offline = ?change.offline, "min broker id changed; brokers notified");
                notifier.do_send(notify);
            }
        }
    }

    /// Sends the route changes the last handler made to every worker; resolves once all have
    /// applied them (at once when nothing changed).
    fn publish(&mut self) -> impl Future<Output = ()> + 'static {
        self.notify_min_id_changes();
        let changes = self.tables.take_changes();
        let sends: Vec<_> = if changes.is_empty() || self.workers.is_empty() {
            Vec::new()
        } else {
            self.generation += 1;
            let msg = InvalidateRoutes {
                generation: self.generation,
                changes: Arc::new(changes),
            };
            self.workers.iter().map(|w| w.send(msg.clone())).collect()
        };
        async move {
            for sent in sends {
                // A worker that is gone has no cache left to be stale.
                let _ = sent.await;
            }
        }
    }

    /// `value` once the route changes made so far are everywhere.
    fn answer<T: 'static>(&mut self, value: T) -> ResponseFuture<T> {
        let published = self.publish();
        Box::pin(async move {
            published.await;
            value
        })
    }

    /// Whether route queries wait for brokers to register first (Java's ready check; its
    /// cluster-test processor has none).
    fn waiting_for_service(&self) -> bool {
        // Routes restored from a snapshot are served at once (they are what a wait would get).
        self.restored == 0
            && self.settings.need_wait_for_service
            && !self.cluster_test
            && self.started_at.elapsed() < self.settings.wait_for_service
    }

    fn stats(&self) -> RouteStats {
        RouteStats {
            topics: self.tables.topic_count(),
            broker_groups: self.tables.broker_group_count(),
            clusters: self.tables.cluster_count(),
            live_brokers: self.tables.live_count(),
            unconfirmed_brokers: self.tables.unconfirmed_count(),
            sliced_changes: self.turns.sliced(),
            waited_changes: self.turns.waited(),
        }
    }
}

impl Actor for RouteRegistry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(REGISTRY_MAILBOX);
        self.start_snapshots(ctx);
        info!("route registry started");
    }
}

impl RouteRegistry {
    /// Empty tables, as after a restart: brokers fill them again within one registration
    /// period; settings, the KV copy and the generation survive (they are not derived from broker
    /// traffic).
    fn reset(&mut self, ctx: &mut Context<Self>) {
        warn!(
            topics = self.tables.topic_count(),
            brokers = self.tables.live_count(),
            "route registry restarting; routes come back with the next broker registrations"
        );
        let counters = self.tables.counters();
        self.tables = new_tables(&self.settings).with_counters(counters);
        self.tables.invalidate_all();
        self.topic_lists = lists::TopicLists::default();
        self.started_at = Instant::now();
        self.restored = 0;
        // Every worker forgets what the old tables said.
        actix::spawn(self.publish());
        // A registration half walked is dropped (its broker sends it again in 30 s); the
        // changes that waited for it run against the new tables.
        self.abandon_walk(ctx);
    }
}

impl Supervised for RouteRegistry {
    fn restarting(&mut self, ctx: &mut Self::Context) {
        self.reset(ctx);
    }
}

impl Recover for RouteRegistry {
    const NAME: &'static str = "route registry";

    fn recover(&mut self, ctx: &mut Self::Context) {
        self.reset(ctx);
    }

    fn count_panic(&mut self) {
        self.panics += 1;
    }

    fn panics(&self) -> u64 {
        self.panics
    }
}

contained_actor!(RouteRegistry);

impl Handler<Restart> for RouteRegistry {
    type Result = ();

    fn handle(&mut self, _: Restart, ctx: &mut Context<Self>) {
        warn!("route registry stopping on request; its supervisor restarts it");
        ctx.stop();
    }
}
