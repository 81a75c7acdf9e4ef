//! `hostile`: while hostile connections send the most expensive frames the server's limits allow,
//! is every other connection still answered within 100 ms?
//!
//! 1. Registers one broker with two topics (held, re-registering) and puts one KV entry.
//! 2. Opens `--probes` probe connections. The server assigns connections to its worker threads
//!    round-robin, so consecutive probes land on every worker (32 cover up to 32 workers). Each
//!    probe sends one request every `--interval` (open loop, at its own offset in the interval),
//!    rotating GET_ROUTEINFO_BY_TOPIC (answered on the connection's thread from its route
//!    cache), GET_BROKER_CLUSTER_INFO (the route registry) and GET_KV_CONFIG (the KV store), so a
//!    stall shows which thread it is on (`--probe-kinds` narrows them). Latency runs from the
//!    write of a request to its reply; how late the writes were against their schedule is
//!    reported apart (generator lag).
//! 3. A baseline phase with the probes alone, then one phase per hostile kind and per count of
//!    hostile connections (`--hostile 1,2`): each hostile connection sends its frame, waits for
//!    the answer (or the close), and sends again until the phase ends. Frames alternate between
//!    two variants where the server would otherwise recognise a repeated registration body.
//! 4. Per phase: the probes' p50/p99/max, how many replies took longer than `--slow` (100 ms)
//!    and on how many probe connections, per request kind; the hostile frames sent, answered
//!    (by response code), closed and timed out; the server's CPU and memory, and its busiest
//!    threads (CPU per thread from `/proc/<pid>/task`, sampled every 200 ms).
//!
//! Plain TCP or, with `--tls`, TLS on every connection.
//!
//! The parts: `args` (the options and kinds), `names` (what the run names on the server),
//! `frames` (the hostile frames of each kind), `probe` (one probe connection), `window` (the
//! probes' figures over a phase), `conn` (one hostile connection), `threads` (the server's
//! threads sampled), `run` (the phases) and `report` (the table and the JSON result).

mod args;
mod conn;
mod frames;
mod names;
mod probe;
mod report;
mod run;
mod threads;
mod window;

pub use args::HostileArgs;
pub use run::run;
