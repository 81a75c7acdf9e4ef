//! JSON the way the Java side (fastjson 1.2.83) writes and reads it
//! (docs/protocol.md#fastjson-compatibility).
//!
//! Writing goes through serde_json with [`FastJsonFormatter`], a `serde_json::ser::Formatter` that
//! adds the two fastjson behaviours serde_json lacks:
//! - legacy style: integer map keys are written bare (`{0:"127.0.0.1:10911"}`), string keys quoted;
//! - standard style (`BrowserCompatible`): `/` escaped as `\/`, every character >= U+007F and every
//!   control character escaped as `\uXXXX` (upper-case hex), so the output is pure ASCII.
//!
//! Property order and null omission come from the body types themselves (fields declared in
//! alphabetical order, `skip_serializing_if = "Option::is_none"`); maps are `BTreeMap`s, so they are
//! always sorted, which is what standard style requires and a legal order for legacy style.
//!
//! Reading accepts what fastjson writes: [`quote_bare_keys`] turns bare numeric object keys into
//! quoted ones before serde_json parses the text.

use std::borrow::Cow;
use std::io;

use serde::{de::DeserializeOwned, Serialize};
use serde_json::ser::{CharEscape, Formatter};

/// Which fastjson output style to imitate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JsonStyle {
    /// fastjson defaults: bare integer map keys, `/` and non-ASCII as is. Not RFC 8259 JSON when a
    /// map has integer keys.
    Legacy,
    /// `BrowserCompatible` + `MapSortField`: quoted keys, sorted maps, pure-ASCII escaping.
    Standard,
}

/// Where the formatter is inside an object key; only keys need the deferred quote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyState {
    /// Not writing a key.
    Value,
    /// Inside a key, its opening quote not yet written: the key may still turn out to be a number.
    KeyStart,
    /// Inside a string key whose opening quote has been written.
    QuotedKey,
    /// Inside a numeric key written bare.
    BareKey,
}

/// A serde_json formatter that writes fastjson's compact output in either [`JsonStyle`].
#[derive(Debug, Clone)]
pub struct FastJsonFormatter {
    style: JsonStyle,
    key: KeyState,
}

impl FastJsonFormatter {
    pub fn new(style: JsonStyle) -> Self {
        Self {
            style,
            key: KeyState::Value,
        }
    }

    /// Writes the deferred opening quote of a string key, if one is pending.
    fn open_pending_key<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        if self.key == KeyState::KeyStart {
            self.key = KeyState::QuotedKey;
            writer.write_all(b"\"")?;
        }
        Ok(())
    }

    /// Writes an integer: bare when it is a whole map key in legacy style.
    fn write_integer<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        digits: &str,
    ) -> io::Result<()> {
        if self.key == KeyState::KeyStart && self.style == JsonStyle::Legacy {
            self.key = KeyState::BareKey;
        } else {
            self.open_pending_key(writer)?;
        }
        writer.write_all(digits.as_bytes())
    }
}

fn write_unicode_escape<W: ?Sized + io::Write>(writer: &mut W, unit: u16) -> io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let bytes = [
        b'\\',
        b'u',
        HEX[usize::from(unit >> 12)],
        HEX[usize::from((unit >> 8) & 0xF)],
        HEX[usize::from((unit >> 4) & 0xF)],
        HEX[usize::from(unit & 0xF)],
    ];
    writer.write_all(&bytes)
}

impl Formatter for FastJsonFormatter {
    fn write_i8<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i8) -> io::Result<()> {
        self.write_integer(w, &v.to_string())
    }
    fn write_i16<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i16) -> io::Result<()> {
        self.write_integer(w, &v.to_string())
    }
    fn write_i32<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i32) -> io::Result<()> {
        self.write_integer(w, itoa_i64(i64::from(v)).as_str())
    }
    fn write_i64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i64) -> io::Result<()> {
        self.write_integer(w, itoa_i64(v).as_str())
    }
    fn write_u8<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u8) -> io::Result<()> {
        self.write_integer(w, &v.to_string())
    }
    fn write_u16<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u16) -> io::Result<()> {
        self.write_integer(w, &v.to_string())
    }
    fn write_u32<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u32) -> io::Result<()> {
        self.write_integer(w, itoa_i64(i64::from(v)).as_str())
    }
    fn write_u64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u64) -> io::Result<()> {
        self.write_integer(w, &v.to_string())
    }

    fn begin_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        if self.key == KeyState::KeyStart {
            // Deferred: the next call tells whether this key is a string or a bare number.
            return Ok(());
        }
        writer.write_all(b"\"")
    }

    fn end_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match self.key {
            KeyState::KeyStart => {
                // An empty string key: nothing was written yet.
                self.key = KeyState::QuotedKey;
                writer.write_all(b"\"\"")
            }
            KeyState::BareKey => Ok(()),
            KeyState::QuotedKey | KeyState::Value => writer.write_all(b"\""),
        }
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        self.open_pending_key(writer)?;
        if self.style == JsonStyle::Legacy {
            return writer.write_all(fragment.as_bytes());
        }
        let mut start = 0;
        for (i, ch) in fragment.char_indices() {
            if ch == '/' || u32::from(ch) >= 0x7F {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                if ch == '/' {
                    writer.write_all(b"\\/")?;
                } else {
                    let mut units = [0u16; 2];
                    for unit in ch.encode_utf16(&mut units) {
                        write_unicode_escape(writer, *unit)?;
                    }
                }
                start = i + ch.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        char_escape: CharEscape,
    ) -> io::Result<()> {
        self.open_pending_key(writer)?;
        let short: &[u8] = match char_escape {
            CharEscape::Quote => b"\\\"",
            CharEscape::ReverseSolidus => b"\\\\",
            CharEscape::Solidus => b"\\/",
            CharEscape::Backspace => b"\\b",
            CharEscape::FormFeed => b"\\f",
            CharEscape::LineFeed => b"\\n",
            CharEscape::CarriageReturn => b"\\r",
            CharEscape::Tab => b"\\t",
            CharEscape::AsciiControl(byte) => return write_unicode_escape(writer, u16::from(byte)),
        };
        writer.write_all(short)
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.key = KeyState::KeyStart;
        if first {
            Ok(())
        } else {
            writer.write_all(b",")
        }
    }

    fn end_object_key<W: ?Sized + io::Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.key = KeyState::Value;
        Ok(())
    }
}

/// Decimal text of an integer without going through `format!` machinery.
fn itoa_i64(v: i64) -> ItoaBuf {
    let mut buf = ItoaBuf {
        bytes: [0; 20],
        start: 20,
    };
    let negative = v < 0;
    let mut n = v.unsigned_abs();
    loop {
        buf.start -= 1;
        // n % 10 < 10, so the cast is exact.
        buf.bytes[buf.start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if negative {
        buf.start -= 1;
        buf.bytes[buf.start] = b'-';
    }
    buf
}

struct ItoaBuf {
    bytes: [u8; 20],
    start: usize,
}

impl ItoaBuf {
    fn as_str(&self) -> &str {
        // Only ASCII digits and '-' were written.
        std::str::from_utf8(&self.bytes[self.start..]).unwrap_or("0")
    }
}

/// Appends an integer as fastjson writes it (as a value, not a map key).
pub fn write_int(out: &mut Vec<u8>, value: i64) {
    out.extend_from_slice(itoa_i64(value).as_str().as_bytes());
}

/// Serializes `value` as fastjson would into `out`.
pub fn write_to<W: io::Write, T: Serialize + ?Sized>(
    out: W,
    value: &T,
    style: JsonStyle,
) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(out, FastJsonFormatter::new(style));
    value.serialize(&mut ser)
}

/// Serializes `value` as fastjson would.
pub fn to_vec<T: Serialize + ?Sized>(value: &T, style: JsonStyle) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    write_to(&mut out, value, style)?;
    Ok(out)
}

/// Parses JSON as fastjson reads it: bare numeric object keys are accepted
/// (docs/protocol.md#fastjson-compatibility), unknown
/// properties ignored, missing ones defaulted by the target type.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    // Most bodies are standard JSON: parse directly, and rewrite bare keys only if that fails.
    match serde_json::from_slice(bytes) {
        Ok(value) => Ok(value),
        Err(err) => match quote_bare_keys(bytes) {
            Cow::Owned(quoted) => serde_json::from_slice(&quoted),
            Cow::Borrowed(_) => Err(err),
        },
    }
}

/// A deserializer that reads a struct only from a JSON object. serde's derived struct visitor also
/// accepts a sequence of field values, and serde_json hands it one for `[...]`; asking for a map
/// instead turns an array into a type error ("invalid type: sequence, expected struct ..."),
/// as fastjson's "syntax error, expect {". Everything else passes through.
pub struct ObjectOnly<D>(pub D);

impl<'de, D: serde::Deserializer<'de>> serde::Deserializer<'de> for ObjectOnly<D> {
    type Error = D::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(visitor)
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// Rewrites bare numeric object keys (`{0:"a"}`) as quoted keys (`{"0":"a"}`), leaving everything
/// else, including strings that look like keys, untouched. Borrows the input when there is nothing
/// to rewrite, which is the common case.
pub fn quote_bare_keys(input: &[u8]) -> Cow<'_, [u8]> {
    // Containers we are inside: true for objects.
    let mut stack: Vec<bool> = Vec::new();
    let mut expecting_key = false;
    let mut in_string = false;
    let mut escaped = false;
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < input.len() {
        let b = input[i];
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                expecting_key = false;
            }
            b'{' => {
                stack.push(true);
                expecting_key = true;
            }
            b'[' => {
                stack.push(false);
                expecting_key = false;
            }
            b'}' | b']' => {
                stack.pop();
                expecting_key = false;
            }
            b',' => expecting_key = stack.last() == Some(&true),
            b' ' | b'\t' | b'\r' | b'\n' => {}
            b'-' | b'0'..=b'9' if expecting_key => {
                let end = input[i + 1..]
                    .iter()
                    .position(|c| !c.is_ascii_digit())
                    .map_or(input.len(), |p| i + 1 + p);
                let buf = out.get_or_insert_with(|| Vec::with_capacity(input.len() + 16));
                buf.extend_from_slice(&input[copied..i]);
                buf.push(b'"');
                buf.extend_from_slice(&input[i..end]);
                buf.push(b'"');
                copied = end;
                expecting_key = false;
                i = end;
                continue;
            }
            _ => expecting_key = false,
        }
        i += 1;
    }
    match out {
        None => Cow::Borrowed(input),
        Some(mut buf) => {
            buf.extend_from_slice(&input[copied..]);
            Cow::Owned(buf)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;

    use super::*;

    #[derive(Serialize)]
    struct Sample {
        #[serde(rename = "brokerAddrs")]
        broker_addrs: BTreeMap<i64, String>,
        #[serde(rename = "names")]
        names: BTreeMap<String, i32>,
        text: String,
    }

    fn sample() -> Sample {
        Sample {
            broker_addrs: [
                (0, "10.0.0.1:10911".into()),
                (10, "a/b".into()),
                (2, "x".into()),
            ]
            .into_iter()
            .collect(),
            names: [("0".to_string(), 1), (String::new(), 2)]
                .into_iter()
                .collect(),
            text: "é/\u{1F600}\n\u{1}".into(),
        }
    }

    #[test]
    fn legacy_writes_bare_integer_keys_and_raw_text() {
        let out = String::from_utf8(to_vec(&sample(), JsonStyle::Legacy).unwrap()).unwrap();
        assert_eq!(
            out,
            "{\"brokerAddrs\":{0:\"10.0.0.1:10911\",2:\"x\",10:\"a/b\"},\"names\":{\"\":2,\"0\":1},\"text\":\"é/\u{1F600}\\n\\u0001\"}"
        );
    }

    #[test]
    fn standard_quotes_keys_and_escapes_like_browser_compatible() {
        let out = String::from_utf8(to_vec(&sample(), JsonStyle::Standard).unwrap()).unwrap();
        assert_eq!(
            out,
            r#"{"brokerAddrs":{"0":"10.0.0.1:10911","2":"x","10":"a\/b"},"names":{"":2,"0":1},"text":"\u00E9\/\uD83D\uDE00\n\u0001"}"#
        );
        assert!(out.is_ascii());
    }

    #[test]
    fn quote_bare_keys_only_touches_object_keys() {
        let input = br#"{0:"a", -1 :"b","k":[1,2,{3:[4]}],"s":"{5:6}"}"#;
        let out = quote_bare_keys(input);
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"0":"a", "-1" :"b","k":[1,2,{"3":[4]}],"s":"{5:6}"}"#
        );
        let plain = br#"{"a":[1,2],"b":"x\"{1:2}"}"#;
        assert!(matches!(quote_bare_keys(plain), Cow::Borrowed(_)));
    }

    #[test]
    fn reads_legacy_output_back() {
        let text = to_vec(&sample(), JsonStyle::Legacy).unwrap();
        #[derive(serde::Deserialize)]
        struct Back {
            #[serde(rename = "brokerAddrs")]
            broker_addrs: BTreeMap<i64, String>,
        }
        let back: Back = from_slice(&text).unwrap();
        assert_eq!(back.broker_addrs.get(&10).map(String::as_str), Some("a/b"));
    }

    #[test]
    fn itoa_matches_display() {
        for v in [0, 7, -7, 479, i64::MAX, i64::MIN, 1_700_000_000_000] {
            assert_eq!(itoa_i64(v).as_str(), v.to_string());
        }
    }
}
