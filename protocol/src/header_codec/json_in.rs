//! Reading a JSON header: the fast scanner for the shapes clients send, serde for every other
//! shape and every error, both answering the same (a test and a fuzz target hold them equal).

use serde::Deserialize;

use super::error::HeaderError;
use super::json_lenient::{
    lenient_ext_fields, lenient_i32, lenient_language, MAX_HEADER_WITH_NESTED, NESTED_ALLOWED,
};
use crate::code::{LanguageCode, SerializeType};
use crate::command::{ExtFields, RemotingCommand};

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

pub(super) fn decode_json(bytes: &[u8]) -> Result<RemotingCommand, HeaderError> {
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
}
