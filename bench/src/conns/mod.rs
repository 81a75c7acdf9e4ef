//! `conns`: many concurrent client connections held open, idle and then polling routes.
//!
//! 1. Registers `--brokers` broker groups x `--topics` topics (as `routes` does, held open and
//!    re-registering for the whole run) unless `--preregistered`, and probes the first route.
//! 2. Reads the server's VmRSS/VmHWM, then opens `--connections` TCP connections, at most
//!    `--concurrency` in flight, each connect bounded by `--connect-timeout`, nothing started
//!    after `--open-timeout`. Each connection sends one route query as soon as it is open and
//!    waits for the reply (bounded by `--timeout`), as a client does: it connects to send a
//!    request. A connect or first request that fails (the generator's or the server's fd limit, a
//!    refused or timed-out connect, a closed connection, an error code) is counted by its error,
//!    never fatal. With `--silent` nothing is sent: then the server holds connections that never
//!    spoke (ours waits for the first byte to tell TLS from plaintext, as long as
//!    `server.idle_timeout`, 120 s, like Java's idle close).
//! 3. After `--settle` with every connection idle: the server's RSS again (bytes per idle
//!    connection = RSS growth / connections open), and how many the server closed meanwhile.
//! 4. Polling: every connection sends one GET_ROUTEINFO_BY_TOPIC (Java 5.x client request) per
//!    `--poll-period` at its own offset (connection `i` of `n` at `i / n` of the period). A
//!    RocketMQ client polls every 30 s ([`CLIENT_POLL_PERIOD`]), so the period compresses that by
//!    30 s / period (5 s: 6x, 10,000 connections offer 2,000 req/s instead of 333). Polls due in
//!    the first `--warmup` are recorded apart (a JVM compiles its route path meanwhile); the
//!    measured window is the `--duration` after it. Latency from the write to the reply (HDR,
//!    µs), plus how late each poll was written against its due time; the server's RSS sampled
//!    throughout, its CPU over the measured window.
//! 5. The connections close; the server's RSS a moment later.
//!
//! RSS is the process's resident memory: kernel socket buffers are not in it (for either server).
//! One task per connection, holding no buffer while idle (a poll allocates ~1 KiB for its reply
//! and frees it), so the generator itself costs little per connection; its own RSS growth is
//! reported too. Plain TCP only.
//!
//! The parts: `args` (the options), `limits` (file descriptor limits), `setup` (the brokers and
//! the route probe), `open` (opening the connections), `poll` (the polling phase), `figures`
//! (per-connection arithmetic and its text) and `run` (the phases in order and the report).

mod args;
mod figures;
mod limits;
mod open;
mod poll;
mod run;
mod setup;

pub use args::ConnsArgs;
pub use run::run;
