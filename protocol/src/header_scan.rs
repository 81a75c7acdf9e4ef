//! A fast path for the JSON headers clients actually send: one flat object of numbers and plain
//! strings with a flat `extFields` object of plain strings, e.g.
//! `{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"JAVA","opaque":7,...}`.
//!
//! serde_json spends about 2,500 instructions on such a header, well over a third of everything a
//! cached route answer costs (callgrind, user space), so the header codec first tries [`scan`]:
//! one pass over the text that accepts only that subset of JSON and gives up on anything else —
//! an escape sequence, a control character, a fraction or exponent, a nested value outside
//! `extFields`, a repeated field, a numeric field given as a string or null, trailing bytes.
//! Whatever it gives up on goes to the serde path, which decides, so the result is the same
//! either way: for every text `scan` accepts it returns exactly what the serde path returns (a
//! differential test holds them equal; the fuzz target does too).

use crate::code::{LanguageCode, SerializeType};
use crate::command::{ExtFields, RemotingCommand};

/// The command of a header in the common shape, or `None` to let the serde path decide.
pub(crate) fn scan(text: &str) -> Option<RemotingCommand> {
    let mut s = Scanner {
        text,
        bytes: text.as_bytes(),
        i: 0,
    };
    let mut cmd = RemotingCommand {
        code: 0,
        language: LanguageCode::default(),
        version: 0,
        opaque: 0,
        flag: 0,
        remark: None,
        ext_fields: None,
        serialize_type: SerializeType::Json,
        body: None,
    };
    let mut seen = 0u8;
    s.expect(b'{')?;
    if !s.next_is(b'}') {
        loop {
            let key = s.string()?;
            s.expect(b':')?;
            let bit = match key {
                "code" => 1,
                "language" => 2,
                "version" => 4,
                "opaque" => 8,
                "flag" => 16,
                "remark" => 32,
                "extFields" => 64,
                _ => 0,
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            match bit {
                1 => cmd.code = s.int32()?,
                2 => cmd.language = LanguageCode::from_name(s.string()?),
                4 => cmd.version = s.int32()?,
                8 => cmd.opaque = s.int32()?,
                16 => cmd.flag = s.int32()?,
                32 => {
                    cmd.remark = match s.peek()? {
                        b'n' => s.literal(b"null").map(|_| None)?,
                        _ => Some(s.string()?.to_owned()),
                    }
                }
                64 => cmd.ext_fields = s.ext_fields()?,
                _ => s.skip_scalar()?,
            }
            if s.next_is(b',') {
                continue;
            }
            s.expect(b'}')?;
            break;
        }
    }
    s.skip_ws();
    (s.i == s.bytes.len()).then_some(cmd)
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.bytes.get(self.i) {
            self.i += 1;
        }
    }

    /// The next byte after white space.
    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.bytes.get(self.i).copied()
    }

    /// Consumes `byte` (after white space) if it is next.
    fn next_is(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        if next {
            self.i += 1;
        }
        next
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.next_is(byte).then_some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.skip_ws();
        let end = self.i.checked_add(word.len())?;
        if self.bytes.get(self.i..end)? != word {
            return None;
        }
        self.i = end;
        Some(())
    }

    /// A string without escapes or control characters, borrowed from the text.
    fn string(&mut self) -> Option<&'a str> {
        self.expect(b'"')?;
        let start = self.i;
        let rest = self.bytes.get(start..)?;
        let len = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[len] != b'"' || rest[..len].iter().any(|&c| c < 0x20) {
            return None;
        }
        self.i = start + len + 1;
        // Both ends are at an ASCII quote, so the slice is on character boundaries.
        self.text.get(start..start + len)
    }

    /// An integer in JSON's grammar (no leading zeros), with no fraction or exponent.
    fn integer(&mut self) -> Option<i64> {
        self.skip_ws();
        let negative = self.bytes.get(self.i) == Some(&b'-');
        if negative {
            self.i += 1;
        }
        let start = self.i;
        let mut value: i64 = 0;
        while let Some(digit @ b'0'..=b'9') = self.bytes.get(self.i).copied() {
            value = value
                .checked_mul(10)?
                .checked_add(i64::from(digit - b'0'))?;
            self.i += 1;
        }
        let digits = self.i - start;
        let leading_zero = self.bytes.get(start) == Some(&b'0');
        // No leading zeros; and "-0", which serde_json reads as a float, is left to it.
        if digits == 0 || (leading_zero && (digits > 1 || negative)) {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.bytes.get(self.i) {
            return None;
        }
        Some(if negative { -value } else { value })
    }

    fn int32(&mut self) -> Option<i32> {
        i32::try_from(self.integer()?).ok()
    }

    /// The value of a field the header does not use: a plain string, an integer, a literal.
    fn skip_scalar(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.integer().map(|_| ()),
        }
    }

    /// `extFields`: `null`, or an object of plain strings, booleans and nulls (null entries
    /// dropped, as the serde path drops them).
    fn ext_fields(&mut self) -> Option<Option<ExtFields>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(None);
        }
        self.expect(b'{')?;
        let mut fields = ExtFields::new();
        if self.next_is(b'}') {
            return Some(Some(fields));
        }
        loop {
            let key = self.string()?;
            self.expect(b':')?;
            match self.peek()? {
                b'"' => fields.push_read(key, self.string()?),
                b't' => {
                    self.literal(b"true")?;
                    fields.push_read(key, "true");
                }
                b'f' => {
                    self.literal(b"false")?;
                    fields.push_read(key, "false");
                }
                b'n' => self.literal(b"null")?,
                _ => return None,
            }
            if self.next_is(b',') {
                continue;
            }
            self.expect(b'}')?;
            return Some(Some(fields));
        }
    }
}
