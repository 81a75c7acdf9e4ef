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

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write as _;
use std::hint::black_box;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use clap::Args;
use rmq_protocol::body::{DataVersion, RegisterBrokerBody, TopicRouteData};
use rmq_protocol::code::version;
use rmq_protocol::codec::{RemotingCodec, DEFAULT_MAX_FRAME};
use rmq_protocol::custom_headers::{
    BrokerHeartbeatHeader, CommandHeader, GetRouteInfoHeader, PutKvConfigHeader,
    QueryDataVersionHeader, RegisterBrokerHeader,
};
use rmq_protocol::{fastjson, header_codec, properties, RemotingCommand, SerializeType};
use serde_json::{json, Value};
use tokio_util::codec::Decoder;

use crate::BenchError;

#[derive(Debug, Clone, Args)]
pub struct CostArgs {
    /// The largest input, in bytes (default: the frame limit, 16 MiB).
    #[arg(long, default_value_t = DEFAULT_MAX_FRAME)]
    pub max_bytes: usize,
    /// The smallest input; sizes double from it up to --max-bytes.
    #[arg(long, default_value_t = 64 * 1024)]
    pub min_bytes: usize,
    /// Timed runs per size at least (the fastest counts); small sizes run until 50 ms are spent.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// A size whose projected decode time is longer than this is not run.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "20s")]
    pub max_decode: Duration,
    /// The whole run stops starting cases after this long (the rest are reported skipped).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30m")]
    pub time_limit: Duration,
    /// Only the cases whose "decoder / shape" contains this text.
    #[arg(long)]
    pub only: Option<String>,
}

/// Growth ratios from this are flagged.
const SUPERLINEAR: f64 = 6.0;
/// A pair of sizes counts for the growth only if the smaller one takes at least this long
/// (shorter times are dominated by noise and caches).
const MIN_TIMED: Duration = Duration::from_micros(200);
/// Small sizes are run until this much time is spent (and at least `--runs` times).
const MIN_SPENT: Duration = Duration::from_millis(50);
/// Most runs of one size.
const MAX_RUNS: usize = 200;
/// Inputs are built this much below each size, so the largest fits a frame with its length
/// field, header-length word and (for bodies) a small header.
const FRAME_MARGIN: usize = 256;

// ---------------------------------------------------------------------------------------------
// Peak memory: a counting allocator, off except during the one run that measures it.

/// The system allocator, counting live bytes and their peak while [`TRACKING`] is on.
struct Counting;

static TRACKING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn track(delta: isize) {
    if TRACKING.load(Ordering::Relaxed) {
        let live = LIVE.fetch_add(delta, Ordering::Relaxed) + delta;
        PEAK.fetch_max(live, Ordering::Relaxed);
    }
}

fn signed(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

// SAFETY: every call is forwarded unchanged to the system allocator, which upholds the
// `GlobalAlloc` contract; the counting beside it touches only atomics and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees for `layout` are passed on.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            track(signed(layout.size()));
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            track(signed(layout.size()));
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator (that is, by `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        track(-signed(layout.size()));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `dealloc`, and `new_size` is the caller's valid size.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            track(signed(new_size) - signed(layout.size()));
        }
        new
    }
}

/// Runs `f` once with the allocator counting; returns the most bytes it held allocated at once
/// (beyond what was allocated before it).
fn peak_of<R>(f: impl FnOnce() -> R) -> (usize, R) {
    LIVE.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    TRACKING.store(true, Ordering::SeqCst);
    let result = f();
    TRACKING.store(false, Ordering::SeqCst);
    let peak = PEAK.load(Ordering::Relaxed);
    (usize::try_from(peak).unwrap_or(0), result)
}

// ---------------------------------------------------------------------------------------------
// Cases

/// One input of a case.
struct Input {
    /// What the decoder reads (for the compressed body: the zlib bytes).
    data: Vec<u8>,
    /// The size on the case's axis: `data.len()`, or the inflated size of a compressed body.
    size: usize,
    /// A decoded command, for the typed headers (read from `data`, not timed).
    cmd: Option<RemotingCommand>,
    /// The decoder's limit: the frame limit, or the inflation limit.
    limit: usize,
}

impl Input {
    fn plain(data: Vec<u8>, limit: usize) -> Self {
        Self {
            size: data.len(),
            data,
            cmd: None,
            limit,
        }
    }
}

/// Accepted, or refused with the decoder's error.
type Outcome = Result<(), String>;

type Build = Box<dyn Fn(usize, usize) -> Result<Input, BenchError>>;
type Decode = fn(&Input) -> Outcome;

/// A decoder and an input shape: `build(target, limit)` makes an input of at most `target` bytes
/// (on the case's axis) for a decoder whose limit is `limit`.
struct Case {
    decoder: &'static str,
    shape: &'static str,
    build: Build,
    decode: Decode,
}

fn case(
    decoder: &'static str,
    shape: &'static str,
    decode: Decode,
    build: impl Fn(usize, usize) -> Result<Input, BenchError> + 'static,
) -> Case {
    Case {
        decoder,
        shape,
        build: Box::new(build),
        decode,
    }
}

/// A case whose input is one text built by [`text`].
fn text_case(
    decoder: &'static str,
    shape: &'static str,
    decode: Decode,
    build: impl Fn(usize) -> Vec<u8> + 'static,
) -> Case {
    case(decoder, shape, decode, move |target, limit| {
        Ok(Input::plain(build(target), limit))
    })
}

fn error_text(e: impl std::fmt::Display) -> String {
    let mut text = e.to_string();
    if text.len() > 80 {
        let mut cut = 80;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

// ---------------------------------------------------------------------------------------------
// Input builders: linear, outside the timed runs.

/// Appends `piece(i, out)` for i = 0, 1, … (with `sep` between two) while `out` stays within
/// `end` bytes; the piece that would not fit is taken back. Returns how many pieces were kept.
pub(crate) fn repeat(
    out: &mut Vec<u8>,
    end: usize,
    sep: &[u8],
    mut piece: impl FnMut(usize, &mut Vec<u8>),
) -> usize {
    let mut i = 0;
    loop {
        let mark = out.len();
        if i > 0 {
            out.extend_from_slice(sep);
        }
        piece(i, out);
        if out.len() > end || out.len() == mark {
            out.truncate(mark);
            return i;
        }
        i += 1;
    }
}

/// `prefix`, then pieces separated by `sep`, then `suffix`: at most `target` bytes in all (the
/// prefix and suffix always, even beyond it).
pub(crate) fn text(
    target: usize,
    prefix: &[u8],
    sep: &[u8],
    piece: impl FnMut(usize, &mut Vec<u8>),
    suffix: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(target.max(prefix.len() + suffix.len()));
    out.extend_from_slice(prefix);
    repeat(&mut out, target.saturating_sub(suffix.len()), sep, piece);
    out.extend_from_slice(suffix);
    out
}

/// A piece that is always `unit`.
pub(crate) fn unit(unit: &'static [u8]) -> impl FnMut(usize, &mut Vec<u8>) {
    move |_, out| out.extend_from_slice(unit)
}

/// A piece with the index: `before`, `i` in 8 digits, `after`.
pub(crate) fn numbered(
    before: &'static str,
    after: &'static str,
) -> impl FnMut(usize, &mut Vec<u8>) {
    move |i, out| {
        // Writing to a Vec cannot fail.
        let _ = write!(out, "{before}{i:08}{after}");
    }
}

/// 64 bytes of `x` per piece, for long strings.
fn filler() -> impl FnMut(usize, &mut Vec<u8>) {
    unit(b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
}

/// `prefix`, `depth` times `open`, then as many `close`, `suffix`, with `depth` as large as fits.
fn nested(target: usize, prefix: &[u8], open: u8, close: u8, suffix: &[u8]) -> Vec<u8> {
    let depth = target.saturating_sub(prefix.len() + suffix.len()) / 2;
    let mut out = Vec::with_capacity(target);
    out.extend_from_slice(prefix);
    out.resize(out.len() + depth, open);
    out.resize(out.len() + depth, close);
    out.extend_from_slice(suffix);
    out
}

/// The rest of a request header after its first fields, as a Java client writes it.
pub(crate) const HEADER_TAIL: &str =
    r#","flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#;

/// The JSON header `{<lead>"extFields":{<pieces>}<tail>}` of at most `target` bytes.
fn ext_header(target: usize, lead: &str, piece: impl FnMut(usize, &mut Vec<u8>)) -> Vec<u8> {
    let prefix = format!(r#"{{{lead}"extFields":{{"#);
    let suffix = format!("}}{HEADER_TAIL}");
    text(target, prefix.as_bytes(), b",", piece, suffix.as_bytes())
}

/// Starts the scanner on a header: its first field.
const SCAN: &str = r#""code":105,"#;
/// Sends a header to the serde path at its first field: a numeric field given as a string,
/// which the scanner leaves to serde and serde accepts (fastjson's leniency).
const SERDE: &str = r#""code":"105","#;

/// A ROCKETMQ binary header: fixed part, remark, then ext entries from `entry` while they fit,
/// then `last` (an entry appended as is).
fn binary_header(
    target: usize,
    remark: &[u8],
    entry: impl FnMut(usize, &mut Vec<u8>),
    last: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(target);
    out.extend_from_slice(&105i16.to_be_bytes());
    out.push(0);
    out.extend_from_slice(&479i16.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
    out.extend_from_slice(&len32(remark.len()).to_be_bytes());
    out.extend_from_slice(remark);
    let ext_at = out.len();
    out.extend_from_slice(&0i32.to_be_bytes());
    repeat(&mut out, target.saturating_sub(last.len()), b"", entry);
    out.extend_from_slice(last);
    let ext_len = len32(out.len() - ext_at - 4);
    out[ext_at..ext_at + 4].copy_from_slice(&ext_len.to_be_bytes());
    out
}

fn len32(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

/// One binary ext entry.
fn binary_entry(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    out.extend_from_slice(&i16::try_from(key.len()).unwrap_or(i16::MAX).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&len32(value.len()).to_be_bytes());
    out.extend_from_slice(value);
}

const DATA_VERSION: &str = r#"{"counter":1,"stateVersion":0,"timestamp":1700000000000}"#;

/// A 5.x RegisterBrokerBody around a topic table made of `topic` pieces, with `detail` as the
/// (ignored) `topicQueueMappingDetailMap` and `info` as `topicQueueMappingInfoMap`.
fn register_body(
    target: usize,
    topic: impl FnMut(usize, &mut Vec<u8>),
    filter: &str,
    detail: &str,
    info: &str,
) -> Vec<u8> {
    let prefix = format!(
        r#"{{"filterServerList":[{filter}],"topicConfigSerializeWrapper":{{"dataVersion":{DATA_VERSION},"mappingDataVersion":{DATA_VERSION},"topicConfigTable":{{"#
    );
    let suffix = format!(
        r#"}},"topicQueueMappingDetailMap":{detail},"topicQueueMappingInfoMap":{info}}}}}"#
    );
    text(target, prefix.as_bytes(), b",", topic, suffix.as_bytes())
}

/// One topic of a 5.x topic table, named by `name(i)`.
pub(crate) fn topic_entry(name: impl Fn(usize) -> String) -> impl FnMut(usize, &mut Vec<u8>) {
    move |i, out| {
        let name = name(i);
        let _ = write!(
            out,
            r#""{name}":{{"attributes":{{}},"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"{name}","topicSysFlag":0,"writeQueueNums":8}}"#
        );
    }
}

/// The inflated form of a compressed registration: DataVersion chunk, topic chunks from
/// `topic` while they fit in `target`, the filter-server chunk and `mappings` mapping chunks.
pub(crate) fn compressed_raw(
    target: usize,
    data_version: &[u8],
    mut topic: impl FnMut(usize, &mut Vec<u8>),
    mappings: &[Vec<u8>],
) -> Vec<u8> {
    let tail: usize = 4 + 2 + 4 + mappings.iter().map(|m| 4 + m.len()).sum::<usize>();
    let mut raw = Vec::with_capacity(target);
    raw.extend_from_slice(&len32(data_version.len()).to_be_bytes());
    raw.extend_from_slice(data_version);
    let count_at = raw.len();
    raw.extend_from_slice(&0i32.to_be_bytes());
    let count = repeat(&mut raw, target.saturating_sub(tail), b"", |i, out| {
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        topic(i, out);
        if out.len() == at + 4 {
            // No more topics: nothing added, which ends the repetition.
            out.truncate(at);
            return;
        }
        let len = len32(out.len() - at - 4);
        out[at..at + 4].copy_from_slice(&len.to_be_bytes());
    });
    raw[count_at..count_at + 4].copy_from_slice(&len32(count).to_be_bytes());
    raw.extend_from_slice(&2i32.to_be_bytes());
    raw.extend_from_slice(b"[]");
    raw.extend_from_slice(&len32(mappings.len()).to_be_bytes());
    for mapping in mappings {
        raw.extend_from_slice(&len32(mapping.len()).to_be_bytes());
        raw.extend_from_slice(mapping);
    }
    raw
}

/// zlib of `raw`, as the compressed registration sends it.
pub(crate) fn zlib(raw: &[u8]) -> Result<Vec<u8>, BenchError> {
    let mut encoder = flate2::write::ZlibEncoder::new(
        Vec::with_capacity(raw.len() / 8),
        flate2::Compression::default(),
    );
    encoder.write_all(raw)?;
    Ok(encoder.finish()?)
}

/// A compressed-registration input: `raw` deflated, its axis the inflated size.
fn compressed_input(raw: &[u8], limit: usize) -> Result<Input, BenchError> {
    Ok(Input {
        data: zlib(raw)?,
        size: raw.len(),
        cmd: None,
        limit,
    })
}

/// A whole frame (length field included): JSON header `header`, then `body`.
pub(crate) fn raw_frame(type_byte: u8, header: &[u8], body: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(8 + header.len() + body.len());
    frame.extend_from_slice(&len32(4 + header.len() + body.len()).to_be_bytes());
    let word =
        (u32::from(type_byte) << 24) | (u32::try_from(header.len()).unwrap_or(0) & 0x00FF_FFFF);
    frame.extend_from_slice(&word.to_be_bytes());
    frame.extend_from_slice(header);
    frame.extend_from_slice(body);
    frame
}

// ---------------------------------------------------------------------------------------------
// Decoders, as the server calls them.

fn decode_json_header(input: &Input) -> Outcome {
    header_codec::decode(SerializeType::Json, &input.data)
        .map(|cmd| drop(black_box(cmd)))
        .map_err(error_text)
}

fn decode_binary_header(input: &Input) -> Outcome {
    header_codec::decode(SerializeType::RocketMq, &input.data)
        .map(|cmd| drop(black_box(cmd)))
        .map_err(error_text)
}

fn typed<H: CommandHeader>(input: &Input) -> Outcome {
    let cmd = input.cmd.as_ref().ok_or_else(|| "no command".to_owned())?;
    H::decode(cmd)
        .map(|h| drop(black_box(h)))
        .map_err(error_text)
}

fn decode_register_plain(input: &Input) -> Outcome {
    RegisterBrokerBody::decode(Some(&input.data), false, version::V5_3_3, input.limit)
        .map(|b| drop(black_box(b)))
        .map_err(error_text)
}

fn decode_register_compressed(input: &Input) -> Outcome {
    RegisterBrokerBody::decode_compressed(&input.data, true, input.limit)
        .map(|b| drop(black_box(b)))
        .map_err(error_text)
}

fn decode_topic_route(input: &Input) -> Outcome {
    fastjson::from_slice::<TopicRouteData>(&input.data)
        .map(|b| drop(black_box(b)))
        .map_err(error_text)
}

fn decode_data_version(input: &Input) -> Outcome {
    fastjson::from_slice::<DataVersion>(&input.data)
        .map(|b| {
            black_box(b);
        })
        .map_err(error_text)
}

/// As the runtime-config actor reads an UPDATE_NAMESRV_CONFIG body.
fn decode_properties(input: &Input) -> Outcome {
    let text = String::from_utf8_lossy(&input.data);
    properties::parse(&text)
        .map(|p| drop(black_box(p)))
        .map_err(error_text)
}

/// The frame codec on a stream arriving `read` bytes at a time, every frame decoded.
fn decode_stream(input: &Input, read: usize) -> Outcome {
    let mut codec = RemotingCodec::new(input.limit);
    let mut buf = BytesMut::with_capacity(8 * 1024);
    let mut frames = 0usize;
    for chunk in input.data.chunks(read) {
        buf.extend_from_slice(chunk);
        while let Some(cmd) = codec.decode(&mut buf).map_err(error_text)? {
            black_box(cmd);
            frames += 1;
        }
    }
    if frames == 0 || !buf.is_empty() {
        return Err("stream ended inside a frame".into());
    }
    Ok(())
}

fn decode_stream_64k(input: &Input) -> Outcome {
    decode_stream(input, 64 * 1024)
}

fn decode_stream_1k(input: &Input) -> Outcome {
    decode_stream(input, 1024)
}

/// A JSON header with `ext` (built by [`ext_header`]) as a decoded command: the typed headers'
/// input, its size the header's.
fn command_input(header: Vec<u8>, limit: usize) -> Result<Input, BenchError> {
    let cmd = header_codec::decode(SerializeType::Json, &header)
        .map_err(|e| BenchError::Protocol(format!("typed-header input: {e}")))?;
    Ok(Input {
        size: header.len(),
        data: Vec::new(),
        cmd: Some(cmd),
        limit,
    })
}

/// The fields of a REGISTER_BROKER header, as ext entries.
const REGISTER_FIELDS: &str = r#""brokerName":"broker-a","brokerAddr":"127.0.0.1:10911","clusterName":"DefaultCluster","haServerAddr":"127.0.0.1:10912","brokerId":"0","enableActingMaster":"false","compressed":"false","bodyCrc32":"0""#;

/// Every case, in report order.
fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    let junk = || numbered(r#""k"#, r#"":"v""#);

    // Frame codec on a stream.
    let one_frame = |target: usize, limit: usize| {
        let header = br#"{"code":103,"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#;
        let body = vec![b'x'; target.saturating_sub(8 + header.len())];
        Ok(Input::plain(raw_frame(0, header, &body), limit))
    };
    all.push(case(
        "codec",
        "one max frame, 64 KiB reads",
        decode_stream_64k,
        one_frame,
    ));
    all.push(case(
        "codec",
        "one max frame, 1 KiB reads",
        decode_stream_1k,
        one_frame,
    ));
    all.push(case("codec", "many small frames, 64 KiB reads", decode_stream_64k, |target, limit| {
        let frame = raw_frame(
            0,
            br#"{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#,
            b"",
        );
        let mut data = Vec::with_capacity(target);
        while data.len() + frame.len() <= target {
            data.extend_from_slice(&frame);
        }
        Ok(Input::plain(data, limit))
    }));

    // JSON header: the scanner's shapes, then the serde path's.
    const JH: &str = "json header";
    let h = decode_json_header;
    all.push(text_case(JH, "many ext fields", h, move |t| {
        ext_header(t, SCAN, junk())
    }));
    all.push(text_case(JH, "many ext fields (serde)", h, move |t| {
        ext_header(t, SERDE, junk())
    }));
    all.push(text_case(JH, "repeated ext key", h, |t| {
        ext_header(t, SCAN, unit(br#""topic":"T""#))
    }));
    all.push(text_case(JH, "repeated ext key (serde)", h, |t| {
        ext_header(t, SERDE, unit(br#""topic":"T""#))
    }));
    all.push(text_case(JH, "many unknown fields", h, |t| {
        text(
            t,
            br#"{"code":105"#,
            b"",
            numbered(r#","x"#, r#"":1"#),
            HEADER_TAIL.as_bytes(),
        )
    }));
    all.push(text_case(JH, "repeated unknown field", h, |t| {
        text(
            t,
            br#"{"code":105"#,
            b"",
            unit(br#","x":1"#),
            HEADER_TAIL.as_bytes(),
        )
    }));
    let long_value = |lead: &'static str| {
        move |t: usize| {
            let prefix = format!(r#"{{{lead}"extFields":{{"topic":""#);
            let suffix = format!(r#""}}{HEADER_TAIL}"#);
            text(t, prefix.as_bytes(), b"", filler(), suffix.as_bytes())
        }
    };
    all.push(text_case(JH, "long ext value", h, long_value(SCAN)));
    all.push(text_case(
        JH,
        "long ext value (serde)",
        h,
        long_value(SERDE),
    ));
    all.push(text_case(JH, "long ext key", h, |t| {
        let suffix = format!(r#"":"v"}}{HEADER_TAIL}"#);
        text(
            t,
            br#"{"code":105,"extFields":{""#,
            b"",
            filler(),
            suffix.as_bytes(),
        )
    }));
    all.push(text_case(JH, "long remark", h, |t| {
        let suffix = format!(r#""{HEADER_TAIL}"#);
        text(
            t,
            br#"{"code":105,"remark":""#,
            b"",
            filler(),
            suffix.as_bytes(),
        )
    }));
    all.push(text_case(JH, "whitespace", h, |t| {
        text(
            t,
            br#"{"code":105"#,
            b"",
            unit(b"        "),
            HEADER_TAIL.as_bytes(),
        )
    }));
    all.push(text_case(JH, "long integer", h, |t| {
        text(
            t,
            br#"{"code":105,"x":1"#,
            b"",
            unit(b"1234567890"),
            HEADER_TAIL.as_bytes(),
        )
    }));
    all.push(text_case(JH, "long fraction", h, |t| {
        text(
            t,
            br#"{"code":105,"x":0."#,
            b"",
            unit(b"1234567890"),
            HEADER_TAIL.as_bytes(),
        )
    }));
    let escaped = |escape: &'static [u8]| {
        move |t: usize| {
            let suffix = format!(r#""}}{HEADER_TAIL}"#);
            text(
                t,
                br#"{"code":105,"extFields":{"topic":""#,
                b"",
                unit(escape),
                suffix.as_bytes(),
            )
        }
    };
    all.push(text_case(JH, "escapes in a value", h, escaped(br"\n")));
    all.push(text_case(
        JH,
        "unicode escapes in a value",
        h,
        escaped(br"\u00e9"),
    ));
    all.push(text_case(
        JH,
        "surrogate pairs in a value",
        h,
        escaped(br"\ud83d\ude00"),
    ));
    all.push(text_case(JH, "escaped keys", h, |t| {
        ext_header(t, SCAN, numbered(r#""k"#, r#"\n":"v""#))
    }));
    let nested_value = |piece: Vec<u8>| {
        move |t: usize| {
            let suffix = format!("]}}{HEADER_TAIL}");
            let prefix = br#"{"code":105,"extFields":{"topic":["#;
            text(
                t,
                prefix,
                b",",
                |_, out| out.extend_from_slice(&piece),
                suffix.as_bytes(),
            )
        }
    };
    let block = [vec![b'['; 100], vec![b']'; 100]].concat();
    all.push(text_case(
        JH,
        "nested ext value: depth-100 blocks",
        h,
        nested_value(block),
    ));
    all.push(text_case(
        JH,
        "nested ext value: many objects",
        h,
        nested_value(b"{}".to_vec()),
    ));
    all.push(text_case(
        JH,
        "nested ext value: many numbers",
        h,
        nested_value(b"0".to_vec()),
    ));
    all.push(text_case(JH, "deep nesting in an unknown field", h, |t| {
        nested(
            t,
            br#"{"code":105,"x":"#,
            b'[',
            b']',
            HEADER_TAIL.as_bytes(),
        )
    }));
    all.push(text_case(
        JH,
        "too deep in an ext value (refused)",
        h,
        |t| {
            nested(
                t,
                br#"{"code":105,"extFields":{"topic":"#,
                b'[',
                b']',
                format!("}}{HEADER_TAIL}").as_bytes(),
            )
        },
    ));
    all.push(text_case(
        JH,
        "late bail: many ext fields, then an escape",
        h,
        move |t| {
            let suffix = format!(r#","z":"\n"}}{HEADER_TAIL}"#);
            text(
                t,
                br#"{"code":105,"extFields":{"#,
                b",",
                junk(),
                suffix.as_bytes(),
            )
        },
    ));
    all.push(text_case(
        JH,
        "late refusal: many ext fields, then garbage",
        h,
        move |t| {
            let suffix = format!(r#","z":!}}{HEADER_TAIL}"#);
            text(
                t,
                br#"{"code":105,"extFields":{"#,
                b",",
                junk(),
                suffix.as_bytes(),
            )
        },
    ));
    all.push(text_case(
        JH,
        "late refusal: many lines, then garbage",
        h,
        |t| {
            text(
                t,
                br#"{"code":105"#,
                b"",
                numbered("\n,\"x", "\":1"),
                b"\n,!}",
            )
        },
    ));
    all.push(text_case(
        JH,
        "repeated known field at the end (refused)",
        h,
        |t| {
            text(
                t,
                br#"{"code":105"#,
                b"",
                numbered(r#","x"#, r#"":1"#),
                br#","code":105}"#,
            )
        },
    ));

    // ROCKETMQ binary header.
    const BH: &str = "binary header";
    let b = decode_binary_header;
    all.push(text_case(BH, "many ext fields", b, |t| {
        binary_header(
            t,
            b"",
            |i, out| {
                let key = format!("k{i:08}");
                binary_entry(out, key.as_bytes(), b"v");
            },
            b"",
        )
    }));
    all.push(text_case(BH, "repeated ext key", b, |t| {
        binary_header(t, b"", |_, out| binary_entry(out, b"topic", b"T"), b"")
    }));
    all.push(text_case(BH, "empty ext entries", b, |t| {
        binary_header(t, b"", |_, out| binary_entry(out, b"", b""), b"")
    }));
    all.push(text_case(BH, "heap-sized keys (25 bytes)", b, |t| {
        binary_header(
            t,
            b"",
            |i, out| {
                let key = format!("key-{i:021}");
                binary_entry(out, key.as_bytes(), b"v");
            },
            b"",
        )
    }));
    all.push(text_case(BH, "long remark", b, |t| {
        let remark = vec![b'x'; t.saturating_sub(32)];
        binary_header(t, &remark, |_, _| {}, b"")
    }));
    all.push(text_case(BH, "long ext value", b, |t| {
        let mut last = Vec::new();
        binary_entry(&mut last, b"topic", &vec![b'x'; t.saturating_sub(40)]);
        binary_header(t, b"", |_, _| {}, &last)
    }));
    all.push(text_case(
        BH,
        "late refusal: many fields, then bad UTF-8",
        b,
        |t| {
            let mut last = Vec::new();
            binary_entry(&mut last, b"z", &[0xFF, 0xFE]);
            binary_header(
                t,
                b"",
                |i, out| {
                    let key = format!("k{i:08}");
                    binary_entry(out, key.as_bytes(), b"v");
                },
                &last,
            )
        },
    ));

    // Typed headers, read from a decoded command's ext fields (what the server does per request).
    const TH: &str = "typed header";
    let fields_then_junk = |fields: &'static str| {
        move |t: usize, limit: usize| {
            let lead = format!(r#"{SCAN}"extFields":{{{fields},"#);
            let prefix = format!("{{{lead}");
            let suffix = format!("}}{HEADER_TAIL}");
            let header = text(
                t,
                prefix.as_bytes(),
                b",",
                numbered(r#""k"#, r#"":"v""#),
                suffix.as_bytes(),
            );
            command_input(header, limit)
        }
    };
    all.push(case(
        TH,
        "RegisterBroker: fields first, many others",
        typed::<RegisterBrokerHeader>,
        fields_then_junk(REGISTER_FIELDS),
    ));
    all.push(case(
        TH,
        "RegisterBroker: fields missing (refused)",
        typed::<RegisterBrokerHeader>,
        move |t, limit| command_input(ext_header(t, SCAN, junk()), limit),
    ));
    all.push(case(
        TH,
        "RegisterBroker: long brokerName",
        typed::<RegisterBrokerHeader>,
        |t, limit| {
            let prefix = format!(r#"{{{SCAN}"extFields":{{{REGISTER_FIELDS},"brokerName":""#);
            let suffix = format!(r#""}}{HEADER_TAIL}"#);
            command_input(
                text(t, prefix.as_bytes(), b"", filler(), suffix.as_bytes()),
                limit,
            )
        },
    ));
    all.push(case(
        TH,
        "GetRouteInfo: topic first, many others",
        typed::<GetRouteInfoHeader>,
        fields_then_junk(r#""topic":"TopicTest""#),
    ));
    all.push(case(
        TH,
        "PutKvConfig: long value",
        typed::<PutKvConfigHeader>,
        |t, limit| {
            let prefix = format!(r#"{{{SCAN}"extFields":{{"namespace":"ns","key":"k","value":""#);
            let suffix = format!(r#""}}{HEADER_TAIL}"#);
            command_input(
                text(t, prefix.as_bytes(), b"", filler(), suffix.as_bytes()),
                limit,
            )
        },
    ));
    all.push(case(
        TH,
        "BrokerHeartbeat: fields first, many others",
        typed::<BrokerHeartbeatHeader>,
        fields_then_junk(r#""clusterName":"C","brokerAddr":"127.0.0.1:10911""#),
    ));
    all.push(case(
        TH,
        "QueryDataVersion: fields first, many others",
        typed::<QueryDataVersionHeader>,
        fields_then_junk(r#""clusterName":"C","brokerAddr":"127.0.0.1:10911""#),
    ));

    // RegisterBrokerBody, JSON.
    const RB: &str = "register body";
    let r = decode_register_plain;
    all.push(text_case(RB, "many topics", r, |t| {
        register_body(t, topic_entry(|i| format!("T{i:08}")), "", "{}", "{}")
    }));
    all.push(text_case(RB, "repeated topic", r, |t| {
        register_body(t, topic_entry(|_| "TopicTest".into()), "", "{}", "{}")
    }));
    all.push(text_case(RB, "long topic name", r, |t| {
        let name = "x".repeat(t.saturating_sub(600) / 2);
        register_body(t, topic_entry(move |_| name.clone()), "", "{}", "{}")
    }));
    all.push(text_case(RB, "many attributes", r, |t| {
        let prefix = br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1},"topicConfigTable":{"T":{"attributes":{"#;
        let suffix = br#"},"topicName":"T"}}}}"#;
        text(t, prefix, b",", numbered(r#""+a"#, r#"":"v""#), suffix)
    }));
    all.push(text_case(RB, "escaped topic names", r, |t| {
        register_body(
            t,
            topic_entry(|i| format!(r"T{i:08}\u00e9\n")),
            "",
            "{}",
            "{}",
        )
    }));
    all.push(text_case(RB, "deep nesting in an ignored field", r, |t| {
        let body = register_body(0, unit(b""), "", "DEEP", "{}");
        let text = String::from_utf8_lossy(&body);
        let (before, after) = text.split_once("DEEP").unwrap_or((&text, ""));
        let before = format!(r#"{before}{{"x":"#);
        let after = format!("}}{after}");
        nested(t, before.as_bytes(), b'[', b']', after.as_bytes())
    }));
    all.push(text_case(RB, "bare numeric keys (legacy)", r, |t| {
        let prefix = br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1},"topicConfigTable":{},"topicQueueMappingInfoMap":{"T":{"bname":"b","currIdMap":{"#;
        let suffix = br#"},"topic":"T","totalQueues":8}}}}"#;
        text(t, prefix, b",", |i, out| {
            let _ = write!(out, "{i}:{i}");
        }, suffix)
    }));
    all.push(text_case(RB, "many filter servers", r, |t| {
        let prefix = br#"{"filterServerList":["#;
        let suffix = br#"],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1},"topicConfigTable":{}}}"#;
        text(t, prefix, b",", numbered(r#""127.0.0.1:"#, r#"""#), suffix)
    }));
    all.push(text_case(
        RB,
        "late refusal: many topics, then garbage",
        r,
        |t| {
            let mut body = register_body(
                t.saturating_sub(2),
                topic_entry(|i| format!("T{i:08}")),
                "",
                "{}",
                "{}",
            );
            body.pop();
            body.extend_from_slice(b",!}");
            body
        },
    ));

    // RegisterBrokerBody, compressed (the axis is the inflated size).
    const RC: &str = "register compressed";
    let c = decode_register_compressed;
    let dv = DATA_VERSION.as_bytes();
    all.push(case(RC, "many topics", c, move |t, limit| {
        compressed_input(
            &compressed_raw(t, dv, numbered("T", " 8 8 6 SINGLE_TAG {}"), &[]),
            limit,
        )
    }));
    all.push(case(
        RC,
        "many topics with attributes",
        c,
        move |t, limit| {
            let topic = numbered("T", r#" 8 8 6 SINGLE_TAG {"+a":"1","+b":"2","+c":"3"}"#);
            compressed_input(&compressed_raw(t, dv, topic, &[]), limit)
        },
    ));
    all.push(case(RC, "repeated topic", c, move |t, limit| {
        compressed_input(
            &compressed_raw(t, dv, unit(b"TopicTest 8 8 6 SINGLE_TAG {}"), &[]),
            limit,
        )
    }));
    all.push(case(RC, "long topic name", c, move |t, limit| {
        let mut text = vec![b'x'; t.saturating_sub(200)];
        text.extend_from_slice(b" 8 8 6 SINGLE_TAG {}");
        let mut once = Some(text);
        compressed_input(
            &compressed_raw(
                t,
                dv,
                move |_, out| {
                    if let Some(text) = once.take() {
                        out.extend_from_slice(&text);
                    }
                },
                &[],
            ),
            limit,
        )
    }));
    all.push(case(RC, "spaces in a topic text", c, move |t, limit| {
        let mut text = b"T 8 8 6 SINGLE_TAG".to_vec();
        text.resize(t.saturating_sub(200), b' ');
        let mut once = Some(text);
        compressed_input(
            &compressed_raw(
                t,
                dv,
                move |_, out| {
                    if let Some(text) = once.take() {
                        out.extend_from_slice(&text);
                    }
                },
                &[],
            ),
            limit,
        )
    }));
    all.push(case(
        RC,
        "whitespace in the DataVersion",
        c,
        move |t, limit| {
            let mut version = br#"{"counter":1"#.to_vec();
            version.resize(t.saturating_sub(200), b' ');
            version.push(b'}');
            compressed_input(&compressed_raw(t, &version, unit(b""), &[]), limit)
        },
    ));
    all.push(case(RC, "many mappings", c, move |t, limit| {
        let mut mappings = Vec::new();
        let mut total = 0;
        // Bounded by the target: every mapping adds bytes.
        while total + 80 < t.saturating_sub(200) {
            let mapping = format!(
                r#"{{"bname":"b","epoch":0,"topic":"T{:08}","totalQueues":8}}"#,
                mappings.len()
            )
            .into_bytes();
            total += 4 + mapping.len();
            mappings.push(mapping);
        }
        compressed_input(&compressed_raw(t, dv, unit(b""), &mappings), limit)
    }));
    all.push(case(
        RC,
        "past the inflation limit (refused)",
        c,
        move |t, _| {
            // The limit is the size: everything up to it is inflated, then the body is refused.
            let raw = compressed_raw(
                t.saturating_mul(2),
                dv,
                numbered("T", " 8 8 6 SINGLE_TAG {}"),
                &[],
            );
            let mut input = compressed_input(&raw, t)?;
            input.size = t;
            Ok(input)
        },
    ));
    all.push(case(
        RC,
        "late refusal: many topics, then a bad one",
        c,
        move |t, limit| {
            let mut raw = compressed_raw(t, dv, numbered("T", " 8 8 6 SINGLE_TAG {}"), &[]);
            // The last topic text loses its filter type.
            if let Some(at) = find_last(&raw, b"SINGLE_TAG") {
                raw[at..at + 10].copy_from_slice(b"BAD_FILTER");
            }
            compressed_input(&raw, limit)
        },
    ));

    // TopicRouteData (REGISTER_TOPIC_IN_NAMESRV).
    const TR: &str = "TopicRouteData";
    let tr = decode_topic_route;
    all.push(text_case(TR, "many queueDatas", tr, |t| {
        text(
            t,
            br#"{"brokerDatas":[],"filterServerTable":{},"queueDatas":["#,
            b",",
            numbered(
                r#"{"brokerName":"b"#,
                r#"","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}"#,
            ),
            b"]}",
        )
    }));
    all.push(text_case(
        TR,
        "many brokerDatas, bare keys (legacy)",
        tr,
        |t| {
            text(
                t,
                br#"{"brokerDatas":["#,
                b",",
                numbered(
                    r#"{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"brokerName":"b"#,
                    r#"","cluster":"C","enableActingMaster":false}"#,
                ),
                br#"],"filterServerTable":{},"queueDatas":[]}"#,
            )
        },
    ));
    all.push(text_case(TR, "long orderTopicConf", tr, |t| {
        text(
            t,
            br#"{"orderTopicConf":""#,
            b"",
            filler(),
            br#"","queueDatas":[]}"#,
        )
    }));
    all.push(text_case(TR, "escapes in a string", tr, |t| {
        text(
            t,
            br#"{"orderTopicConf":""#,
            b"",
            unit(br#"\""#),
            br#"","queueDatas":[]}"#,
        )
    }));
    all.push(text_case(TR, "deep nesting in an unknown field", tr, |t| {
        nested(t, br#"{"x":"#, b'[', b']', br#","queueDatas":[]}"#)
    }));
    all.push(text_case(TR, "many filterServerTable entries", tr, |t| {
        text(
            t,
            br#"{"filterServerTable":{"#,
            b",",
            numbered(r#""127.0.0.1:"#, r#"":["a"]"#),
            br#"},"queueDatas":[]}"#,
        )
    }));
    all.push(text_case(TR, "repeated filterServerTable key", tr, |t| {
        text(
            t,
            br#"{"filterServerTable":{"#,
            b",",
            unit(br#""a":["a"]"#),
            br#"},"queueDatas":[]}"#,
        )
    }));
    all.push(text_case(
        TR,
        "late refusal: wrong type at the end",
        tr,
        |t| {
            text(
                t,
                br#"{"queueDatas":["#,
                b",",
                numbered(r#"{"brokerName":"b"#, r#"","perm":6}"#),
                b",1]}",
            )
        },
    ));

    // DataVersion (QUERY_DATA_VERSION).
    const DV: &str = "DataVersion";
    let d = decode_data_version;
    all.push(text_case(DV, "many unknown fields", d, |t| {
        text(
            t,
            br#"{"counter":1"#,
            b"",
            numbered(r#","x"#, r#"":1"#),
            b"}",
        )
    }));
    all.push(text_case(DV, "deep nesting in an unknown field", d, |t| {
        nested(t, br#"{"x":"#, b'[', b']', br#","counter":1}"#)
    }));
    all.push(text_case(DV, "whitespace", d, |t| {
        text(t, br#"{"counter":1"#, b"", unit(b"        "), b"}")
    }));
    all.push(text_case(DV, "long string in an unknown field", d, |t| {
        text(t, br#"{"x":""#, b"", filler(), br#"","counter":1}"#)
    }));
    all.push(text_case(DV, "long integer (refused)", d, |t| {
        text(t, br#"{"counter":1"#, b"", unit(b"1234567890"), b"}")
    }));
    all.push(text_case(
        DV,
        "repeated field at the end (refused)",
        d,
        |t| {
            text(
                t,
                br#"{"counter":1"#,
                b"",
                numbered(r#","x"#, r#"":1"#),
                br#","counter":2}"#,
            )
        },
    ));

    // Properties (UPDATE_NAMESRV_CONFIG).
    const PR: &str = "properties";
    let p = decode_properties;
    all.push(text_case(PR, "many keys", p, |t| {
        text(t, b"", b"", numbered("k", "=v\n"), b"")
    }));
    all.push(text_case(PR, "repeated key", p, |t| {
        text(t, b"", b"", unit(b"a=b\n"), b"")
    }));
    all.push(text_case(PR, "many short lines", p, |t| {
        text(t, b"", b"", unit(b"a\n"), b"")
    }));
    all.push(text_case(PR, "long value", p, |t| {
        text(t, b"k=", b"", filler(), b"\n")
    }));
    all.push(text_case(PR, "escapes", p, |t| {
        text(t, b"k=", b"", unit(br"\t"), b"\n")
    }));
    all.push(text_case(PR, "unicode escapes", p, |t| {
        text(t, b"k=", b"", unit(br"\u0041"), b"\n")
    }));
    all.push(text_case(PR, "continuation lines", p, |t| {
        text(t, b"k=", b"", unit(b"x\\\n  "), b"\n")
    }));
    all.push(text_case(PR, "backslash run", p, |t| {
        text(t, b"k=", b"", unit(br"\\"), b"\n")
    }));
    all.push(text_case(PR, "comment lines", p, |t| {
        text(t, b"", b"", unit(b"#c\n"), b"k=v\n")
    }));
    all.push(text_case(PR, "empty lines", p, |t| {
        text(t, b"", b"", unit(b"\n"), b"k=v\n")
    }));
    all.push(text_case(PR, "carriage returns", p, |t| {
        text(t, b"", b"", unit(b"\r"), b"k=v\n")
    }));
    all.push(text_case(PR, "not UTF-8", p, |t| {
        text(t, b"k=", b"", unit(&[0xFF]), b"\n")
    }));
    all.push(text_case(PR, "late refusal: bad unicode escape", p, |t| {
        text(t, b"", b"", numbered("k", "=v\n"), br"z=\u12G4")
    }));
    all
}

fn find_last(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

// ---------------------------------------------------------------------------------------------
// Measuring

/// One size of one case.
#[derive(Debug, Clone)]
struct Point {
    bytes: usize,
    wire: usize,
    /// Fastest run, thread CPU time.
    best: Duration,
    /// Fastest run, wall time.
    wall: Duration,
    runs: usize,
    peak: usize,
    outcome: Outcome,
}

impl Point {
    fn ns_per_byte(&self) -> f64 {
        self.best.as_nanos() as f64 / self.bytes.max(1) as f64
    }
}

/// CPU time of the calling thread: unlike the wall clock it does not count the time the thread
/// waited for a core, which on a shared machine is most of the noise.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant Linux supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// The fastest of at least `runs` runs (more for short ones, until [`MIN_SPENT`]) in thread CPU
/// time, the fastest in wall time, and the outcome of the first.
fn time(decode: Decode, input: &Input, runs: usize) -> (Duration, Duration, usize, Outcome) {
    let mut best = Duration::MAX;
    let mut best_wall = Duration::MAX;
    let mut spent = Duration::ZERO;
    let mut first = None;
    let mut done = 0;
    while done < runs.max(1) || (spent < MIN_SPENT && done < MAX_RUNS) {
        let wall = Instant::now();
        let cpu = thread_cpu();
        let outcome = decode(black_box(input));
        let took = thread_cpu().saturating_sub(cpu);
        let took_wall = wall.elapsed();
        best = best.min(took);
        best_wall = best_wall.min(took_wall);
        spent += took_wall;
        done += 1;
        first.get_or_insert(outcome);
    }
    (best, best_wall, done, first.unwrap_or(Ok(())))
}

/// The growth over a factor of four of the bytes, from points `a` and `b` (bytes of `b` about 4
/// times `a`'s), normalized to exactly four times.
fn growth(a: &Point, b: &Point) -> Option<f64> {
    if a.best < MIN_TIMED || a.bytes == 0 || b.bytes == 0 {
        return None;
    }
    let time = b.best.as_secs_f64() / a.best.as_secs_f64();
    let bytes = b.bytes as f64 / a.bytes as f64;
    Some(time / bytes * 4.0)
}

/// The worst growth over all pairs four times apart, with the index of its smaller point.
fn worst_growth(points: &[Point]) -> Option<(usize, f64)> {
    (0..points.len().saturating_sub(2))
        .filter_map(|i| growth(&points[i], &points[i + 2]).map(|g| (i, g)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The result of one case.
struct Measured {
    decoder: &'static str,
    shape: &'static str,
    /// For JSON headers: which path decoded the smallest input.
    path: &'static str,
    points: Vec<Point>,
    /// The sizes not run: why.
    stopped: Option<String>,
    last_growth: Option<f64>,
    worst: Option<(usize, f64)>,
}

impl Measured {
    fn superlinear(&self) -> bool {
        self.worst.is_some_and(|(_, g)| g >= SUPERLINEAR) || self.stopped.is_some()
    }

    /// Pairs of sizes four times apart whose growth is flagged, and pairs measured.
    fn flagged_pairs(&self) -> (usize, usize) {
        let growths: Vec<f64> = (0..self.points.len().saturating_sub(2))
            .filter_map(|i| growth(&self.points[i], &self.points[i + 2]))
            .collect();
        (
            growths.iter().filter(|g| **g >= SUPERLINEAR).count(),
            growths.len(),
        )
    }

    fn verdict(&self) -> &'static str {
        if self.worst.is_some_and(|(_, g)| g >= SUPERLINEAR) {
            "SUPERLINEAR"
        } else if self.stopped.is_some() {
            "STOPPED"
        } else if self.worst.is_none() {
            "too fast"
        } else {
            "linear"
        }
    }
}

/// Which JSON-header path takes `text`: the scanner, serde, or neither.
fn json_path(data: &[u8]) -> &'static str {
    let Ok(text) = std::str::from_utf8(data) else {
        return "refused";
    };
    match header_codec::json_paths(text) {
        (Some(_), _) => "scan",
        (None, Ok(_)) => "serde",
        (None, Err(_)) => "refused",
    }
}

fn measure(case: &Case, sizes: &[usize], args: &CostArgs) -> Result<Measured, BenchError> {
    let mut points: Vec<Point> = Vec::new();
    let mut stopped = None;
    let mut path = "-";
    for (n, &size) in sizes.iter().enumerate() {
        if let Some(last) = points.last() {
            // Projected from the last doubling (at least linear growth).
            let factor = match points.len() {
                0 | 1 => 2.0,
                k => (points[k - 1].best.as_secs_f64()
                    / points[k - 2].best.as_secs_f64().max(1e-9))
                .max(2.0),
            };
            let projected = last.best.as_secs_f64() * factor;
            if projected > args.max_decode.as_secs_f64() {
                stopped = Some(format!(
                    "{} and larger not run: projected {:.1} s per decode",
                    human_bytes(size),
                    projected
                ));
                break;
            }
        }
        let target = if case.decoder == "codec" {
            size
        } else {
            size.saturating_sub(FRAME_MARGIN)
        };
        let input = (case.build)(target, args.max_bytes.max(DEFAULT_MAX_FRAME))?;
        if n == 0 && case.decoder == "json header" {
            path = json_path(&input.data);
        }
        let (best, wall, runs, outcome) = time(case.decode, &input, args.runs);
        let (peak, _) = peak_of(|| (case.decode)(&input));
        points.push(Point {
            bytes: input.size,
            wire: if input.data.is_empty() {
                input.size
            } else {
                input.data.len()
            },
            best,
            wall,
            runs,
            peak,
            outcome,
        });
    }
    let mut worst = worst_growth(&points);
    if let Some((i, g)) = worst {
        if g >= SUPERLINEAR {
            // Noise on a shared machine? Time both sizes again, longer, before flagging.
            for k in [i, i + 2] {
                let target = if case.decoder == "codec" {
                    sizes[k]
                } else {
                    sizes[k].saturating_sub(FRAME_MARGIN)
                };
                let input = (case.build)(target, args.max_bytes.max(DEFAULT_MAX_FRAME))?;
                let (best, wall, runs, _) = time(case.decode, &input, args.runs * 3);
                points[k].best = points[k].best.min(best);
                points[k].wall = points[k].wall.min(wall);
                points[k].runs += runs;
            }
            worst = worst_growth(&points);
        }
    }
    let n = points.len();
    let last_growth = (n >= 3)
        .then(|| growth(&points[n - 3], &points[n - 1]))
        .flatten();
    Ok(Measured {
        decoder: case.decoder,
        shape: case.shape,
        path,
        points,
        stopped,
        last_growth,
        worst,
    })
}

/// `64K`, `1M`, `16M`, or bytes.
fn human_bytes(n: usize) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{}M", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{}K", n >> 10)
    } else {
        format!("{n}")
    }
}

/// The sizes: `min`, doubling, up to `max` (included).
fn sizes(min: usize, max: usize) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut size = min.max(1024);
    while size < max {
        sizes.push(size);
        size = size.saturating_mul(2);
    }
    sizes.push(max);
    sizes
}

pub fn run(args: &CostArgs) -> Result<Value, BenchError> {
    if args.max_bytes < 4096 || args.min_bytes > args.max_bytes {
        return Err(BenchError::Usage(
            "--max-bytes must be at least 4096 and at least --min-bytes".into(),
        ));
    }
    let sizes = sizes(args.min_bytes, args.max_bytes);
    let started = Instant::now();
    let all = cases();
    let selected: Vec<&Case> = all
        .iter()
        .filter(|c| {
            args.only
                .as_deref()
                .is_none_or(|o| format!("{} / {}", c.decoder, c.shape).contains(o))
        })
        .collect();
    println!(
        "cost: {} cases, sizes {} .. {} (doubling), fastest of {}+ runs in thread CPU time; ns per \
         input byte; growth = time(4x)/time(x), >= {SUPERLINEAR} flagged; peak/B = bytes \
         allocated at the peak per input byte",
        selected.len(),
        human_bytes(sizes[0]),
        human_bytes(args.max_bytes),
        args.runs
    );
    let mut header = format!("{:<20} {:<44} {:<7}", "decoder", "shape", "path");
    for size in &sizes {
        let _ = write!(header, " {:>6}", human_bytes(*size));
    }
    let _ = write!(
        header,
        " {:>6} {:>6} {:>7} {:>9}  verdict (result at max)",
        "growth", "worst", "peak/B", "max ms"
    );
    println!("{header}");

    let mut results = Vec::new();
    let mut skipped = Vec::new();
    for case in selected {
        if started.elapsed() > args.time_limit {
            skipped.push(format!("{} / {}", case.decoder, case.shape));
            continue;
        }
        let measured = measure(case, &sizes, args)?;
        println!("{}", row(&measured, sizes.len()));
        results.push(measured);
    }
    if !skipped.is_empty() {
        println!("skipped (--time-limit): {}", skipped.join(", "));
    }
    let flagged: Vec<String> = results
        .iter()
        .filter(|m| m.superlinear())
        .map(|m| format!("{} / {}", m.decoder, m.shape))
        .collect();
    println!(
        "{} cases in {:.0} s; superlinear or stopped: {}",
        results.len(),
        started.elapsed().as_secs_f64(),
        if flagged.is_empty() {
            "none".to_owned()
        } else {
            flagged.join("; ")
        }
    );
    Ok(json!({
        "workload": "cost",
        "max_bytes": args.max_bytes,
        "sizes": sizes,
        "runs": args.runs,
        "superlinear_at": SUPERLINEAR,
        "cases": results.iter().map(case_json).collect::<Vec<_>>(),
        "flagged": flagged,
        "skipped": skipped,
        "elapsed_s": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    }))
}

fn row(m: &Measured, columns: usize) -> String {
    let mut line = format!("{:<20} {:<44} {:<7}", m.decoder, m.shape, m.path);
    for k in 0..columns {
        match m.points.get(k) {
            Some(p) => {
                let _ = write!(line, " {:>6.2}", p.ns_per_byte());
            }
            None => line.push_str("      -"),
        }
    }
    let ratio = |g: Option<f64>| g.map_or("-".to_owned(), |g| format!("{g:.2}"));
    let last = m.points.last();
    let _ = write!(
        line,
        " {:>6} {:>6} {:>7} {:>9}  {}",
        ratio(m.last_growth),
        ratio(m.worst.map(|(_, g)| g)),
        last.map_or("-".to_owned(), |p| format!(
            "{:.1}",
            p.peak as f64 / p.bytes.max(1) as f64
        )),
        last.map_or("-".to_owned(), |p| format!(
            "{:.1}",
            p.best.as_secs_f64() * 1e3
        )),
        m.verdict()
    );
    let (flagged, pairs) = m.flagged_pairs();
    if flagged > 0 {
        // One flagged pair among linear ones is a step (the decoded data outgrowing a cache);
        // superlinear code is flagged at every pair once it is measurable.
        let _ = write!(line, " [{flagged} of {pairs} pairs]");
    }
    if let Some(p) = last {
        let _ = write!(
            line,
            " ({})",
            match &p.outcome {
                Ok(()) => "ok".to_owned(),
                Err(e) => format!("refused: {e}"),
            }
        );
        if p.wire != p.bytes {
            let _ = write!(line, " [wire {}]", p.wire);
        }
    }
    if let Some(why) = &m.stopped {
        let _ = write!(line, " [{why}]");
    }
    line
}

fn case_json(m: &Measured) -> Value {
    json!({
        "decoder": m.decoder,
        "shape": m.shape,
        "path": m.path,
        "verdict": m.verdict(),
        "flagged_pairs": m.flagged_pairs().0,
        "measured_pairs": m.flagged_pairs().1,
        "growth": m.last_growth.map(|g| (g * 100.0).round() / 100.0),
        "worst_growth": m.worst.map(|(_, g)| (g * 100.0).round() / 100.0),
        "worst_growth_from_bytes": m.worst.and_then(|(i, _)| m.points.get(i)).map(|p| p.bytes),
        "stopped": m.stopped,
        "points": m.points.iter().map(|p| json!({
            "bytes": p.bytes,
            "wire_bytes": p.wire,
            "ns": u64::try_from(p.best.as_nanos()).unwrap_or(u64::MAX),
            "wall_ns": u64::try_from(p.wall.as_nanos()).unwrap_or(u64::MAX),
            "ns_per_byte": (p.ns_per_byte() * 1000.0).round() / 1000.0,
            "runs": p.runs,
            "peak_alloc_bytes": p.peak,
            "result": match &p.outcome {
                Ok(()) => "ok".to_owned(),
                Err(e) => format!("refused: {e}"),
            },
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_builds_within_its_size() {
        for case in cases() {
            for target in [4096, 20_000] {
                let input = (case.build)(target, DEFAULT_MAX_FRAME).unwrap();
                assert!(
                    input.size <= target + 64,
                    "{} / {}: {} > {target}",
                    case.decoder,
                    case.shape,
                    input.size
                );
                let _ = (case.decode)(&input);
            }
        }
    }

    #[test]
    fn accepted_shapes_are_accepted() {
        // The shapes meant to be accepted are (a builder mistake would time a refusal instead).
        for case in cases() {
            let refusal = case.shape.contains("refus") || case.shape.contains("too deep");
            let input = (case.build)(20_000, DEFAULT_MAX_FRAME).unwrap();
            let outcome = (case.decode)(&input);
            assert_eq!(
                outcome.is_ok(),
                !refusal,
                "{} / {}: {outcome:?}",
                case.decoder,
                case.shape
            );
        }
    }

    #[test]
    fn json_header_paths_are_as_named() {
        for case in cases().iter().filter(|c| c.decoder == "json header") {
            let input = (case.build)(20_000, DEFAULT_MAX_FRAME).unwrap();
            let path = json_path(&input.data);
            if case.shape.contains("(serde)") {
                assert_eq!(path, "serde", "{}", case.shape);
            }
        }
    }

    #[test]
    fn growth_is_normalized() {
        let p = |bytes, ms| Point {
            bytes,
            wire: bytes,
            best: Duration::from_millis(ms),
            wall: Duration::from_millis(ms),
            runs: 1,
            peak: 0,
            outcome: Ok(()),
        };
        assert_eq!(growth(&p(1000, 10), &p(4000, 40)), Some(4.0));
        assert_eq!(growth(&p(1000, 10), &p(2000, 40)), Some(8.0));
        let points = [p(1, 1), p(2, 2), p(4, 4), p(8, 30)];
        assert_eq!(worst_growth(&points).map(|(i, _)| i), Some(1));
    }
}
