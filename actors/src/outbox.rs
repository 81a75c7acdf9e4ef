//! The outgoing side of a connection: encoded frames queued as shared byte chunks and written
//! with vectored writes, so a cached route body goes to the socket without being copied and many
//! responses leave in one system call.

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::{Buf, Bytes, BytesMut};
use rmq_protocol::codec::encode_head;
use rmq_protocol::{FrameError, RemotingCommand};

/// Most chunks passed to one vectored write.
pub const MAX_SLICES: usize = 64;

/// Frames waiting to be written: a header chunk and, if any, the shared body chunk per frame.
#[derive(Debug, Default)]
pub struct Outbox {
    chunks: VecDeque<Bytes>,
    queued: usize,
    /// Headers are encoded here and split off; the allocation is reused once written.
    scratch: BytesMut,
}

impl Outbox {
    pub fn new() -> Self {
        Self {
            chunks: VecDeque::with_capacity(16),
            queued: 0,
            scratch: BytesMut::with_capacity(4096),
        }
    }

    /// Queues one frame: its header is encoded, its body shared.
    pub fn push(&mut self, cmd: &RemotingCommand) -> Result<(), FrameError> {
        let body = cmd.body.clone();
        encode_head(cmd, body.as_ref().map_or(0, Bytes::len), &mut self.scratch)?;
        let head = self.scratch.split().freeze();
        self.queued += head.len();
        self.chunks.push_back(head);
        if let Some(body) = body {
            self.queued += body.len();
            self.chunks.push_back(body);
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Bytes waiting to be written.
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Fills `slices` with the first chunks; returns how many.
    pub fn slices<'a>(&'a self, slices: &mut [IoSlice<'a>; MAX_SLICES]) -> usize {
        let mut n = 0;
        for (slot, chunk) in slices.iter_mut().zip(self.chunks.iter()) {
            *slot = IoSlice::new(chunk);
            n += 1;
        }
        n
    }

    /// Drops the first `written` bytes.
    pub fn consume(&mut self, mut written: usize) {
        self.queued = self.queued.saturating_sub(written);
        while written > 0 {
            let Some(front) = self.chunks.front_mut() else {
                return;
            };
            if written >= front.len() {
                written -= front.len();
                self.chunks.pop_front();
            } else {
                front.advance(written);
                written = 0;
            }
        }
    }

    pub fn clear(&mut self) {
        self.chunks.clear();
        self.queued = 0;
    }
}

#[cfg(test)]
mod tests {
    use rmq_protocol::codec::encode_frame;

    use super::*;

    #[test]
    fn frames_are_written_in_order_without_copying_bodies() {
        let body = Bytes::from_static(br#"{"route":1}"#);
        let a = RemotingCommand::success()
            .answering(1)
            .with_body(body.clone());
        let b = RemotingCommand::success().answering(2);
        let mut outbox = Outbox::new();
        outbox.push(&a).unwrap();
        outbox.push(&b).unwrap();
        let mut expected = BytesMut::new();
        encode_frame(&a, &mut expected).unwrap();
        encode_frame(&b, &mut expected).unwrap();
        assert_eq!(outbox.queued(), expected.len());

        {
            let mut slices = [IoSlice::new(&[]); MAX_SLICES];
            let n = outbox.slices(&mut slices);
            assert_eq!(n, 3, "header, shared body, header");
            assert_eq!(
                slices[1].as_ptr(),
                body.as_ptr(),
                "the body is the shared buffer itself"
            );
        }

        // Partial writes of any size reassemble the same bytes.
        let mut written = Vec::new();
        while !outbox.is_empty() {
            let pending: Vec<u8> = {
                let mut slices = [IoSlice::new(&[]); MAX_SLICES];
                let n = outbox.slices(&mut slices);
                slices[..n].iter().flat_map(|s| s.iter().copied()).collect()
            };
            let take = pending.len().min(7);
            written.extend_from_slice(&pending[..take]);
            outbox.consume(take);
        }
        assert_eq!(written, expected.to_vec());
        assert_eq!(outbox.queued(), 0);
    }
}
