//! The binary ROCKETMQ header (serialize type 1): a fixed part, the remark, then the ext fields
//! as length-prefixed pairs.

use bytes::{Buf, BufMut};

use super::error::HeaderError;
use crate::code::{LanguageCode, SerializeType};
use crate::command::{ExtFields, RemotingCommand};

/// Size of the fixed part: code 2, language 1, version 2, opaque 4, flag 4, remark length 4,
/// ext length 4.
pub const BINARY_FIXED_LEN: usize = 21;

pub(super) fn decode_binary(bytes: &[u8]) -> Result<RemotingCommand, HeaderError> {
    let declared = bytes.len();
    let mut buf = bytes;
    if buf.remaining() < BINARY_FIXED_LEN - 4 {
        return Err(HeaderError::Binary("shorter than the fixed 21 bytes"));
    }
    let code = i32::from(buf.get_i16());
    let language = LanguageCode::from_code(buf.get_u8());
    let version = i32::from(buf.get_i16());
    let opaque = buf.get_i32();
    let flag = buf.get_i32();
    let remark = read_string(&mut buf, 4, "remark length out of range")?;
    if buf.remaining() < 4 {
        return Err(HeaderError::Binary("shorter than the fixed 21 bytes"));
    }
    let ext_len = buf.get_i32();
    let ext_len = usize::try_from(ext_len)
        .ok()
        .filter(|len| *len <= buf.remaining())
        .ok_or(HeaderError::Binary("extFields length out of range"))?;
    let ext_fields = if ext_len == 0 {
        None
    } else {
        let (mut ext, rest) = buf.split_at(ext_len);
        buf = rest;
        let mut fields = ExtFields::new();
        while ext.has_remaining() {
            let key = read_string(&mut ext, 2, "extFields key length out of range")?;
            let value = read_string(&mut ext, 4, "extFields value length out of range")?;
            // Java decodes a zero-length string as null; a null value reads as a missing key.
            if let (Some(key), Some(value)) = (key, value) {
                fields.push_read(&key, &value);
            }
        }
        Some(fields)
    };
    if buf.has_remaining() {
        return Err(HeaderError::BinaryLength {
            declared,
            used: declared - buf.remaining(),
        });
    }
    Ok(RemotingCommand {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
        serialize_type: SerializeType::RocketMq,
        body: None,
    })
}

/// Reads a length-prefixed UTF-8 string (`len_bytes` is 2 or 4); length 0 is `None`.
fn read_string(
    buf: &mut &[u8],
    len_bytes: usize,
    err: &'static str,
) -> Result<Option<String>, HeaderError> {
    if buf.remaining() < len_bytes {
        return Err(HeaderError::Binary(err));
    }
    let len = if len_bytes == 2 {
        i64::from(buf.get_i16())
    } else {
        i64::from(buf.get_i32())
    };
    let len = usize::try_from(len)
        .ok()
        .filter(|len| *len <= buf.remaining())
        .ok_or(HeaderError::Binary(err))?;
    if len == 0 {
        return Ok(None);
    }
    let (text, rest) = buf.split_at(len);
    *buf = rest;
    String::from_utf8(text.to_vec())
        .map(Some)
        .map_err(|_| HeaderError::Binary("string is not UTF-8"))
}

pub(super) fn encode_binary<B: BufMut>(cmd: &RemotingCommand, out: &mut B) {
    // Java writes code and version as 16 bits; no real value is larger.
    out.put_i16(cmd.code as i16);
    out.put_u8(cmd.language.code());
    out.put_i16(cmd.version as i16);
    out.put_i32(cmd.opaque);
    out.put_i32(cmd.flag);
    match cmd.remark.as_deref().filter(|r| !r.is_empty()) {
        Some(remark) => {
            out.put_i32(len_i32(remark.len()));
            out.put_slice(remark.as_bytes());
        }
        None => out.put_i32(0),
    }
    // Keys longer than i16::MAX cannot be represented; Java would corrupt them. They are skipped.
    let entries = || {
        cmd.ext_fields
            .iter()
            .flat_map(ExtFields::iter)
            .filter_map(|(k, v)| i16::try_from(k.len()).ok().map(|kl| (kl, k, v)))
    };
    let ext_len: usize = entries().map(|(_, k, v)| 2 + k.len() + 4 + v.len()).sum();
    out.put_i32(len_i32(ext_len));
    for (key_len, key, value) in entries() {
        out.put_i16(key_len);
        out.put_slice(key.as_bytes());
        out.put_i32(len_i32(value.len()));
        out.put_slice(value.as_bytes());
    }
}

/// Lengths of our own strings; frames are capped far below 2 GiB.
fn len_i32(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_header_sizes_match_java_tests() {
        // RocketMQSerializableTest: code 103, version 2333.
        let mut cmd = RemotingCommand::request(crate::code::RequestCode::REGISTER_BROKER)
            .with_version(2333)
            .with_serialize_type(SerializeType::RocketMq);
        let mut out = Vec::new();
        encode_binary(&cmd, &mut out);
        assert_eq!(out.len(), 21);

        cmd.remark = Some("Sample Remark".into());
        out.clear();
        encode_binary(&cmd, &mut out);
        assert_eq!(out.len(), 34);
        assert_eq!(&out[13..17], &13i32.to_be_bytes());

        cmd.remark = None;
        cmd.ext_fields = Some(ExtFields::new().with("key", "value"));
        out.clear();
        encode_binary(&cmd, &mut out);
        assert_eq!(out.len(), 35);
        assert_eq!(&out[17..21], &14i32.to_be_bytes());
        let back = decode_binary(&out).unwrap();
        assert_eq!(back.version, 2333);
        assert_eq!(back.ext_fields.unwrap().get("key"), Some("value"));
    }

    #[test]
    fn binary_empty_strings_decode_as_null() {
        let cmd = RemotingCommand::request(crate::code::RequestCode::GET_ROUTEINFO_BY_TOPIC)
            .with_ext("topic", "")
            .with_ext("other", "x");
        let mut out = Vec::new();
        encode_binary(&cmd, &mut out);
        let back = decode_binary(&out).unwrap();
        let ext = back.ext_fields.unwrap();
        assert_eq!(ext.get("topic"), None);
        assert_eq!(ext.get("other"), Some("x"));
    }

    #[test]
    fn binary_rejects_inconsistent_lengths() {
        let cmd = RemotingCommand::request(crate::code::RequestCode::GET_ROUTEINFO_BY_TOPIC)
            .with_ext("topic", "T");
        let mut out = Vec::new();
        encode_binary(&cmd, &mut out);
        // Truncated anywhere: an error, never a panic.
        for cut in 0..out.len() {
            assert!(decode_binary(&out[..cut]).is_err(), "cut at {cut}");
        }
        // Trailing garbage inside the declared header length.
        let mut long = out.clone();
        long.push(0);
        assert!(matches!(
            decode_binary(&long),
            Err(HeaderError::BinaryLength { .. })
        ));
        // Negative remark length.
        let mut neg = out.clone();
        neg[13..17].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(decode_binary(&neg).is_err());
        // ext length larger than the header.
        let mut big = out;
        big[17..21].copy_from_slice(&1000i32.to_be_bytes());
        assert!(decode_binary(&big).is_err());
    }
}
