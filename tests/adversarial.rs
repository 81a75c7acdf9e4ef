//! Adversarial input over TCP: hostile frames, hostile sizes, odd timing and broken sockets.
//!
//! Every case checks two things. The connection that sent the input is either answered (with the
//! code and remark docs/protocol.md specifies, where it specifies one) or closed by the server,
//! within a few seconds: nothing may hang. And every other connection keeps working: a witness
//! opened before the case and one opened after it get their normal answers, the route of a topic
//! a FakeBroker registered at the start stays visible, and the broker's own connection still
//! answers. `tests/malformed.rs` has the basic malformed frames; this file has the rest of the
//! issue's list and more of the same kind.
//!
//! Raw frames are written with tokio: the listener and the KV store of a test server run on the
//! test's own thread, so nothing here may block it.

mod support;

// The surfaces added after the first hostile suite, one module each (tests/adversarial/).
#[path = "adversarial/mod.rs"]
mod surfaces;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use rmq_namesrv::config::Config;
use rmq_namesrv::protocol::codec::{decode_frame, encode_frame};
use rmq_namesrv::protocol::command::{FLAG_ONEWAY, FLAG_RESPONSE};
use rmq_namesrv::protocol::custom_headers::CommandHeader;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode, SerializeType};
use rmq_namesrv::tools::broker::{body_crc32, FakeBroker};
use rmq_namesrv::tools::client::Client;
use rmq_namesrv::NameServerHandle;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest wait of one step: a read, a close, a write.
const STEP: Duration = Duration::from_secs(3);
/// Writes of megabytes get this long.
const BIG_STEP: Duration = Duration::from_secs(10);

/// The topic the witness broker registers; every witness must see its route.
const WITNESS_TOPIC: &str = "WitnessTopic";
const WITNESS_ADDR: &str = "127.0.0.1:10911";

/// Invalid UTF-8: a lone continuation byte, an overlong `/`, an encoded surrogate, a truncated
/// three-byte sequence.
const BAD_UTF8: [&[u8]; 4] = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82"];

// ---------------------------------------------------------------------------------------------
// The harness: a server, a registered witness broker, a witness connection.

struct Harness {
    server: NameServerHandle,
    addr: SocketAddr,
    broker: FakeBroker,
    /// The witness broker's own connection (its registration lives as long as it does).
    broker_conn: Client,
    /// The witness opened before every case.
    before: Client,
    max_frame: usize,
    max_inflated: usize,
}

impl Harness {
    async fn start(config: Config) -> Self {
        logs::install();
        let max_frame = config.server.max_frame_bytes;
        let max_inflated = config.server.max_inflated_body_bytes;
        let server = start_server(config);
        let addr = server.local_addr();
        let broker = FakeBroker::master("broker-w", 10911, &[WITNESS_TOPIC, "WitnessTopic2"]);
        let mut broker_conn = connect(&server).await;
        let resp = broker_conn
            .request(broker.register())
            .await
            .expect("the witness broker registers");
        assert_eq!(resp.code, 0, "witness broker: {:?}", resp.remark);
        let before = connect(&server).await;
        let mut harness = Self {
            server,
            addr,
            broker,
            broker_conn,
            before,
            max_frame,
            max_inflated,
        };
        harness.witnesses_ok("start").await;
        harness
    }

    async fn new() -> Self {
        Self::start(test_config()).await
    }

    /// The witness opened before the case still gets its answers.
    async fn quick(&mut self, case: &str) {
        witness_answers(&mut self.before, case, "the witness opened before").await;
    }

    /// Both witnesses and the witness broker's connection get their normal answers.
    async fn witnesses_ok(&mut self, case: &str) {
        self.quick(case).await;
        let mut after = Client::connect(&self.addr.to_string(), STEP)
            .await
            .unwrap_or_else(|e| panic!("{case}: a new connection: {e}"));
        witness_answers(&mut after, case, "a witness opened after").await;
        let resp = self
            .broker_conn
            .request(self.broker.query_data_version(&self.broker.version))
            .await
            .unwrap_or_else(|e| panic!("{case}: the witness broker's connection: {e}"));
        assert_eq!(
            (resp.code, resp.ext("changed")),
            (0, Some("false")),
            "{case}: the witness broker's connection"
        );
    }

    /// Every connection of the case is gone: only the broker's and the first witness remain.
    async fn settled(&self, case: &str) {
        let server = &self.server;
        let settled =
            eventually(STEP, || async move { server.open_connections().await <= 2 }).await;
        assert!(
            settled,
            "{case}: the server still holds {} connections, 2 expected",
            self.server.open_connections().await
        );
    }

    /// After a case: witnesses answered, and no connection of the case left behind.
    async fn check(&mut self, case: &str) {
        self.witnesses_ok(case).await;
        self.settled(case).await;
    }

    /// `bytes` on a new connection closes it without any reply.
    async fn closes(&mut self, case: &str, bytes: &[u8]) {
        let mut raw = Raw::open(self.addr, case).await;
        // The server may close before it has read everything: write errors are expected.
        let _ = raw.send_within(bytes, BIG_STEP).await;
        raw.expect_closed().await;
        drop(raw);
        self.quick(case).await;
    }

    /// `bytes` on a new connection is answered; the answer.
    async fn answers(&mut self, case: &str, bytes: &[u8]) -> RemotingCommand {
        let mut raw = Raw::open(self.addr, case).await;
        raw.must_send(bytes).await;
        let resp = raw.response().await;
        drop(raw);
        self.quick(case).await;
        resp
    }

    /// For input whose treatment docs/protocol.md leaves open: answered (`Some`) or closed
    /// (`None`), but not left hanging.
    async fn answers_or_closes(&mut self, case: &str, bytes: &[u8]) -> Option<RemotingCommand> {
        let mut raw = Raw::open(self.addr, case).await;
        let _ = raw.send_within(bytes, BIG_STEP).await;
        let outcome = raw.answer_or_close().await;
        drop(raw);
        self.quick(case).await;
        outcome
    }

    /// A well-formed request on a client connection of its own.
    async fn client(&self, case: &str) -> Client {
        Client::connect(&self.addr.to_string(), TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("{case}: connect: {e}"))
    }

    async fn request_on_new(&mut self, case: &str, cmd: RemotingCommand) -> RemotingCommand {
        let mut conn = self.client(case).await;
        let resp = conn
            .request(cmd)
            .await
            .unwrap_or_else(|e| panic!("{case}: no answer: {e}"));
        drop(conn);
        self.quick(case).await;
        resp
    }

    /// A REGISTER_BROKER that must be refused with SYSTEM_ERROR and a remark starting with
    /// `remark`; the broker at `broker_addr` must not be registered.
    async fn register_refused(
        &mut self,
        case: &str,
        cmd: RemotingCommand,
        broker_addr: &str,
        remark: &str,
    ) {
        if let Err(failure) = self.register_outcome(case, cmd, broker_addr, remark).await {
            panic!("{failure}");
        }
    }

    /// [`Harness::register_refused`] that reports a wrong answer instead of panicking (the
    /// witnesses are checked all the same).
    async fn register_outcome(
        &mut self,
        case: &str,
        cmd: RemotingCommand,
        broker_addr: &str,
        remark: &str,
    ) -> Result<(), String> {
        let mut conn = self.client(case).await;
        let resp = conn
            .request(cmd)
            .await
            .unwrap_or_else(|e| panic!("{case}: no answer: {e}"));
        let text = resp.remark.as_deref().unwrap_or("");
        let mut outcome = Ok(());
        if resp.code != 1 || !text.starts_with(remark) {
            outcome = Err(format!(
                "{case}: answered {}, expected code 1 and a remark starting {remark:?}",
                summary(&resp)
            ));
        } else if self.is_registered(case, broker_addr).await {
            outcome = Err(format!("{case}: {broker_addr} was registered"));
        }
        drop(conn);
        self.check(case).await;
        outcome
    }

    /// The cluster table lists no broker at `broker_addr`. (Looking for the name would not do: a
    /// refused first registration may leave its empty group behind, as Java does;
    /// docs/route-rules.md, step 7.)
    async fn not_registered(&mut self, case: &str, broker_addr: &str) {
        assert!(
            !self.is_registered(case, broker_addr).await,
            "{case}: {broker_addr} was registered"
        );
    }

    async fn is_registered(&mut self, case: &str, broker_addr: &str) -> bool {
        let resp = self
            .before
            .request(RemotingCommand::request(
                RequestCode::GET_BROKER_CLUSTER_INFO,
            ))
            .await
            .unwrap_or_else(|e| panic!("{case}: cluster info: {e}"));
        assert_eq!(resp.code, 0, "{case}: cluster info");
        body_text(&resp).contains(broker_addr)
    }

    /// Waits up to `limit` for the server to close `raw` without a reply, talking to the
    /// witnesses every 300 ms meanwhile (which also keeps them from idling out).
    async fn wait_closed(&mut self, raw: &mut Raw, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match raw.next(Duration::from_millis(300)).await {
                Next::Closed => return,
                Next::Frame(cmd) => panic!("{}: answered {}", raw.case, summary(&cmd)),
                Next::Silent => {}
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{}: not closed within {limit:?}",
                raw.case
            );
            self.witnesses_ok(&raw.case).await;
        }
    }

    async fn stop(self) {
        let Self {
            server,
            broker_conn,
            before,
            ..
        } = self;
        drop(broker_conn);
        drop(before);
        server.stop().await;
    }
}

/// A route query for the witness topic and the topic list, with their normal answers.
async fn witness_answers(conn: &mut Client, case: &str, who: &str) {
    let resp = conn
        .request(route_request(WITNESS_TOPIC))
        .await
        .unwrap_or_else(|e| panic!("{case}: {who}: route query: {e}"));
    assert_eq!(
        resp.code,
        0,
        "{case}: {who}: route query {}",
        summary(&resp)
    );
    assert!(
        body_text(&resp).contains(WITNESS_ADDR),
        "{case}: {who}: the route lacks the witness broker"
    );
    let resp = conn
        .request(RemotingCommand::request(
            RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        ))
        .await
        .unwrap_or_else(|e| panic!("{case}: {who}: topic list: {e}"));
    assert_eq!(resp.code, 0, "{case}: {who}: topic list {}", summary(&resp));
    assert!(
        body_text(&resp).contains(WITNESS_TOPIC),
        "{case}: {who}: the topic list lacks the witness topic"
    );
}

// ---------------------------------------------------------------------------------------------
// Raw connections.

/// What a read on a raw connection found.
enum Next {
    Frame(RemotingCommand),
    /// EOF or a reset.
    Closed,
    /// Nothing within the time given.
    Silent,
}

/// A plain TCP connection for writing arbitrary bytes and reading whole frames back.
struct Raw {
    stream: TcpStream,
    buf: BytesMut,
    case: String,
}

impl Raw {
    async fn open(addr: SocketAddr, case: &str) -> Self {
        let stream = tokio::time::timeout(STEP, TcpStream::connect(addr))
            .await
            .unwrap_or_else(|_| panic!("{case}: connect timed out"))
            .unwrap_or_else(|e| panic!("{case}: connect: {e}"));
        stream.set_nodelay(true).expect("TCP_NODELAY");
        Self {
            stream,
            buf: BytesMut::with_capacity(64 * 1024),
            case: case.to_owned(),
        }
    }

    /// Writes `bytes` within `limit`; false if the server closed or stopped reading.
    async fn send_within(&mut self, bytes: &[u8], limit: Duration) -> bool {
        matches!(
            tokio::time::timeout(limit, self.stream.write_all(bytes)).await,
            Ok(Ok(()))
        )
    }

    /// Writes bytes the server has no reason to refuse.
    async fn must_send(&mut self, bytes: &[u8]) {
        assert!(
            self.send_within(bytes, BIG_STEP).await,
            "{}: the server did not take {} bytes",
            self.case,
            bytes.len()
        );
    }

    async fn next(&mut self, limit: Duration) -> Next {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if self.buf.len() >= 4 {
                let len = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                let total = 4 + len as usize;
                if self.buf.len() >= total {
                    let mut frame = self.buf.split_to(total).freeze();
                    frame.advance(4);
                    let cmd = decode_frame(frame).unwrap_or_else(|e| {
                        panic!("{}: the server wrote a bad frame: {e}", self.case)
                    });
                    return Next::Frame(cmd);
                }
            }
            self.buf.reserve(64 * 1024);
            match tokio::time::timeout_at(deadline, self.stream.read_buf(&mut self.buf)).await {
                Err(_) => return Next::Silent,
                Ok(Ok(0)) | Ok(Err(_)) => return Next::Closed,
                Ok(Ok(_)) => {}
            }
        }
    }

    /// The next frame, which must be a response.
    async fn response(&mut self) -> RemotingCommand {
        match self.next(STEP).await {
            Next::Frame(cmd) => {
                assert!(
                    cmd.is_response() && cmd.flag == FLAG_RESPONSE,
                    "{}: not a response: {}",
                    self.case,
                    summary(&cmd)
                );
                cmd
            }
            Next::Closed => panic!("{}: closed instead of answering", self.case),
            Next::Silent => panic!("{}: no answer within {STEP:?}", self.case),
        }
    }

    /// The server closes the connection without writing anything.
    async fn expect_closed(&mut self) {
        match self.next(STEP).await {
            Next::Closed => assert!(
                self.buf.is_empty(),
                "{}: {} bytes written before the close",
                self.case,
                self.buf.len()
            ),
            Next::Frame(cmd) => panic!(
                "{}: answered ({}) instead of closing",
                self.case,
                summary(&cmd)
            ),
            Next::Silent => panic!("{}: still open {STEP:?} later", self.case),
        }
    }

    /// Nothing arrives for `limit`, and the connection stays open.
    async fn expect_silence(&mut self, limit: Duration) {
        match self.next(limit).await {
            Next::Silent => {}
            Next::Frame(cmd) => panic!("{}: unexpected frame: {}", self.case, summary(&cmd)),
            Next::Closed => panic!("{}: closed by the server", self.case),
        }
    }

    async fn answer_or_close(&mut self) -> Option<RemotingCommand> {
        match self.next(STEP).await {
            Next::Frame(cmd) => Some(cmd),
            Next::Closed => None,
            Next::Silent => panic!("{}: neither answered nor closed within {STEP:?}", self.case),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Frame builders.

/// Asserts that `resp` is a SYSTEM_ERROR whose remark starts with `prefix`.
fn assert_refused(case: &str, resp: &RemotingCommand, prefix: &str) {
    assert_eq!(resp.code, 1, "{case}: {}", summary(resp));
    assert!(
        resp.remark.as_deref().unwrap_or("").starts_with(prefix),
        "{case}: {}",
        summary(resp)
    );
}

fn summary(cmd: &RemotingCommand) -> String {
    let remark: String = cmd
        .remark
        .as_deref()
        .unwrap_or("")
        .chars()
        .take(160)
        .collect();
    format!(
        "code {} opaque {} flag {} remark {remark:?}, body of {} bytes",
        cmd.code,
        cmd.opaque,
        cmd.flag,
        cmd.body_bytes().len()
    )
}

/// A command as our encoder writes it.
fn wire(cmd: &RemotingCommand) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode_frame(cmd, &mut out).expect("encodes");
    out.to_vec()
}

/// A frame with an explicit length field and header-length word, followed by `rest`.
fn frame_word(length: u32, word: u32, rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + rest.len());
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(&word.to_be_bytes());
    out.extend_from_slice(rest);
    out
}

/// A well-framed frame: serialize-type byte, header, body; the lengths as they should be.
fn frame_bytes(type_byte: u8, header: &[u8], body: &[u8]) -> Vec<u8> {
    assert!(header.len() <= 0xFF_FFFF, "the header length has 24 bits");
    let length = (4 + header.len() + body.len()) as u32;
    let word = (u32::from(type_byte) << 24) | header.len() as u32;
    let mut out = frame_word(length, word, header);
    out.extend_from_slice(body);
    out
}

fn json_frame(header: &[u8]) -> Vec<u8> {
    frame_bytes(0, header, &[])
}

/// The JSON header of a route query, as a Java client writes it.
fn json_route_header(opaque: i32, topic: &str) -> String {
    format!(
        r#"{{"code":105,"extFields":{{"topic":"{topic}"}},"flag":0,"language":"JAVA","opaque":{opaque},"serializeTypeCurrentRPC":"JSON","version":479}}"#
    )
}

/// One ROCKETMQ ext entry: key length (16 bits), key, value length (32 bits), value.
fn ext_entry(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(6 + key.len() + value.len());
    out.extend_from_slice(&(key.len() as i16).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&(value.len() as i32).to_be_bytes());
    out.extend_from_slice(value);
    out
}

/// A ROCKETMQ header from its parts: `ext` is the already encoded entry section.
fn binary_header_raw(code: i16, opaque: i32, flag: i32, remark: &[u8], ext: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(21 + remark.len() + ext.len());
    out.extend_from_slice(&code.to_be_bytes());
    out.push(0); // JAVA
    out.extend_from_slice(&479i16.to_be_bytes());
    out.extend_from_slice(&opaque.to_be_bytes());
    out.extend_from_slice(&flag.to_be_bytes());
    out.extend_from_slice(&(remark.len() as i32).to_be_bytes());
    out.extend_from_slice(remark);
    out.extend_from_slice(&(ext.len() as i32).to_be_bytes());
    out.extend_from_slice(ext);
    out
}

fn binary_header(
    code: i16,
    opaque: i32,
    flag: i32,
    remark: &[u8],
    ext: &[(&[u8], &[u8])],
) -> Vec<u8> {
    let entries: Vec<u8> = ext.iter().flat_map(|(k, v)| ext_entry(k, v)).collect();
    binary_header_raw(code, opaque, flag, remark, &entries)
}

/// `text` with every `@` replaced by `bad`.
fn splice(text: &str, bad: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + bad.len());
    for (i, part) in text.split('@').enumerate() {
        if i > 0 {
            out.extend_from_slice(bad);
        }
        out.extend_from_slice(part.as_bytes());
    }
    out
}

/// `open` `depth` times, then `inner`, then `close` `depth` times.
fn nested(depth: usize, open: &str, inner: &str, close: &str) -> String {
    let mut out = String::with_capacity(depth * (open.len() + close.len()) + inner.len());
    for _ in 0..depth {
        out.push_str(open);
    }
    out.push_str(inner);
    for _ in 0..depth {
        out.push_str(close);
    }
    out
}

/// REGISTER_BROKER of `broker` with `body` as it is, its CRC right, `compressed` as given.
fn register_with_body(
    broker: &FakeBroker,
    body: Vec<u8>,
    compressed: bool,
    version: i32,
) -> RemotingCommand {
    RemotingCommand::request(RequestCode::REGISTER_BROKER)
        .with_version(version)
        .with_ext_fields(broker.header(&body, compressed).to_ext())
        .with_body(body)
}

fn zlib(raw: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(raw).expect("deflate");
    z.finish().expect("deflate")
}

/// The inflated compressed-registration layout: DataVersion JSON, topic texts, filter servers.
fn compressed_layout(data_version: &[u8], topics: &[&[u8]]) -> Vec<u8> {
    let mut raw = Vec::new();
    let chunk = |raw: &mut Vec<u8>, bytes: &[u8]| {
        raw.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
        raw.extend_from_slice(bytes);
    };
    chunk(&mut raw, data_version);
    raw.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for topic in topics {
        chunk(&mut raw, topic);
    }
    chunk(&mut raw, b"[]");
    raw
}

/// A zlib stream of `n` zero bytes, built without compressing them: one sync-flushed deflate
/// block of 1 MiB of zeros repeated (its matches only ever reach back into zeros), the rest in a
/// block of its own, an empty final block and the Adler-32 of `n` zeros.
fn zlib_zeros(n: usize) -> Vec<u8> {
    const CHUNK: usize = 1 << 20;
    let block = |len: usize| {
        let input = vec![0u8; len];
        let mut deflate = flate2::Compress::new(flate2::Compression::best(), false);
        let mut out = Vec::with_capacity(len / 64 + 1024);
        while (deflate.total_in() as usize) < len {
            out.reserve(1024);
            let start = deflate.total_in() as usize;
            deflate
                .compress_vec(&input[start..], &mut out, flate2::FlushCompress::Sync)
                .expect("deflate");
        }
        out
    };
    let mut z = vec![0x78, 0xDA];
    if n >= CHUNK {
        let full = block(CHUNK);
        for _ in 0..n / CHUNK {
            z.extend_from_slice(&full);
        }
    }
    if n % CHUNK > 0 {
        z.extend_from_slice(&block(n % CHUNK));
    }
    // BFINAL=1, fixed Huffman, end of block.
    z.extend_from_slice(&[0x03, 0x00]);
    // Adler-32 of zeros: a stays 1, b grows by 1 per byte.
    let adler = (((n % 65_521) as u32) << 16) | 1;
    z.extend_from_slice(&adler.to_be_bytes());
    z
}

// ---------------------------------------------------------------------------------------------
// Log capture: the server's tracing output goes to a buffer that tests can search.

mod logs {
    use std::sync::{Mutex, Once};

    static CAPTURED: Mutex<Vec<u8>> = Mutex::new(Vec::new());
    /// Capture stops growing here (the cases that look at logs run early enough to fit).
    const CAP: usize = 256 << 20;

    struct Sink;

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let mut all = CAPTURED.lock().unwrap_or_else(|e| e.into_inner());
            if all.len() + buf.len() <= CAP {
                all.extend_from_slice(buf);
            }
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Installs the capturing subscriber (info level) once for this test binary.
    pub fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
                .with_ansi(false)
                .with_writer(|| Sink)
                .try_init();
        });
    }

    /// The captured lines containing `needle`.
    pub fn lines_with(needle: &str) -> Vec<String> {
        let all = CAPTURED.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&all)
            .lines()
            .filter(|line| line.contains(needle))
            .map(str::to_owned)
            .collect()
    }
}

/// No log line carries a 64 KiB piece of `text` (a multi-megabyte string from a request).
fn assert_not_logged_whole(case: &str, text: &str) {
    let piece = &text[..64 * 1024];
    let lines = logs::lines_with(piece);
    assert!(
        lines.is_empty(),
        "{case}: {} log line(s) carry the {} bytes sent, the longest {} bytes",
        lines.len(),
        text.len(),
        lines.iter().map(String::len).max().unwrap_or(0)
    );
}

// ---------------------------------------------------------------------------------------------
// The cases.

#[actix::test]
async fn requests_split_at_every_byte_boundary() {
    let mut h = Harness::new().await;

    let case = "a JSON and a ROCKETMQ request back to back, split in two writes at every position";
    let mut pair = wire(&route_request(WITNESS_TOPIC).with_opaque(1));
    pair.extend(wire(
        &route_request("NoSuchTopic")
            .with_opaque(2)
            .with_serialize_type(SerializeType::RocketMq),
    ));
    let mut raw = Raw::open(h.addr, case).await;
    for cut in 1..pair.len() {
        raw.must_send(&pair[..cut]).await;
        tokio::time::sleep(Duration::from_millis(1)).await;
        raw.must_send(&pair[cut..]).await;
        let mut answers = [raw.response().await, raw.response().await];
        answers.sort_by_key(|r| r.opaque);
        let got: Vec<_> = answers
            .iter()
            .map(|r| (r.opaque, r.code, r.serialize_type))
            .collect();
        assert_eq!(
            got,
            [
                (1, 0, SerializeType::Json),
                (2, 17, SerializeType::RocketMq)
            ],
            "{case}: cut at {cut}"
        );
    }
    drop(raw);
    h.check(case).await;

    let case = "REGISTER_BROKER (ROCKETMQ header, JSON body) delivered one byte per write";
    let split = FakeBroker::master("broker-split", 10921, &["SplitTopic", "SplitTopic2"]);
    let bytes = wire(
        &split
            .register()
            .with_opaque(9)
            .with_serialize_type(SerializeType::RocketMq),
    );
    let mut raw = Raw::open(h.addr, case).await;
    for byte in &bytes {
        raw.must_send(std::slice::from_ref(byte)).await;
    }
    let resp = raw.response().await;
    assert_eq!(
        (resp.opaque, resp.code, resp.serialize_type),
        (9, 0, SerializeType::RocketMq),
        "{case}: {}",
        summary(&resp)
    );
    let route = h.before.request(route_request("SplitTopic")).await.unwrap();
    assert_eq!(route.code, 0, "{case}: the witness sees the new route");
    assert!(body_text(&route).contains("127.0.0.1:10921"), "{case}");
    drop(raw);
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn frames_at_the_size_limit() {
    let mut h = Harness::new().await;
    let max = h.max_frame;

    let case = "a frame of exactly server.max_frame_bytes whose header is all `{`";
    let header_len = (max - 8).min(0xFF_FFFF);
    let bytes = frame_bytes(
        0,
        &vec![b'{'; header_len],
        &vec![b'{'; max - 8 - header_len],
    );
    assert_eq!(bytes.len(), max);
    h.closes(case, &bytes).await;
    drop(bytes);
    h.check(case).await;

    let case = "a route query padded with a body to exactly server.max_frame_bytes";
    let head = wire(&route_request(WITNESS_TOPIC).with_opaque(3)).len();
    let bytes = wire(
        &route_request(WITNESS_TOPIC)
            .with_opaque(3)
            .with_body(vec![b'x'; max - head]),
    );
    assert_eq!(bytes.len(), max);
    let resp = h.answers(case, &bytes).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (3, 0),
        "{case}: {}",
        summary(&resp)
    );
    drop(bytes);
    h.check(case).await;

    let case = "a length one byte past the limit, sent alone (refused before buffering)";
    let mut raw = Raw::open(h.addr, case).await;
    raw.must_send(&((max - 3) as u32).to_be_bytes()).await;
    raw.expect_closed().await;
    drop(raw);
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn deeply_nested_json_in_headers_and_bodies() {
    let mut h = Harness::new().await;
    const DEEP: usize = 100_000;

    let case = "an ext value nested 50 deep (kept as its JSON text)";
    let header = format!(
        r#"{{"code":105,"opaque":11,"extFields":{{"deep":{},"topic":"{WITNESS_TOPIC}"}}}}"#,
        nested(50, "[", "1", "]")
    );
    let resp = h.answers(case, &json_frame(header.as_bytes())).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (11, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "an ext value nested 100,000 arrays deep";
    let header = format!(
        r#"{{"code":105,"opaque":12,"extFields":{{"topic":"{WITNESS_TOPIC}","deep":{}}}}}"#,
        nested(DEEP, "[", "", "]")
    );
    if let Some(resp) = h
        .answers_or_closes(case, &json_frame(header.as_bytes()))
        .await
    {
        assert_eq!(
            (resp.opaque, resp.code),
            (12, 0),
            "{case}: {}",
            summary(&resp)
        );
    }
    h.check(case).await;

    let case = "an unknown header key holding objects nested 100,000 deep";
    let header = format!(
        r#"{{"code":105,"opaque":13,"zz":{},"extFields":{{"topic":"{WITNESS_TOPIC}"}}}}"#,
        nested(DEEP, r#"{"a":"#, "1", "}")
    );
    if let Some(resp) = h
        .answers_or_closes(case, &json_frame(header.as_bytes()))
        .await
    {
        assert_eq!(
            (resp.opaque, resp.code),
            (13, 0),
            "{case}: {}",
            summary(&resp)
        );
    }
    h.check(case).await;

    let case = "a header that is nothing but 100,000 nested objects";
    let header = nested(DEEP, r#"{"extFields":"#, "{}", "}");
    h.answers_or_closes(case, &json_frame(header.as_bytes()))
        .await;
    h.check(case).await;

    let case = "a remark of 100,000 nested arrays (a key of the wrong type)";
    let header = format!(
        r#"{{"code":105,"opaque":14,"remark":{},"extFields":{{"topic":"{WITNESS_TOPIC}"}}}}"#,
        nested(DEEP, "[", "", "]")
    );
    h.closes(case, &json_frame(header.as_bytes())).await;
    h.check(case).await;

    // Unknown properties are skipped (docs/protocol.md#json-bodies), however deep: serde_json
    // skips them without recursing. Typed positions fail at the first wrong token.
    let broker = FakeBroker::master("broker-deep", 10931, &["DeepA", "DeepB"]);
    let case = "REGISTER_BROKER whose JSON body nests 100,000 objects under an unknown property";
    let body = format!(
        r#"{{"topicConfigSerializeWrapper":{{"topicConfigTable":{{"DeepA":{{"topicName":"DeepA","zz":{}}},"DeepB":{{"topicName":"DeepB"}}}}}}}}"#,
        nested(DEEP, r#"{"a":"#, "1", "}")
    );
    let cmd = register_with_body(&broker, body.into_bytes(), false, 479);
    let mut conn = h.client(case).await;
    let resp = conn.request(cmd).await.expect("answered");
    assert!(
        resp.code == 0
            || (resp.code == 1
                && resp
                    .remark
                    .as_deref()
                    .unwrap_or("")
                    .starts_with("bad JSON body")),
        "{case}: {}",
        summary(&resp)
    );
    drop(conn);
    h.check(case).await;

    let case = "REGISTER_BROKER whose topic table is 100,000 nested arrays";
    let body = format!(
        r#"{{"topicConfigSerializeWrapper":{{"topicConfigTable":{}}}}}"#,
        nested(DEEP, "[", "", "]")
    );
    let cmd = register_with_body(&broker, body.into_bytes(), false, 479);
    h.register_refused(case, cmd, &broker.addr, "bad JSON body")
        .await;

    let case = "REGISTER_TOPIC_IN_NAMESRV whose body nests 100,000 arrays";
    let body = format!(r#"{{"queueDatas":{}}}"#, nested(DEEP, "[", "", "]"));
    let cmd = RemotingCommand::request(RequestCode::REGISTER_TOPIC_IN_NAMESRV)
        .with_ext("topic", "DeepTopic")
        .with_body(body.into_bytes());
    let resp = h.request_on_new(case, cmd).await;
    assert_refused(case, &resp, "bad TopicRouteData body");
    h.check(case).await;

    let case = "QUERY_DATA_VERSION whose body nests 100,000 objects with bare numeric keys";
    let cmd = h
        .broker
        .query_data_version(&h.broker.version)
        .with_body(nested(DEEP, "{0:", "1", "}").into_bytes());
    // An unknown property `0` of a DataVersion: skipped, or refused; answered either way.
    let resp = h.request_on_new(case, cmd).await;
    assert!(
        resp.code == 0
            || resp
                .remark
                .as_deref()
                .unwrap_or("")
                .starts_with("bad DataVersion body"),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "QUERY_DATA_VERSION whose counter is 100,000 nested arrays";
    let body = format!(r#"{{"counter":{}}}"#, nested(DEEP, "[", "", "]"));
    let cmd = h
        .broker
        .query_data_version(&h.broker.version)
        .with_body(body.into_bytes());
    let resp = h.request_on_new(case, cmd).await;
    assert_refused(case, &resp, "bad DataVersion body");
    h.check(case).await;

    let case = "a compressed registration whose DataVersion nests 100,000 arrays";
    let raw = compressed_layout(
        nested(DEEP, "[", "", "]").as_bytes(),
        &[b"DeepA 4 4 6 SINGLE_TAG", b"DeepB 4 4 6 SINGLE_TAG"],
    );
    let cmd = register_with_body(&broker, zlib(&raw), true, 409);
    // The remark's wording is the subject of its own case (register_broker_checksums_...).
    h.register_refused(case, cmd, &broker.addr, "").await;
    h.stop().await;
}

#[actix::test]
async fn ext_fields_with_100k_entries() {
    let mut h = Harness::new().await;
    const N: usize = 100_000;

    let case = "a JSON header with 100,000 distinct ext entries";
    let mut header = String::from(r#"{"code":105,"opaque":21,"extFields":{"#);
    for i in 0..N {
        write!(header, r#""key{i}":"value{i}","#).unwrap();
    }
    write!(header, r#""topic":"{WITNESS_TOPIC}"}}}}"#).unwrap();
    let resp = h.answers(case, &json_frame(header.as_bytes())).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (21, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "a JSON header with 100,000 numeric ext values (the serde path)";
    let mut header = String::from(r#"{"code":105,"opaque":22,"extFields":{"#);
    for i in 0..N {
        write!(header, r#""key{i}":{i},"#).unwrap();
    }
    write!(header, r#""topic":"{WITNESS_TOPIC}"}}}}"#).unwrap();
    let resp = h.answers(case, &json_frame(header.as_bytes())).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (22, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "a JSON header repeating `topic` 100,000 times (the last one counts)";
    let mut header = String::from(r#"{"code":105,"opaque":23,"extFields":{"#);
    for i in 0..N {
        write!(header, r#""topic":"NoSuchTopic{i}","#).unwrap();
    }
    write!(header, r#""topic":"{WITNESS_TOPIC}"}}}}"#).unwrap();
    let resp = h.answers(case, &json_frame(header.as_bytes())).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (23, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "a ROCKETMQ header with 100,000 ext entries";
    let mut ext = Vec::new();
    for i in 0..N {
        ext.extend(ext_entry(
            format!("key{i}").as_bytes(),
            format!("value{i}").as_bytes(),
        ));
    }
    ext.extend(ext_entry(b"topic", WITNESS_TOPIC.as_bytes()));
    let header = binary_header_raw(105, 24, 0, b"", &ext);
    let resp = h.answers(case, &frame_bytes(1, &header, &[])).await;
    assert_eq!(
        (resp.opaque, resp.code, resp.serialize_type),
        (24, 0, SerializeType::RocketMq),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn invalid_utf8_in_every_string_field() {
    let mut h = Harness::new().await;

    let case = "invalid UTF-8 in each string of a JSON header";
    let templates = [
        (
            "a top-level key",
            r#"{"co@de":105,"opaque":31,"extFields":{"topic":"WitnessTopic"}}"#,
        ),
        (
            "language",
            r#"{"code":105,"language":"JA@VA","opaque":31,"extFields":{"topic":"WitnessTopic"}}"#,
        ),
        (
            "remark",
            r#"{"code":105,"remark":"r@","opaque":31,"extFields":{"topic":"WitnessTopic"}}"#,
        ),
        (
            "an ext key",
            r#"{"code":105,"opaque":31,"extFields":{"topic":"WitnessTopic","k@":"v"}}"#,
        ),
        (
            "an ext value",
            r#"{"code":105,"opaque":31,"extFields":{"x":"@","topic":"WitnessTopic"}}"#,
        ),
        (
            "an unknown key",
            r#"{"code":105,"z@z":1,"opaque":31,"extFields":{"topic":"WitnessTopic"}}"#,
        ),
        (
            "an unknown key's value",
            r#"{"code":105,"zz":"@","opaque":31,"extFields":{"topic":"WitnessTopic"}}"#,
        ),
        (
            "serializeTypeCurrentRPC",
            r#"{"code":105,"opaque":31,"serializeTypeCurrentRPC":"JS@ON","extFields":{"topic":"WitnessTopic"}}"#,
        ),
    ];
    for (field, template) in templates {
        // The template itself is a good request.
        let resp = h.answers(case, &json_frame(&splice(template, b""))).await;
        assert_eq!((resp.opaque, resp.code), (31, 0), "{case}: {field}, valid");
        for bad in BAD_UTF8 {
            let what = format!("{case}: {field} with {bad:02x?}");
            h.closes(&what, &json_frame(&splice(template, bad))).await;
        }
    }
    h.check(case).await;

    let case = "an escaped lone surrogate (\\ud800) in a JSON remark and ext value";
    for template in [
        r#"{"code":105,"remark":"\ud800","opaque":32,"extFields":{"topic":"WitnessTopic"}}"#,
        r#"{"code":105,"opaque":32,"extFields":{"x":"a\udc00b","topic":"WitnessTopic"}}"#,
    ] {
        if let Some(resp) = h
            .answers_or_closes(case, &json_frame(template.as_bytes()))
            .await
        {
            assert_eq!(
                (resp.opaque, resp.code),
                (32, 0),
                "{case}: {}",
                summary(&resp)
            );
        }
    }
    h.check(case).await;

    let case = "invalid UTF-8 in the ROCKETMQ remark, ext key and ext value";
    let topic = WITNESS_TOPIC.as_bytes();
    let good = binary_header(105, 33, 0, b"remark", &[(b"k", b"v"), (b"topic", topic)]);
    let resp = h.answers(case, &frame_bytes(1, &good, &[])).await;
    assert_eq!((resp.opaque, resp.code), (33, 0), "{case}: valid");
    for bad in BAD_UTF8 {
        let with = |s: &str| splice(s, bad);
        let headers = [
            (
                "remark",
                binary_header(105, 33, 0, &with("re@mark"), &[(b"topic", topic)]),
            ),
            (
                "ext key",
                binary_header(105, 33, 0, b"", &[(&with("k@"), b"v"), (b"topic", topic)]),
            ),
            (
                "ext value",
                binary_header(105, 33, 0, b"", &[(b"k", &with("@v")), (b"topic", topic)]),
            ),
        ];
        for (field, header) in headers {
            let what = format!("{case}: {field} with {bad:02x?}");
            h.closes(&what, &frame_bytes(1, &header, &[])).await;
        }
    }
    h.check(case).await;

    let case = "REGISTER_BROKER whose JSON body has invalid UTF-8 in topic names";
    let broker = FakeBroker::master("broker-utf8", 10941, &["Utf8@A", "Utf8@B"]);
    let body = splice(std::str::from_utf8(&broker.body_json()).unwrap(), b"\xff");
    let cmd = register_with_body(&broker, body, false, 479);
    h.register_refused(case, cmd, &broker.addr, "bad JSON body")
        .await;

    let case = "a compressed registration whose topic text is not UTF-8";
    let raw = compressed_layout(
        br#"{"counter":1,"timestamp":1}"#,
        &[b"Utf8\xffA 4 4 6 SINGLE_TAG", b"Utf8B 4 4 6 SINGLE_TAG"],
    );
    let cmd = register_with_body(&broker, zlib(&raw), true, 409);
    h.register_refused(
        case,
        cmd,
        &broker.addr,
        "Failed to decode RegisterBrokerBody",
    )
    .await;

    let case = "REGISTER_TOPIC_IN_NAMESRV whose body has invalid UTF-8";
    let body = splice(
        r#"{"queueDatas":[{"brokerName":"b@","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#,
        b"\xff",
    );
    let cmd = RemotingCommand::request(RequestCode::REGISTER_TOPIC_IN_NAMESRV)
        .with_ext("topic", "Utf8Topic")
        .with_body(body);
    let resp = h.request_on_new(case, cmd).await;
    assert_refused(case, &resp, "bad TopicRouteData body");
    h.check(case).await;

    let case = "QUERY_DATA_VERSION whose body has invalid UTF-8";
    let cmd = h
        .broker
        .query_data_version(&h.broker.version)
        .with_body(splice(r#"{"count@er":1}"#, b"\xff"));
    let resp = h.request_on_new(case, cmd).await;
    assert_refused(case, &resp, "bad DataVersion body");
    h.check(case).await;

    let case = "UPDATE_NAMESRV_CONFIG whose properties body is not UTF-8";
    let cmd = RemotingCommand::request(RequestCode::UPDATE_NAMESRV_CONFIG)
        .with_body(&b"\xff\xfe=\xff\nno\xc0\xafKey=1\n"[..]);
    let resp = h.request_on_new(case, cmd).await;
    assert_ne!(resp.code, 16, "{case}: {}", summary(&resp));
    let config = h
        .before
        .request(RemotingCommand::request(RequestCode::GET_NAMESRV_CONFIG))
        .await
        .unwrap();
    assert_eq!(config.code, 0, "{case}: the configuration still reads");
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn zlib_bomb_sized_from_the_configured_limit() {
    // The bomb is built from the limit the test server runs with, whatever the default is; a
    // default above 16 MiB is lowered to what a debug build inflates in well under a second.
    let mut config = test_config();
    if config.server.max_inflated_body_bytes > 16 << 20 {
        config.server.max_inflated_body_bytes = config.server.max_frame_bytes.max(16 << 20);
    }
    let mut h = Harness::start(config).await;
    let limit = h.max_inflated;

    // The construction itself, checked on a small size.
    let small = 2 * (1 << 20) + 7;
    let mut inflated = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::ZlibDecoder::new(zlib_zeros(small).as_slice()),
        &mut inflated,
    )
    .expect("a valid zlib stream");
    assert!(inflated.len() == small && inflated.iter().all(|b| *b == 0));

    let bomber = FakeBroker::master("broker-bomb", 10951, &["BombA", "BombB"]);
    let case = "a compressed REGISTER_BROKER body inflating to exactly the limit (not a bomb)";
    let bomb = zlib_zeros(limit);
    assert!(
        bomb.len() < h.max_frame / 2,
        "{} bytes compressed",
        bomb.len()
    );
    let cmd = register_with_body(&bomber, bomb, true, 409);
    let mut conn = h.client(case).await;
    let resp = conn.request(cmd).await.expect("answered");
    let remark = resp.remark.clone().unwrap_or_default();
    assert_eq!(resp.code, 1, "{case}: {}", summary(&resp));
    // Zeros are no registration: refused, but not for its size (the wording of a bad inner
    // part is the subject of its own case in register_broker_checksums_...).
    assert!(!remark.contains("inflates"), "{case}: {remark}");
    h.not_registered(case, &bomber.addr).await;
    drop(conn);
    h.check(case).await;

    // Inflated as it is read, zeros are refused at their first chunk, long before the limit.
    let case = "a compressed REGISTER_BROKER body inflating one byte past the limit";
    let cmd = register_with_body(&bomber, zlib_zeros(limit + 1), true, 409);
    let mut conn = h.client(case).await;
    let resp = conn.request(cmd).await.expect("answered");
    assert_eq!(resp.code, 1, "{case}: {}", summary(&resp));
    let remark = resp.remark.clone().unwrap_or_default();
    assert!(
        remark.starts_with("Failed to decode RegisterBrokerBody"),
        "{case}: {remark}"
    );
    h.not_registered(case, &bomber.addr).await;
    drop(conn);
    h.check(case).await;

    // A well-formed start whose topic chunk declares one byte more than the limit leaves: refused
    // for its size before a byte of it is inflated.
    let case = "a compressed REGISTER_BROKER body whose chunk declares more than the limit";
    let mut raw = Vec::new();
    raw.extend_from_slice(&2i32.to_be_bytes());
    raw.extend_from_slice(b"{}");
    raw.extend_from_slice(&1i32.to_be_bytes());
    let declared = i32::try_from(limit - 10 + 1).unwrap_or(i32::MAX);
    raw.extend_from_slice(&declared.to_be_bytes());
    raw.extend_from_slice(&[b'x'; 64]);
    let cmd = register_with_body(&bomber, zlib(&raw), true, 409);
    let mut conn = h.client(case).await;
    let resp = conn.request(cmd).await.expect("answered");
    assert_eq!(resp.code, 1, "{case}: {}", summary(&resp));
    let remark = resp.remark.clone().unwrap_or_default();
    assert!(
        remark.starts_with("Failed to decode RegisterBrokerBody")
            && remark.contains(&format!("inflates to more than {limit} bytes")),
        "{case}: {remark}"
    );
    h.not_registered(case, &bomber.addr).await;
    drop(conn);
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn lengths_that_overflow_when_4_is_added() {
    let lengths: [u32; 8] = [
        0x7FFF_FFFF,
        0x7FFF_FFFD,
        0x7FFF_FFFC,
        0x8000_0000,
        0x8000_0004,
        0xFFFF_FFFC,
        0xFFFF_FFFD,
        0xFFFF_FFFE,
    ];
    let mut largest = test_config();
    largest.server.max_frame_bytes = i32::MAX as usize;
    largest.server.max_inflated_body_bytes = i32::MAX as usize;
    for (server, config) in [
        ("default limit", test_config()),
        ("limit i32::MAX", largest),
    ] {
        let mut h = Harness::start(config).await;
        let case = format!("{server}: length fields that overflow 32 bits with the 4 added");
        for length in lengths {
            let what = format!("{case}: {length:#010x}");
            h.closes(&what, &frame_word(length, 0x0000_0002, b"{}"))
                .await;
        }
        h.check(&case).await;
        h.stop().await;
    }
}

#[actix::test]
async fn interleaved_requests_with_duplicate_opaques() {
    let mut h = Harness::new().await;
    let case = "four kinds of request pipelined, each opaque used 40 times on one connection";
    let mut bytes = Vec::new();
    for round in 0..50 {
        let opaque = round % 5;
        bytes.extend(wire(&route_request(WITNESS_TOPIC).with_opaque(opaque)));
        bytes.extend(wire(
            &RemotingCommand::request(RequestCode::GET_KV_CONFIG)
                .with_ext("namespace", "adversarial")
                .with_ext("key", "missing")
                .with_serialize_type(SerializeType::RocketMq)
                .with_opaque(opaque),
        ));
        bytes.extend(wire(
            &RemotingCommand::request(RequestCode(10)).with_opaque(opaque),
        ));
        bytes.extend(wire(
            &RemotingCommand::request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
                .with_opaque(opaque),
        ));
    }
    // A second connection uses the same opaques at the same time.
    let mut other = Raw::open(h.addr, case).await;
    let mut raw = Raw::open(h.addr, case).await;
    raw.must_send(&bytes).await;
    other.must_send(&bytes).await;
    for conn in [&mut raw, &mut other] {
        // Per opaque: (route, KV miss, not supported, topic list) answers.
        let mut seen = [[0u32; 4]; 5];
        for _ in 0..200 {
            let resp = conn.response().await;
            let opaque = usize::try_from(resp.opaque).expect("an opaque we sent");
            assert!(opaque < 5, "{case}: opaque {opaque}");
            let body = body_text(&resp);
            let kind = match (resp.code, resp.serialize_type) {
                (0, SerializeType::Json) if body.contains("brokerDatas") => 0,
                (22, SerializeType::RocketMq) => 1,
                (3, SerializeType::Json) => 2,
                (0, SerializeType::Json) if body.contains("topicList") => 3,
                _ => panic!("{case}: unexpected answer {}", summary(&resp)),
            };
            seen[opaque][kind] += 1;
        }
        assert_eq!(seen, [[10; 4]; 5], "{case}: answers per opaque and kind");
        conn.expect_silence(Duration::from_millis(100)).await;
    }
    drop(raw);
    drop(other);
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn oneway_on_every_request_code() {
    let mut h = Harness::new().await;
    for serialize_type in [SerializeType::Json, SerializeType::RocketMq] {
        let case = format!("{serialize_type:?}: every request code flagged oneway, without fields");
        let mut codes: Vec<i32> = RequestCode::NAMESRV_CODES.iter().map(|c| c.0).collect();
        codes.extend([0, -1, 10, 905, 32767, -32768]);
        if serialize_type == SerializeType::Json {
            codes.extend([70_000, i32::MIN, i32::MAX]);
        }
        let mut bytes = Vec::new();
        for (i, code) in codes.iter().enumerate() {
            // Flag 2 alone, then with every other bit but the response bit.
            let flag = if i % 2 == 0 {
                FLAG_ONEWAY
            } else {
                !FLAG_RESPONSE
            };
            bytes.extend(wire(
                &RemotingCommand::request(RequestCode(*code))
                    .with_flag(flag)
                    .with_opaque(1000 + i as i32)
                    .with_serialize_type(serialize_type),
            ));
        }
        let mut raw = Raw::open(h.addr, &case).await;
        raw.must_send(&bytes).await;
        raw.must_send(&wire(
            &route_request(WITNESS_TOPIC)
                .with_opaque(7)
                .with_serialize_type(serialize_type),
        ))
        .await;
        let resp = raw.response().await;
        assert_eq!(
            (resp.opaque, resp.code),
            (7, 0),
            "{case}: {}",
            summary(&resp)
        );
        // Oneway requests answered by actors finish later: nothing may come of them either.
        raw.expect_silence(Duration::from_millis(300)).await;
        raw.must_send(&wire(
            &route_request(WITNESS_TOPIC)
                .with_opaque(8)
                .with_serialize_type(serialize_type),
        ))
        .await;
        let resp = raw.response().await;
        assert_eq!(
            (resp.opaque, resp.code),
            (8, 0),
            "{case}: {}",
            summary(&resp)
        );
        drop(raw);
        h.check(&case).await;
    }

    let case = "oneway requests are processed: a oneway KV put is readable afterwards";
    let mut raw = Raw::open(h.addr, case).await;
    raw.must_send(&wire(
        &RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
            .with_ext("namespace", "adversarial")
            .with_ext("key", "oneway")
            .with_ext("value", "processed")
            .with_flag(FLAG_ONEWAY),
    ))
    .await;
    raw.expect_silence(Duration::from_millis(200)).await;
    drop(raw);
    let get = RemotingCommand::request(RequestCode::GET_KV_CONFIG)
        .with_ext("namespace", "adversarial")
        .with_ext("key", "oneway");
    let resp = h.before.request(get).await.unwrap();
    assert_eq!(
        (resp.code, resp.ext("value")),
        (0, Some("processed")),
        "{case}"
    );
    h.check(case).await;

    let case = "response frames (flag bit 0) on every code are dropped without a reply";
    let mut raw = Raw::open(h.addr, case).await;
    let mut bytes = Vec::new();
    for (i, code) in RequestCode::NAMESRV_CODES.iter().enumerate() {
        for flag in [FLAG_RESPONSE, FLAG_RESPONSE | FLAG_ONEWAY, -1] {
            bytes.extend(wire(
                &RemotingCommand::request(*code)
                    .with_flag(flag)
                    .with_opaque(i as i32),
            ));
        }
    }
    raw.must_send(&bytes).await;
    raw.expect_silence(Duration::from_millis(300)).await;
    raw.must_send(&wire(&route_request(WITNESS_TOPIC).with_opaque(99)))
        .await;
    let resp = raw.response().await;
    assert_eq!(
        (resp.opaque, resp.code),
        (99, 0),
        "{case}: {}",
        summary(&resp)
    );
    drop(raw);
    h.check(case).await;

    let case = "an unknown flag bit (4) is ignored: the request is answered";
    let header = json_route_header(5, WITNESS_TOPIC).replace(r#""flag":0"#, r#""flag":4"#);
    let resp = h.answers(case, &json_frame(header.as_bytes())).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (5, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn header_length_and_serialize_type_byte() {
    let mut h = Harness::new().await;
    let header = json_route_header(41, WITNESS_TOPIC).into_bytes();
    let n = header.len() as u32;

    let case = "a header length of 0xFFFFFF in a small frame";
    h.closes(case, &frame_word(4 + n, 0x00FF_FFFF, &header))
        .await;
    h.check(case).await;

    let case = "a JSON header length one byte more than the frame holds";
    h.closes(case, &frame_word(4 + n, n + 1, &header)).await;
    h.check(case).await;

    let case = "a ROCKETMQ header length one byte more than the frame holds";
    let binary = binary_header(105, 41, 0, b"", &[(b"topic", WITNESS_TOPIC.as_bytes())]);
    let b = binary.len() as u32;
    h.closes(case, &frame_word(4 + b, 0x0100_0000 | (b + 1), &binary))
        .await;
    h.check(case).await;

    let case = "a header length that cuts the JSON short (the rest would be the body)";
    h.closes(case, &frame_word(4 + n, n - 1, &header)).await;
    h.check(case).await;

    let case = "a header length that takes body bytes into the JSON";
    let mut with_body = header.clone();
    with_body.extend_from_slice(b"xyz");
    h.closes(case, &frame_word(4 + n + 3, n + 3, &with_body))
        .await;
    h.check(case).await;

    let case = "a header length 0 with a body";
    h.closes(case, &frame_word(4 + n, 0, &header)).await;
    h.check(case).await;

    let case = "trailing whitespace inside the header length is accepted";
    let mut padded = header.clone();
    padded.extend_from_slice(b" \n\t\r ");
    let resp = h.answers(case, &json_frame(&padded)).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (41, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "every unknown serialize-type byte (2..=255) on a valid JSON header";
    for type_byte in 2..=255u8 {
        let what = format!("{case}: {type_byte}");
        h.closes(&what, &frame_bytes(type_byte, &header, &[])).await;
    }
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn rocketmq_header_truncated_and_lengths_past_the_end() {
    let mut h = Harness::new().await;
    let topic = WITNESS_TOPIC.as_bytes();
    let full = binary_header(105, 51, 0, b"r", &[(b"k", b"v"), (b"topic", topic)]);
    let resp = h.answers("control", &frame_bytes(1, &full, &[])).await;
    assert_eq!((resp.opaque, resp.code), (51, 0), "control");

    let case = "a ROCKETMQ header cut at every byte (every field boundary included)";
    for cut in 0..full.len() {
        let what = format!("{case}: {cut} of {} bytes", full.len());
        h.closes(&what, &frame_bytes(1, &full[..cut], &[])).await;
    }
    h.check(case).await;

    let case = "a ROCKETMQ header cut short, the rest of its bytes sent as the body";
    for cut in [1, 5, 13, 17, 20, 25] {
        let what = format!("{case}: header of {cut} bytes");
        h.closes(&what, &frame_bytes(1, &full[..cut], &full[cut..]))
            .await;
    }
    h.check(case).await;

    // Offsets of the fixed part: remark length at 13, remark at 17.
    let with_remark_len = |len: i32| {
        let mut header = full.clone();
        header[13..17].copy_from_slice(&len.to_be_bytes());
        header
    };
    let ext_start = 17 + 1;
    let with_ext_len = |len: i32| {
        let mut header = full.clone();
        header[ext_start..ext_start + 4].copy_from_slice(&len.to_be_bytes());
        header
    };
    let ext_len = (full.len() - ext_start - 4) as i32;
    let entry_start = ext_start + 4;
    let with_key_len = |len: i16| {
        let mut header = full.clone();
        header[entry_start..entry_start + 2].copy_from_slice(&len.to_be_bytes());
        header
    };
    let value_len_at = entry_start + 2 + 1;
    let with_value_len = |len: i32| {
        let mut header = full.clone();
        header[value_len_at..value_len_at + 4].copy_from_slice(&len.to_be_bytes());
        header
    };
    let cases: Vec<(String, Vec<u8>)> = vec![
        ("remark length i32::MAX".into(), with_remark_len(i32::MAX)),
        (
            "remark length one past the header".into(),
            with_remark_len((full.len() - 17 + 1) as i32),
        ),
        ("remark length -1".into(), with_remark_len(-1)),
        ("remark length i32::MIN".into(), with_remark_len(i32::MIN)),
        (
            "ext length one past the header".into(),
            with_ext_len(ext_len + 1),
        ),
        ("ext length -1".into(), with_ext_len(-1)),
        ("ext length i32::MIN".into(), with_ext_len(i32::MIN)),
        (
            "ext length shorter than its entries (leftover bytes)".into(),
            with_ext_len(ext_len - 1),
        ),
        ("ext key length -1".into(), with_key_len(-1)),
        ("ext key length i16::MIN".into(), with_key_len(i16::MIN)),
        (
            "ext key length past the ext section".into(),
            with_key_len(ext_len as i16),
        ),
        ("ext value length -1".into(), with_value_len(-1)),
        ("ext value length i32::MAX".into(), with_value_len(i32::MAX)),
        (
            "ext value length past the ext section".into(),
            with_value_len(ext_len),
        ),
        ("a byte left over after the ext section".into(), {
            let mut header = full.clone();
            header.push(0);
            header
        }),
        (
            "an ext section of one byte".into(),
            binary_header_raw(105, 51, 0, b"", &[0]),
        ),
        (
            "an ext entry cut after its key".into(),
            binary_header_raw(105, 51, 0, b"", &[0, 1, b'k']),
        ),
    ];
    for (what, header) in &cases {
        let what = format!("ROCKETMQ header: {what}");
        h.closes(&what, &frame_bytes(1, header, &[])).await;
    }
    h.check("ROCKETMQ header lengths pointing past the end")
        .await;

    let case = "a ROCKETMQ ext key of 32,767 bytes, the longest a 16-bit length holds";
    let long_key = vec![b'k'; i16::MAX as usize];
    let header = binary_header(105, 52, 0, b"", &[(&long_key, b"v"), (b"topic", topic)]);
    let resp = h.answers(case, &frame_bytes(1, &header, &[])).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (52, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "ROCKETMQ empty keys and values are dropped (an empty `topic` does not replace it)";
    let header = binary_header(
        105,
        53,
        0,
        b"",
        &[(b"", b"x"), (b"topic", topic), (b"topic", b""), (b"y", b"")],
    );
    let resp = h.answers(case, &frame_bytes(1, &header, &[])).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (53, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn json_header_numbers_out_of_range() {
    let mut h = Harness::new().await;
    let header_with = |field: &str, value: &str| {
        let mut fields = vec![
            ("code", "105"),
            ("flag", "0"),
            ("language", "\"JAVA\""),
            ("opaque", "61"),
            ("version", "479"),
        ];
        for entry in &mut fields {
            if entry.0 == field {
                entry.1 = value;
            }
        }
        let mut header = String::from("{");
        for (key, value) in fields {
            write!(header, r#""{key}":{value},"#).unwrap();
        }
        write!(header, r#""extFields":{{"topic":"{WITNESS_TOPIC}"}}}}"#).unwrap();
        header.into_bytes()
    };

    let case = "integers beyond 32 bits, fractions and wrong types in code/opaque/flag/version";
    for (field, value) in [
        ("code", "2147483648"),
        ("code", "-2147483649"),
        ("opaque", "4294967296"),
        ("flag", "9223372036854775808"),
        ("version", "18446744073709551616"),
        ("version", "-9223372036854775809"),
        ("code", "105.0"),
        ("opaque", "1e3"),
        ("code", "\"2147483648\""),
        ("opaque", "\"-2147483649\""),
        ("flag", "\"0x10\""),
        ("opaque", "[61]"),
        ("code", "{}"),
        ("opaque", "true"),
    ] {
        let what = format!("{case}: {field}={value}");
        h.closes(&what, &json_frame(&header_with(field, value)))
            .await;
    }
    h.check(case).await;

    let case = "edge values that are valid: answered";
    for (field, value, opaque, code) in [
        ("language", "300", 61, 0),
        ("language", "-1", 61, 0),
        ("language", "\"KLINGON\"", 61, 0),
        ("language", "null", 61, 0),
        ("code", "\"105\"", 61, 0),
        ("opaque", "\" 2147483647 \"", i32::MAX, 0),
        ("opaque", "-2147483648", i32::MIN, 0),
        ("opaque", "null", 0, 0),
        ("version", "2147483647", 61, 0),
        ("version", "-2147483648", 61, 0),
        ("code", "-2147483648", 61, 3),
    ] {
        let what = format!("{case}: {field}={value}");
        let resp = h
            .answers(&what, &json_frame(&header_with(field, value)))
            .await;
        assert_eq!(
            (resp.opaque, resp.code),
            (opaque, code),
            "{what}: {}",
            summary(&resp)
        );
    }
    h.check(case).await;

    let case = "ext values that are huge numbers";
    let header = format!(
        r#"{{"code":105,"opaque":62,"extFields":{{"n":18446744073709551616,"m":-9223372036854775809,"topic":"{WITNESS_TOPIC}"}}}}"#
    );
    let resp = h.answers(case, &json_frame(header.as_bytes())).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (62, 0),
        "{case}: {}",
        summary(&resp)
    );
    let header = format!(
        r#"{{"code":105,"opaque":63,"extFields":{{"n":1e400,"topic":"{WITNESS_TOPIC}"}}}}"#
    );
    if let Some(resp) = h
        .answers_or_closes(case, &json_frame(header.as_bytes()))
        .await
    {
        assert_eq!(
            (resp.opaque, resp.code),
            (63, 0),
            "{case}: {}",
            summary(&resp)
        );
    }
    h.check(case).await;

    let case = "ROCKETMQ opaques at the 32-bit edges are echoed";
    for opaque in [i32::MIN, -1, 0, i32::MAX] {
        let header = binary_header(105, opaque, 0, b"", &[(b"topic", WITNESS_TOPIC.as_bytes())]);
        let resp = h.answers(case, &frame_bytes(1, &header, &[])).await;
        assert_eq!(
            (resp.opaque, resp.code),
            (opaque, 0),
            "{case}: {}",
            summary(&resp)
        );
    }
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn remarks_and_ext_values_of_several_mib() {
    let mut h = Harness::new().await;
    let big = |seed: &str| -> String {
        let mut text = String::with_capacity(4 << 20);
        let mut i = 0u64;
        while text.len() < 4 << 20 {
            write!(text, "{seed}{i:08}").unwrap();
            i += 1;
        }
        text
    };

    let case = "a JSON route query with a 4 MiB remark";
    let remark = big("remark");
    let cmd = route_request(WITNESS_TOPIC).with_opaque(71);
    let cmd = RemotingCommand {
        remark: Some(remark.clone()),
        ..cmd
    };
    let resp = h.answers(case, &wire(&cmd)).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (71, 0),
        "{case}: {}",
        summary(&resp)
    );
    assert_not_logged_whole(case, &remark);
    h.check(case).await;

    let case = "a JSON route query with a 4 MiB remark full of escapes";
    let escaped = format!(
        r#"{{"code":105,"opaque":72,"remark":"{}","extFields":{{"topic":"{WITNESS_TOPIC}"}}}}"#,
        "\\n\\u0041\\\"".repeat(400_000)
    );
    let resp = h.answers(case, &json_frame(escaped.as_bytes())).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (72, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "a JSON route query with a 4 MiB ext value";
    let value = big("extvalue");
    let cmd = route_request(WITNESS_TOPIC)
        .with_ext("bulk", value.clone())
        .with_opaque(73);
    let resp = h.answers(case, &wire(&cmd)).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (73, 0),
        "{case}: {}",
        summary(&resp)
    );
    assert_not_logged_whole(case, &value);
    h.check(case).await;

    let case = "a ROCKETMQ route query with a 4 MiB remark and a 4 MiB ext value";
    let header = binary_header(
        105,
        74,
        0,
        remark.as_bytes(),
        &[
            (b"bulk", value.as_bytes()),
            (b"topic", WITNESS_TOPIC.as_bytes()),
        ],
    );
    let resp = h.answers(case, &frame_bytes(1, &header, &[])).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (74, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn kv_put_of_a_10_mib_value() {
    let mut h = Harness::new().await;
    let case = "PUT_KV_CONFIG with a 10 MiB value (refused: a KV value is at most 64 KiB)";
    let mut value = String::with_capacity(10 << 20);
    let mut i = 0u64;
    while value.len() < 10 << 20 {
        write!(value, "kv-{i:012}|").unwrap();
        i += 1;
    }
    // A header this large is decoded, and the file written, at background priority: on a busy
    // machine that takes longer than the usual timeout.
    let mut conn = Client::connect(&h.addr.to_string(), Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("{case}: connect: {e}"));
    let put = RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
        .with_ext("namespace", "adversarial")
        .with_ext("key", "big")
        .with_ext("value", value.clone());
    let resp = conn.request(put).await.expect("answered");
    assert_eq!(resp.code, 1, "{case}: {}", summary(&resp));
    assert!(
        resp.remark
            .as_deref()
            .is_some_and(|r| r.contains("[LIMIT]") && r.contains("exceeds 65536")),
        "{case}: {}",
        summary(&resp)
    );
    let get = RemotingCommand::request(RequestCode::GET_KV_CONFIG)
        .with_ext("namespace", "adversarial")
        .with_ext("key", "big");
    let resp = conn.request(get).await.expect("answered");
    assert_eq!(resp.code, 22, "{case}: nothing stored: {}", summary(&resp));
    drop(conn);
    h.check(case).await;

    // The log: the capture works (the KV store logs its start), and the value is not in it whole.
    assert!(
        !logs::lines_with("KV store started").is_empty(),
        "{case}: the log capture sees the server"
    );
    assert_not_logged_whole(case, &value);
    h.stop().await;
}

#[actix::test]
async fn topic_names_at_and_over_the_usual_maximum() {
    let mut h = Harness::new().await;
    // Java's TopicValidator allows 127 characters (retry topics of a 255-character group 262);
    // the registry keeps names of up to 1 KiB (docs/limits.md#what-requests-can-store).
    let t127 = "L".repeat(127);
    let t128 = "M".repeat(128);
    let t1k = "K".repeat(1024);
    let t64k = "N".repeat(64 * 1024);

    let case = "a broker registering topics of 127, 128 and 1,024 characters";
    let long = FakeBroker::master("broker-long", 10961, &[t127.as_str(), &t128, &t1k]);
    let mut conn = h.client(case).await;
    let resp = conn.request(long.register()).await.expect("answered");
    assert_eq!(resp.code, 0, "{case}: {}", summary(&resp));
    for topic in [&t127, &t128, &t1k] {
        let resp = h.before.request(route_request(topic)).await.unwrap();
        assert_eq!(resp.code, 0, "{case}: {} characters", topic.len());
        assert!(body_text(&resp).contains("127.0.0.1:10961"), "{case}");
    }
    let case = "a broker registering a topic of 65,536 characters: refused whole";
    let longer = FakeBroker::master("broker-longer", 10962, &[t127.as_str(), &t64k]);
    let resp = conn.request(longer.register()).await.expect("answered");
    assert_eq!(resp.code, 1, "{case}: {}", summary(&resp));
    assert!(
        resp.remark
            .as_deref()
            .is_some_and(|r| r.contains("a topic name of 65536 bytes exceeds 1024")),
        "{case}: {}",
        summary(&resp)
    );
    let resp = h.before.request(route_request(&t64k)).await.unwrap();
    assert_eq!(resp.code, 17, "{case}: not registered");
    drop(conn);
    h.check(case).await;

    let case = "route queries for unknown topics of 128 characters and 1 MiB";
    let t1m = "O".repeat(1 << 20);
    for topic in [&t128.replace('M', "P"), &t1m] {
        let resp = h.request_on_new(case, route_request(topic)).await;
        assert_eq!(resp.code, 17, "{case}: {} characters", topic.len());
    }
    let header = binary_header(105, 81, 0, b"", &[(b"topic", t1m.as_bytes())]);
    let resp = h.answers(case, &frame_bytes(1, &header, &[])).await;
    assert_eq!((resp.opaque, resp.code), (81, 17), "{case}: ROCKETMQ");
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn register_broker_checksums_and_compression_flags() {
    let mut h = Harness::new().await;
    // Every wrong answer is collected, so that one run shows them all.
    let mut failures = Vec::new();
    let broker = FakeBroker::master("broker-crc", 10971, &["CrcA", "CrcB"]);
    let json = broker.body_json();
    let zipped = broker.body().encode_compressed(false);
    let with_ext = |body: Vec<u8>, compressed: bool, key: &str, value: String| {
        let mut ext = broker.header(&body, compressed).to_ext();
        ext.insert(key, value);
        RemotingCommand::request(RequestCode::REGISTER_BROKER)
            .with_version(409)
            .with_ext_fields(ext)
            .with_body(body)
    };

    let case = "bodyCrc32 = -1";
    let cmd = with_ext(json.clone(), false, "bodyCrc32", "-1".into());
    if let Err(failure) = h
        .register_outcome(case, cmd, &broker.addr, "crc32 not match")
        .await
    {
        failures.push(failure);
    }

    let case = "a compressed body with bodyCrc32 one off";
    let crc = body_crc32(&zipped);
    let cmd = with_ext(zipped.clone(), true, "bodyCrc32", (crc ^ 1).to_string());
    if let Err(failure) = h
        .register_outcome(case, cmd, &broker.addr, "crc32 not match")
        .await
    {
        failures.push(failure);
    }

    let case = "a compressed body with the CRC of its inflated bytes";
    let inflated = {
        let mut out = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::ZlibDecoder::new(zipped.as_slice()),
            &mut out,
        )
        .unwrap();
        out
    };
    let cmd = with_ext(
        zipped.clone(),
        true,
        "bodyCrc32",
        body_crc32(&inflated).to_string(),
    );
    if let Err(failure) = h
        .register_outcome(case, cmd, &broker.addr, "crc32 not match")
        .await
    {
        failures.push(failure);
    }

    let case = "compressed=true on a JSON body";
    let cmd = register_with_body(&broker, json.clone(), true, 409);
    if let Err(failure) = h
        .register_outcome(
            case,
            cmd,
            &broker.addr,
            "Failed to decode RegisterBrokerBody",
        )
        .await
    {
        failures.push(failure);
    }

    let case = "compressed=true on a truncated zlib stream";
    let cmd = register_with_body(&broker, zipped[..zipped.len() / 2].to_vec(), true, 409);
    if let Err(failure) = h
        .register_outcome(
            case,
            cmd,
            &broker.addr,
            "Failed to decode RegisterBrokerBody",
        )
        .await
    {
        failures.push(failure);
    }

    let case = "compressed=true on an empty-looking zlib stream (header only)";
    let cmd = register_with_body(&broker, vec![0x78, 0xDA], true, 409);
    if let Err(failure) = h
        .register_outcome(
            case,
            cmd,
            &broker.addr,
            "Failed to decode RegisterBrokerBody",
        )
        .await
    {
        failures.push(failure);
    }

    let case = "a compressed body whose DataVersion part is not JSON";
    let raw = compressed_layout(
        b"not json",
        &[b"CrcA 4 4 6 SINGLE_TAG", b"CrcB 4 4 6 SINGLE_TAG"],
    );
    let cmd = register_with_body(&broker, zlib(&raw), true, 409);
    if let Err(failure) = h
        .register_outcome(
            case,
            cmd,
            &broker.addr,
            "Failed to decode RegisterBrokerBody",
        )
        .await
    {
        failures.push(failure);
    }

    let case = "a zlib body flagged compressed=false";
    let cmd = register_with_body(&broker, zipped.clone(), false, 409);
    if let Err(failure) = h
        .register_outcome(case, cmd, &broker.addr, "bad JSON body")
        .await
    {
        failures.push(failure);
    }

    let case = "a zlib body flagged compressed=\"TRUE \" (false, as Boolean.parseBoolean)";
    let cmd = with_ext(zipped.clone(), false, "compressed", "TRUE ".into());
    if let Err(failure) = h
        .register_outcome(case, cmd, &broker.addr, "bad JSON body")
        .await
    {
        failures.push(failure);
    }

    // An unparsable optional number reads as absent: bodyCrc32 absent means unchecked.
    for (case, value) in [
        (
            "bodyCrc32 that is not a number (unchecked)",
            "abc".to_owned(),
        ),
        (
            "bodyCrc32 beyond 32 bits (unchecked)",
            (i64::from(body_crc32(&json)) + (1 << 31)).to_string(),
        ),
    ] {
        let mut conn = h.client(case).await;
        let cmd = with_ext(json.clone(), false, "bodyCrc32", value);
        let resp = conn.request(cmd).await.expect("answered");
        assert_eq!(resp.code, 0, "{case}: {}", summary(&resp));
        let route = h.before.request(route_request("CrcA")).await.unwrap();
        assert_eq!(route.code, 0, "{case}: registered");
        assert_eq!(
            conn.request(broker.unregister()).await.unwrap().code,
            0,
            "{case}: unregistered"
        );
        drop(conn);
        h.check(case).await;
    }
    h.stop().await;
    assert!(
        failures.is_empty(),
        "{} wrong answers:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[actix::test]
async fn bodies_that_are_json_of_the_wrong_types() {
    let mut h = Harness::new().await;
    let broker = FakeBroker::master("broker-types", 10981, &["TypeA", "TypeB"]);
    // Every wrong answer is collected, so that one run shows them all.
    let mut failures = Vec::new();
    for body in [
        "[]",
        "42",
        r#""text""#,
        "true",
        r#"{"topicConfigSerializeWrapper":[]}"#,
        r#"{"topicConfigSerializeWrapper":{"topicConfigTable":[1,2]}}"#,
        r#"{"topicConfigSerializeWrapper":{"dataVersion":"x"}}"#,
        r#"{"topicConfigSerializeWrapper":{"dataVersion":{"counter":"one"}}}"#,
        r#"{"topicConfigSerializeWrapper":{"topicConfigTable":{"TypeA":{"readQueueNums":"many"}}}}"#,
        r#"{"topicConfigSerializeWrapper":{"topicConfigTable":{"TypeA":{"perm":4294967296}}}}"#,
        r#"{"topicConfigSerializeWrapper":{"topicConfigTable":{"TypeA":[]}}}"#,
        r#"{"filterServerList":{"a":1}}"#,
        r#"{"filterServerList":[1,2]}"#,
    ] {
        let case = format!("REGISTER_BROKER body {body}");
        let cmd = register_with_body(&broker, body.as_bytes().to_vec(), false, 479);
        if let Err(failure) = h
            .register_outcome(&case, cmd, &broker.addr, "bad JSON body")
            .await
        {
            failures.push(failure);
        }
    }

    for body in [
        "[]",
        r#"{"queueDatas":{}}"#,
        r#"{"queueDatas":[{"perm":"rw"}]}"#,
        r#"{"queueDatas":[{"brokerName":7}]}"#,
    ] {
        let case = format!("REGISTER_TOPIC_IN_NAMESRV body {body}");
        let cmd = RemotingCommand::request(RequestCode::REGISTER_TOPIC_IN_NAMESRV)
            .with_ext("topic", "TypeTopic")
            .with_body(body.as_bytes().to_vec());
        let resp = h.request_on_new(&case, cmd).await;
        let remark = resp.remark.as_deref().unwrap_or("");
        if resp.code != 1 || !remark.starts_with("bad TopicRouteData body") {
            failures.push(format!("{case}: answered {}", summary(&resp)));
        }
        h.check(&case).await;
    }

    for body in [
        "[1]",
        r#"{"counter":"one"}"#,
        r#"{"timestamp":1.5}"#,
        r#"{"stateVersion":{}}"#,
    ] {
        let case = format!("QUERY_DATA_VERSION body {body}");
        let cmd = h
            .broker
            .query_data_version(&h.broker.version)
            .with_body(body.as_bytes().to_vec());
        let resp = h.request_on_new(&case, cmd).await;
        let remark = resp.remark.as_deref().unwrap_or("");
        if resp.code != 1 || !remark.starts_with("bad DataVersion body") {
            failures.push(format!("{case}: answered {}", summary(&resp)));
        }
        h.check(&case).await;
    }
    h.stop().await;
    assert!(
        failures.is_empty(),
        "{} wrong answers:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[actix::test]
async fn frames_of_length_0_to_7() {
    let mut h = Harness::new().await;
    let case = "length 0..=7 followed by that many zero bytes";
    for length in 0..=7u32 {
        let mut bytes = length.to_be_bytes().to_vec();
        bytes.resize(4 + length as usize, 0);
        h.closes(&format!("{case}: {length}"), &bytes).await;
    }
    h.check(case).await;

    let case = "length 4 with a ROCKETMQ word and no header";
    h.closes(case, &frame_word(4, 0x0100_0000, &[])).await;
    h.check(case).await;

    let case = "length 5 with a one-byte header `{`";
    h.closes(case, &frame_word(5, 1, b"{")).await;
    h.check(case).await;

    let case = "the smallest valid frames: header `{}` (6), `{}` + 1 body byte (7), `{ }` (7)";
    for bytes in [
        frame_word(6, 2, b"{}"),
        frame_word(7, 2, b"{}x"),
        frame_word(7, 3, b"{ }"),
    ] {
        let resp = h.answers(case, &bytes).await;
        assert_eq!(
            (resp.opaque, resp.code, resp.remark.as_deref()),
            (0, 3, Some(" request type 0 not supported")),
            "{case}: {}",
            summary(&resp)
        );
    }
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn never_completing_frames() {
    // An idle timeout of 1 s closes a stalled connection within this test's patience; the
    // witnesses talk every 300 ms, which keeps them open.
    let mut config = test_config();
    config.server.idle_timeout = Duration::from_secs(1);
    config.tls.handshake_timeout = Duration::from_secs(1);
    let mut h = Harness::start(config).await;

    let stalls: [(&str, Vec<u8>); 4] = [
        ("a frame announcing 100 bytes, 10 sent", {
            let mut bytes = 100u32.to_be_bytes().to_vec();
            bytes.extend_from_slice(&[0, 0, 0, 2, b'{', b'}', 0, 0, 0, 0]);
            bytes
        }),
        ("two bytes of a length field", vec![0, 0]),
        ("a frame announcing 16 MiB - 4, its header word sent", {
            let mut bytes = ((h.max_frame - 4) as u32).to_be_bytes().to_vec();
            bytes.extend_from_slice(&[0, 0, 0, 2]);
            bytes
        }),
        ("a connection that never sends a byte", Vec::new()),
    ];
    for (case, bytes) in stalls {
        let mut raw = Raw::open(h.addr, case).await;
        raw.must_send(&bytes).await;
        h.wait_closed(&mut raw, Duration::from_secs(5)).await;
        drop(raw);
        h.check(case).await;
    }

    let case = "a request answered, then a frame that never completes";
    let mut raw = Raw::open(h.addr, case).await;
    raw.must_send(&wire(&route_request(WITNESS_TOPIC).with_opaque(91)))
        .await;
    raw.must_send(&wire(&route_request(WITNESS_TOPIC).with_opaque(92))[..30])
        .await;
    let resp = raw.response().await;
    assert_eq!((resp.opaque, resp.code), (91, 0), "{case}");
    h.wait_closed(&mut raw, Duration::from_secs(5)).await;
    drop(raw);
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn a_thousand_tiny_frames_in_one_write() {
    for max_in_flight in [None, Some(1)] {
        let mut config = test_config();
        if let Some(limit) = max_in_flight {
            config.server.max_in_flight = limit;
        }
        let mut h = Harness::start(config).await;
        let case = format!("1,000 tiny frames in one write, max_in_flight {max_in_flight:?}");
        let mut bytes = Vec::new();
        for i in 0..1000 {
            match i % 3 {
                // Code 0: not supported.
                0 => bytes.extend(json_frame(format!(r#"{{"opaque":{i}}}"#).as_bytes())),
                // A ROCKETMQ route query without a topic: TOPIC_NOT_EXIST, via the registry.
                1 => bytes.extend(frame_bytes(1, &binary_header(105, i, 0, b"", &[]), &[])),
                _ => bytes.extend(json_frame(
                    format!(
                        r#"{{"code":105,"opaque":{i},"extFields":{{"topic":"{WITNESS_TOPIC}"}}}}"#
                    )
                    .as_bytes(),
                )),
            }
        }
        let mut raw = Raw::open(h.addr, &case).await;
        raw.must_send(&bytes).await;
        let mut seen = vec![false; 1000];
        for _ in 0..1000 {
            let resp = raw.response().await;
            let i = usize::try_from(resp.opaque).expect("an opaque we sent");
            let expected = [3, 17, 0][i % 3];
            assert_eq!(resp.code, expected, "{case}: opaque {i}");
            assert!(!seen[i], "{case}: opaque {i} answered twice");
            seen[i] = true;
        }
        raw.expect_silence(Duration::from_millis(100)).await;
        drop(raw);
        h.check(&case).await;
        h.stop().await;
    }
}

#[actix::test]
async fn half_closed_sockets_still_get_their_answers() {
    let mut h = Harness::new().await;
    let requests: Vec<(&str, RemotingCommand, i32)> = vec![
        ("a cached route query", route_request(WITNESS_TOPIC), 0),
        (
            "a route miss (the registry answers)",
            route_request("NoSuchTopic"),
            17,
        ),
        (
            "a topic list (an actor answers)",
            RemotingCommand::request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
            0,
        ),
        (
            "a KV put (answered once saved)",
            RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
                .with_ext("namespace", "adversarial")
                .with_ext("key", "half-closed")
                .with_ext("value", "v"),
            0,
        ),
        (
            "a broker registration",
            FakeBroker::master("broker-half", 10991, &["HalfA", "HalfB"]).register(),
            0,
        ),
    ];
    // Every lost answer is collected, so that one run shows them all.
    let mut failures = Vec::new();
    for (what, cmd, code) in requests {
        let case = format!("shutdown(Write) right after {what}");
        let mut raw = Raw::open(h.addr, &case).await;
        raw.must_send(&wire(&cmd.with_opaque(101))).await;
        raw.stream.shutdown().await.expect("shutdown");
        match raw.next(STEP).await {
            Next::Frame(resp) if (resp.opaque, resp.code) == (101, code) => {
                raw.expect_closed().await;
            }
            Next::Frame(resp) => failures.push(format!("{case}: answered {}", summary(&resp))),
            Next::Closed => failures.push(format!("{case}: closed without the answer")),
            Next::Silent => failures.push(format!("{case}: neither answered nor closed")),
        }
        drop(raw);
        h.check(&case).await;
    }

    let case = "shutdown(Write) after 20 pipelined requests";
    let mut raw = Raw::open(h.addr, case).await;
    let mut bytes = Vec::new();
    for opaque in 0..20 {
        let cmd = if opaque % 2 == 0 {
            route_request(WITNESS_TOPIC)
        } else {
            RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO)
        };
        bytes.extend(wire(&cmd.with_opaque(opaque)));
    }
    raw.must_send(&bytes).await;
    raw.stream.shutdown().await.expect("shutdown");
    let mut opaques = Vec::new();
    loop {
        match raw.next(STEP).await {
            Next::Frame(resp) => {
                assert_eq!(resp.code, 0, "{case}: {}", summary(&resp));
                opaques.push(resp.opaque);
            }
            Next::Closed => break,
            Next::Silent => panic!("{case}: neither answered nor closed"),
        }
    }
    opaques.sort_unstable();
    if opaques != (0..20).collect::<Vec<_>>() {
        failures.push(format!(
            "{case}: {} of 20 answers before the close: {opaques:?}",
            opaques.len()
        ));
    }
    drop(raw);
    h.check(case).await;
    h.stop().await;
    assert!(
        failures.is_empty(),
        "{} lost answers:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[actix::test]
async fn connections_reset_mid_frame_and_mid_response() {
    let mut h = Harness::new().await;
    let route = wire(&route_request(WITNESS_TOPIC).with_opaque(111));

    let case = "a reset right after connecting";
    let raw = Raw::open(h.addr, case).await;
    raw.stream.set_zero_linger().expect("SO_LINGER 0");
    drop(raw);
    h.check(case).await;

    let case = "a reset in the middle of the length field";
    let mut raw = Raw::open(h.addr, case).await;
    raw.must_send(&route[..2]).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    raw.stream.set_zero_linger().expect("SO_LINGER 0");
    drop(raw);
    h.check(case).await;

    let case = "a reset in the middle of a frame";
    let mut raw = Raw::open(h.addr, case).await;
    raw.must_send(&route[..route.len() / 2]).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    raw.stream.set_zero_linger().expect("SO_LINGER 0");
    drop(raw);
    h.check(case).await;

    let case = "a reset in the middle of a 1 MiB body";
    let mut raw = Raw::open(h.addr, case).await;
    let big = wire(
        &route_request(WITNESS_TOPIC)
            .with_opaque(112)
            .with_body(vec![b'b'; 1 << 20]),
    );
    raw.must_send(&big[..big.len() / 2]).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    raw.stream.set_zero_linger().expect("SO_LINGER 0");
    drop(raw);
    h.check(case).await;

    let case = "a reset while the answers to 200 requests are being written";
    let mut raw = Raw::open(h.addr, case).await;
    let topic = "R".repeat(16 * 1024);
    let mut bytes = Vec::new();
    for opaque in 0..200 {
        bytes.extend(wire(&route_request(&topic).with_opaque(opaque)));
    }
    let _ = raw.send_within(&bytes, STEP).await;
    raw.stream.set_zero_linger().expect("SO_LINGER 0");
    drop(raw);
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn a_peer_that_never_reads_its_answers() {
    let mut h = Harness::new().await;
    let case = "400 requests with 64 KiB answers, none of them read";
    let topic = "S".repeat(64 * 1024);
    let mut bytes = Vec::new();
    for opaque in 0..400 {
        bytes.extend(wire(&route_request(&topic).with_opaque(opaque)));
    }
    let mut raw = Raw::open(h.addr, case).await;
    // The server stops reading once its queue for this peer is full: the write may stall.
    let _ = raw.send_within(&bytes, Duration::from_secs(2)).await;
    h.witnesses_ok(case).await;
    let mut second = Raw::open(h.addr, case).await;
    second
        .must_send(&wire(&route_request(WITNESS_TOPIC).with_opaque(1)))
        .await;
    assert_eq!(second.response().await.code, 0, "{case}: a new connection");
    drop(second);
    drop(raw);
    h.check(case).await;
    h.stop().await;
}
