//! Raw connections: a plain TCP connection that writes arbitrary bytes and reads whole frames
//! back, with the waits every case allows.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use rmq_namesrv::protocol::codec::decode_frame;
use rmq_namesrv::protocol::command::FLAG_RESPONSE;
use rmq_namesrv::protocol::RemotingCommand;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::frames::summary;

/// Longest wait of one step: a read, a close, a write.
pub(crate) const STEP: Duration = Duration::from_secs(3);
/// Writes of megabytes get this long.
pub(crate) const BIG_STEP: Duration = Duration::from_secs(10);

/// What a read on a raw connection found.
pub(crate) enum Next {
    Frame(RemotingCommand),
    /// EOF or a reset.
    Closed,
    /// Nothing within the time given.
    Silent,
}

/// A plain TCP connection for writing arbitrary bytes and reading whole frames back.
pub(crate) struct Raw {
    pub(crate) stream: TcpStream,
    pub(crate) buf: BytesMut,
    pub(crate) case: String,
}

impl Raw {
    pub(crate) async fn open(addr: SocketAddr, case: &str) -> Self {
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
    pub(crate) async fn send_within(&mut self, bytes: &[u8], limit: Duration) -> bool {
        matches!(
            tokio::time::timeout(limit, self.stream.write_all(bytes)).await,
            Ok(Ok(()))
        )
    }

    /// Writes bytes the server has no reason to refuse.
    pub(crate) async fn must_send(&mut self, bytes: &[u8]) {
        assert!(
            self.send_within(bytes, BIG_STEP).await,
            "{}: the server did not take {} bytes",
            self.case,
            bytes.len()
        );
    }

    pub(crate) async fn next(&mut self, limit: Duration) -> Next {
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
    pub(crate) async fn response(&mut self) -> RemotingCommand {
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
    pub(crate) async fn expect_closed(&mut self) {
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
    pub(crate) async fn expect_silence(&mut self, limit: Duration) {
        match self.next(limit).await {
            Next::Silent => {}
            Next::Frame(cmd) => panic!("{}: unexpected frame: {}", self.case, summary(&cmd)),
            Next::Closed => panic!("{}: closed by the server", self.case),
        }
    }

    pub(crate) async fn answer_or_close(&mut self) -> Option<RemotingCommand> {
        match self.next(STEP).await {
            Next::Frame(cmd) => Some(cmd),
            Next::Closed => None,
            Next::Silent => panic!("{}: neither answered nor closed within {STEP:?}", self.case),
        }
    }
}
