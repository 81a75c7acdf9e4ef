//! Java properties text: the body of UPDATE_NAMESRV_CONFIG and GET_NAMESRV_CONFIG, and the format
//! of Java's `namesrv.properties` (docs/kv-and-config.md#java-properties, #runtime-updates).
//!
//! Parsing follows `java.util.Properties.load`: `=`, `:` or whitespace separate key and value;
//! `#` and `!` start comment lines; a line ending in an odd number of backslashes continues on the
//! next; `\t \n \f \r \uXXXX` are escapes and any other escaped character stands for itself.
//! Writing follows `MixAll.properties2String`: `key=value\n` per entry, sorted, no escaping.

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

/// Writes entries as `key=value\n`, in key order (Java's `properties2String(props, true)`).
pub fn format<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let sorted: BTreeMap<&str, &str> = entries.into_iter().collect();
    let mut out = String::new();
    for (key, value) in sorted {
        out.push_str(key);
        out.push('=');
        out.push_str(value);
        out.push('\n');
    }
    out
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
                let hex: String = chars.by_ref().take(4).collect();
                let unit = (hex.len() == 4)
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .ok_or(PropertiesError::MalformedUnicode)?;
                out.push(char::from_u32(unit).unwrap_or('\u{FFFD}'));
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
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
    fn format_sorts_and_does_not_escape() {
        assert_eq!(format([("b", "2"), ("a", "x=y")]), "a=x=y\nb=2\n");
    }
}
