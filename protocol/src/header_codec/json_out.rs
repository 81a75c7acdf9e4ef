//! Writing a JSON header exactly as Java does: properties in alphabetical order, nulls omitted.

use bytes::BufMut;
use serde::Serialize;

use super::error::HeaderError;
use crate::code::SerializeType;
use crate::command::{ExtFields, RemotingCommand};
use crate::fastjson::{self, JsonStyle};

/// What Java writes: properties in alphabetical order, nulls omitted.
#[derive(Serialize)]
struct JsonHeaderOut<'a> {
    code: i32,
    #[serde(rename = "extFields", skip_serializing_if = "Option::is_none")]
    ext_fields: Option<&'a ExtFields>,
    flag: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    language: Option<&'static str>,
    opaque: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    remark: Option<&'a str>,
    #[serde(rename = "serializeTypeCurrentRPC")]
    serialize_type: &'static str,
    version: i32,
}

pub(super) fn encode_json<B: BufMut>(
    cmd: &RemotingCommand,
    out: &mut B,
) -> Result<(), HeaderError> {
    if cmd.ext_fields.is_none() && cmd.remark.is_none() {
        // The common case (every route answer): written directly, as serde would write it.
        encode_json_plain(cmd, out);
        return Ok(());
    }
    let header = JsonHeaderOut {
        code: cmd.code,
        ext_fields: cmd.ext_fields.as_ref(),
        flag: cmd.flag,
        language: cmd.language.name(),
        opaque: cmd.opaque,
        remark: cmd.remark.as_deref(),
        serialize_type: SerializeType::Json.name(),
        version: cmd.version,
    };
    fastjson::write_to(out.writer(), &header, JsonStyle::Legacy)?;
    Ok(())
}

/// [`JsonHeaderOut`] of a command without remark and ext fields, byte for byte what the serde
/// path writes (a test holds them equal).
fn encode_json_plain<B: BufMut>(cmd: &RemotingCommand, out: &mut B) {
    let mut number = itoa::Buffer::new();
    out.put_slice(b"{\"code\":");
    out.put_slice(number.format(cmd.code).as_bytes());
    out.put_slice(b",\"flag\":");
    out.put_slice(number.format(cmd.flag).as_bytes());
    if let Some(language) = cmd.language.name() {
        out.put_slice(b",\"language\":\"");
        out.put_slice(language.as_bytes());
        out.put_slice(b"\"");
    }
    out.put_slice(b",\"opaque\":");
    out.put_slice(number.format(cmd.opaque).as_bytes());
    out.put_slice(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    out.put_slice(number.format(cmd.version).as_bytes());
    out.put_slice(b"}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::LanguageCode;

    #[test]
    fn the_plain_json_header_is_what_serde_writes() {
        for (code, flag, opaque, version, language) in [
            (0, 1, 0, 479, LanguageCode::Java),
            (17, 1, -1, 317, LanguageCode::Go),
            (i32::MIN, i32::MAX, i32::MAX, 0, LanguageCode::Cpp),
            (1, 3, 123_456_789, -5, LanguageCode::Unknown(200)),
        ] {
            let mut cmd = RemotingCommand::response(crate::code::ResponseCode(code), None);
            cmd.flag = flag;
            cmd.opaque = opaque;
            cmd.version = version;
            cmd.language = language;
            let mut plain = Vec::new();
            encode_json_plain(&cmd, &mut plain);
            let header = JsonHeaderOut {
                code: cmd.code,
                ext_fields: None,
                flag: cmd.flag,
                language: cmd.language.name(),
                opaque: cmd.opaque,
                remark: None,
                serialize_type: SerializeType::Json.name(),
                version: cmd.version,
            };
            let mut serde = Vec::new();
            fastjson::write_to(&mut serde, &header, JsonStyle::Legacy).unwrap();
            assert_eq!(
                String::from_utf8(plain).unwrap(),
                String::from_utf8(serde).unwrap()
            );
        }
    }
}
