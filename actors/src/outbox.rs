//! The outgoing side of a connection: encoded frames queued and written with vectored writes, so
//! many responses leave in one system call. Headers and small bodies are copied into one
//! contiguous buffer (one slice for the kernel to copy from, however many frames); a large body,
//! a cached route of many brokers, is queued as the shared chunk it is, without a copy.

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use rmq_protocol::codec::encode_head;
use rmq_protocol::{FrameError, RemotingCommand};

/// Most chunks passed to one vectored write.
pub const MAX_SLICES: usize = 64;

/// Bodies up to this size are copied behind their header: copying them costs less than one more
/// slice for the kernel to walk.
const COPY_BODY_BYTES: usize = 4096;

/// The buffer headers and small bodies are copied into, taken with the first frame.
const TAIL_BUFFER: usize = 1024;

/// Frames waiting to be written: whole chunks first, then the buffer being filled.
#[derive(Debug, Default)]
pub struct Outbox {
    /// Closed chunks in order: filled buffers and shared large bodies.
    chunks: VecDeque<Bytes>,
    /// Headers and small bodies after the last chunk; its allocation is reused once written.
    tail: BytesMut,
    queued: usize,
}

impl Outbox {
    /// Gives its buffers back when nothing is queued: an idle connection holds none. The next
    /// frame takes a new one.
    pub fn release(&mut self) {
        if self.queued == 0 {
            *self = Outbox::default();
        }
    }

    /// Queues one frame.
    pub fn push(&mut self, cmd: &RemotingCommand) -> Result<(), FrameError> {
        if self.tail.capacity() == 0 {
            self.tail.reserve(TAIL_BUFFER);
        }
        let body = cmd.body.as_ref();
        let body_len = body.map_or(0, Bytes::len);
        let before = self.tail.len();
        encode_head(cmd, body_len, &mut self.tail)?;
        self.queued += self.tail.len() - before;
        if let Some(body) = body {
            if body.len() <= COPY_BODY_BYTES {
                self.tail.put_slice(body);
            } else {
                self.chunks.push_back(self.tail.split().freeze());
                self.chunks.push_back(body.clone());
            }
            self.queued += body.len();
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.queued == 0
    }

    /// Bytes waiting to be written.
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Fills `slices` with the first chunks (the tail last); returns how many.
    pub fn slices<'a>(&'a self, slices: &mut [IoSlice<'a>; MAX_SLICES]) -> usize {
        let pending = self
            .chunks
            .iter()
            .map(|chunk| &chunk[..])
            .chain(std::iter::once(&self.tail[..]))
            .filter(|chunk| !chunk.is_empty());
        let mut n = 0;
        for (slot, chunk) in slices.iter_mut().zip(pending) {
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
                let taken = written.min(self.tail.len());
                self.tail.advance(taken);
                if self.tail.is_empty() {
                    // Written out: the next frames start at the front of the allocation again.
                    self.tail.clear();
                }
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
        self.tail.clear();
        self.queued = 0;
    }
}

#[cfg(test)]
mod tests {
    use rmq_protocol::codec::encode_frame;

    use super::*;

    #[test]
    fn frames_are_written_in_order_large_bodies_without_copying() {
        let small = Bytes::from_static(br#"{"route":1}"#);
        let large = Bytes::from(vec![b'x'; COPY_BODY_BYTES + 1]);
        let frames = [
            RemotingCommand::success()
                .answering(1)
                .with_body(small.clone()),
            RemotingCommand::success().answering(2),
            RemotingCommand::success()
                .answering(3)
                .with_body(large.clone()),
            RemotingCommand::success().answering(4).with_body(small),
        ];
        let mut outbox = Outbox::default();
        let mut expected = BytesMut::new();
        for frame in &frames {
            outbox.push(frame).unwrap();
            encode_frame(frame, &mut expected).unwrap();
        }
        assert_eq!(outbox.queued(), expected.len());

        {
            let mut slices = [IoSlice::new(&[]); MAX_SLICES];
            let n = outbox.slices(&mut slices);
            assert_eq!(
                n, 3,
                "frames 1, 2 and the head of 3 in one slice; the large body; then frame 4"
            );
            assert_eq!(
                slices[1].as_ptr(),
                large.as_ptr(),
                "the large body is the shared buffer itself"
            );
        }

        // Partial writes of any size reassemble the same bytes, and frames queued while some
        // are half written follow them.
        let late = RemotingCommand::success().answering(5);
        encode_frame(&late, &mut expected).unwrap();
        let mut written = Vec::new();
        let mut rounds = 0;
        while !outbox.is_empty() {
            let pending: Vec<u8> = {
                let mut slices = [IoSlice::new(&[]); MAX_SLICES];
                let n = outbox.slices(&mut slices);
                slices[..n].iter().flat_map(|s| s.iter().copied()).collect()
            };
            let take = pending.len().min(997);
            written.extend_from_slice(&pending[..take]);
            outbox.consume(take);
            rounds += 1;
            if rounds == 3 {
                outbox.push(&late).unwrap();
            }
        }
        assert_eq!(written, expected.to_vec());
        assert_eq!(outbox.queued(), 0);
    }
}
