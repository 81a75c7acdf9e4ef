//! Java properties text: the body of UPDATE_NAMESRV_CONFIG and GET_NAMESRV_CONFIG, and the format
//! of Java's `namesrv.properties` (docs/kv-and-config.md#java-properties, #runtime-updates).
//!
//! Parsing follows `java.util.Properties.load`: `=`, `:` or whitespace separate key and value;
//! `#` and `!` start comment lines; a line ending in an odd number of backslashes continues on the
//! next; `\t \n \f \r \uXXXX` are escapes (a UTF-16 surrogate pair of two `\uXXXX` is one
//! character) and any other escaped character stands for itself.
//!
//! Two writers share one escaping rule, and `parse` reads back exactly what either wrote:
//! - [`store`] writes files as `Properties.store` does: every separator and comment mark escaped,
//!   in keys and values, non-ASCII as `\uXXXX`. Every properties file the server writes goes
//!   through it, so no value can become a line of its own (the CVE-2023-37582 kind of injection).
//! - [`format`] writes response bodies as Java's `MixAll.properties2String` lays them out
//!   (`key=value\n`, sorted, `=` and `:` left as they are in values, so ordinary configurations
//!   are byte-identical to Java's), escaping only what would not read back otherwise: line
//!   breaks, backslashes, leading blanks, separators in keys, non-ASCII (Java's clients read
//!   the body as ISO-8859-1).

use std::collections::BTreeMap;

/// A properties text that `Properties.load` would reject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PropertiesError {
    #[error("Malformed \\uxxxx encoding.")]
    MalformedUnicode,
}

/// Parses properties text. Later duplicates win, as in Java.
pub fn parse(text: &str) -> Result<BTreeMap<String, String>, PropertiesError> {
    let mut out = BTreeMap::new();
    for line in logical_lines(text) {
        let (key, value) = split_key_value(&line);
        out.insert(unescape(key)?, unescape(value)?);
    }
    Ok(out)
}

/// Which writer escapes (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A file, as `Properties.store` writes it.
    File,
    /// A response body, as `MixAll.properties2String` lays it out.
    Body,
}

/// Writes entries as `key=value\n`, in key order: a response body (Java's
/// `properties2String(props, true)`), escaped only where it would not read back.
pub fn format<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    write(entries, Style::Body)
}

/// Writes entries as `key=value\n`, in key order, escaped as `Properties.store` escapes them:
/// the text of every properties file the server writes.
pub fn store<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    write(entries, Style::File)
}

fn write<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>, style: Style) -> String {
    let sorted: BTreeMap<&str, &str> = entries.into_iter().collect();
    let mut out = String::new();
    for (key, value) in sorted {
        escape_into(&mut out, key, true, style);
        out.push('=');
        escape_into(&mut out, value, false, style);
        out.push('\n');
    }
    out
}

/// `text` escaped as a key (`is_key`) or a value of `style`, so that [`parse`] (and Java's
/// `Properties.load`) read back exactly `text`.
pub fn escape(text: &str, is_key: bool, style: Style) -> String {
    let mut out = String::with_capacity(text.len());
    escape_into(&mut out, text, is_key, style);
    out
}

fn escape_into(out: &mut String, text: &str, is_key: bool, style: Style) {
    for (i, c) in text.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\x0c' => out.push_str("\\f"),
            ' ' if is_key || i == 0 => out.push_str("\\ "),
            '=' | ':' | '#' | '!' if is_key || style == Style::File => {
                out.push('\\');
                out.push(c);
            }
            c if (' '..='~').contains(&c) => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04X}"));
                }
            }
        }
    }
}

/// The first character of `text` that ends a line or is another control character (a value
/// holding one is refused by every update: it has no business in a setting, and a writer that
/// forgot to escape it would turn it into a line of its own).
pub fn control_char(text: &str) -> Option<char> {
    text.chars().find(|c| c.is_control() && *c != '\t')
}

/// Joins continuation lines and drops blank and comment lines. The returned lines keep their
/// escapes (a backslash-newline pair is removed with the next line's leading whitespace).
fn logical_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current: Option<String> = None;
    let natural = text.split('\n').flat_map(|l| l.split('\r'));
    for raw in natural {
        let piece = match &current {
            // A continuation skips its leading whitespace.
            Some(_) => raw.trim_start_matches([' ', '\t', '\x0c']),
            None => {
                let trimmed = raw.trim_start_matches([' ', '\t', '\x0c']);
                if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
                    continue;
                }
                trimmed
            }
        };
        let trailing = piece.chars().rev().take_while(|c| *c == '\\').count();
        let continues = trailing % 2 == 1;
        let content = if continues {
            &piece[..piece.len() - 1]
        } else {
            piece
        };
        let mut line = current.take().unwrap_or_default();
        line.push_str(content);
        if continues {
            current = Some(line);
        } else {
            lines.push(line);
        }
    }
    if let Some(line) = current {
        lines.push(line);
    }
    lines
}

/// Splits a logical line at the first unescaped `=`, `:` or whitespace.
fn split_key_value(line: &str) -> (&str, &str) {
    let mut escaped = false;
    let mut key_end = line.len();
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '=' | ':' | ' ' | '\t' | '\x0c' => {
                key_end = i;
                break;
            }
            _ => {}
        }
    }
    let key = &line[..key_end];
    let mut rest = line[key_end..].trim_start_matches([' ', '\t', '\x0c']);
    if let Some(stripped) = rest.strip_prefix(['=', ':']) {
        rest = stripped.trim_start_matches([' ', '\t', '\x0c']);
    }
    (key, rest)
}

fn unescape(s: &str) -> Result<String, PropertiesError> {
    if !s.contains('\\') {
        return Ok(s.to_owned());
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('f') => out.push('\x0c'),
            Some('r') => out.push('\r'),
            Some('u') => {
                let unit = hex_unit(&mut chars)?;
                out.push(utf16_char(unit, &mut chars)?);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

/// The four hex digits of a `\uXXXX` escape.
fn hex_unit(chars: &mut std::str::Chars<'_>) -> Result<u16, PropertiesError> {
    let hex: String = chars.by_ref().take(4).collect();
    (hex.len() == 4)
        .then(|| u16::from_str_radix(&hex, 16).ok())
        .flatten()
        .ok_or(PropertiesError::MalformedUnicode)
}

/// The character of UTF-16 unit `unit`: a high surrogate followed by a `\uXXXX` low surrogate
/// is one character (as Java's string of units reads); a lone surrogate is U+FFFD.
fn utf16_char(unit: u16, chars: &mut std::str::Chars<'_>) -> Result<char, PropertiesError> {
    if !(0xD800..0xDC00).contains(&unit) {
        return Ok(char::from_u32(u32::from(unit)).unwrap_or('\u{FFFD}'));
    }
    let mut ahead = chars.clone();
    if let (Some('\\'), Some('u')) = (ahead.next(), ahead.next()) {
        let low = hex_unit(&mut ahead)?;
        if let Some(Ok(c)) = char::decode_utf16([unit, low]).next() {
            *chars = ahead;
            return Ok(c);
        }
    }
    Ok('\u{FFFD}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_syntax() {
        let text = "# comment\n! also\n\n  a=1\nb : 2\nc 3\nd\\=x=4\ne=five \\\n    six\nf=\\u0041\\t\r\ng=\ntrailing=x\\\\\nlast";
        let p = parse(text).unwrap();
        assert_eq!(p["a"], "1");
        assert_eq!(p["b"], "2");
        assert_eq!(p["c"], "3");
        assert_eq!(p["d=x"], "4");
        assert_eq!(p["e"], "five six");
        assert_eq!(p["f"], "A\t");
        assert_eq!(p["g"], "");
        assert_eq!(p["trailing"], "x\\");
        assert_eq!(p["last"], "");
        assert_eq!(p.len(), 9);
    }

    #[test]
    fn malformed_unicode_is_an_error() {
        assert_eq!(parse("k=\\u12G4"), Err(PropertiesError::MalformedUnicode));
        assert_eq!(parse("k=\\u12"), Err(PropertiesError::MalformedUnicode));
    }

    #[test]
    fn odd_bodies_are_lenient_like_java() {
        // Java's RequestProcessorTest sends "{key=value}": one key "{key" with value "value}".
        let p = parse("{key=value}").unwrap();
        assert_eq!(p["{key"], "value}");
    }

    #[test]
    fn format_sorts_and_keeps_java_s_layout() {
        assert_eq!(format([("b", "2"), ("a", "x=y:z")]), "a=x=y:z\nb=2\n");
    }

    #[test]
    fn no_value_becomes_a_line_of_its_own() {
        let injected = "x\nkvConfigPath=/ATT/kv.json\r\ntls.server.mode=disabled";
        for text in [
            store([("productEnvName", injected)]),
            format([("productEnvName", injected)]),
        ] {
            assert_eq!(text.lines().count(), 1, "{text}");
            let back = parse(&text).unwrap();
            assert_eq!(back.len(), 1);
            assert_eq!(back["productEnvName"], injected);
        }
    }

    #[test]
    fn store_escapes_as_properties_store() {
        assert_eq!(
            store([("a key", " v=1:#! \\ é 😀")]),
            "a\\ key=\\ v\\=1\\:\\#\\! \\\\ \\u00E9 \\uD83D\\uDE00\n"
        );
        assert_eq!(control_char("a\tb"), None);
        assert_eq!(control_char("a\rb"), Some('\r'));
        assert_eq!(control_char("a\u{85}"), Some('\u{85}'));
    }

    #[test]
    fn what_either_writer_writes_reads_back() {
        let awkward = [
            "",
            " ",
            "  lead",
            "trail  ",
            "a=b",
            "k:v",
            "#c",
            "!c",
            "\\",
            "x\\",
            "\\u0041",
            "\t\x0c",
            "line\nbreak",
            "é",
            "😀",
            "\u{FFFD}",
            "a b c",
        ];
        for key in awkward {
            for value in awkward {
                for style in [Style::File, Style::Body] {
                    let text = write([(key, value)], style);
                    let back = parse(&text).unwrap();
                    assert_eq!(back.len(), 1, "{style:?} {text:?}");
                    assert_eq!(back.get(key).map(String::as_str), Some(value), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn surrogate_pairs_are_one_character() {
        assert_eq!(parse("k=\\uD83D\\uDE00").unwrap()["k"], "😀");
        assert_eq!(parse("k=\\uD83Dx").unwrap()["k"], "\u{FFFD}x");
    }
}
