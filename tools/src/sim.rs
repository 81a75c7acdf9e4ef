//! Simulated brokers and clients that speak the protocol as real ones do: the dev cluster
//! (`cargo run --example cluster`), tests and load tools use them against any NameServer.
//!
//! A [`SimBroker`] registers its topics with every NameServer of its list (all in parallel, like a
//! real broker), again every `register_interval`, optionally sends heartbeats, reconnects after
//! failures, and answers nothing else. A [`SimClient`] asks a random NameServer for the route of a
//! random topic every `interval`. Both run as tasks on the current actix arbiter.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rustls::ClientConfig;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::broker::FakeBroker;
use crate::client::Client;

/// What a simulated broker is: the broker itself and how it talks to its NameServers.
#[derive(Debug, Clone)]
pub struct SimBrokerSpec {
    pub broker: FakeBroker,
    /// NameServers to register with.
    pub namesrv: Vec<String>,
    pub register_interval: Duration,
    /// Also send BROKER_HEARTBEAT this often (acting-master brokers do); `None` = never.
    pub heartbeat_interval: Option<Duration>,
    /// Connect and request timeout.
    pub timeout: Duration,
    /// Connect with TLS (`None`: plaintext).
    pub tls: Option<Arc<ClientConfig>>,
}

impl SimBrokerSpec {
    /// A broker of `cluster`/`name` with id `id`, advertising `127.0.0.1:<port>`, registering
    /// every 30 s like a real one.
    pub fn new(
        cluster: &str,
        name: &str,
        id: i64,
        port: u16,
        topics: Vec<String>,
        namesrv: Vec<String>,
    ) -> Self {
        Self {
            broker: FakeBroker::new(cluster, name, id, port, topics),
            namesrv,
            register_interval: Duration::from_secs(30),
            heartbeat_interval: None,
            timeout: Duration::from_secs(3),
            tls: None,
        }
    }
}

/// A broker's view of one NameServer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamesrvLink {
    pub addr: String,
    pub registrations: u64,
    pub last_registered: Option<Instant>,
    pub last_error: Option<String>,
    /// What the last registration answered: the master's address (for slaves).
    pub master_addr: Option<String>,
}

/// What a simulated broker has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimBrokerStatus {
    pub links: Vec<NamesrvLink>,
}

struct Link {
    status: NamesrvLink,
    client: Option<Client>,
}

impl Link {
    async fn request(
        &mut self,
        request: RemotingCommand,
        spec: &SimBrokerSpec,
    ) -> Result<RemotingCommand, String> {
        if self.client.is_none() {
            self.client = Some(
                Client::connect_with(&self.status.addr, spec.timeout, spec.tls.as_ref())
                    .await
                    .map_err(|e| e.to_string())?,
            );
        }
        let Some(client) = self.client.as_mut() else {
            return Err("not connected".into());
        };
        match client.request(request).await {
            Ok(resp) => Ok(resp),
            Err(err) => {
                // Reconnect next time.
                self.client = None;
                Err(err.to_string())
            }
        }
    }

    async fn register(&mut self, spec: &SimBrokerSpec) {
        match self.request(spec.broker.register(), spec).await {
            Ok(resp) if resp.response_code() == ResponseCode::SUCCESS => {
                self.status.registrations += 1;
                self.status.last_registered = Some(Instant::now());
                self.status.last_error = None;
                self.status.master_addr = resp.ext("masterAddr").map(str::to_owned);
            }
            Ok(resp) => {
                self.status.last_error = Some(format!("code {}: {:?}", resp.code, resp.remark))
            }
            Err(err) => self.status.last_error = Some(err),
        }
    }
}

/// A running simulated broker.
pub struct SimBroker {
    spec: SimBrokerSpec,
    status: watch::Receiver<SimBrokerStatus>,
    /// Stopped with `true` for a graceful stop.
    task: StoppableTask<bool>,
}

impl SimBroker {
    /// Starts the broker on the current arbiter: it registers at once, then every
    /// `register_interval`.
    pub fn spawn(spec: SimBrokerSpec) -> Self {
        let (stop_tx, stop_rx) = oneshot::channel();
        let links: Vec<Link> = spec
            .namesrv
            .iter()
            .map(|addr| Link {
                status: NamesrvLink {
                    addr: addr.clone(),
                    ..NamesrvLink::default()
                },
                client: None,
            })
            .collect();
        let (status_tx, status_rx) = watch::channel(SimBrokerStatus {
            links: links.iter().map(|l| l.status.clone()).collect(),
        });
        let task = actix_rt::spawn(run_broker(spec.clone(), links, stop_rx, status_tx));
        Self {
            spec,
            status: status_rx,
            task: StoppableTask {
                stop: Some(stop_tx),
                task,
            },
        }
    }

    pub fn spec(&self) -> &SimBrokerSpec {
        &self.spec
    }

    pub fn status(&self) -> SimBrokerStatus {
        self.status.borrow().clone()
    }

    /// Waits until every NameServer has answered at least `n` registrations, at most `limit`.
    pub async fn registered(&mut self, n: u64, limit: Duration) -> bool {
        let wait = self
            .status
            .wait_for(|s| s.links.iter().all(|l| l.registrations >= n));
        tokio::time::timeout(limit, wait)
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Stops the broker. `graceful`: it unregisters from every NameServer first, as a broker
    /// shutting down does; otherwise its connections just drop, as when it is killed.
    pub async fn stop(self, graceful: bool) {
        self.task.stop(graceful).await;
    }
}

async fn run_broker(
    spec: SimBrokerSpec,
    mut links: Vec<Link>,
    mut stop: oneshot::Receiver<bool>,
    status: watch::Sender<SimBrokerStatus>,
) {
    let publish = |links: &[Link]| {
        let _ = status.send(SimBrokerStatus {
            links: links.iter().map(|l| l.status.clone()).collect(),
        });
    };
    let mut next_register = Instant::now();
    let mut next_heartbeat = spec.heartbeat_interval.map(|every| Instant::now() + every);
    loop {
        let now = Instant::now();
        if now >= next_register {
            join_all(links.iter_mut().map(|link| link.register(&spec))).await;
            publish(&links);
            next_register = Instant::now() + spec.register_interval;
        }
        if let (Some(at), Some(every)) = (next_heartbeat, spec.heartbeat_interval) {
            if now >= at {
                for link in &mut links {
                    if let Some(client) = link.client.as_mut() {
                        let _ = client.oneway(spec.broker.heartbeat()).await;
                    }
                }
                next_heartbeat = Some(Instant::now() + every);
            }
        }
        let wake = next_heartbeat.map_or(next_register, |h| h.min(next_register));
        tokio::select! {
            graceful = &mut stop => {
                if graceful.unwrap_or(false) {
                    // A real broker unregisters from each NameServer in turn.
                    for link in &mut links {
                        let _ = link.request(spec.broker.unregister(), &spec).await;
                    }
                }
                return;
            }
            _ = tokio::time::sleep_until(tokio::time::Instant::from_std(wake)) => {}
        }
    }
}

/// What a simulated client asks for.
#[derive(Debug, Clone)]
pub struct SimClientSpec {
    pub namesrv: Vec<String>,
    pub topics: Vec<String>,
    pub interval: Duration,
    pub timeout: Duration,
    /// Connect with TLS (`None`: plaintext).
    pub tls: Option<Arc<ClientConfig>>,
}

/// Route queries of a simulated client so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimClientStats {
    pub queries: u64,
    pub found: u64,
    pub not_found: u64,
    pub errors: u64,
    pub last_latency: Duration,
}

/// A running simulated client.
pub struct SimClient {
    stats: watch::Receiver<SimClientStats>,
    task: StoppableTask<()>,
}

impl SimClient {
    pub fn spawn(spec: SimClientSpec) -> Self {
        let (stop_tx, stop_rx) = oneshot::channel();
        let (stats_tx, stats_rx) = watch::channel(SimClientStats::default());
        let task = actix_rt::spawn(run_client(spec, stop_rx, stats_tx));
        Self {
            stats: stats_rx,
            task: StoppableTask {
                stop: Some(stop_tx),
                task,
            },
        }
    }

    pub fn stats(&self) -> SimClientStats {
        *self.stats.borrow()
    }

    pub async fn stop(self) {
        self.task.stop(()).await;
    }
}

async fn run_client(
    spec: SimClientSpec,
    mut stop: oneshot::Receiver<()>,
    stats: watch::Sender<SimClientStats>,
) {
    let mut rng = XorShift::seeded();
    let mut current = SimClientStats::default();
    loop {
        if let (Some(addr), Some(topic)) = (rng.pick(&spec.namesrv), rng.pick(&spec.topics)) {
            let started = Instant::now();
            let request = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
                .with_ext("topic", topic.clone());
            let result = match Client::connect_with(addr, spec.timeout, spec.tls.as_ref()).await {
                Ok(mut client) => client.request(request).await.map_err(|e| e.to_string()),
                Err(err) => Err(err.to_string()),
            };
            current.queries += 1;
            current.last_latency = started.elapsed();
            match result {
                Ok(resp) if resp.response_code() == ResponseCode::SUCCESS => current.found += 1,
                Ok(resp) if resp.response_code() == ResponseCode::TOPIC_NOT_EXIST => {
                    current.not_found += 1
                }
                _ => current.errors += 1,
            }
            let _ = stats.send(current);
        }
        tokio::select! {
            _ = &mut stop => return,
            _ = tokio::time::sleep(spec.interval) => {}
        }
    }
}

/// A simulation task: told to stop with a value it reads, and aborted if dropped unstopped.
struct StoppableTask<S> {
    stop: Option<oneshot::Sender<S>>,
    task: JoinHandle<()>,
}

impl<S> StoppableTask<S> {
    /// Sends `signal` and waits for the task to end.
    async fn stop(mut self, signal: S) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(signal);
        }
        let _ = (&mut self.task).await;
    }
}

impl<S> Drop for StoppableTask<S> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A small xorshift generator: good enough to pick servers and topics, no dependency needed.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    pub fn seeded() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9E37_79B9, |d| d.as_nanos() as u64);
        Self(nanos | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len()))
    }
}
