//! The bytes under the RocketMQ frames: TLS and the PROXY protocol, shared by the server, its
//! clients and the tools (docs/transport.md).
//!
//! - [`settings`]: the `[tls]` and `[proxy_protocol]` settings (Java's `tls.*` keys map onto them);
//! - [`pem`]: certificates and keys from PEM files (PKCS#8 plain or encrypted, PKCS#1, SEC1);
//! - [`server`]: the server's rustls configuration, as Java's `TlsHelper` builds it;
//! - [`client`]: the client's, and [`client::connect`] for plaintext or TLS;
//! - [`proxy`]: PROXY v1/v2 headers;
//! - [`front_door`]: what a server port does with a new connection before its first frame.
//!
//! No actors: the server's actors use it, and so do the admin CLI, the simulated brokers and the
//! load generator.

pub mod client;
pub mod front_door;
pub mod pem;
pub mod proxy;
pub mod server;
pub mod settings;

pub use settings::{
    ClientAuth, ClientTlsSettings, InvalidSetting, ProxyMode, ProxyProtocolSettings, Secret,
    TlsMode, TlsSettings,
};
