//! The two header serializations (docs/protocol.md#json-header, #rocketmq-header): JSON (type 0)
//! and the binary ROCKETMQ form (type 1). Decoding is as lenient as the Java server; encoding is
//! exactly what Java writes.
//!
//! `json_in` reads a JSON header (the fast scanner first, serde for every other shape) with the
//! lenient field readers of `json_lenient`; `json_out` writes one; `binary` reads and writes the
//! ROCKETMQ form.

mod binary;
mod error;
mod json_in;
mod json_lenient;
mod json_out;

use bytes::BufMut;

use crate::code::SerializeType;
use crate::command::RemotingCommand;

pub use binary::BINARY_FIXED_LEN;
pub use error::HeaderError;
pub use json_in::json_paths;
pub use json_lenient::MAX_HEADER_WITH_NESTED;

/// Decodes a header of the given serialize type into a command without a body.
pub fn decode(serialize_type: SerializeType, bytes: &[u8]) -> Result<RemotingCommand, HeaderError> {
    match serialize_type {
        SerializeType::Json => json_in::decode_json(bytes),
        SerializeType::RocketMq => binary::decode_binary(bytes),
    }
}

/// Appends the header of `cmd` in its serialize type.
pub fn encode<B: BufMut>(cmd: &RemotingCommand, out: &mut B) -> Result<(), HeaderError> {
    match cmd.serialize_type {
        SerializeType::Json => json_out::encode_json(cmd, out),
        SerializeType::RocketMq => {
            binary::encode_binary(cmd, out);
            Ok(())
        }
    }
}
