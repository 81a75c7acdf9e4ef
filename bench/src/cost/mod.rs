//! `cost`: what each decoder of the server costs as a function of its input's size, in process
//! (no server). Every request is to cost at most linear time and bounded memory in its size,
//! whatever its contents; this workload looks for hidden quadratic paths.
//!
//! For each decoder (frame codec on a stream, JSON header on the fast scanner path and the serde
//! path, ROCKETMQ binary header, the typed headers read from a command's ext fields,
//! RegisterBrokerBody as JSON and compressed, TopicRouteData, DataVersion, the properties body of
//! UPDATE_NAMESRV_CONFIG) and each adversarial shape (many fields, repeated keys, long strings,
//! escapes, nesting as deep as the decoder accepts, late refusals), inputs of `S, 2S, 4S, …` up
//! to `--max-bytes` (the frame limit) are decoded; a refusal is timed like an acceptance. Per
//! size: the fastest of several runs (thread CPU time, which unlike wall time does not count
//! waiting for a core on a shared machine) in ns per input byte, and the bytes allocated at the peak
//! of one more run (a counting allocator, on only for that run). The growth ratio is
//! `time(4x) / time(x)` (normalized to exactly four times the bytes): about 4 is linear, 6 or more
//! is flagged SUPERLINEAR (and re-timed once more before it is). A size projected to take longer
//! than `--max-decode` is not run (the case is then flagged as stopped).
//!
//! The parts: `args` (the options), `case` (a decoder with an input shape), `build` (the input
//! builders, shared with `hostile`), `decoders` (each decoder as the server calls it), `cases`
//! (every case, by decoder), `alloc` (the counting allocator), `measure` (timing one case over
//! the sizes) and `run` (the run and its report).

mod alloc;
mod args;
pub(crate) mod build;
mod case;
mod cases;
mod decoders;
mod measure;
mod run;

pub use args::CostArgs;
pub use run::run;
