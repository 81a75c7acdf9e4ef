//! A NameServer inside a larger actix application.
//!
//! The application has an actor of its own, `RouteWatcher`, that asks the embedded NameServer's
//! route registry for a topic's route and the table sizes, with typed messages (no sockets). A
//! simulated broker registers over TCP so there is something to watch.
//!
//! ```sh
//! cargo run --example embedded                      # until Ctrl-C
//! cargo run --example embedded -- --run-for 5s      # stop by itself
//! ```

use std::time::Duration;

use actix::prelude::*;
use clap::Parser;
use rmq_namesrv::actors::messages::{GetRouteStats, QueryRoute};
use rmq_namesrv::actors::registry::RouteRegistry;
use rmq_namesrv::config::Config;
use rmq_namesrv::tools::sim::{SimBroker, SimBrokerSpec};
use rmq_namesrv::NameServer;

#[derive(Debug, Parser)]
struct Args {
    /// Where the embedded NameServer listens.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: std::net::SocketAddr,
    /// Stop after this long (humantime); default: run until Ctrl-C.
    #[arg(long, value_parser = humantime::parse_duration)]
    run_for: Option<Duration>,
}

/// The application's own actor: it watches one topic through the NameServer's registry.
struct RouteWatcher {
    routes: Addr<RouteRegistry>,
    topic: String,
}

impl Actor for RouteWatcher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(Duration::from_secs(1), |act, ctx| {
            let routes = act.routes.clone();
            let topic = act.topic.clone();
            async move {
                let route = routes
                    .send(QueryRoute {
                        topic: topic.clone(),
                    })
                    .await
                    .ok()
                    .flatten();
                let stats = routes.send(GetRouteStats).await.unwrap_or_default();
                match route {
                    Some(route) => {
                        let brokers: Vec<String> = route
                            .broker_datas
                            .iter()
                            .map(|b| format!("{}{:?}", b.broker_name, b.broker_addrs))
                            .collect();
                        println!(
                            "watcher: {topic} -> {} (registry: {} topics, {} live brokers)",
                            brokers.join(", "),
                            stats.topics,
                            stats.live_brokers
                        );
                    }
                    None => println!("watcher: {topic} has no route yet"),
                }
            }
            .into_actor(act)
            .wait(ctx);
        });
    }
}

#[actix::main]
async fn main() {
    let args = Args::parse();
    let mut config = Config::default();
    config.server.listen = args.listen;
    config.server.workers = 1;
    // Keep the example's KV store out of the user's home directory.
    let dir = std::env::temp_dir().join(format!("rmq-embedded-{}", std::process::id()));
    config.kv.path = dir.join("kvConfig.json");
    config.kv.config_store_path = dir.join("namesrv.properties");

    let server = match NameServer::new(config).bind().await {
        Ok(server) => server,
        Err(err) => {
            eprintln!("embedded: cannot start the name server: {err}");
            std::process::exit(1);
        }
    };
    println!("embedded: name server on {}", server.local_addr());

    let watcher = RouteWatcher {
        routes: server.routes().clone(),
        topic: "OrderEvents".into(),
    }
    .start();

    let mut spec = SimBrokerSpec::new(
        "DefaultCluster",
        "broker-a",
        0,
        10911,
        vec!["OrderEvents".into(), "Payments".into()],
        vec![server.local_addr().to_string()],
    );
    spec.register_interval = Duration::from_secs(5);
    let broker = SimBroker::spawn(spec);

    match args.run_for {
        Some(limit) => tokio::time::sleep(limit).await,
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
    broker.stop(true).await;
    drop(watcher);
    server.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    println!("embedded: stopped");
}
