//! Frame builders: commands as our encoder writes them, frames with any length fields, JSON
//! and ROCKETMQ headers from their parts, registration bodies plain and compressed (zlib bombs
//! included); and what a case asserts of an answer.

use bytes::BytesMut;
use rmq_namesrv::protocol::codec::encode_frame;
use rmq_namesrv::protocol::custom_headers::CommandHeader;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;

/// Invalid UTF-8: a lone continuation byte, an overlong `/`, an encoded surrogate, a truncated
/// three-byte sequence.
pub(crate) const BAD_UTF8: [&[u8]; 4] = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82"];

/// Asserts that `resp` is a SYSTEM_ERROR whose remark starts with `prefix`.
pub(crate) fn assert_refused(case: &str, resp: &RemotingCommand, prefix: &str) {
    assert_eq!(resp.code, 1, "{case}: {}", summary(resp));
    assert!(
        resp.remark.as_deref().unwrap_or("").starts_with(prefix),
        "{case}: {}",
        summary(resp)
    );
}

pub(crate) fn summary(cmd: &RemotingCommand) -> String {
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
pub(crate) fn wire(cmd: &RemotingCommand) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode_frame(cmd, &mut out).expect("encodes");
    out.to_vec()
}

/// A frame with an explicit length field and header-length word, followed by `rest`.
pub(crate) fn frame_word(length: u32, word: u32, rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + rest.len());
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(&word.to_be_bytes());
    out.extend_from_slice(rest);
    out
}

/// A well-framed frame: serialize-type byte, header, body; the lengths as they should be.
pub(crate) fn frame_bytes(type_byte: u8, header: &[u8], body: &[u8]) -> Vec<u8> {
    assert!(header.len() <= 0xFF_FFFF, "the header length has 24 bits");
    let length = (4 + header.len() + body.len()) as u32;
    let word = (u32::from(type_byte) << 24) | header.len() as u32;
    let mut out = frame_word(length, word, header);
    out.extend_from_slice(body);
    out
}

pub(crate) fn json_frame(header: &[u8]) -> Vec<u8> {
    frame_bytes(0, header, &[])
}

/// The JSON header of a route query, as a Java client writes it.
pub(crate) fn json_route_header(opaque: i32, topic: &str) -> String {
    format!(
        r#"{{"code":105,"extFields":{{"topic":"{topic}"}},"flag":0,"language":"JAVA","opaque":{opaque},"serializeTypeCurrentRPC":"JSON","version":479}}"#
    )
}

/// One ROCKETMQ ext entry: key length (16 bits), key, value length (32 bits), value.
pub(crate) fn ext_entry(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(6 + key.len() + value.len());
    out.extend_from_slice(&(key.len() as i16).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&(value.len() as i32).to_be_bytes());
    out.extend_from_slice(value);
    out
}

/// A ROCKETMQ header from its parts: `ext` is the already encoded entry section.
pub(crate) fn binary_header_raw(
    code: i16,
    opaque: i32,
    flag: i32,
    remark: &[u8],
    ext: &[u8],
) -> Vec<u8> {
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

pub(crate) fn binary_header(
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
pub(crate) fn splice(text: &str, bad: &[u8]) -> Vec<u8> {
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
pub(crate) fn nested(depth: usize, open: &str, inner: &str, close: &str) -> String {
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
pub(crate) fn register_with_body(
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

pub(crate) fn zlib(raw: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(raw).expect("deflate");
    z.finish().expect("deflate")
}

/// The inflated compressed-registration layout: DataVersion JSON, topic texts, filter servers.
pub(crate) fn compressed_layout(data_version: &[u8], topics: &[&[u8]]) -> Vec<u8> {
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
pub(crate) fn zlib_zeros(n: usize) -> Vec<u8> {
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
