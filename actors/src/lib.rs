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

// A request that cannot be read is answered with the RemotingCommand its reader returns in an
// `Err`. The type is large because its ext fields live inline (reading an ordinary header
// allocates nothing); that path is rare and moves it once, so it is not boxed.
#![allow(clippy::result_large_err)]

// First: its `contained_actor!` macro is used by the modules after it.
#[macro_use]
pub mod contain;
pub mod access;
pub mod background;
pub mod codes;
pub mod collect;
pub mod connection;
pub mod controller;
pub mod dispatch;
pub mod etcd_access;
pub mod etcd_api;
pub mod etcd_call;
pub mod etcd_migrate;
pub mod file_watch;
pub mod housekeeping;
pub mod kv;
pub mod limits;
pub mod listener;
pub mod logging;
pub mod messages;
pub mod metrics;
pub mod outbound;
pub mod outbox;
pub mod persist;
pub mod registration;
pub mod registry;
pub mod response;
pub mod route;
pub mod route_cache;
pub mod services;
pub mod settings;
pub mod stored;
pub mod tls_reload;
pub mod worker;
