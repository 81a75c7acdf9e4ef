//! Helpers shared by the fuzz targets in `fuzz_targets/` (see README.md).

use bytes::BytesMut;
use rmq_protocol::code::{LanguageCode, SerializeType};
use rmq_protocol::codec::decode_frame;
use rmq_protocol::header_codec::{self, BINARY_FIXED_LEN};
use rmq_protocol::RemotingCommand;

/// What a command becomes after one trip through our encoder and decoder, where the trip
/// loses nothing the protocol keeps: a language without a name (Java's `null`) is not written
/// in a JSON header and reads back as the default; an `extFields` whose entries were all
/// dropped (zero-length strings) is written as "no ext fields" in a ROCKETMQ header.
pub fn normalized(mut cmd: RemotingCommand) -> RemotingCommand {
    match cmd.serialize_type {
        SerializeType::Json => {
            if cmd.language.name().is_none() {
                cmd.language = LanguageCode::default();
            }
        }
        SerializeType::RocketMq => {
            if cmd.ext_fields.as_ref().is_some_and(|f| f.is_empty()) {
                cmd.ext_fields = None;
            }
        }
    }
    cmd
}

/// A decoded header must encode, and the encoding must decode to the same command.
pub fn assert_header_round_trip(cmd: &RemotingCommand) {
    let mut out = Vec::new();
    header_codec::encode(cmd, &mut out).expect("a decoded header encodes");
    let back = header_codec::decode(cmd.serialize_type, &out)
        .unwrap_or_else(|err| panic!("our own header does not decode: {err}"));
    let mut expected = cmd.clone();
    expected.body = None;
    assert_eq!(normalized(back), normalized(expected), "header round trip");
}

/// A decoded command re-encoded as a whole frame decodes to the same command.
pub fn assert_frame_round_trip(cmd: &RemotingCommand) {
    let mut out = BytesMut::new();
    rmq_protocol::codec::encode_frame(cmd, &mut out).expect("a decoded command encodes");
    let mut frame = out.freeze();
    let _ = frame.split_to(4);
    let back =
        decode_frame(frame).unwrap_or_else(|err| panic!("our own frame does not decode: {err}"));
    assert_eq!(
        normalized(back),
        normalized(cmd.clone()),
        "frame round trip"
    );
}

/// The typed-header targets' input: `key=value` lines (split at the first `=`; a line without
/// one is a key with an empty value), written as the ext fields of a ROCKETMQ header and read
/// back through the header decoder, so the fields are exactly what a request on the wire gives
/// (repeated keys kept, zero-length keys and values dropped as Java drops them).
pub fn command_from_lines(data: &[u8]) -> Option<RemotingCommand> {
    let mut ext = Vec::new();
    for line in data.split(|b| *b == b'\n') {
        let (key, value) = match line.iter().position(|b| *b == b'=') {
            Some(eq) => (&line[..eq], &line[eq + 1..]),
            None => (line, &b""[..]),
        };
        let key_len = i16::try_from(key.len()).ok()?;
        let value_len = i32::try_from(value.len()).ok()?;
        ext.extend_from_slice(&key_len.to_be_bytes());
        ext.extend_from_slice(key);
        ext.extend_from_slice(&value_len.to_be_bytes());
        ext.extend_from_slice(value);
    }
    let mut header = Vec::with_capacity(BINARY_FIXED_LEN + ext.len());
    header.extend_from_slice(&103i16.to_be_bytes()); // code
    header.push(0); // language JAVA
    header.extend_from_slice(&479i16.to_be_bytes()); // version
    header.extend_from_slice(&1i32.to_be_bytes()); // opaque
    header.extend_from_slice(&0i32.to_be_bytes()); // flag
    header.extend_from_slice(&0i32.to_be_bytes()); // remark length
    header.extend_from_slice(&i32::try_from(ext.len()).ok()?.to_be_bytes());
    header.extend_from_slice(&ext);
    // Keys and values that are not UTF-8 are refused by the decoder, as on the wire.
    header_codec::decode(SerializeType::RocketMq, &header).ok()
}
