//! RouteRegistry: the single owner of the route tables. Handlers are short and synchronous; the
//! rules live in [`crate::route`]. When a handler changes routes, the change goes to every
//! connection thread's route cache and the handler's answer waits until all of them applied it
//! (docs/actors.md#route-queries).

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use bytes::Bytes;
use rmq_protocol::body::{to_json, GetBrokerMemberGroupResponseBody, KvTable, TopicRouteData};
use rmq_protocol::command::FLAG_ONEWAY;
use rmq_protocol::controller::NotifyMinBrokerIdChangeHeader;
use rmq_protocol::custom_headers::CommandHeader;
use rmq_protocol::fastjson::JsonStyle;
use rmq_protocol::{RemotingCommand, RequestCode};
use tracing::{debug, info, warn};

use crate::contain::{contain, Contained, Recover};

/// The reply of a change: once the route caches have it.
type Answer<M> = ResponseFuture<<M as Message>::Result>;
use crate::messages::*;
use crate::outbound::Notify;
use crate::route::{ExpiredBroker, RouteTables};
use crate::settings::RegistrySettings;

mod turns;

pub use turns::TOPICS_PER_STEP;
use turns::{Turn, Turns};

/// Mailbox capacity: senders wait (backpressure) once this many messages are queued.
pub const REGISTRY_MAILBOX: usize = 16 * 1024;

/// The route registry actor. Its state is soft: brokers re-register every 30 s, so a restarted
/// registry (see [`actix::Supervised`]) is complete again within one registration period.
pub struct RouteRegistry {
    tables: RouteTables,
    /// Read at every use, so an `ApplySettings` takes effect at once.
    settings: RegistrySettings,
    /// Cluster-test mode: routes always carry orderTopicConf and are always legacy JSON.
    cluster_test: bool,
    /// A copy of the KV namespace ORDER_TOPIC_CONFIG, kept current by the KV store's changes;
    /// `None` when it does not exist.
    order_topic_conf: Option<BTreeMap<String, String>>,
    /// That namespace encoded as a KVTable, for REGISTER_BROKER replies: encoded at the first
    /// reply after a change, so that a burst of changes costs one encoding.
    order_topic_conf_body: OnceCell<Option<Bytes>>,
    /// When this registry started; route queries may wait `wait_for_service` after it.
    started_at: Instant,
    /// Bumped at every route change; survives restarts (worker caches compare against it).
    generation: u64,
    /// The route caches of the connection threads.
    workers: Vec<Recipient<InvalidateRoutes>>,
    /// Handler panics contained so far.
    panics: u64,
    /// The large registration being applied in slices, and the changes waiting for it.
    turns: Turns,
    /// Where NOTIFY_MIN_BROKER_ID_CHANGE goes (crate::outbound), when brokers are notified.
    notifier: Option<Recipient<Notify>>,
}

/// Java's send timeout of NOTIFY_MIN_BROKER_ID_CHANGE.
const MIN_ID_NOTIFY_TIMEOUT: Duration = Duration::from_millis(300);

fn new_tables(settings: &RegistrySettings) -> RouteTables {
    RouteTables::new(settings.route_options(), settings.route_cache_bytes)
        .with_default_expiry(settings.broker_expiry)
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
            order_topic_conf_body: OnceCell::new(),
            started_at: Instant::now(),
            generation: 0,
            workers,
            panics: 0,
            turns: Turns::default(),
            notifier: None,
        }
    }

    /// Sends NOTIFY_MIN_BROKER_ID_CHANGE through `notifier`.
    pub fn with_notifier(mut self, notifier: Recipient<Notify>) -> Self {
        self.notifier = Some(notifier);
        self
    }

    /// ORDER_TOPIC_CONFIG's value of `topic`.
    fn order_conf_of(&self, topic: &str) -> Option<&str> {
        self.order_topic_conf
            .as_ref()?
            .get(topic)
            .map(String::as_str)
    }

    /// Applies a change of ORDER_TOPIC_CONFIG. Routes show a value only with
    /// orderMessageEnable, but it may be switched on later: the encoded route of every topic
    /// whose value changed is dropped either way.
    fn change_order_conf(&mut self, change: OrderTopicConf) {
        match change {
            OrderTopicConf::Whole(new) => {
                let old = std::mem::take(&mut self.order_topic_conf).unwrap_or_default();
                let empty = BTreeMap::new();
                let new_table = new.as_ref().unwrap_or(&empty);
                for topic in old.keys().chain(new_table.keys()) {
                    if old.get(topic) != new_table.get(topic) {
                        self.tables.invalidate_topic(topic);
                    }
                }
                self.order_topic_conf = new;
            }
            OrderTopicConf::Entry { key, value } => {
                let table = self.order_topic_conf.get_or_insert_with(BTreeMap::new);
                let unchanged = match value {
                    Some(value) => table.insert(key.clone(), value.clone()) == Some(value),
                    None => table.remove(&key).is_none(),
                };
                if !unchanged {
                    self.tables.invalidate_topic(&key);
                }
            }
        }
        self.order_topic_conf_body = OnceCell::new();
    }

    /// ORDER_TOPIC_CONFIG as a KVTable body, for REGISTER_BROKER replies (encoded once per
    /// change).
    fn order_conf_body(&self) -> Option<Bytes> {
        self.order_topic_conf_body
            .get_or_init(|| {
                self.order_topic_conf.as_ref().map(|table| {
                    Bytes::from(to_json(
                        &KvTable {
                            table: table.clone(),
                        },
                        JsonStyle::Legacy,
                    ))
                })
            })
            .clone()
    }

    /// NOTIFY_MIN_BROKER_ID_CHANGE (905) for the groups whose smallest broker id changed, when
    /// `notify_min_broker_id_changed` is on (Java's `notifyMinBrokerIdChanged`): oneway, 300 ms,
    /// as Java sends it.
    fn notify_min_id_changes(&mut self) {
        let changes = self.tables.take_min_id_changes();
        if changes.is_empty() || !self.settings.notify_min_broker_id_changed {
            return;
        }
        for change in changes {
            let Some((min_id, min_addr)) = change.addrs.iter().next() else {
                continue;
            };
            let header = NotifyMinBrokerIdChangeHeader {
                min_broker_id: Some(*min_id),
                broker_name: None,
                min_broker_addr: Some(min_addr.to_string()),
                offline_broker_addr: change.offline.as_ref().map(ToString::to_string),
                ha_broker_addr: change.ha.clone(),
            };
            let cmd = RemotingCommand::request(RequestCode::NOTIFY_MIN_BROKER_ID_CHANGE)
                .with_flag(FLAG_ONEWAY)
                .with_ext_fields(header.to_ext());
            let recipients = change.recipients();
            info!(broker = %change.name, min_broker_id = min_id, notify = ?recipients,
                offline = ?change.offline, "min broker id changed; brokers notified");
            if let Some(notifier) = &self.notifier {
                notifier.do_send(Notify {
                    to: recipients.iter().map(ToString::to_string).collect(),
                    cmd,
                    timeout: MIN_ID_NOTIFY_TIMEOUT,
                });
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
        self.settings.need_wait_for_service
            && !self.cluster_test
            && self.started_at.elapsed() < self.settings.wait_for_service
    }

    fn stats(&self) -> RouteStats {
        RouteStats {
            topics: self.tables.topic_count(),
            broker_groups: self.tables.broker_group_count(),
            clusters: self.tables.cluster_count(),
            live_brokers: self.tables.live_count(),
            cached_route_bytes: self.tables.cached_bytes(),
            sliced_changes: self.turns.sliced(),
            waited_changes: self.turns.waited(),
        }
    }

    /// Whether routes carry the ORDER_TOPIC_CONFIG value of their topic.
    fn shows_order_conf(&self) -> bool {
        self.settings.order_message_enable || self.cluster_test
    }

    fn route_body(&mut self, topic: &str, style: JsonStyle) -> Option<Bytes> {
        let style = if self.cluster_test {
            JsonStyle::Legacy
        } else {
            style
        };
        let order_conf = self
            .shows_order_conf()
            .then(|| {
                let table = self.order_topic_conf.as_ref()?;
                table.get(topic).map(String::as_str)
            })
            .flatten();
        self.tables.route_body(topic, style, order_conf)
    }

    fn zone_filtered_route(&self, topic: &str, zone: &str) -> Option<Bytes> {
        let mut route = self.tables.topic_route(topic)?;
        if self.shows_order_conf() {
            route.order_topic_conf = self.order_conf_of(topic).map(str::to_owned);
        }
        filter_by_zone(&mut route, zone);
        // Java re-encodes zone-filtered routes in the legacy style, whatever the request asked.
        Some(Bytes::from(to_json(&route, JsonStyle::Legacy)))
    }
}

/// Java's `ZoneRouteRPCHook` (docs/route-rules.md#zone-filtering): keep groups without a master or in `zone`
/// (case-insensitive); drop every other group with its queues and filter servers.
pub fn filter_by_zone(route: &mut TopicRouteData, zone: &str) {
    let mut dropped = Vec::new();
    route.broker_datas.retain(|b| {
        let keep = !b.broker_addrs.contains_key(&0)
            || b.zone_name
                .as_deref()
                .is_some_and(|z| z.eq_ignore_ascii_case(zone));
        if !keep {
            dropped.push(b.clone());
        }
        keep
    });
    for broker in &dropped {
        route
            .queue_datas
            .retain(|q| q.broker_name != broker.broker_name);
        for addr in broker.broker_addrs.values() {
            route.filter_server_table.remove(addr);
        }
    }
}

impl Actor for RouteRegistry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(REGISTRY_MAILBOX);
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
        self.started_at = Instant::now();
        // Every worker forgets what the old tables said.
        actix::spawn(self.publish());
        // A registration half walked is dropped (its broker sends it again in 30 s); the
        // changes that waited for it run against the new tables.
        self.turns.abandon_walk();
        if self.turns.waiting() > 0 {
            self.next_turn(ctx);
        }
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

impl Handler<RegisterBroker> for RouteRegistry {
    type Result = Turn<RegisterBroker, turns::InTurn<RegisterBroker, Answer<RegisterBroker>>>;

    fn handle(&mut self, msg: RegisterBroker, ctx: &mut Context<Self>) -> Self::Result {
        self.in_turn(ctx, "RegisterBroker", move |this, ctx| {
            this.register(ctx, msg.registration)
        })
    }
}

impl Handler<UnregisterBroker> for RouteRegistry {
    type Result = Turn<UnregisterBroker, turns::InTurn<UnregisterBroker, Answer<UnregisterBroker>>>;

    fn handle(&mut self, msg: UnregisterBroker, ctx: &mut Context<Self>) -> Self::Result {
        self.in_turn(ctx, "UnregisterBroker", move |this, ctx| {
            let sweep = this
                .tables
                .unregister_start(std::slice::from_ref(&msg.request));
            this.swept(ctx, sweep, ())
        })
    }
}

impl Handler<BrokerHeartbeat> for RouteRegistry {
    type Result = Turn<BrokerHeartbeat, ()>;

    fn handle(&mut self, msg: BrokerHeartbeat, ctx: &mut Context<Self>) -> Self::Result {
        self.in_turn(ctx, "BrokerHeartbeat", move |this, _| {
            if !this.tables.heartbeat(&msg.instance, Instant::now()) {
                debug!(broker = %msg.instance, "heartbeat from an unregistered broker ignored");
            }
        })
    }
}

impl Handler<QueryDataVersion> for RouteRegistry {
    type Result = Turn<QueryDataVersion, MessageResult<QueryDataVersion>>;

    fn handle(&mut self, msg: QueryDataVersion, ctx: &mut Context<Self>) -> Self::Result {
        self.in_turn(ctx, "QueryDataVersion", move |this, _| {
            let (changed, stored) =
                this.tables
                    .query_data_version(&msg.instance, msg.version.as_ref(), Instant::now());
            MessageResult(DataVersionReply { changed, stored })
        })
    }
}

impl Handler<GetRouteInfo> for RouteRegistry {
    type Result = Contained<Result<RouteBody, RouteError>>;

    fn handle(&mut self, msg: GetRouteInfo, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetRouteInfo", move |this, _| {
            // Java's cluster-test processor has no ready check.
            if this.waiting_for_service() {
                return Err(RouteError::NotReady);
            }
            let Some(topic) = msg.topic else {
                return Err(RouteError::TopicNotExist("null".to_owned()));
            };
            let body = match &msg.zone {
                Some(zone) => this.zone_filtered_route(&topic, zone),
                None => this.route_body(&topic, msg.style),
            };
            let generation = this.generation;
            body.map(|body| RouteBody { body, generation })
                .ok_or(RouteError::TopicNotExist(topic))
        })
    }
}

impl Handler<GetClusterInfo> for RouteRegistry {
    type Result = Contained<MessageResult<GetClusterInfo>>;

    fn handle(&mut self, _: GetClusterInfo, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetClusterInfo", move |this, _| {
            MessageResult(Body(Bytes::from(to_json(
                &this.tables.cluster_info(),
                JsonStyle::Legacy,
            ))))
        })
    }
}

impl Handler<GetBrokerMemberGroup> for RouteRegistry {
    type Result = Contained<MessageResult<GetBrokerMemberGroup>>;

    fn handle(&mut self, msg: GetBrokerMemberGroup, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetBrokerMemberGroup", move |this, _| {
            let body = GetBrokerMemberGroupResponseBody {
                broker_member_group: this.tables.member_group(&msg.cluster, &msg.name),
            };
            MessageResult(MemberGroupBody(Bytes::from(to_json(
                &body,
                JsonStyle::Legacy,
            ))))
        })
    }
}

impl Handler<WipeWritePerm> for RouteRegistry {
    type Result = Turn<WipeWritePerm, Answer<WipeWritePerm>>;

    fn handle(&mut self, msg: WipeWritePerm, ctx: &mut Context<Self>) -> Self::Result {
        self.in_turn(
            ctx,
            "WipeWritePerm",
            move |this, _| -> Answer<WipeWritePerm> {
                let count = WipeTopicCount(this.tables.wipe_write_perm(&msg.name));
                this.answer(count)
            },
        )
    }
}

impl Handler<AddWritePerm> for RouteRegistry {
    type Result = Turn<AddWritePerm, Answer<AddWritePerm>>;

    fn handle(&mut self, msg: AddWritePerm, ctx: &mut Context<Self>) -> Self::Result {
        self.in_turn(
            ctx,
            "AddWritePerm",
            move |this, _| -> Answer<AddWritePerm> {
                let count = AddTopicCount(this.tables.add_write_perm(&msg.name));
                this.answer(count)
            },
        )
    }
}

impl Handler<GetTopicList> for RouteRegistry {
    type Result = Contained<Result<Body, Disabled>>;

    fn handle(&mut self, msg: GetTopicList, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetTopicList", move |this, _| {
            let enabled = match msg.kind {
                TopicListKind::All => this.settings.enable_all_topic_list,
                TopicListKind::System => true,
                _ => this.settings.enable_topic_list,
            };
            if !enabled {
                return Err(Disabled);
            }
            let list = match &msg.kind {
                TopicListKind::All => this.tables.all_topics(),
                TopicListKind::ByCluster(cluster) => this.tables.topics_by_cluster(cluster),
                TopicListKind::System => this.tables.system_topics(),
                TopicListKind::Unit => this.tables.unit_topics(),
                TopicListKind::HasUnitSub => this.tables.has_unit_sub_topics(),
                TopicListKind::HasUnitSubUnUnit => this.tables.has_unit_sub_ununit_topics(),
            };
            Ok(Body(Bytes::from(to_json(&list, JsonStyle::Legacy))))
        })
    }
}

impl Handler<DeleteTopic> for RouteRegistry {
    type Result = Turn<DeleteTopic, Answer<DeleteTopic>>;

    fn handle(&mut self, msg: DeleteTopic, ctx: &mut Context<Self>) -> Self::Result {
        self.in_turn(ctx, "DeleteTopic", move |this, _| -> Answer<DeleteTopic> {
            this.tables.delete_topic(&msg.topic, msg.cluster.as_deref());
            this.answer(())
        })
    }
}

impl Handler<RegisterTopic> for RouteRegistry {
    type Result = Turn<RegisterTopic, Answer<RegisterTopic>>;

    fn handle(&mut self, msg: RegisterTopic, ctx: &mut Context<Self>) -> Self::Result {
        self.in_turn(
            ctx,
            "RegisterTopic",
            move |this, _| -> Answer<RegisterTopic> {
                this.tables.register_topic(&msg.topic, &msg.queue_datas);
                this.answer(())
            },
        )
    }
}

impl Handler<ScanInactive> for RouteRegistry {
    type Result = Turn<ScanInactive, turns::InTurn<ScanInactive, Answer<ScanInactive>>>;

    fn handle(&mut self, msg: ScanInactive, ctx: &mut Context<Self>) -> Self::Result {
        self.in_turn(ctx, "ScanInactive", move |this, ctx| {
            let (expired, sweep): (Vec<ExpiredBroker>, _) =
                this.tables.scan_inactive_start(msg.now);
            this.swept(ctx, sweep, expired)
        })
    }
}

impl Handler<ChannelClosed> for RouteRegistry {
    type Result = Turn<ChannelClosed, turns::InTurn<ChannelClosed, Answer<ChannelClosed>>>;

    fn handle(&mut self, msg: ChannelClosed, ctx: &mut Context<Self>) -> Self::Result {
        self.in_turn(ctx, "ChannelClosed", move |this, ctx| {
            let (_, sweep) = this.tables.channel_closed_start(msg.conn);
            this.swept(ctx, sweep, ())
        })
    }
}

impl Handler<ApplySettings> for RouteRegistry {
    type Result = Turn<ApplySettings, Answer<ApplySettings>>;

    fn handle(&mut self, msg: ApplySettings, ctx: &mut Context<Self>) -> Self::Result {
        self.in_turn(
            ctx,
            "ApplySettings",
            move |this, _| -> Answer<ApplySettings> {
                let new = msg.settings;
                // Switches that change what a route shows, or whether it may be shown (the ready
                // window), make every cached route go.
                if new.order_message_enable != this.settings.order_message_enable
                    || new.need_wait_for_service != this.settings.need_wait_for_service
                    || new.wait_for_service != this.settings.wait_for_service
                {
                    this.tables.invalidate_all();
                }
                this.tables.set_options(new.route_options());
                this.tables.set_cache_limit(new.route_cache_bytes);
                this.tables.set_default_expiry(new.broker_expiry);
                info!(settings = ?new, "registry settings applied");
                this.settings = new;
                this.answer(())
            },
        )
    }
}

impl Handler<OrderTopicConfChanged> for RouteRegistry {
    type Result = Turn<OrderTopicConfChanged, Answer<OrderTopicConfChanged>>;

    fn handle(&mut self, msg: OrderTopicConfChanged, ctx: &mut Context<Self>) -> Self::Result {
        self.in_turn(
            ctx,
            "OrderTopicConfChanged",
            move |this, _| -> Answer<OrderTopicConfChanged> {
                this.change_order_conf(msg.change);
                this.answer(())
            },
        )
    }
}

impl Handler<QueryRoute> for RouteRegistry {
    type Result = Contained<Option<TopicRouteData>>;

    fn handle(&mut self, msg: QueryRoute, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "QueryRoute", move |this, _| {
            let mut route = this.tables.topic_route(&msg.topic)?;
            if this.shows_order_conf() {
                route.order_topic_conf = this.order_conf_of(&msg.topic).map(str::to_owned);
            }
            Some(route)
        })
    }
}

impl Handler<ListBrokers> for RouteRegistry {
    type Result = Contained<Vec<BrokerStatus>>;

    fn handle(&mut self, _: ListBrokers, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "ListBrokers", move |this, _| {
            let now = Instant::now();
            this.tables
                .live_instances()
                .into_iter()
                .map(|(instance, group, live)| BrokerStatus {
                    cluster: instance.cluster.as_str().to_owned(),
                    name: group.as_ref().map(|(name, _)| name.as_str().to_owned()),
                    id: group.map(|(_, id)| id),
                    addr: instance.addr.as_str().to_owned(),
                    since_last_update: now.saturating_duration_since(live.last_update),
                    data_version: live.data_version,
                    mq_version: live.mq_version,
                    conn: live.conn,
                    timeout: live.timeout,
                })
                .collect()
        })
    }
}

impl Handler<GetRouteStats> for RouteRegistry {
    type Result = Contained<MessageResult<GetRouteStats>>;

    fn handle(&mut self, _: GetRouteStats, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetRouteStats", move |this, _| {
            MessageResult(this.stats())
        })
    }
}

impl Handler<ListTopics> for RouteRegistry {
    type Result = Contained<MessageResult<ListTopics>>;

    fn handle(&mut self, msg: ListTopics, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "ListTopics", move |this, _| {
            let (topics, matched) = this.tables.topics_overview(&msg.filter, msg.limit);
            MessageResult(TopicsOverview { topics, matched })
        })
    }
}

impl Handler<GetRegistryMetrics> for RouteRegistry {
    type Result = Contained<MessageResult<GetRegistryMetrics>>;

    fn handle(&mut self, _: GetRegistryMetrics, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetRegistryMetrics", move |this, _| {
            MessageResult(RegistryMetrics {
                stats: this.stats(),
                counters: this.tables.counters(),
                live_by_cluster: this.tables.live_by_cluster(),
                ready: !this.waiting_for_service(),
            })
        })
    }
}

impl Handler<Restart> for RouteRegistry {
    type Result = ();

    fn handle(&mut self, _: Restart, ctx: &mut Context<Self>) {
        warn!("route registry stopping on request; its supervisor restarts it");
        ctx.stop();
    }
}
