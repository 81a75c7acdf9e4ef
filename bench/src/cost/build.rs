//! Input builders: linear, outside the timed runs. The text and frame builders are shared with
//! `hostile`, which sends the same shapes to a running server.

use std::io::Write as _;

use rmq_protocol::{header_codec, SerializeType};

use super::case::Input;
use crate::BenchError;

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
pub(super) fn filler() -> impl FnMut(usize, &mut Vec<u8>) {
    unit(b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
}

/// `prefix`, `depth` times `open`, then as many `close`, `suffix`, with `depth` as large as fits.
pub(super) fn nested(target: usize, prefix: &[u8], open: u8, close: u8, suffix: &[u8]) -> Vec<u8> {
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
pub(super) fn ext_header(
    target: usize,
    lead: &str,
    piece: impl FnMut(usize, &mut Vec<u8>),
) -> Vec<u8> {
    let prefix = format!(r#"{{{lead}"extFields":{{"#);
    let suffix = format!("}}{HEADER_TAIL}");
    text(target, prefix.as_bytes(), b",", piece, suffix.as_bytes())
}

/// Starts the scanner on a header: its first field.
pub(super) const SCAN: &str = r#""code":105,"#;
/// Sends a header to the serde path at its first field: a numeric field given as a string,
/// which the scanner leaves to serde and serde accepts (fastjson's leniency).
pub(super) const SERDE: &str = r#""code":"105","#;

/// A ROCKETMQ binary header: fixed part, remark, then ext entries from `entry` while they fit,
/// then `last` (an entry appended as is).
pub(super) fn binary_header(
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

pub(super) fn len32(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

/// One binary ext entry.
pub(super) fn binary_entry(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    out.extend_from_slice(&i16::try_from(key.len()).unwrap_or(i16::MAX).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&len32(value.len()).to_be_bytes());
    out.extend_from_slice(value);
}

pub(super) const DATA_VERSION: &str = r#"{"counter":1,"stateVersion":0,"timestamp":1700000000000}"#;

/// A 5.x RegisterBrokerBody around a topic table made of `topic` pieces, with `detail` as the
/// (ignored) `topicQueueMappingDetailMap` and `info` as `topicQueueMappingInfoMap`.
pub(super) fn register_body(
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
pub(super) fn compressed_input(raw: &[u8], limit: usize) -> Result<Input, BenchError> {
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

/// A JSON header with `ext` (built by [`ext_header`]) as a decoded command: the typed headers'
/// input, its size the header's.
pub(super) fn command_input(header: Vec<u8>, limit: usize) -> Result<Input, BenchError> {
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
pub(super) const REGISTER_FIELDS: &str = r#""brokerName":"broker-a","brokerAddr":"127.0.0.1:10911","clusterName":"DefaultCluster","haServerAddr":"127.0.0.1:10912","brokerId":"0","enableActingMaster":"false","compressed":"false","bodyCrc32":"0""#;

pub(super) fn find_last(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}
