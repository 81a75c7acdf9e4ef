//! The rmq-namesrv actor system and the state it owns.
//!
//! ```text
//!  TCP ──► Listener ──(start)──► Connection (one per socket, on a worker arbiter)
//!                                   │  frame → dispatch → typed message
//!                                   ▼
//!                             RouteRegistry (own arbiter; sole owner of RouteTables)
//!                                   ▲
//!  Housekeeping ── ScanInactive ────┘ ── ChannelClosed (relayed from Connection stops)
//! ```

pub mod background;
pub mod connection;
pub mod dispatch;
pub mod housekeeping;
pub mod kv;
pub mod listener;
pub mod messages;
pub mod outbox;
pub mod persist;
pub mod registration;
pub mod registry;
pub mod response;
pub mod route;
pub mod route_cache;
pub mod settings;
pub mod tls_reload;
