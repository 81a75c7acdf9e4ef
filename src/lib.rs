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
//! Start a NameServer from inside an actix System and talk to it:
//!
//! ```no_run
//! use rmq_namesrv::{config::Config, NameServer};
//!
//! #[actix::main]
//! async fn main() {
//!     let mut config = Config::default();
//!     config.server.listen = "127.0.0.1:9876".parse().unwrap();
//!     let server = NameServer::new(config).bind().await.expect("listening");
//!     println!("name server on {}", server.local_addr());
//!     server.stop().await;
//! }
//! ```

pub mod admin;
pub mod client;
pub mod cluster_test;
pub mod config;
pub mod java_props;
pub mod runtime;
pub mod server;
pub mod sim;

pub use rmq_actors as actors;
pub use rmq_protocol as protocol;
pub use server::{NameServer, NameServerHandle, StartError};
