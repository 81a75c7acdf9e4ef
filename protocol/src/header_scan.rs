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

/// The fields the command keeps, one bit each (a repeated one goes to serde, which refuses it).
const CODE: u8 = 1;
const LANGUAGE: u8 = 2;
const VERSION: u8 = 4;
const OPAQUE: u8 = 8;
const FLAG: u8 = 16;
const REMARK: u8 = 32;
const EXT_FIELDS: u8 = 64;

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
            let bit = s.key()?;
            s.expect(b':')?;
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            match bit {
                CODE => cmd.code = s.int32()?,
                LANGUAGE => cmd.language = LanguageCode::from_name(s.string()?),
                VERSION => cmd.version = s.int32()?,
                OPAQUE => cmd.opaque = s.int32()?,
                FLAG => cmd.flag = s.int32()?,
                REMARK => {
                    cmd.remark = match s.peek()? {
                        b'n' => s.literal(b"null").map(|_| None)?,
                        _ => Some(s.string()?.to_owned()),
                    }
                }
                EXT_FIELDS => cmd.ext_fields = s.ext_fields()?,
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

/// The bytes that end the plain part of a string: the closing quote, an escape, a control
/// character.
static STRING_STOP: [bool; 256] = {
    let mut table = [false; 256];
    let mut c = 0;
    while c < 256 {
        table[c] = c < 0x20 || c == b'"' as usize || c == b'\\' as usize;
        c += 1;
    }
    table
};

/// The high bit of every byte of `word` (little-endian) that is a quote, a backslash or a control
/// character. A borrow can set a false flag only above a true one, so the lowest
/// flag is always exact.
fn stop_bytes(word: u64) -> u64 {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    let zero_in = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let quote = zero_in(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_in(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    quote | backslash | control
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn skip_ws(&mut self) {
        // Most tokens follow one another directly: one comparison says so.
        if self.bytes.get(self.i).is_some_and(|&c| c > b' ') {
            return;
        }
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

    /// A member name: the bit of a field the command keeps, or 0 for any other name. The names
    /// every client sends are compared whole, closing quote included, without a byte loop.
    fn key(&mut self) -> Option<u8> {
        self.expect(b'"')?;
        let rest = self.bytes.get(self.i..)?;
        let known: Option<(&[u8], u8)> = match rest.first()? {
            b'c' if rest.starts_with(b"code\"") => Some((b"code\"", CODE)),
            b'e' if rest.starts_with(b"extFields\"") => Some((b"extFields\"", EXT_FIELDS)),
            b'f' if rest.starts_with(b"flag\"") => Some((b"flag\"", FLAG)),
            b'l' if rest.starts_with(b"language\"") => Some((b"language\"", LANGUAGE)),
            b'o' if rest.starts_with(b"opaque\"") => Some((b"opaque\"", OPAQUE)),
            b'r' if rest.starts_with(b"remark\"") => Some((b"remark\"", REMARK)),
            b's' if rest.starts_with(b"serializeTypeCurrentRPC\"") => {
                Some((b"serializeTypeCurrentRPC\"", 0))
            }
            b'v' if rest.starts_with(b"version\"") => Some((b"version\"", VERSION)),
            _ => None,
        };
        match known {
            Some((name, bit)) => {
                self.i += name.len();
                Some(bit)
            }
            // Any other name (a known one with an escape in it is not plain, and goes to serde).
            None => self.plain_rest().map(|_| 0),
        }
    }

    /// A string without escapes or control characters, borrowed from the text.
    fn string(&mut self) -> Option<&'a str> {
        self.expect(b'"')?;
        self.plain_rest()
    }

    /// The rest of a string whose opening quote is read, if it is plain up to the closing quote.
    /// Eight bytes at a time, then one by one.
    fn plain_rest(&mut self) -> Option<&'a str> {
        let bytes = self.bytes;
        let start = self.i;
        let mut end = start;
        while let Some(chunk) = bytes.get(end..end + 8) {
            let word = u64::from_le_bytes(chunk.try_into().ok()?);
            let stops = stop_bytes(word);
            if stops != 0 {
                // The lowest flag is exact (see `stop_bytes`): the first stop byte.
                end += (stops.trailing_zeros() / 8) as usize;
                return self.close_string(start, end);
            }
            end += 8;
        }
        while !STRING_STOP[usize::from(*bytes.get(end)?)] {
            end += 1;
        }
        self.close_string(start, end)
    }

    /// The string from `start` to the stop byte at `end`, if that byte is its closing quote.
    fn close_string(&mut self, start: usize, end: usize) -> Option<&'a str> {
        if self.bytes.get(end) != Some(&b'"') {
            return None;
        }
        self.i = end + 1;
        // Both ends are at an ASCII quote, so the slice is on character boundaries.
        self.text.get(start..end)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The word test flags the same first stop byte as the table, for every position and kind.
    #[test]
    fn the_word_test_finds_the_first_stop_byte() {
        let samples: Vec<u8> = (0u8..=255).collect();
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..200_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let mut bytes = [0u8; 8];
            for (k, b) in bytes.iter_mut().enumerate() {
                // Mostly plain letters, some of every other byte value.
                let pick = (seed >> (k * 8)) as u8;
                *b = if pick % 4 == 0 {
                    samples[usize::from(pick)]
                } else {
                    b'a' + pick % 26
                };
            }
            let expected = bytes.iter().position(|&c| STRING_STOP[usize::from(c)]);
            let stops = stop_bytes(u64::from_le_bytes(bytes));
            let found = (stops != 0).then(|| (stops.trailing_zeros() / 8) as usize);
            assert_eq!(found, expected, "{bytes:?}");
        }
    }
}
