//! Frame codec (docs/protocol.md#frames, #malformed-input): `length` (4) | header-length word
//! (4: serialize type in the high byte, header length in the low 24 bits) | header | body.
//!
//! The decoder checks before it parses: an absurd length is rejected as soon as its 4 bytes are
//! read, so nothing beyond the frame limit is ever buffered. The body is a zero-copy slice of the
//! frame.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::code::SerializeType;
use crate::command::RemotingCommand;
use crate::header_codec::{self, HeaderError};

/// Java's default maximum frame (`com.rocketmq.remoting.frameMaxLength`): 16 MiB including the
/// 4-byte length field.
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

/// Read-buffer capacity a connection keeps between frames; a larger buffer is released.
pub const RETAINED_READ_BUFFER: usize = 64 * 1024;

/// A frame that cannot be decoded. The connection that sent it is closed
/// (docs/protocol.md#malformed-input).
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("frame of {len} bytes exceeds limit {max}")]
    TooLarge { len: usize, max: usize },
    #[error("header of {len} bytes exceeds the 16777215 a frame can carry")]
    HeaderTooLarge { len: usize },
    #[error("frame length {0} is negative or shorter than the header-length word")]
    BadLength(i32),
    #[error("header length {header} exceeds the {available} bytes after the header-length word")]
    HeaderTooLong { header: usize, available: usize },
    #[error("unknown serialize type {0}")]
    SerializeType(u8),
    #[error(transparent)]
    Header(#[from] HeaderError),
    #[error("cannot encode header: {0}")]
    Encode(#[source] HeaderError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// tokio-util codec for [`RemotingCommand`] frames.
#[derive(Debug, Clone)]
pub struct RemotingCodec {
    max_frame: usize,
}

impl Default for RemotingCodec {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME)
    }
}

impl RemotingCodec {
    /// `max_frame` counts the whole frame, the 4-byte length field included.
    pub fn new(max_frame: usize) -> Self {
        Self { max_frame }
    }

    pub fn max_frame(&self) -> usize {
        self.max_frame
    }
}

/// Most buffer reserved ahead of the bytes of a frame that have arrived.
const READ_AHEAD: usize = 64 * 1024;

impl Decoder for RemotingCodec {
    type Item = RemotingCommand;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RemotingCommand>, FrameError> {
        let Some(len_bytes) = src.get(..4) else {
            return Ok(None);
        };
        let len = i32::from_be_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]);
        let body_len = usize::try_from(len)
            .ok()
            .filter(|l| *l >= 4)
            .ok_or(FrameError::BadLength(len))?;
        let total = body_len + 4;
        if total > self.max_frame {
            return Err(FrameError::TooLarge {
                len: total,
                max: self.max_frame,
            });
        }
        if src.len() < total {
            // Room for what is likely to come next, not for the whole declared length: a peer
            // that declares 16 MiB and sends 4 bytes gets a buffer that grows with what it sends.
            src.reserve((total - src.len()).min(READ_AHEAD));
            return Ok(None);
        }
        let mut frame = src.split_to(total).freeze();
        frame.advance(4);
        if src.is_empty() && src.capacity() > RETAINED_READ_BUFFER {
            // After a large frame, let the connection's buffer go with the frame instead of
            // keeping megabytes per connection for its lifetime.
            *src = BytesMut::with_capacity(8 * 1024);
        }
        decode_frame(frame).map(Some)
    }
}

/// Decodes one frame without its leading length field: header-length word, header, body.
pub fn decode_frame(mut frame: Bytes) -> Result<RemotingCommand, FrameError> {
    if frame.len() < 4 {
        return Err(FrameError::BadLength(
            i32::try_from(frame.len()).unwrap_or(i32::MAX),
        ));
    }
    let word = frame.get_u32();
    let type_byte = (word >> 24) as u8;
    let header_len = (word & 0x00FF_FFFF) as usize;
    let serialize_type =
        SerializeType::from_byte(type_byte).ok_or(FrameError::SerializeType(type_byte))?;
    if header_len > frame.len() {
        return Err(FrameError::HeaderTooLong {
            header: header_len,
            available: frame.len(),
        });
    }
    let header_bytes = frame.split_to(header_len);
    let mut cmd = header_codec::decode(serialize_type, &header_bytes)?;
    cmd.body = (!frame.is_empty()).then_some(frame);
    Ok(cmd)
}

/// Writes a frame's length field, header-length word and header into `dst`, for a body of
/// `body_len` bytes that the caller sends next (it may be a shared buffer written without a copy).
pub fn encode_head(
    cmd: &RemotingCommand,
    body_len: usize,
    dst: &mut BytesMut,
) -> Result<(), FrameError> {
    let start = dst.len();
    dst.reserve(8 + 160);
    dst.put_u64(0);
    if let Err(err) = header_codec::encode(cmd, dst) {
        dst.truncate(start);
        return Err(FrameError::Encode(err));
    }
    let header_len = dst.len() - start - 8;
    let too_large = |len| FrameError::TooLarge {
        len,
        max: i32::MAX as usize,
    };
    let word = u32::try_from(header_len)
        .ok()
        .filter(|l| *l <= 0x00FF_FFFF)
        .ok_or(FrameError::HeaderTooLarge { len: header_len })?;
    let total = 4 + header_len + body_len;
    let length = i32::try_from(total).map_err(|_| too_large(total + 4))?;
    dst[start..start + 4].copy_from_slice(&length.to_be_bytes());
    let word = (u32::from(cmd.serialize_type.byte()) << 24) | word;
    dst[start + 4..start + 8].copy_from_slice(&word.to_be_bytes());
    Ok(())
}

/// Encodes a command as one whole frame into `dst`.
pub fn encode_frame(cmd: &RemotingCommand, dst: &mut BytesMut) -> Result<(), FrameError> {
    let body = cmd.body_bytes();
    encode_head(cmd, body.len(), dst)?;
    dst.put_slice(body);
    Ok(())
}

impl Encoder<RemotingCommand> for RemotingCodec {
    type Error = FrameError;

    fn encode(&mut self, cmd: RemotingCommand, dst: &mut BytesMut) -> Result<(), FrameError> {
        encode_frame(&cmd, dst)
    }
}

impl Encoder<&RemotingCommand> for RemotingCodec {
    type Error = FrameError;

    fn encode(&mut self, cmd: &RemotingCommand, dst: &mut BytesMut) -> Result<(), FrameError> {
        encode_frame(cmd, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::RequestCode;

    fn decode_all(bytes: &[u8]) -> Result<Option<RemotingCommand>, FrameError> {
        let mut buf = BytesMut::from(bytes);
        RemotingCodec::default().decode(&mut buf)
    }

    #[test]
    fn partial_frames_need_more_bytes() {
        let cmd = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
            .with_ext("topic", "T")
            .with_body(&b"xyz"[..]);
        let mut full = BytesMut::new();
        encode_frame(&cmd, &mut full).unwrap();
        for cut in 0..full.len() {
            assert!(decode_all(&full[..cut]).unwrap().is_none(), "cut {cut}");
        }
        let back = decode_all(&full).unwrap().unwrap();
        assert_eq!(back, cmd);
    }

    #[test]
    fn two_frames_in_one_buffer() {
        let a = RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO).with_opaque(1);
        let b = RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO)
            .with_opaque(2)
            .with_serialize_type(SerializeType::RocketMq);
        let mut buf = BytesMut::new();
        encode_frame(&a, &mut buf).unwrap();
        encode_frame(&b, &mut buf).unwrap();
        let mut codec = RemotingCodec::default();
        assert_eq!(codec.decode(&mut buf).unwrap().unwrap().opaque, 1);
        assert_eq!(codec.decode(&mut buf).unwrap().unwrap().opaque, 2);
        assert!(codec.decode(&mut buf).unwrap().is_none());
    }

    #[test]
    fn large_read_buffers_are_released() {
        let cmd =
            RemotingCommand::request(RequestCode::REGISTER_BROKER).with_body(vec![b'x'; 1 << 20]);
        let mut buf = BytesMut::new();
        encode_frame(&cmd, &mut buf).unwrap();
        let mut codec = RemotingCodec::default();
        assert!(codec.decode(&mut buf).unwrap().is_some());
        assert!(buf.capacity() <= RETAINED_READ_BUFFER);
    }

    #[test]
    fn oversize_is_rejected_before_buffering() {
        let mut codec = RemotingCodec::new(1024);
        let mut buf = BytesMut::from(&[0u8, 0, 4, 0][..]);
        assert!(matches!(
            codec.decode(&mut buf),
            Err(FrameError::TooLarge {
                len: 1028,
                max: 1024
            })
        ));
        // Exactly at the limit is fine (and needs more bytes).
        let mut buf = BytesMut::from(&[0u8, 0, 3, 252][..]);
        assert!(codec.decode(&mut buf).unwrap().is_none());
    }
}
