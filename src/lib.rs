//! rmq-namesrv: an Apache RocketMQ NameServer, wire-compatible with the Java `mqnamesrv`, built
//! as an actix actor system.
//!
//! ```text
//!   brokers, producers, consumers, admin tools
//!        │ TCP (RocketMQ remoting frames)
//!        ▼
//!   Listener ──► Connection ×N (worker arbiters): decode frame → typed message
//!                   │  send(msg) ─────────────────────────────┐
//!                   ▼                                         │ one-shot reply
//!               RouteRegistry (own arbiter, sole owner of the route tables) ◄─┘
//!                   ▲ ScanInactive every scan_interval; ChannelClosed on every close
//!               Housekeeping
//! ```
//!
//! Crates: [`rmq_protocol`] (wire format, no actors), [`rmq_actors`] (actors and route rules),
//! and this one (configuration, the daemon, the embedding API).
//!
//! # Embedding
//!
//! Start a NameServer from inside an actix System, talk to its route registry with typed
//! messages, and stop it gracefully:
//!
//! ```no_run
//! use rmq_namesrv::actors::messages::{GetRouteStats, QueryRoute};
//! use rmq_namesrv::{config::Config, NameServer};
//!
//! #[actix::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let mut config = Config::default();
//!     config.server.listen = "127.0.0.1:9876".parse()?;
//!     let server = NameServer::new(config).bind().await?;
//!     println!("name server on {}", server.local_addr());
//!
//!     // Brokers register over TCP; the application reads the tables without a socket.
//!     let route = server.routes().send(QueryRoute { topic: "TopicTest".into() }).await?;
//!     let stats = server.routes().send(GetRouteStats).await?;
//!     println!("route: {route:?}, {} topics", stats.topics);
//!
//!     // Stops accepting, closes connections, flushes the KV store.
//!     server.stop().await;
//!     Ok(())
//! }
//! ```
//!
//! [`NameServer::start`] takes an already bound listener instead (tests bind `127.0.0.1:0`).
//! [`StandaloneController::start`] runs the 5.x controller alone the same way (what
//! `rmq-namesrv controller` runs), with the same front door and HTTP port.
//! The actors run under supervisors; see the README for what survives a restart.

pub mod config;
pub mod controller_config;
pub mod controller_port;
mod fleet;
pub mod health;
mod http;
pub mod java_keys;
pub mod java_props;
pub mod migrate;
pub mod product_env;
pub mod runtime_config;
pub mod server;

pub use rmq_actors as actors;
pub use rmq_protocol as protocol;
pub use rmq_tools as tools;
pub use rmq_transport as transport;
pub use server::{
    ActorStatus, ControllerHandle, Health, NameServer, NameServerHandle, StandaloneController,
    StartError,
};
