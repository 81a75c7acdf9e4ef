//! The two header serializations (docs/protocol.md#json-header, #rocketmq-header): JSON (type 0)
//! and the binary ROCKETMQ form (type 1). Decoding is as lenient as the Java server; encoding is
//! exactly what Java writes.

use std::borrow::Cow;
use std::fmt;

use bytes::{Buf, BufMut};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::code::{LanguageCode, SerializeType};
use crate::command::{ExtFields, RemotingCommand};
use crate::fastjson::{self, JsonStyle};

/// A header that could not be decoded. Closes the connection (docs/protocol.md#malformed-input).
#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    #[error("bad JSON header: {0}")]
    Json(#[from] serde_json::Error),
    #[error("JSON header is not an object")]
    NotAnObject,
    #[error("JSON header is not UTF-8: {0}")]
    Utf8(#[from] std::str::Utf8Error),
    #[error("bad ROCKETMQ header: {0}")]
    Binary(&'static str),
    #[error("ROCKETMQ header declares {declared} bytes but its fields use {used}")]
    BinaryLength { declared: usize, used: usize },
}

/// Decodes a header of the given serialize type into a command without a body.
pub fn decode(serialize_type: SerializeType, bytes: &[u8]) -> Result<RemotingCommand, HeaderError> {
    match serialize_type {
        SerializeType::Json => decode_json(bytes),
        SerializeType::RocketMq => decode_binary(bytes),
    }
}

/// Appends the header of `cmd` in its serialize type.
pub fn encode<B: BufMut>(cmd: &RemotingCommand, out: &mut B) -> Result<(), HeaderError> {
    match cmd.serialize_type {
        SerializeType::Json => encode_json(cmd, out),
        SerializeType::RocketMq => {
            encode_binary(cmd, out);
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------------------------
// JSON

/// What we accept in a JSON header: any key order, unknown keys, missing or `null` optional keys,
/// `language` as a name or a number, ext values of any scalar type.
#[derive(Deserialize)]
struct JsonHeaderIn {
    #[serde(default, deserialize_with = "lenient_i32")]
    code: i32,
    #[serde(default, deserialize_with = "lenient_language")]
    language: LanguageCode,
    #[serde(default, deserialize_with = "lenient_i32")]
    version: i32,
    #[serde(default, deserialize_with = "lenient_i32")]
    opaque: i32,
    #[serde(default, deserialize_with = "lenient_i32")]
    flag: i32,
    #[serde(default)]
    remark: Option<String>,
    #[serde(default, rename = "extFields", deserialize_with = "lenient_ext_fields")]
    ext_fields: Option<ExtFields>,
}

fn decode_json(bytes: &[u8]) -> Result<RemotingCommand, HeaderError> {
    // serde would also read a struct from an array; a header must be an object.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(HeaderError::NotAnObject);
    }
    // Validated once as a whole, the text's strings are not validated again one by one.
    let text = std::str::from_utf8(bytes)?;
    if let Some(cmd) = crate::header_scan::scan(text) {
        return Ok(cmd);
    }
    decode_json_serde(text)
}

/// The two JSON header paths apart, for the fuzz target that holds them equal
/// (fuzz/fuzz_targets/json_header.rs): the fast scanner's answer (`None` when it leaves the text to
/// serde) and the serde path's. Not part of the API.
#[doc(hidden)]
pub fn json_paths(
    text: &str,
) -> (
    Option<RemotingCommand>,
    Result<RemotingCommand, HeaderError>,
) {
    (crate::header_scan::scan(text), decode_json_serde(text))
}

/// The JSON header through serde: every shape and every error.
fn decode_json_serde(text: &str) -> Result<RemotingCommand, HeaderError> {
    NESTED_ALLOWED.with(|allowed| allowed.set(text.len() <= MAX_HEADER_WITH_NESTED));
    let h: JsonHeaderIn = serde_json::from_str(text)?;
    Ok(RemotingCommand {
        code: h.code,
        language: h.language,
        version: h.version,
        opaque: h.opaque,
        flag: h.flag,
        remark: h.remark,
        ext_fields: h.ext_fields,
        serialize_type: SerializeType::Json,
        body: None,
    })
}

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

fn encode_json<B: BufMut>(cmd: &RemotingCommand, out: &mut B) -> Result<(), HeaderError> {
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

/// Accepts an integer, a numeric string or `null` (0), as fastjson does for `int` properties.
fn lenient_i32<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i32, D::Error> {
    struct IntVisitor;
    impl Visitor<'_> for IntVisitor {
        type Value = i32;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a 32-bit integer")
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<i32, E> {
            i32::try_from(v).map_err(|_| E::custom(format!("{v} does not fit in 32 bits")))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<i32, E> {
            i32::try_from(v).map_err(|_| E::custom(format!("{v} does not fit in 32 bits")))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<i32, E> {
            v.trim()
                .parse()
                .map_err(|_| E::custom(format!("{v:?} is not an integer")))
        }
        fn visit_unit<E: de::Error>(self) -> Result<i32, E> {
            Ok(0)
        }
        fn visit_none<E: de::Error>(self) -> Result<i32, E> {
            Ok(0)
        }
    }
    deserializer.deserialize_any(IntVisitor)
}

/// Accepts a language name (`"JAVA"`), a language code number, or `null`.
fn lenient_language<'de, D: Deserializer<'de>>(deserializer: D) -> Result<LanguageCode, D::Error> {
    struct LanguageVisitor;
    impl Visitor<'_> for LanguageVisitor {
        type Value = LanguageCode;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a language name or code")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<LanguageCode, E> {
            Ok(LanguageCode::from_name(v))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<LanguageCode, E> {
            Ok(u8::try_from(v).map_or(LanguageCode::Unknown(u8::MAX), LanguageCode::from_code))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<LanguageCode, E> {
            Ok(u8::try_from(v).map_or(LanguageCode::Unknown(u8::MAX), LanguageCode::from_code))
        }
        fn visit_unit<E: de::Error>(self) -> Result<LanguageCode, E> {
            Ok(LanguageCode::Unknown(u8::MAX))
        }
    }
    deserializer.deserialize_any(LanguageVisitor)
}

/// Accepts an object whose values are strings, numbers, booleans or null (null entries dropped:
/// Java's lookup of a null value and of a missing key are the same), or a `null` object.
fn lenient_ext_fields<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<ExtFields>, D::Error> {
    struct ExtVisitor;
    impl<'de> Visitor<'de> for ExtVisitor {
        type Value = Option<ExtFields>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object of string values")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut fields = ExtFields::new();
            while let Some((key, value)) = map.next_entry::<Text<'de>, ExtValue<'de>>()? {
                if let Some(text) = value.0 {
                    fields.push_read(&key.0, &text);
                }
            }
            Ok(Some(fields))
        }
    }
    deserializer.deserialize_any(ExtVisitor)
}

/// A string of the header, borrowed from it when it has no escapes (no copy).
struct Text<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// Longest JSON header that may carry nested ext values (objects or arrays, kept as their JSON
/// text as fastjson does). Java clients never send any; reading one builds a tree of about 64
/// bytes per byte, so a header of megabytes of them would cost a gigabyte.
pub const MAX_HEADER_WITH_NESTED: usize = 64 * 1024;

thread_local! {
    /// Whether the header being read is short enough for nested ext values.
    static NESTED_ALLOWED: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

fn nested_allowed<E: de::Error>() -> Result<(), E> {
    if NESTED_ALLOWED.with(std::cell::Cell::get) {
        Ok(())
    } else {
        Err(E::custom(format_args!(
            "nested ext values are read only in headers up to {MAX_HEADER_WITH_NESTED} bytes"
        )))
    }
}

/// One ext value: a string as is (borrowed when it can be), a number or boolean as its text,
/// `null` as absent, a nested value as its JSON text. No intermediate tree for plain values.
struct ExtValue<'de>(Option<Cow<'de, str>>);

impl<'de> Deserialize<'de> for ExtValue<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ValueVisitor;
        impl<'de> Visitor<'de> for ValueVisitor {
            type Value = ExtValue<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an ext field value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(ExtValue(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ExtValue(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(ExtValue(Some(Cow::Owned(v))))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(ExtValue(Some(Cow::Borrowed(if v {
                    "true"
                } else {
                    "false"
                }))))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(ExtValue(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(ExtValue(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(ExtValue(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ExtValue(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ExtValue(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                nested_allowed()?;
                let nested =
                    serde_json::Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(ExtValue(Some(Cow::Owned(nested.to_string()))))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                nested_allowed()?;
                let nested =
                    serde_json::Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(ExtValue(Some(Cow::Owned(nested.to_string()))))
            }
        }
        deserializer.deserialize_any(ValueVisitor)
    }
}

// ---------------------------------------------------------------------------------------------
// ROCKETMQ binary

/// Size of the fixed part: code 2, language 1, version 2, opaque 4, flag 4, remark length 4,
/// ext length 4.
pub const BINARY_FIXED_LEN: usize = 21;

fn decode_binary(bytes: &[u8]) -> Result<RemotingCommand, HeaderError> {
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

fn encode_binary<B: BufMut>(cmd: &RemotingCommand, out: &mut B) {
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
    fn nested_ext_values_are_read_only_in_short_headers() {
        let header = |pad: usize| {
            format!(
                r#"{{"code":105,"extFields":{{"n":{{"a":[1,2]}},"p":"{}"}},"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":1}}"#,
                "x".repeat(pad)
            )
        };
        let short = decode_json_serde(&header(10)).unwrap();
        assert_eq!(short.ext("n"), Some(r#"{"a":[1,2]}"#));
        let long = decode_json_serde(&header(MAX_HEADER_WITH_NESTED)).unwrap_err();
        assert!(long.to_string().contains("nested ext values"), "{long}");
        // The limit is per header: a short one after a long one is read.
        assert!(decode_json_serde(&header(10)).is_ok());
    }

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

    /// The fast path and serde agree on every header the fast path accepts.
    #[test]
    fn the_fast_path_agrees_with_serde() {
        let keys = [
            "code",
            "language",
            "version",
            "opaque",
            "flag",
            "remark",
            "extFields",
            "serializeTypeCurrentRPC",
            "serializeTypeCurrentRP",
            "other",
            "aLongerMemberNameThanEightBytes",
            "co\\u0064e",
        ];
        let values = [
            "105",
            "0",
            "-1",
            "-0",
            "007",
            "2147483647",
            "2147483648",
            "-2147483649",
            "1.5",
            "1e3",
            "\"105\"",
            "\"JAVA\"",
            "\"GO\"",
            "\"\"",
            "\"a\\\"b\"",
            "null",
            "true",
            "false",
            "[]",
            "{}",
            "{\"topic\":\"T\"}",
            "{\"topic\":\"T\",\"topic\":\"U\"}",
            "{\"a\":null,\"b\":true,\"c\":1}",
            "{\"a\":{\"b\":1}}",
            "{\"k\":\"v\\n\"}",
            "\"\u{1}\"",
            "\"héllo\"",
            "\"TopicOfSixteenBy\"",
            "\"TopicOfSixteen\\\"By\"",
            "\"TopicOfSixteenB\u{1f}y\"",
            "\"Tópico de dieciséis bytes\"",
            "{\"topic\":\"a_topic_name_longer_than_eight\",\"consumerGroup\":\"CID_0123456789\"}",
            "12345678901234567890",
            "-",
            "tru",
            "{\"a\":\"b\"",
            "{\"a\" \"b\"}",
        ];
        let spaces = ["", " ", "\n\t ", "\r"];
        let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut accepted = 0;
        for _ in 0..50_000 {
            let mut text = String::from(spaces[next(spaces.len())]);
            text.push('{');
            let members = next(6);
            for m in 0..members {
                if m > 0 {
                    text.push(',');
                }
                text.push_str(spaces[next(spaces.len())]);
                text.push_str(&format!("\"{}\"", keys[next(keys.len())]));
                text.push_str(spaces[next(spaces.len())]);
                text.push(':');
                text.push_str(values[next(values.len())]);
            }
            text.push('}');
            if next(10) == 0 {
                text.push_str(["x", " ", "}", ","][next(4)]);
            }
            if next(20) == 0 {
                let mut cut = next(text.len() + 1);
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
            }
            if let Some(fast) = crate::header_scan::scan(&text) {
                accepted += 1;
                match decode_json_serde(&text) {
                    Ok(slow) => assert_eq!(fast, slow, "{text}"),
                    Err(err) => panic!("fast path accepted what serde refuses ({err}): {text}"),
                }
            }
        }
        assert!(
            accepted > 1_000,
            "the fast path took only {accepted} headers"
        );
        // The headers real clients send take the fast path.
        for text in [
            r#"{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#,
            r#"{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"InteropGo"}}"#,
            "{\"code\":105,\"extFields\":{\"AccessKey\":\"\",\"topic\":\"T\"},\"flag\":0,\"language\":\"CPP\",\"opaque\":0,\"remark\":\"\",\"version\":63}\n",
        ] {
            let fast = crate::header_scan::scan(text).expect("common shape");
            assert_eq!(fast, decode_json_serde(text).unwrap());
        }
    }

    #[test]
    fn repeated_and_many_ext_keys() {
        let cmd = decode_str(r#"{"code":105,"extFields":{"topic":"a","topic":"b"}}"#);
        assert_eq!(
            cmd.ext("topic"),
            Some("b"),
            "the last value of a repeated key counts"
        );
        // 100,000 keys decode (each appended, not searched for): a linear path.
        let mut text = String::from(r#"{"code":105,"extFields":{"#);
        for i in 0..100_000 {
            text.push_str(&format!(r#""k{i}":"v","#));
        }
        text.push_str(r#""topic":"t"}}"#);
        let cmd = decode_str(&text);
        assert_eq!(cmd.ext("topic"), Some("t"));
        assert_eq!(cmd.ext_fields.map(|f| f.len()), Some(100_001));
    }

    #[test]
    fn non_utf8_json_headers_are_errors() {
        assert!(matches!(
            decode_json(b"{\"code\":105,\"remark\":\"\xff\"}"),
            Err(HeaderError::Utf8(_))
        ));
    }

    fn decode_str(s: &str) -> RemotingCommand {
        decode_json(s.as_bytes()).unwrap()
    }

    #[test]
    fn json_accepts_go_cpp_and_rust_client_headers() {
        let go = decode_str(
            r#"{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}"#,
        );
        assert_eq!(
            (go.code, go.language, go.version, go.opaque),
            (105, LanguageCode::Go, 317, 1)
        );
        assert_eq!(go.remark.as_deref(), Some(""));
        assert_eq!(go.ext_fields.unwrap().get("topic"), Some("TopicTest"));

        let cpp = decode_str(
            "{\"code\":105,\"extFields\":{\"AccessKey\":\"\",\"ONSChannelKey\":\"\",\"Signature\":\"\",\"topic\":\"T\"},\"flag\":0,\"language\":\"CPP\",\"opaque\":3,\"remark\":\"\",\"version\":333}\n",
        );
        assert_eq!(cpp.language, LanguageCode::Cpp);
        assert_eq!(cpp.ext_fields.unwrap().get("topic"), Some("T"));

        let rust =
            decode_str(r#" {"code":106,"remark":null,"extFields":null,"opaque":0,"language":12} "#);
        assert_eq!(rust.code, 106);
        assert_eq!(rust.language, LanguageCode::Rust);
        assert!(rust.remark.is_none());
        assert!(rust.ext_fields.is_none());
    }

    #[test]
    fn json_is_lenient_about_types_and_unknown_keys() {
        let h = decode_str(
            r#"{"unknown":[1,{"x":2}],"code":"103","flag":null,"language":"MARTIAN","extFields":{"brokerId":0,"compressed":false,"n":null}}"#,
        );
        assert_eq!(h.code, 103);
        assert_eq!(h.flag, 0);
        assert_eq!(h.language.name(), None);
        let ext = h.ext_fields.unwrap();
        assert_eq!(ext.get("brokerId"), Some("0"));
        assert_eq!(ext.get("compressed"), Some("false"));
        assert_eq!(ext.get("n"), None);
    }

    #[test]
    fn json_rejects_garbage() {
        assert!(decode_json(b"{{").is_err());
        assert!(decode_json(b"[]").is_err());
        assert!(decode_json(br#"{"code":99999999999}"#).is_err());
    }

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
