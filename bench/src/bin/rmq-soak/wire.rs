//! A raw connection for the victim brokers: requests and replies framed by `rmq-protocol`, plus
//! what no well-behaved client does — stop in the middle of a frame and drop the connection,
//! with a FIN or a reset.

use std::time::Duration;

use bytes::{Buf, BytesMut};
use rmq_protocol::codec::{decode_frame, encode_frame, DEFAULT_MAX_FRAME};
use rmq_protocol::RemotingCommand;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Why a request got no answer.
#[derive(Debug)]
pub enum CallError {
    /// Connect, read or write failed, or the server closed the connection.
    Transport(String),
    /// No answer in time: slow, not (yet) lost.
    Timeout,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport(why) => f.write_str(why),
            Self::Timeout => f.write_str("timed out"),
        }
    }
}

/// Where a frame is cut when a connection is killed mid-frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Inside the 4-byte length field.
    Length,
    /// Inside the header-length word or the header.
    Header,
    /// Inside the body.
    Body,
}

impl Cut {
    pub const ALL: [Cut; 3] = [Cut::Length, Cut::Header, Cut::Body];

    pub fn name(self) -> &'static str {
        match self {
            Cut::Length => "length field",
            Cut::Header => "header",
            Cut::Body => "body",
        }
    }

    /// How many bytes of `frame` (a whole encoded frame) to send so that it stops inside this
    /// part; `pick` chooses among the possible offsets (it is given their count).
    pub fn offset(self, frame: &[u8], pick: impl FnOnce(usize) -> usize) -> usize {
        let header_len = frame.get(4..8).map_or(0, |w| {
            (u32::from_be_bytes([w[0], w[1], w[2], w[3]]) & 0x00FF_FFFF) as usize
        });
        let body_start = (8 + header_len).min(frame.len());
        // Each range is non-empty for any frame with a header and a body; a degenerate frame
        // falls back to one byte.
        let (low, high) = match self {
            Cut::Length => (1, 3),
            Cut::Header => (4, body_start.saturating_sub(1)),
            Cut::Body => (body_start + 1, frame.len().saturating_sub(1)),
        };
        if high < low {
            return 1;
        }
        low + pick(high - low + 1).min(high - low)
    }
}

/// One connection, one request at a time.
pub struct RawConn {
    stream: TcpStream,
    buf: BytesMut,
    next_opaque: i32,
}

impl RawConn {
    pub async fn connect(addr: &str, timeout: Duration) -> Result<Self, CallError> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| CallError::Timeout)?
            .map_err(|e| CallError::Transport(format!("connect to {addr}: {e}")))?;
        let _ = stream.set_nodelay(true);
        Ok(Self {
            stream,
            buf: BytesMut::with_capacity(4096),
            next_opaque: 1,
        })
    }

    fn encode(&mut self, cmd: RemotingCommand) -> Result<(i32, BytesMut), CallError> {
        let opaque = self.next_opaque;
        self.next_opaque = self.next_opaque.wrapping_add(1);
        let mut frame = BytesMut::new();
        encode_frame(&cmd.with_opaque(opaque), &mut frame)
            .map_err(|e| CallError::Transport(format!("cannot encode: {e}")))?;
        Ok((opaque, frame))
    }

    /// Sends `cmd` and waits for its reply, at most `timeout`.
    pub async fn call(
        &mut self,
        cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, CallError> {
        let (opaque, frame) = self.encode(cmd)?;
        let exchange = async {
            self.stream
                .write_all(&frame)
                .await
                .map_err(|e| CallError::Transport(format!("write: {e}")))?;
            // Bounded by the timeout around it: each round reads bytes or fails.
            loop {
                while let Some(reply) = self.next_frame()? {
                    if reply.is_response() && reply.opaque == opaque {
                        return Ok(reply);
                    }
                }
                let n = self
                    .stream
                    .read_buf(&mut self.buf)
                    .await
                    .map_err(|e| CallError::Transport(format!("read: {e}")))?;
                if n == 0 {
                    return Err(CallError::Transport("closed by the server".into()));
                }
            }
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| CallError::Timeout)?
    }

    fn next_frame(&mut self) -> Result<Option<RemotingCommand>, CallError> {
        let Some(len) = self.buf.get(..4) else {
            return Ok(None);
        };
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        let len = usize::try_from(len)
            .ok()
            .filter(|l| *l >= 4 && *l + 4 <= DEFAULT_MAX_FRAME)
            .ok_or_else(|| CallError::Transport(format!("bad frame length {len}")))?;
        if self.buf.len() < 4 + len {
            return Ok(None);
        }
        self.buf.advance(4);
        let frame = self.buf.split_to(len).freeze();
        decode_frame(frame)
            .map(Some)
            .map_err(|e| CallError::Transport(format!("bad reply: {e}")))
    }

    /// Writes the first bytes of `cmd`'s frame, cut inside `cut` (`pick` chooses the offset
    /// among the possible ones), and returns how many bytes went out of how many.
    pub async fn send_partial(
        &mut self,
        cmd: RemotingCommand,
        cut: Cut,
        pick: impl FnOnce(usize) -> usize,
    ) -> Result<(usize, usize), CallError> {
        let (_, frame) = self.encode(cmd)?;
        let sent = cut.offset(&frame, pick);
        let part = frame.get(..sent).unwrap_or_default();
        self.stream
            .write_all(part)
            .await
            .map_err(|e| CallError::Transport(format!("write: {e}")))?;
        Ok((sent, frame.len()))
    }

    /// Drops the connection: with `reset`, an RST (SO_LINGER 0), otherwise a FIN.
    pub fn kill(self, reset: bool) {
        if reset {
            let _ = self.stream.set_zero_linger();
        }
        drop(self.stream);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_tools::broker::FakeBroker;

    #[test]
    fn cuts_land_inside_their_part() {
        let broker = FakeBroker::master("b", 10911, &["T"]);
        let mut frame = BytesMut::new();
        encode_frame(&broker.register(), &mut frame).unwrap();
        let header_len =
            (u32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]) & 0x00FF_FFFF) as usize;
        let body_start = 8 + header_len;
        for pick in [0usize, 1, 7, 10_000] {
            let at = Cut::Length.offset(&frame, |n| pick % n);
            assert!((1..4).contains(&at), "{at}");
            let at = Cut::Header.offset(&frame, |n| pick % n);
            assert!((4..body_start).contains(&at), "{at}");
            let at = Cut::Body.offset(&frame, |n| pick % n);
            assert!(at > body_start && at < frame.len(), "{at}");
        }
    }
}
