//! The protocol as the load generator speaks it, done cheaply so that the generator takes as
//! little of the machine as possible: requests are written from templates encoded once by
//! `rmq-protocol` (only the `opaque` digits change), replies are scanned for their code and opaque
//! only; the full decoder of `rmq-protocol` is the fallback for anything the scan does not expect.
//!
//! Connections are plain TCP or, with `--tls`, TLS ([`connect_stream`]). The code that runs on
//! them is generic over the stream type, so a plaintext run executes the same monomorphic
//! `TcpStream` code it always did (no per-read branch on the kind of stream).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use rmq_protocol::codec::{decode_frame, encode_frame, DEFAULT_MAX_FRAME};
use rmq_protocol::{RemotingCommand, RequestCode};
use rmq_transport::client::ClientStream;
use rustls::ClientConfig;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::BenchError;

/// The opaque written into a template; its digits are cut out and replaced per request.
const SENTINEL: i32 = 1_234_567_891;

/// A frame encoded once (a request, or the reference server's reply); `encode` writes it with any
/// opaque.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    type_byte: u8,
    /// Header bytes before and after the opaque's digits.
    head: Vec<u8>,
    tail: Vec<u8>,
    body: Bytes,
}

impl RequestTemplate {
    /// A template of `cmd` (JSON header serialization only).
    pub fn new(cmd: &RemotingCommand) -> Result<Self, BenchError> {
        let mut frame = BytesMut::new();
        encode_frame(&cmd.clone().with_opaque(SENTINEL), &mut frame)
            .map_err(|e| BenchError::Protocol(format!("cannot encode request: {e}")))?;
        let word = frame
            .get(4..8)
            .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
            .ok_or_else(|| BenchError::Protocol("encoded frame too short".into()))?;
        let type_byte = (word >> 24) as u8;
        let header_len = (word & 0x00FF_FFFF) as usize;
        if type_byte != 0 {
            return Err(BenchError::Protocol(
                "request templates need the JSON header serialization".into(),
            ));
        }
        let header = frame
            .get(8..8 + header_len)
            .ok_or_else(|| BenchError::Protocol("encoded header out of bounds".into()))?;
        let digits = SENTINEL.to_string();
        let at = find_unique(header, digits.as_bytes()).ok_or_else(|| {
            BenchError::Protocol("the opaque is not found exactly once in the header".into())
        })?;
        Ok(Self {
            type_byte,
            head: header[..at].to_vec(),
            tail: header[at + digits.len()..].to_vec(),
            body: Bytes::copy_from_slice(&frame[8 + header_len..]),
        })
    }

    /// Appends the whole frame with `opaque` to `dst`.
    pub fn encode(&self, opaque: i32, dst: &mut BytesMut) {
        let mut digits = [0u8; 11];
        let digits = decimal(opaque, &mut digits);
        let header_len = self.head.len() + digits.len() + self.tail.len();
        let total = 4 + header_len + self.body.len();
        dst.reserve(4 + total);
        dst.put_i32(i32::try_from(total).unwrap_or(i32::MAX));
        dst.put_u32((u32::from(self.type_byte) << 24) | (header_len as u32 & 0x00FF_FFFF));
        dst.put_slice(&self.head);
        dst.put_slice(digits);
        dst.put_slice(&self.tail);
        dst.put_slice(&self.body);
    }

    /// Bytes of the whole frame with an opaque of `digits` digits.
    pub fn frame_len(&self, digits: usize) -> usize {
        8 + self.head.len() + digits + self.tail.len() + self.body.len()
    }
}

/// `value` in decimal, written at the end of `buf` (11 bytes hold any i32).
fn decimal(value: i32, buf: &mut [u8; 11]) -> &[u8] {
    let mut at = buf.len();
    let mut rest = value.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if value < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

fn find_unique(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let mut found = haystack
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i);
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// A GET_ROUTEINFO_BY_TOPIC request as a Java 5.x client sends it: JSON header, language JAVA,
/// version 479 (V5_3_3), ext field `topic` only.
pub fn route_request(topic: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic)
}

/// What the generator needs of a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    pub code: i32,
    pub opaque: i32,
    pub body_len: usize,
}

/// The size of the frame at the front of `buf` (its length field included) once all of it is
/// there; `Ok(None)` (and room reserved for the rest) while more bytes are needed.
fn whole_frame(buf: &mut BytesMut) -> Result<Option<usize>, BenchError> {
    let Some(len_bytes) = buf.get(..4) else {
        return Ok(None);
    };
    let len = i32::from_be_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]);
    let body_len = usize::try_from(len)
        .ok()
        .filter(|l| *l >= 4 && *l + 4 <= DEFAULT_MAX_FRAME)
        .ok_or_else(|| BenchError::Protocol(format!("bad frame length {len}")))?;
    let total = body_len + 4;
    if buf.len() < total {
        buf.reserve(total - buf.len());
        return Ok(None);
    }
    Ok(Some(total))
}

/// Takes the next whole request off the front of `buf` and returns its opaque (all the reference
/// server needs of it); `Ok(None)` when more bytes are needed.
pub fn next_request_opaque(buf: &mut BytesMut) -> Result<Option<i32>, BenchError> {
    let Some(total) = whole_frame(buf)? else {
        return Ok(None);
    };
    let frame = &buf[4..total];
    let opaque = match scan_opaque(frame) {
        Some(opaque) => opaque,
        None => {
            decode_frame(Bytes::copy_from_slice(frame))
                .map_err(|e| BenchError::Protocol(format!("bad request: {e}")))?
                .opaque
        }
    };
    buf.advance(total);
    Ok(Some(opaque))
}

/// The opaque of a frame (after its length field) without decoding its header.
fn scan_opaque(frame: &[u8]) -> Option<i32> {
    let word = u32::from_be_bytes(frame.get(..4)?.try_into().ok()?);
    let header = frame.get(4..4 + (word & 0x00FF_FFFF) as usize)?;
    match word >> 24 {
        0 => json_int(header, b"\"opaque\":"),
        1 => Some(i32::from_be_bytes(header.get(5..9)?.try_into().ok()?)),
        _ => None,
    }
}

/// Takes the next whole frame off the front of `buf`; `Ok(None)` when more bytes are needed.
pub fn next_reply(buf: &mut BytesMut) -> Result<Option<Reply>, BenchError> {
    let Some(total) = whole_frame(buf)? else {
        return Ok(None);
    };
    let frame = &buf[4..total];
    let reply = match scan(frame) {
        Some(reply) => reply,
        None => {
            let cmd = decode_frame(Bytes::copy_from_slice(frame))
                .map_err(|e| BenchError::Protocol(format!("bad reply: {e}")))?;
            Reply {
                code: cmd.code,
                opaque: cmd.opaque,
                body_len: cmd.body_bytes().len(),
            }
        }
    };
    buf.advance(total);
    Ok(Some(reply))
}

/// Code and opaque from a frame (after its length field) without decoding the whole header.
fn scan(frame: &[u8]) -> Option<Reply> {
    let word = u32::from_be_bytes(frame.get(..4)?.try_into().ok()?);
    let header_len = (word & 0x00FF_FFFF) as usize;
    let header = frame.get(4..4 + header_len)?;
    let body_len = frame.len() - 4 - header_len;
    let (code, opaque) = match word >> 24 {
        0 => (
            json_int(header, b"\"code\":")?,
            json_int(header, b"\"opaque\":")?,
        ),
        1 => (
            i32::from(i16::from_be_bytes(header.get(..2)?.try_into().ok()?)),
            i32::from_be_bytes(header.get(5..9)?.try_into().ok()?),
        ),
        _ => return None,
    };
    Some(Reply {
        code,
        opaque,
        body_len,
    })
}

/// The integer after the first occurrence of `key` (a quoted key and its colon). Both servers
/// write `code` and `opaque` as top-level keys before any nested object of the same name could
/// occur (fastjson and ours sort keys; `extFields` of replies hold no such keys).
fn json_int(header: &[u8], key: &[u8]) -> Option<i32> {
    let at = header.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = header.get(at..)?;
    let end = rest
        .iter()
        .enumerate()
        .position(|(i, b)| !(b.is_ascii_digit() || (i == 0 && *b == b'-')))
        .unwrap_or(rest.len());
    std::str::from_utf8(rest.get(..end)?).ok()?.parse().ok()
}

/// Connects with a bounded wait and sets TCP_NODELAY (as Netty clients do).
pub async fn connect(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, BenchError> {
    let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| BenchError::Timeout(format!("connect to {addr}")))??;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// A plain TCP connection as [`connect`] opens it or, with `tls`, a TLS one (handshake done, as
/// Java's client: SNI-free IP name, any server certificate unless the configuration verifies
/// it); connect and handshake together bounded by `timeout`.
pub async fn connect_stream(
    addr: SocketAddr,
    tls: Option<&Arc<ClientConfig>>,
    timeout: Duration,
) -> Result<ClientStream, BenchError> {
    let Some(config) = tls else {
        return Ok(ClientStream::Plain(connect(addr, timeout).await?));
    };
    let stream = tokio::time::timeout(
        timeout,
        rmq_transport::client::connect(&addr.to_string(), Some(config)),
    )
    .await
    .map_err(|_| BenchError::Timeout(format!("TLS connect to {addr}")))?
    .map_err(|e| BenchError::Protocol(format!("TLS connect to {addr}: {e}")))?;
    Ok(stream)
}

/// What was negotiated on a TLS connection (`null` for plain TCP), for the JSON output.
pub fn tls_json(stream: &ClientStream) -> Value {
    match stream {
        ClientStream::Plain(_) => Value::Null,
        ClientStream::Tls(tls) => {
            let session = tls.get_ref().1;
            json!({
                "protocol": session.protocol_version().map(|v| format!("{v:?}")),
                "cipher_suite": session
                    .negotiated_cipher_suite()
                    .map(|s| format!("{:?}", s.suite())),
            })
        }
    }
}

/// Sends one pre-encoded frame and waits for the reply with `opaque` (replies with other opaques
/// are skipped), at most `timeout`.
pub async fn call<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    frame: &[u8],
    opaque: i32,
    buf: &mut BytesMut,
    timeout: Duration,
) -> Result<Reply, BenchError> {
    let exchange = async {
        stream.write_all(frame).await?;
        // TLS may keep the end of a record buffered; a no-op on TCP.
        stream.flush().await?;
        // Bounded: each round either reads bytes or fails; the timeout ends it.
        loop {
            while let Some(reply) = next_reply(buf)? {
                if reply.opaque == opaque {
                    return Ok(reply);
                }
            }
            if stream.read_buf(buf).await? == 0 {
                return Err(BenchError::Protocol(
                    "the server closed the connection".into(),
                ));
            }
        }
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| BenchError::Timeout(format!("reply to opaque {opaque}")))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_protocol::{ResponseCode, SerializeType};

    #[test]
    fn template_matches_the_codec() {
        let template = RequestTemplate::new(&route_request("TopicTest")).unwrap();
        for opaque in [0, 1, 7, 9, 10, 42, 123_456, i32::MAX, -5, -10, i32::MIN] {
            let mut ours = BytesMut::new();
            template.encode(opaque, &mut ours);
            let mut reference = BytesMut::new();
            encode_frame(
                &route_request("TopicTest").with_opaque(opaque),
                &mut reference,
            )
            .unwrap();
            assert_eq!(ours, reference, "opaque {opaque}");
        }
    }

    #[test]
    fn replies_are_scanned_in_both_serializations() {
        let mut buf = BytesMut::new();
        let json = RemotingCommand::response(ResponseCode::TOPIC_NOT_EXIST, Some("x".into()))
            .answering(77)
            .with_body(&b"abc"[..]);
        encode_frame(&json, &mut buf).unwrap();
        let binary = RemotingCommand::success()
            .answering(-3)
            .with_serialize_type(SerializeType::RocketMq);
        encode_frame(&binary, &mut buf).unwrap();
        let whole = buf.len();
        let mut partial = BytesMut::from(&buf[..whole - 1]);
        assert_eq!(
            next_reply(&mut partial).unwrap(),
            Some(Reply {
                code: 17,
                opaque: 77,
                body_len: 3
            })
        );
        assert_eq!(next_reply(&mut partial).unwrap(), None);
        next_reply(&mut buf).unwrap();
        assert_eq!(
            next_reply(&mut buf).unwrap(),
            Some(Reply {
                code: 0,
                opaque: -3,
                body_len: 0
            })
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn request_opaques_are_found_in_both_serializations() {
        let mut buf = BytesMut::new();
        RequestTemplate::new(&route_request("T"))
            .unwrap()
            .encode(-42, &mut buf);
        let binary = route_request("T")
            .with_opaque(99)
            .with_serialize_type(SerializeType::RocketMq);
        encode_frame(&binary, &mut buf).unwrap();
        let mut partial = BytesMut::from(&buf[..buf.len() - 1]);
        assert_eq!(next_request_opaque(&mut partial).unwrap(), Some(-42));
        assert_eq!(next_request_opaque(&mut partial).unwrap(), None);
        assert_eq!(next_request_opaque(&mut buf).unwrap(), Some(-42));
        assert_eq!(next_request_opaque(&mut buf).unwrap(), Some(99));
        assert!(buf.is_empty());
    }

    #[test]
    fn bad_lengths_are_errors() {
        let mut buf = BytesMut::from(&[0xff, 0xff, 0xff, 0xff, 0, 0][..]);
        assert!(next_reply(&mut buf).is_err());
    }
}
