//! The route side of the run: the topology (the dev cluster's simulated brokers, plus two victim
//! brokers whose connections get killed mid-frame), the closing of broker windows, and the
//! judged route lookups.
//!
//! A lookup of topic T on NameServer N, sent at `send` and answered at `recv`, *requires* every
//! broker instance hosting T for which no window of N (down, registry reset, or that broker's own
//! window) overlaps `[send, recv]` — a slave only when its master is required too. The answer
//! must list every required instance (and a queue entry for every required master); a failed
//! lookup must overlap a window that explains it. A broker window closes when the broker has had
//! a registration acknowledged that it *sent* after the fault was over: registrations of one
//! broker to one NameServer are sequential, so that is the second acknowledgement counted after
//! the fault, or for a victim, the first after its reconnection.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rmq_protocol::body::{ClusterInfo, TopicRouteData};
use rmq_protocol::fastjson;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_tools::broker::FakeBroker;
use rmq_tools::client::{Client, ClientError};
use rmq_tools::sim::{SimBroker, SimBrokerSpec};
use tokio::sync::{mpsc, oneshot};

use crate::ledger::{Inst, Ledger, Loss, Ns, Scope, WindowId};
use crate::servers::Server;
use crate::wire::{Cut, RawConn};

pub const CLUSTER: &str = "SoakCluster";
/// Hosted by every broker group.
pub const SHARED_TOPIC: &str = "soak-shared";
/// Hosted by nobody: must always be TOPIC_NOT_EXIST.
pub const NO_SUCH_TOPIC: &str = "soak-no-such-topic";

/// One broker instance of the topology.
#[derive(Debug, Clone)]
pub struct Instance {
    pub broker: FakeBroker,
    /// Driven by the soak itself (its connections are killed mid-frame), not a `SimBroker`.
    pub victim: bool,
    /// A victim registering in the 4.x compressed form.
    pub compressed: bool,
}

impl Instance {
    pub fn label(&self) -> String {
        format!("{}#{}", self.broker.name, self.broker.id)
    }
}

/// Who hosts what.
#[derive(Debug)]
pub struct Topology {
    pub instances: Vec<Instance>,
    /// Every topic a broker hosts.
    pub topics: Vec<String>,
}

impl Topology {
    /// Three groups of the dev cluster's simulated brokers (a master and a slave each, two
    /// topics of their own and the shared one) and two victim masters (one registering as 5.x,
    /// one in the 4.x compressed form).
    pub fn new() -> Self {
        let mut instances = Vec::new();
        let mut topics = vec![SHARED_TOPIC.to_owned()];
        for (g, group) in ["a", "b", "c"].iter().enumerate() {
            let own: Vec<String> = (0..2).map(|t| format!("soak-{group}-{t}")).collect();
            topics.extend(own.iter().cloned());
            let mut hosted = own;
            hosted.push(SHARED_TOPIC.to_owned());
            for id in 0..2u16 {
                // Advertised only: a NameServer never dials a broker.
                let port = 10_911 + g as u16 * 100 + id * 10;
                instances.push(Instance {
                    broker: FakeBroker::new(
                        CLUSTER,
                        &format!("broker-{group}"),
                        i64::from(id),
                        port,
                        hosted.clone(),
                    ),
                    victim: false,
                    compressed: false,
                });
            }
        }
        for (v, name) in ["x", "y"].iter().enumerate() {
            let own = format!("soak-victim-{name}");
            topics.push(own.clone());
            instances.push(Instance {
                broker: FakeBroker::new(
                    CLUSTER,
                    &format!("victim-{name}"),
                    0,
                    11_911 + v as u16 * 100,
                    vec![own, SHARED_TOPIC.to_owned()],
                ),
                victim: true,
                compressed: v == 1,
            });
        }
        Self { instances, topics }
    }

    pub fn all(&self) -> impl Iterator<Item = Inst> {
        (0..self.instances.len()).map(Inst)
    }

    pub fn get(&self, inst: Inst) -> Option<&Instance> {
        self.instances.get(inst.0)
    }

    pub fn label(&self, inst: Inst) -> String {
        self.get(inst).map(Instance::label).unwrap_or_default()
    }

    pub fn hosting<'a>(&'a self, topic: &'a str) -> impl Iterator<Item = Inst> + 'a {
        self.all().filter(move |i| {
            self.get(*i)
                .is_some_and(|inst| inst.broker.topics.iter().any(|t| t == topic))
        })
    }

    /// The master of a slave's group (`None` for a master).
    pub fn master_of(&self, inst: Inst) -> Option<Inst> {
        let slave = self.get(inst).filter(|i| i.broker.id != 0)?;
        self.all().find(|m| {
            self.get(*m)
                .is_some_and(|i| i.broker.id == 0 && i.broker.name == slave.broker.name)
        })
    }

    pub fn victims(&self) -> Vec<Inst> {
        self.all()
            .filter(|i| self.get(*i).is_some_and(|x| x.victim))
            .collect()
    }
}

/// A mid-frame kill for a victim's connection to one NameServer.
#[derive(Debug)]
pub struct Kill {
    pub cut: Cut,
    pub reset: bool,
    /// Chooses the cut offset, the pause before the kill and the delay before reconnecting.
    pub pick: u64,
    /// What was done, for the fault line (`None`: not connected, nothing done).
    pub done: oneshot::Sender<Option<String>>,
}

struct VictimLink {
    kills: mpsc::UnboundedSender<Kill>,
    registrations: Rc<Cell<u64>>,
}

/// A broker window that closes after enough acknowledged registrations.
struct Closer {
    window: WindowId,
    inst: Inst,
    ns: Ns,
    target: u64,
}

/// The running brokers: the steady `SimBroker`s and the victims' links.
pub struct Brokers {
    topo: Rc<Topology>,
    sims: RefCell<Vec<(Inst, SimBroker)>>,
    victims: RefCell<Vec<(Inst, Vec<VictimLink>)>>,
    closers: RefCell<Vec<Closer>>,
}

/// How the brokers run.
#[derive(Debug, Clone)]
pub struct BrokerSettings {
    pub register_interval: Duration,
    pub timeout: Duration,
    pub until: Instant,
}

impl Brokers {
    /// Starts every broker against the pair's addresses.
    pub fn start(
        topo: Rc<Topology>,
        addrs: &[String],
        settings: &BrokerSettings,
        ledger: &Ledger,
    ) -> Rc<Self> {
        let mut sims = Vec::new();
        let mut victims = Vec::new();
        for inst in topo.all() {
            let Some(instance) = topo.get(inst) else {
                continue;
            };
            if instance.victim {
                let links = addrs
                    .iter()
                    .enumerate()
                    .map(|(n, addr)| {
                        let (kills, rx) = mpsc::unbounded_channel();
                        let registrations = Rc::new(Cell::new(0));
                        let link = VictimLinkTask {
                            ledger: ledger.clone(),
                            inst,
                            ns: Ns(n),
                            addr: addr.clone(),
                            instance: instance.clone(),
                            settings: settings.clone(),
                            registrations: Rc::clone(&registrations),
                        };
                        tokio::task::spawn_local(link.run(rx));
                        VictimLink {
                            kills,
                            registrations,
                        }
                    })
                    .collect();
                victims.push((inst, links));
            } else {
                let b = &instance.broker;
                let port = b
                    .addr
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(10_911);
                let mut spec = SimBrokerSpec::new(
                    &b.cluster,
                    &b.name,
                    b.id,
                    port,
                    b.topics.clone(),
                    addrs.to_vec(),
                );
                spec.register_interval = settings.register_interval;
                spec.timeout = settings.timeout;
                sims.push((inst, SimBroker::spawn(spec)));
            }
        }
        Rc::new(Self {
            topo,
            sims: RefCell::new(sims),
            victims: RefCell::new(victims),
            closers: RefCell::new(Vec::new()),
        })
    }

    /// Registrations of `inst` acknowledged by `ns` so far.
    pub fn registrations(&self, inst: Inst, ns: Ns) -> u64 {
        if let Some((_, sim)) = self.sims.borrow().iter().find(|(i, _)| *i == inst) {
            return sim.status().links.get(ns.0).map_or(0, |l| l.registrations);
        }
        self.victims
            .borrow()
            .iter()
            .find(|(i, _)| *i == inst)
            .and_then(|(_, links)| links.get(ns.0))
            .map_or(0, |l| l.registrations.get())
    }

    /// Whether every broker has been acknowledged at least `n` times by every NameServer.
    pub fn all_registered(&self, n: u64, pair: usize) -> bool {
        self.topo
            .all()
            .all(|inst| (0..pair).all(|ns| self.registrations(inst, Ns(ns)) >= n))
    }

    /// Closes `window` once `inst` has had a registration acknowledged by `ns` that it sent
    /// after now (the fault is over): the second acknowledgement from now on.
    pub fn close_after_next_registration(&self, window: WindowId, inst: Inst, ns: Ns) {
        let target = self.registrations(inst, ns) + 2;
        self.closers.borrow_mut().push(Closer {
            window,
            inst,
            ns,
            target,
        });
    }

    /// Opens a broker window for every instance on `ns`.
    pub fn open_all(&self, ledger: &Ledger, ns: Ns) -> Vec<(Inst, WindowId)> {
        self.topo
            .all()
            .map(|inst| (inst, ledger.open(Scope::Broker(ns, inst))))
            .collect()
    }

    /// Closes windows whose brokers have re-registered; runs until `stop` (or `until`).
    pub async fn watch(self: Rc<Self>, ledger: Ledger, stop: Rc<Cell<bool>>, until: Instant) {
        // Bounded by `stop` and `until`.
        while !stop.get() && Instant::now() < until {
            let pending = std::mem::take(&mut *self.closers.borrow_mut());
            let mut left = Vec::new();
            for closer in pending {
                if self.registrations(closer.inst, closer.ns) >= closer.target {
                    ledger.close(closer.window);
                } else {
                    left.push(closer);
                }
            }
            self.closers.borrow_mut().extend(left);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends a victim's link to `ns` a mid-frame kill; the answer says what was done.
    pub fn kill_victim(&self, inst: Inst, ns: Ns, kill: Kill) -> bool {
        self.victims
            .borrow()
            .iter()
            .find(|(i, _)| *i == inst)
            .and_then(|(_, links)| links.get(ns.0))
            .is_some_and(|link| link.kills.send(kill).is_ok())
    }

    /// Stops every broker: the simulated ones unregister (a graceful broker shutdown), the
    /// victims' links end.
    pub async fn stop(&self) {
        self.victims.borrow_mut().clear();
        let sims = std::mem::take(&mut *self.sims.borrow_mut());
        for (_, sim) in sims {
            sim.stop(true).await;
        }
    }
}

/// One victim broker's link to one NameServer: registers every interval on one connection;
/// told to, stops in the middle of a frame, drops the connection and comes back shortly after.
struct VictimLinkTask {
    ledger: Ledger,
    inst: Inst,
    ns: Ns,
    addr: String,
    instance: Instance,
    settings: BrokerSettings,
    registrations: Rc<Cell<u64>>,
}

impl VictimLinkTask {
    fn registration(&self) -> RemotingCommand {
        if self.instance.compressed {
            self.instance.broker.register_compressed()
        } else {
            self.instance.broker.register()
        }
    }

    async fn run(self, mut kills: mpsc::UnboundedReceiver<Kill>) {
        let timeout = self.settings.timeout;
        let mut conn: Option<RawConn> = None;
        let mut next = Instant::now();
        // Mid-frame windows waiting for the next acknowledged registration.
        let mut pending: Vec<WindowId> = Vec::new();
        // Bounded by `until`; ends at once when the sender side is dropped.
        while Instant::now() < self.settings.until {
            if Instant::now() >= next {
                if conn.is_none() {
                    conn = RawConn::connect(&self.addr, timeout).await.ok();
                }
                if let Some(c) = conn.as_mut() {
                    match c.call(self.registration(), timeout).await {
                        Ok(reply) if reply.response_code() == ResponseCode::SUCCESS => {
                            self.registrations.set(self.registrations.get() + 1);
                            for window in pending.drain(..) {
                                self.ledger.close(window);
                            }
                        }
                        Ok(_) => {}
                        Err(_) => conn = None,
                    }
                }
                let wait = if conn.is_some() {
                    self.settings.register_interval
                } else {
                    Duration::from_millis(200)
                };
                next = Instant::now() + wait;
            }
            tokio::select! {
                kill = kills.recv() => {
                    let Some(kill) = kill else { return };
                    let outcome = match conn.take() {
                        Some(c) => {
                            let (outcome, window) = self.kill(c, &kill).await;
                            pending.push(window);
                            // Back within a second, as a broker that notices the broken link.
                            next = Instant::now() + Duration::from_millis(kill.pick % 1000);
                            Some(outcome)
                        }
                        None => None,
                    };
                    let _ = kill.done.send(outcome);
                }
                _ = tokio::time::sleep_until(next.into()) => {}
            }
        }
    }

    async fn kill(&self, mut conn: RawConn, kill: &Kill) -> (String, WindowId) {
        let window = self.ledger.open(Scope::Broker(self.ns, self.inst));
        let pick = kill.pick;
        let sent = conn
            .send_partial(self.registration(), kill.cut, |n| (pick as usize) % n)
            .await;
        // Let the server read the partial frame before the connection goes.
        tokio::time::sleep(Duration::from_millis((pick >> 20) % 50)).await;
        conn.kill(kill.reset);
        let how = if kill.reset { "RST" } else { "FIN" };
        let outcome = match sent {
            Ok((sent, total)) => format!(
                "{} on {}: cut in the {} after {sent} of {total} bytes, then {how}",
                self.instance.label(),
                self.ns,
                kill.cut.name()
            ),
            Err(e) => format!(
                "{} on {}: partial write failed ({e}), then {how}",
                self.instance.label(),
                self.ns
            ),
        };
        (outcome, window)
    }
}

/// What a lookup got.
pub enum Outcome {
    Transport(String),
    Timeout,
    Reply(RemotingCommand),
}

/// How the lookups run.
#[derive(Debug, Clone)]
pub struct LookupSettings {
    pub interval: Duration,
    pub timeout: Duration,
    pub until: Instant,
}

/// Judged route lookups on one NameServer: one persistent connection (reconnected after a
/// failure), every topic in turn and the topic nobody hosts.
pub async fn lookups(
    ns: Ns,
    server: Rc<Server>,
    topo: Rc<Topology>,
    ledger: Ledger,
    settings: LookupSettings,
    stop: Rc<Cell<bool>>,
) {
    let mut topics = topo.topics.clone();
    topics.push(NO_SUCH_TOPIC.to_owned());
    let mut conn: Option<(Client, Instant)> = None;
    let mut turn = 0usize;
    // Bounded by `stop` and `until`.
    while !stop.get() && Instant::now() < settings.until {
        let topic = topics.get(turn % topics.len()).cloned().unwrap_or_default();
        turn += 1;
        let send = Instant::now();
        if conn.is_none() {
            match Client::connect(&server.addr_text(), settings.timeout).await {
                Ok(client) => conn = Some((client, send)),
                Err(ClientError::Timeout(_)) => {
                    judge(&topo, &ledger, ns, &topic, send, send, Outcome::Timeout);
                }
                Err(err) => {
                    let recv = Instant::now();
                    judge(&topo, &ledger, ns, &topic, send, recv, transport(err));
                }
            }
        }
        if let Some((client, since)) = conn.as_mut() {
            let since = *since;
            let request = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
                .with_ext("topic", topic.clone());
            let outcome = match client.request(request).await {
                Ok(reply) => Outcome::Reply(reply),
                Err(ClientError::Timeout(_)) => Outcome::Timeout,
                Err(err) => transport(err),
            };
            if !matches!(outcome, Outcome::Reply(_)) {
                conn = None;
            }
            // A failed connection is excused by a window over its whole life.
            let from = if matches!(outcome, Outcome::Transport(_)) {
                since
            } else {
                send
            };
            judge(&topo, &ledger, ns, &topic, from, Instant::now(), outcome);
        }
        tokio::time::sleep(settings.interval).await;
    }
}

fn transport(err: ClientError) -> Outcome {
    Outcome::Transport(err.to_string())
}

/// The instances a lookup of `topic` on `ns` over `[from, to]` must find.
fn required(
    topo: &Topology,
    ledger: &Ledger,
    ns: Ns,
    topic: &str,
    from: Instant,
    to: Instant,
) -> Vec<Inst> {
    let excused = |inst: Inst| {
        ledger.excused(from, to, |s| match s {
            Scope::Down(n) | Scope::Registry(n) => n == ns,
            Scope::Broker(n, i) => n == ns && i == inst,
        })
    };
    topo.hosting(topic)
        .filter(|inst| !excused(*inst) && topo.master_of(*inst).is_none_or(|m| !excused(m)))
        .collect()
}

/// Whether `route` lists `inst` (and, for a master, its queues).
fn lists(route: &TopicRouteData, instance: &Instance) -> bool {
    let b = &instance.broker;
    let addr = route.broker_datas.iter().any(|bd| {
        bd.broker_name == b.name && bd.broker_addrs.get(&b.id).is_some_and(|a| *a == b.addr)
    });
    let queues = b.id != 0 || route.queue_datas.iter().any(|q| q.broker_name == b.name);
    addr && queues
}

/// Judges one lookup (see the module docs) and counts it.
pub fn judge(
    topo: &Topology,
    ledger: &Ledger,
    ns: Ns,
    topic: &str,
    from: Instant,
    to: Instant,
    outcome: Outcome,
) {
    ledger.stat(|s| s.lookups += 1);
    let server_window = |s: Scope| matches!(s, Scope::Down(n) | Scope::Registry(n) if n == ns);
    let excused = || ledger.stat(|s| s.lookups_excused += 1);
    let ok = || ledger.stat(|s| s.lookups_ok += 1);
    match outcome {
        Outcome::Timeout => ledger.stat(|s| s.lookups_slow += 1),
        Outcome::Transport(err) => {
            if ledger.excused(from, to, |s| s == Scope::Down(ns)) {
                excused();
            } else {
                ledger.lost(Loss::LookupFailed, format!("{ns} {topic}: {err}"));
            }
        }
        Outcome::Reply(reply) => {
            let code = reply.response_code();
            if topic == NO_SUCH_TOPIC {
                if code == ResponseCode::TOPIC_NOT_EXIST {
                    ok();
                } else if code != ResponseCode::SUCCESS && ledger.excused(from, to, server_window) {
                    excused();
                } else {
                    ledger.lost(
                        Loss::LookupFailed,
                        format!(
                            "{ns} {topic}: answered code {} for a topic nobody hosts",
                            code.0
                        ),
                    );
                }
                return;
            }
            let need = required(topo, ledger, ns, topic, from, to);
            if code == ResponseCode::SUCCESS {
                let route: TopicRouteData = match fastjson::from_slice(reply.body_bytes()) {
                    Ok(route) => route,
                    Err(e) => {
                        ledger.lost(
                            Loss::LookupFailed,
                            format!("{ns} {topic}: unreadable route: {e}"),
                        );
                        return;
                    }
                };
                let missing: Vec<String> = need
                    .iter()
                    .filter_map(|i| topo.get(*i))
                    .filter(|i| !lists(&route, i))
                    .map(Instance::label)
                    .collect();
                if missing.is_empty() {
                    ok();
                } else {
                    ledger.lost(
                        Loss::BrokerMissing,
                        format!("{ns} {topic}: {} not in the route", missing.join(", ")),
                    );
                }
            } else if (code == ResponseCode::TOPIC_NOT_EXIST && need.is_empty())
                || (code != ResponseCode::TOPIC_NOT_EXIST
                    && ledger.excused(from, to, server_window))
            {
                // Not found while every broker of the topic is excused, or an error while the
                // server was down or resetting its registry.
                excused();
            } else {
                let labels: Vec<String> = need.iter().map(|i| topo.label(*i)).collect();
                ledger.lost(
                    Loss::LookupFailed,
                    format!(
                        "{ns} {topic}: code {} ({}) while {} registered",
                        code.0,
                        reply.remark.as_deref().unwrap_or(""),
                        labels.join(", ")
                    ),
                );
            }
        }
    }
}

/// After the quiet period: every topic on every NameServer lists every broker instance, and the
/// cluster info every broker (retried until `within`). Returns what is still missing.
pub async fn final_check(
    topo: &Topology,
    servers: &[Rc<Server>],
    ledger: &Ledger,
    timeout: Duration,
    within: Duration,
) -> Vec<String> {
    let deadline = Instant::now() + within;
    let mut missing = Vec::new();
    for (n, server) in servers.iter().enumerate() {
        let ns = Ns(n);
        for topic in &topo.topics {
            // Bounded by `deadline`.
            let left = loop {
                let left = missing_in_route(topo, server, topic, timeout).await;
                if left.is_empty() || Instant::now() >= deadline {
                    break left;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            };
            for what in left {
                let text = format!("{ns} {topic}: {what}");
                ledger.lost(Loss::BrokerMissingAtEnd, &text);
                missing.push(text);
            }
        }
        let left = missing_in_cluster(topo, server, timeout).await;
        for what in left {
            let text = format!("{ns} cluster info: {what}");
            ledger.lost(Loss::BrokerMissingAtEnd, &text);
            missing.push(text);
        }
    }
    missing
}

async fn ask(
    server: &Server,
    request: RemotingCommand,
    timeout: Duration,
) -> Result<RemotingCommand, String> {
    let mut client = Client::connect(&server.addr_text(), timeout)
        .await
        .map_err(|e| e.to_string())?;
    client.request(request).await.map_err(|e| e.to_string())
}

async fn missing_in_route(
    topo: &Topology,
    server: &Server,
    topic: &str,
    timeout: Duration,
) -> Vec<String> {
    let request =
        RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic);
    let all: Vec<&Instance> = topo.hosting(topic).filter_map(|i| topo.get(i)).collect();
    match ask(server, request, timeout).await {
        Ok(reply) if reply.response_code() == ResponseCode::SUCCESS => {
            match fastjson::from_slice::<TopicRouteData>(reply.body_bytes()) {
                Ok(route) => all
                    .into_iter()
                    .filter(|i| !lists(&route, i))
                    .map(|i| format!("{} not in the route", i.label()))
                    .collect(),
                Err(e) => vec![format!("unreadable route: {e}")],
            }
        }
        Ok(reply) => vec![format!(
            "code {} ({})",
            reply.code,
            reply.remark.unwrap_or_default()
        )],
        Err(e) => vec![e],
    }
}

async fn missing_in_cluster(topo: &Topology, server: &Server, timeout: Duration) -> Vec<String> {
    let request = RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO);
    match ask(server, request, timeout).await {
        Ok(reply) if reply.response_code() == ResponseCode::SUCCESS => {
            match fastjson::from_slice::<ClusterInfo>(reply.body_bytes()) {
                Ok(info) => topo
                    .instances
                    .iter()
                    .filter(|i| {
                        info.broker_addr_table
                            .get(&i.broker.name)
                            .and_then(|bd| bd.broker_addrs.get(&i.broker.id))
                            != Some(&i.broker.addr)
                    })
                    .map(|i| format!("{} not listed", i.label()))
                    .collect(),
                Err(e) => vec![format!("unreadable cluster info: {e}")],
            }
        }
        Ok(reply) => vec![format!(
            "code {} ({})",
            reply.code,
            reply.remark.unwrap_or_default()
        )],
        Err(e) => vec![e],
    }
}

/// The route request a checker sends (also used by the containment checks).
pub fn route_request(topic: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_protocol::body::{BrokerData, QueueData};

    fn route_of(topo: &Topology, insts: &[Inst]) -> TopicRouteData {
        let mut route = TopicRouteData::default();
        for inst in insts {
            let i = topo.get(*inst).unwrap();
            let b = &i.broker;
            match route
                .broker_datas
                .iter_mut()
                .find(|bd| bd.broker_name == b.name)
            {
                Some(bd) => {
                    bd.broker_addrs.insert(b.id, b.addr.clone());
                }
                None => route.broker_datas.push(BrokerData {
                    broker_name: b.name.clone(),
                    cluster: CLUSTER.into(),
                    broker_addrs: [(b.id, b.addr.clone())].into_iter().collect(),
                    ..BrokerData::default()
                }),
            }
            if b.id == 0 {
                route.queue_datas.push(QueueData {
                    broker_name: b.name.clone(),
                    ..QueueData::default()
                });
            }
        }
        route
    }

    fn reply(route: &TopicRouteData) -> Outcome {
        Outcome::Reply(
            RemotingCommand::success().with_body(rmq_protocol::body::to_json(
                route,
                fastjson::JsonStyle::Legacy,
            )),
        )
    }

    #[test]
    fn the_topology_hosts_the_shared_topic_everywhere() {
        let topo = Topology::new();
        assert_eq!(topo.hosting(SHARED_TOPIC).count(), topo.instances.len());
        assert_eq!(topo.hosting("soak-a-0").count(), 2);
        assert_eq!(topo.hosting(NO_SUCH_TOPIC).count(), 0);
        assert_eq!(topo.victims().len(), 2);
        assert_eq!(topo.master_of(Inst(1)), Some(Inst(0)));
        assert_eq!(topo.master_of(Inst(0)), None);
    }

    #[test]
    fn a_missing_broker_is_lost_unless_a_window_covers_it() {
        let topo = Topology::new();
        let ledger = Ledger::new();
        let all: Vec<Inst> = topo.hosting("soak-a-0").collect();
        let now = Instant::now();
        judge(
            &topo,
            &ledger,
            Ns(0),
            "soak-a-0",
            now,
            now,
            reply(&route_of(&topo, &all)),
        );
        assert_eq!(ledger.total_losses(), 0);
        // The slave missing: lost ...
        judge(
            &topo,
            &ledger,
            Ns(0),
            "soak-a-0",
            now,
            now,
            reply(&route_of(&topo, &all[..1])),
        );
        assert_eq!(ledger.losses(Loss::BrokerMissing), 1);
        // ... unless its window (or its master's) overlaps the lookup.
        let w = ledger.open(Scope::Broker(Ns(0), all[0]));
        let t = Instant::now();
        judge(
            &topo,
            &ledger,
            Ns(0),
            "soak-a-0",
            t,
            t,
            reply(&route_of(&topo, &all[..1])),
        );
        judge(
            &topo,
            &ledger,
            Ns(0),
            "soak-a-0",
            t,
            t,
            reply(&TopicRouteData::default()),
        );
        assert_eq!(ledger.losses(Loss::BrokerMissing), 1);
        // Another server's window excuses nothing here.
        ledger.close(w);
        let w = ledger.open(Scope::Broker(Ns(1), all[0]));
        let t = Instant::now() + Duration::from_millis(1);
        judge(
            &topo,
            &ledger,
            Ns(0),
            "soak-a-0",
            t,
            t,
            reply(&TopicRouteData::default()),
        );
        assert_eq!(ledger.losses(Loss::BrokerMissing), 2);
        ledger.close(w);
    }

    #[test]
    fn not_found_and_errors_need_a_window() {
        let topo = Topology::new();
        let ledger = Ledger::new();
        let now = Instant::now();
        let not_found = || {
            Outcome::Reply(RemotingCommand::response(
                ResponseCode::TOPIC_NOT_EXIST,
                None,
            ))
        };
        judge(&topo, &ledger, Ns(1), "soak-b-1", now, now, not_found());
        assert_eq!(ledger.losses(Loss::LookupFailed), 1);
        judge(&topo, &ledger, Ns(1), NO_SUCH_TOPIC, now, now, not_found());
        assert_eq!(ledger.losses(Loss::LookupFailed), 1);
        judge(
            &topo,
            &ledger,
            Ns(1),
            "soak-b-1",
            now,
            now,
            Outcome::Timeout,
        );
        assert_eq!(ledger.total_losses(), 1, "slow is not lost");
        judge(
            &topo,
            &ledger,
            Ns(1),
            "soak-b-1",
            now,
            now,
            Outcome::Transport("reset".into()),
        );
        assert_eq!(ledger.losses(Loss::LookupFailed), 2);
        let w = ledger.open(Scope::Down(Ns(1)));
        let t = Instant::now();
        judge(
            &topo,
            &ledger,
            Ns(1),
            "soak-b-1",
            now,
            t,
            Outcome::Transport("reset".into()),
        );
        judge(&topo, &ledger, Ns(1), "soak-b-1", t, t, not_found());
        assert_eq!(ledger.losses(Loss::LookupFailed), 2);
        ledger.close(w);
        assert_eq!(
            ledger.stats(|s| (s.lookups, s.lookups_ok, s.lookups_excused, s.lookups_slow)),
            (6, 1, 2, 1)
        );
    }
}
