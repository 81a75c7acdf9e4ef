//! A case: a decoder and an input shape, and the input it is given.

use rmq_protocol::RemotingCommand;

use crate::BenchError;

/// One input of a case.
pub(super) struct Input {
    /// What the decoder reads (for the compressed body: the zlib bytes).
    pub(super) data: Vec<u8>,
    /// The size on the case's axis: `data.len()`, or the inflated size of a compressed body.
    pub(super) size: usize,
    /// A decoded command, for the typed headers (read from `data`, not timed).
    pub(super) cmd: Option<RemotingCommand>,
    /// The decoder's limit: the frame limit, or the inflation limit.
    pub(super) limit: usize,
}

impl Input {
    pub(super) fn plain(data: Vec<u8>, limit: usize) -> Self {
        Self {
            size: data.len(),
            data,
            cmd: None,
            limit,
        }
    }
}

/// Accepted, or refused with the decoder's error.
pub(super) type Outcome = Result<(), String>;

pub(super) type Build = Box<dyn Fn(usize, usize) -> Result<Input, BenchError>>;
pub(super) type Decode = fn(&Input) -> Outcome;

/// A decoder and an input shape: `build(target, limit)` makes an input of at most `target` bytes
/// (on the case's axis) for a decoder whose limit is `limit`.
pub(super) struct Case {
    pub(super) decoder: &'static str,
    pub(super) shape: &'static str,
    pub(super) build: Build,
    pub(super) decode: Decode,
}

pub(super) fn case(
    decoder: &'static str,
    shape: &'static str,
    decode: Decode,
    build: impl Fn(usize, usize) -> Result<Input, BenchError> + 'static,
) -> Case {
    Case {
        decoder,
        shape,
        build: Box::new(build),
        decode,
    }
}

/// A case whose input is one text built by [`text`](super::build::text).
pub(super) fn text_case(
    decoder: &'static str,
    shape: &'static str,
    decode: Decode,
    build: impl Fn(usize) -> Vec<u8> + 'static,
) -> Case {
    case(decoder, shape, decode, move |target, limit| {
        Ok(Input::plain(build(target), limit))
    })
}

pub(super) fn error_text(e: impl std::fmt::Display) -> String {
    let mut text = e.to_string();
    if text.len() > 80 {
        let mut cut = 80;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}
