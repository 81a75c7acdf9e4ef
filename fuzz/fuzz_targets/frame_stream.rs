//! The frame codec fed a byte stream, as a connection feeds it: the first byte picks the frame
//! limit and how the rest is cut into reads; the stream is decoded once from one buffer and once
//! read by read, and both must give the same commands and the same error. Every decoded command
//! must encode again and decode to itself.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rmq_fuzz::assert_frame_round_trip;
use rmq_protocol::codec::{RemotingCodec, DEFAULT_MAX_FRAME};
use rmq_protocol::RemotingCommand;
use tokio_util::codec::Decoder;

/// What a connection sees: the commands in order, then the error that closes it, if any.
#[derive(Debug, PartialEq)]
struct Outcome {
    commands: Vec<RemotingCommand>,
    error: Option<String>,
}

fn decode_reads<'a>(max_frame: usize, reads: impl Iterator<Item = &'a [u8]>) -> Outcome {
    let mut codec = RemotingCodec::new(max_frame);
    let mut buf = BytesMut::new();
    let mut commands = Vec::new();
    for read in reads {
        buf.extend_from_slice(read);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(cmd)) => commands.push(cmd),
                Ok(None) => break,
                Err(err) => {
                    return Outcome {
                        commands,
                        error: Some(err.to_string()),
                    }
                }
            }
        }
    }
    Outcome {
        commands,
        error: None,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, stream)) = data.split_first() else {
        return;
    };
    // Mostly the server's limit; sometimes a small one, so that "too large" is reached too.
    let max_frame = if control & 0x80 != 0 {
        64 + usize::from(control & 0x0f) * 64
    } else {
        DEFAULT_MAX_FRAME
    };
    let whole = decode_reads(max_frame, std::iter::once(stream));
    // Reads of 1 to 64 bytes, their sizes from a small generator seeded by the control byte.
    let mut state = u32::from(control) | 0x100;
    let reads = std::iter::from_fn({
        let mut rest = stream;
        move || {
            if rest.is_empty() {
                return None;
            }
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let n = (state as usize % 64 + 1).min(rest.len());
            let (read, tail) = rest.split_at(n);
            rest = tail;
            Some(read)
        }
    });
    let by_reads = decode_reads(max_frame, reads);
    assert_eq!(whole, by_reads, "one buffer and many reads disagree");
    for cmd in &whole.commands {
        assert_frame_round_trip(cmd);
    }
});
