//! Client-side tools for any RocketMQ NameServer (ours or Java's), kept apart from the server:
//!
//! - [`client`]: one connection, requests matched to responses by opaque;
//! - [`broker`]: [`broker::FakeBroker`], the requests a broker sends (REGISTER_BROKER in its 5.x
//!   and 4.x forms, UNREGISTER_BROKER, BROKER_HEARTBEAT, QUERY_DATA_VERSION), built one way for
//!   the tests, the simulated brokers and the load generator;
//! - [`sim`]: simulated brokers and clients that keep talking to NameServers (the dev cluster);
//! - [`admin`]: `rmq-namesrv admin`, mqadmin's NameServer commands;
//! - [`tls_args`]: the `--tls...` options of every tool;
//! - [`credentials`]: the `--access-key`/`--secret-key` signing options;
//! - [`outcome`]: why a server gave no usable answer, the exit statuses, body decoding (shared
//!   by `admin` and `fleet`);
//! - [`fleet`]: the fleet check, what differs between NameServers (the CLI's and the server's).

pub mod admin;
pub mod broker;
pub mod client;
pub mod credentials;
pub mod fleet;
pub mod outcome;
pub mod sim;
pub mod tls_args;
