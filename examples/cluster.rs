//! A local dev cluster in one process: N NameServers on 127.0.0.1, simulated broker groups
//! (a master and slaves each) registering with every NameServer, and a simulated client fetching
//! routes from a random NameServer, with a compact live view. Ctrl-C stops everything cleanly.
//!
//! ```sh
//! cargo run --example cluster                                   # 2 NameServers on 9876, 9877
//! cargo run --example cluster -- --register-interval 5s --chaos 20s   # watch expiry and re-registration
//! cargo run --example cluster -- --help
//! ```
//!
//! Real clients can use it too: `NAMESRV_ADDR="127.0.0.1:9876;127.0.0.1:9877"`.

use std::time::{Duration, Instant};

use clap::Parser;
use rmq_namesrv::actors::messages::{GetRouteStats, ListBrokers};
use rmq_namesrv::config::Config;
use rmq_namesrv::tools::sim::{SimBroker, SimBrokerSpec, SimClient, SimClientSpec, XorShift};
use rmq_namesrv::{NameServer, NameServerHandle};

#[derive(Debug, Parser)]
#[command(about = "Run a local RocketMQ NameServer cluster with simulated brokers")]
struct Args {
    /// Number of NameServers.
    #[arg(long, default_value_t = 2)]
    namesrvs: usize,
    /// Port of the first NameServer; the others follow. 0 = ephemeral ports.
    #[arg(long, default_value_t = 9876)]
    base_port: u16,
    /// Broker groups (broker-a, broker-b, ...).
    #[arg(long, default_value_t = 2)]
    groups: usize,
    /// Slaves per group (besides the master).
    #[arg(long, default_value_t = 1)]
    slaves: usize,
    /// Topics per group.
    #[arg(long, default_value_t = 3)]
    topics: usize,
    /// How often brokers register (real brokers: 30 s).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    register_interval: Duration,
    /// Also send broker heartbeats this often.
    #[arg(long, value_parser = humantime::parse_duration)]
    heartbeat_interval: Option<Duration>,
    /// How often the simulated client fetches a route.
    #[arg(long, default_value = "500ms", value_parser = humantime::parse_duration)]
    client_interval: Duration,
    /// How often the live view is printed.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    view_interval: Duration,
    /// Broker expiry of the NameServers (Java: 120 s); shorten it to watch expiry quickly.
    #[arg(long, default_value = "120s", value_parser = humantime::parse_duration)]
    broker_expiry: Duration,
    /// Every this long, kill (or bring back) a NameServer or a broker, alternately.
    #[arg(long, value_parser = humantime::parse_duration)]
    chaos: Option<Duration>,
    /// Stop after this long; default: run until Ctrl-C.
    #[arg(long, value_parser = humantime::parse_duration)]
    run_for: Option<Duration>,
    /// TLS only: the NameServers enforce TLS (with a self-signed certificate each) and the
    /// simulated brokers and client connect with TLS.
    #[arg(long)]
    tls: bool,
}

/// A NameServer slot: its fixed address and the running server, if up.
struct Namesrv {
    addr: std::net::SocketAddr,
    config: Config,
    running: Option<NameServerHandle>,
}

impl Namesrv {
    fn start(&mut self) -> Result<(), String> {
        let listener = std::net::TcpListener::bind(self.addr)
            .map_err(|e| format!("cannot listen on {}: {e}", self.addr))?;
        let server = NameServer::new(self.config.clone())
            .start(listener)
            .map_err(|e| e.to_string())?;
        self.addr = server.local_addr();
        self.running = Some(server);
        Ok(())
    }
}

/// A broker slot: its spec and the running broker, if up.
struct Broker {
    spec: SimBrokerSpec,
    running: Option<SimBroker>,
}

struct Cluster {
    namesrvs: Vec<Namesrv>,
    brokers: Vec<Broker>,
    client: Option<SimClient>,
    started: Instant,
    rng: XorShift,
    chaos_round: u64,
}

impl Cluster {
    async fn view(&self) {
        let mut line = format!("[{:>5.1}s]", self.started.elapsed().as_secs_f64());
        for ns in &self.namesrvs {
            match &ns.running {
                Some(server) => {
                    let stats = server
                        .routes()
                        .send(GetRouteStats)
                        .await
                        .unwrap_or_default();
                    line.push_str(&format!(
                        "  ns {}: {} brokers, {} topics",
                        ns.addr.port(),
                        stats.live_brokers,
                        stats.topics
                    ));
                }
                None => line.push_str(&format!("  ns {}: DOWN", ns.addr.port())),
            }
        }
        println!("{line}");
        let mut brokers = String::from("         ");
        for broker in &self.brokers {
            let state = match &broker.running {
                None => "DOWN".to_owned(),
                Some(b) => {
                    let status = b.status();
                    let ages: Vec<String> = status
                        .links
                        .iter()
                        .map(|l| match (l.last_registered, &l.last_error) {
                            (_, Some(_)) => "err".to_owned(),
                            (Some(at), None) => format!("{}s", at.elapsed().as_secs()),
                            (None, None) => "-".to_owned(),
                        })
                        .collect();
                    ages.join("/")
                }
            };
            brokers.push_str(&format!(
                "  {}#{} {}",
                broker.spec.broker.name, broker.spec.broker.id, state
            ));
        }
        println!("{brokers}");
        if let Some(client) = &self.client {
            let s = client.stats();
            println!(
                "           client: {} route queries, {} found, {} not found, {} errors, last {:?}",
                s.queries, s.found, s.not_found, s.errors, s.last_latency
            );
        }
    }

    /// Alternately a NameServer and a broker: brings a stopped one back, or stops a random one.
    async fn chaos(&mut self) {
        self.chaos_round += 1;
        if self.chaos_round % 2 == 1 {
            let down = self.namesrvs.iter().position(|ns| ns.running.is_none());
            let i = down.unwrap_or_else(|| self.rng.below(self.namesrvs.len()));
            let ns = &mut self.namesrvs[i];
            match ns.running.take() {
                Some(server) => {
                    println!("chaos: stopping NameServer {}", ns.addr);
                    server.stop().await;
                }
                None => match ns.start() {
                    Ok(()) => println!(
                        "chaos: NameServer {} is back (empty: brokers re-register)",
                        ns.addr
                    ),
                    Err(err) => println!("chaos: NameServer {} cannot restart: {err}", ns.addr),
                },
            }
        } else {
            let down = self.brokers.iter().position(|b| b.running.is_none());
            let i = down.unwrap_or_else(|| self.rng.below(self.brokers.len()));
            let broker = &mut self.brokers[i];
            match broker.running.take() {
                Some(running) => {
                    println!(
                        "chaos: killing {}#{} (its connections drop)",
                        broker.spec.broker.name, broker.spec.broker.id
                    );
                    running.stop(false).await;
                }
                None => {
                    println!(
                        "chaos: {}#{} is back",
                        broker.spec.broker.name, broker.spec.broker.id
                    );
                    broker.running = Some(SimBroker::spawn(broker.spec.clone()));
                }
            }
        }
    }

    async fn shutdown(mut self) {
        if let Some(client) = self.client.take() {
            client.stop().await;
        }
        for broker in &mut self.brokers {
            if let Some(running) = broker.running.take() {
                running.stop(true).await;
            }
        }
        for ns in &mut self.namesrvs {
            if let Some(server) = ns.running.take() {
                // Brokers unregistered: nothing should be left.
                let left = server
                    .routes()
                    .send(ListBrokers)
                    .await
                    .map(|l| l.len())
                    .unwrap_or(0);
                println!("stopping NameServer {} ({left} brokers left)", ns.addr);
                server.stop().await;
            }
        }
    }
}

#[actix::main]
async fn main() {
    let args = Args::parse();
    let dir = std::env::temp_dir().join(format!("rmq-cluster-{}", std::process::id()));
    let mut namesrvs = Vec::new();
    for i in 0..args.namesrvs.max(1) {
        let port = if args.base_port == 0 {
            0
        } else {
            args.base_port.saturating_add(i as u16)
        };
        let mut config = Config::default();
        config.server.listen = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        config.server.workers = 1;
        config.registry.broker_expiry = args.broker_expiry;
        config.registry.scan_interval = Duration::from_secs(1).min(args.broker_expiry);
        config.kv.path = dir.join(format!("ns{i}/kvConfig.json"));
        config.kv.config_store_path = dir.join(format!("ns{i}/namesrv.properties"));
        config.log.level = "warn".into();
        if args.tls {
            config.tls.mode = rmq_namesrv::config::TlsMode::Enforcing;
        }
        let mut ns = Namesrv {
            addr: config.server.listen,
            config,
            running: None,
        };
        if let Err(err) = ns.start() {
            eprintln!("cluster: {err}");
            std::process::exit(1);
        }
        // Restarts reuse the port the first start got.
        ns.config.server.listen = ns.addr;
        println!("NameServer {} listening on {}", i, ns.addr);
        namesrvs.push(ns);
    }
    let addrs: Vec<String> = namesrvs.iter().map(|n| n.addr.to_string()).collect();
    println!("NAMESRV_ADDR=\"{}\"", addrs.join(";"));

    // Like a Java client with tls.enable=true: the servers' self-signed certificates are taken.
    let tls = if args.tls {
        let settings = rmq_namesrv::config::ClientTlsSettings {
            enable: true,
            ..Default::default()
        };
        match rmq_namesrv::transport::client::client_config(&settings) {
            Ok(config) => Some(config),
            Err(err) => {
                eprintln!("cluster: TLS: {err}");
                std::process::exit(1);
            }
        }
    } else {
        None
    };
    let mut brokers = Vec::new();
    let mut all_topics = Vec::new();
    for g in 0..args.groups {
        let name = format!("broker-{}", (b'a' + (g % 26) as u8) as char);
        let topics: Vec<String> = (0..args.topics)
            .map(|t| format!("{name}-topic-{t}"))
            .collect();
        all_topics.extend(topics.iter().cloned());
        for id in 0..=args.slaves {
            let port = 10911 + (g * 100 + id * 10) as u16;
            let mut spec = SimBrokerSpec::new(
                "DefaultCluster",
                &name,
                id as i64,
                port,
                topics.clone(),
                addrs.clone(),
            );
            spec.register_interval = args.register_interval;
            spec.heartbeat_interval = args.heartbeat_interval;
            spec.tls.clone_from(&tls);
            brokers.push(Broker {
                running: Some(SimBroker::spawn(spec.clone())),
                spec,
            });
        }
    }
    all_topics.push("NoSuchTopic".into());
    let client = SimClient::spawn(SimClientSpec {
        namesrv: addrs.clone(),
        topics: all_topics,
        interval: args.client_interval,
        timeout: Duration::from_secs(3),
        tls,
    });

    let mut cluster = Cluster {
        namesrvs,
        brokers,
        client: Some(client),
        started: Instant::now(),
        rng: XorShift::seeded(),
        chaos_round: 0,
    };
    let deadline = args.run_for.map(|d| tokio::time::Instant::now() + d);
    let mut view = tokio::time::interval(args.view_interval);
    let mut chaos = args
        .chaos
        .map(|every| tokio::time::interval_at(tokio::time::Instant::now() + every, every));
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        let until_deadline = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let next_chaos = async {
            match chaos.as_mut() {
                Some(interval) => {
                    interval.tick().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = &mut ctrl_c => break,
            _ = until_deadline => break,
            _ = view.tick() => cluster.view().await,
            _ = next_chaos => cluster.chaos().await,
        }
    }
    println!("shutting down");
    cluster.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    println!("cluster stopped");
}
