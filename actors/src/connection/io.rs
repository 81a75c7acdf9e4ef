//! The connection's two I/O futures: reading and decoding frames, and writing the outbox.
//! Both run inside the connection actor, with direct access to its socket and buffers.

use super::*;

/// Frames whose header is at least this long are decoded off the connection's thread.
const OFFLOAD_HEADER_BYTES: usize = 256 * 1024;

/// The next frame, when it is complete, within the frame limit and its header at least
/// [`OFFLOAD_HEADER_BYTES`]: taken out of `inbox` without its length field. Anything else is
/// left to the codec (which also refuses what is malformed).
fn take_large_header_frame(inbox: &mut BytesMut, max_frame: usize) -> Option<bytes::Bytes> {
    let head: [u8; 8] = inbox.get(..8)?.try_into().ok()?;
    let len = usize::try_from(i32::from_be_bytes([head[0], head[1], head[2], head[3]])).ok()?;
    let header_len =
        (u32::from_be_bytes([head[4], head[5], head[6], head[7]]) & 0x00FF_FFFF) as usize;
    if header_len < OFFLOAD_HEADER_BYTES
        || len < 4 + header_len
        || 4 + len > max_frame
        || inbox.len() < 4 + len
    {
        return None;
    }
    let mut frame = inbox.split_to(4 + len).freeze();
    bytes::Buf::advance(&mut frame, 4);
    Some(frame)
}

/// Reads and decodes frames for as long as the connection lives, as an actor future: it runs
/// inside the connection actor, with direct access to its socket and buffer. It pauses while
/// [`Connection::read_paused`] (backpressure), leaving its waker for whatever ends the pause.
pub(super) struct ReadFrames;

impl ActorFuture<Connection> for ReadFrames {
    type Output = ();

    fn poll(
        self: Pin<&mut Self>,
        act: &mut Connection,
        ctx: &mut Context<Connection>,
        task: &mut std::task::Context<'_>,
    ) -> Poll<()> {
        // Requests answered at once while decoding are timed together when decoding stops.
        let outcome = read_frames(act, ctx, task);
        act.settle_metrics();
        outcome
    }
}

/// The body of [`ReadFrames`]: decodes what is buffered, reads more, until it must wait.
fn read_frames(
    act: &mut Connection,
    ctx: &mut Context<Connection>,
    task: &mut std::task::Context<'_>,
) -> Poll<()> {
    loop {
        if ctx.state().stopping() {
            return Poll::Ready(());
        }
        if ctx.waiting() {
            return Poll::Pending;
        }
        if act.read_paused() {
            act.read_waker = Some(task.waker().clone());
            return Poll::Pending;
        }
        if let Some(frame) =
            take_large_header_frame(&mut act.inbox, act.share.settings.max_frame_bytes)
        {
            // Decoding a header of megabytes takes milliseconds: off this thread, while
            // this connection reads nothing more (its requests stay in order).
            act.partial_since = None;
            let decoding =
                crate::background::spawn_cpu(move || rmq_protocol::codec::decode_frame(frame));
            ctx.wait(decoding.into_actor(act).map(|decoded, act, ctx| {
                let item = decoded.unwrap_or_else(|err| {
                    Err(FrameError::Io(std::io::Error::other(format!(
                        "header decoding failed: {err}"
                    ))))
                });
                act.on_frame(item, ctx);
            }));
            return Poll::Pending;
        }
        match act.codec.decode(&mut act.inbox) {
            Ok(Some(cmd)) => {
                act.partial_since = None;
                act.on_frame(Ok(cmd), ctx);
                continue;
            }
            Ok(None) => {
                if !act.inbox.is_empty() && act.partial_since.is_none() {
                    act.partial_since = Some(Instant::now());
                }
            }
            Err(err) => {
                act.on_frame(Err(err), ctx);
                return Poll::Ready(());
            }
        }
        match act.poll_fill(task) {
            Poll::Pending => {
                // Nothing more for now: a buffer with no frame in it goes back.
                // (Even one of no capacity: it may still share the allocation of the frames
                // split from it.)
                if act.inbox.is_empty() {
                    act.inbox = BytesMut::new();
                }
                return Poll::Pending;
            }
            Poll::Ready(Ok(0)) => {
                act.read_ended(ctx);
                return Poll::Ready(());
            }
            Poll::Ready(Ok(_)) => {
                // One clock read per read, not per frame.
                act.read_at = Instant::now();
            }
            Poll::Ready(Err(err)) => {
                act.on_frame(Err(FrameError::Io(err)), ctx);
                return Poll::Ready(());
            }
        }
    }
}

/// Writes the outbox with vectored writes until it is empty, as an actor future: it runs inside
/// the connection actor, with direct access to its socket and outbox. A peer that takes nothing
/// for `server.write_timeout` is closed, its queued bytes dropped.
pub(super) struct Flush {
    /// Armed while the socket is full: fires at the connection's stall deadline.
    stall: Option<(Instant, Pin<Box<Sleep>>)>,
}

impl Flush {
    pub(super) fn new() -> Self {
        Flush { stall: None }
    }
}

impl ActorFuture<Connection> for Flush {
    type Output = ();

    fn poll(
        self: Pin<&mut Self>,
        act: &mut Connection,
        ctx: &mut Context<Connection>,
        task: &mut std::task::Context<'_>,
    ) -> Poll<()> {
        let this = self.get_mut();
        loop {
            while !act.outbox.is_empty() {
                let mut slices = [IoSlice::new(&[]); MAX_SLICES];
                let n = act.outbox.slices(&mut slices);
                match Pin::new(&mut act.write).poll_write_vectored(task, &slices[..n]) {
                    Poll::Ready(Ok(0)) => {
                        debug!(parent: &act.span, "peer stopped reading, closing");
                        return act.abandon(ctx);
                    }
                    Poll::Ready(Ok(written)) => {
                        act.outbox.consume(written);
                        act.written = act.written.wrapping_add(written as u64);
                        act.charge();
                        act.maybe_resume();
                    }
                    Poll::Ready(Err(err)) => {
                        debug!(parent: &act.span, error = %err, "write failed, closing");
                        return act.abandon(ctx);
                    }
                    Poll::Pending => return this.stalled(act, ctx, task),
                }
            }
            // A TLS stream may still hold records; a TCP stream answers at once.
            match Pin::new(&mut act.write).poll_flush(task) {
                Poll::Ready(Ok(())) if act.outbox.is_empty() => break,
                Poll::Ready(Ok(())) => continue,
                Poll::Ready(Err(err)) => {
                    debug!(parent: &act.span, error = %err, "flush failed, closing");
                    return act.abandon(ctx);
                }
                Poll::Pending => return this.stalled(act, ctx, task),
            }
        }
        act.flushing = false;
        // Everything written: the write buffer goes back until the next answer.
        act.outbox.release();
        Poll::Ready(())
    }
}

impl Flush {
    /// The socket takes no more for now: arm (or re-arm, after progress) the write timeout.
    fn stalled(
        &mut self,
        act: &mut Connection,
        ctx: &mut Context<Connection>,
        task: &mut std::task::Context<'_>,
    ) -> Poll<()> {
        let Some(timeout) = act.share.settings.write_timeout() else {
            return Poll::Pending;
        };
        // The deadline belongs to the connection: every Flush (one per answer queued while the
        // socket is full) waits for the same one, and only bytes leaving move it.
        let deadline = match act.stall {
            Some((written, since)) if written == act.written => since + timeout,
            _ => {
                let now = Instant::now();
                act.stall = Some((act.written, now));
                now + timeout
            }
        };
        if Instant::now() >= deadline {
            act.refused(
                Limit::WriteTimeout,
                format!(
                    "peer took none of its {} queued bytes for {timeout:?}; closing",
                    act.outbox.queued()
                ),
            );
            return act.abandon(ctx);
        }
        let sleep = match &mut self.stall {
            Some((at, sleep)) if *at == deadline => sleep,
            _ => {
                let sleep = Box::pin(tokio::time::sleep_until(deadline.into()));
                &mut self.stall.insert((deadline, sleep)).1
            }
        };
        // Registers the timer with this task.
        if sleep.as_mut().poll(task).is_ready() {
            task.waker().wake_by_ref();
        }
        Poll::Pending
    }
}

impl Connection {
    /// Gives up writing: drops what is queued (its budget given back) and stops.
    pub(super) fn abandon(&mut self, ctx: &mut Context<Self>) -> Poll<()> {
        self.outbox.clear();
        self.charge();
        self.flushing = false;
        ctx.stop();
        Poll::Ready(())
    }
}
