//! The keys under the prefix: their layout and the percent-encoding of the namespace segment.

/// Where a key under the prefix points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Entry {
    /// `P/<namespace>`: the namespace exists.
    Namespace(String),
    /// `P/<namespace>/<key>`: a value.
    Value { namespace: String, key: String },
}

impl Entry {
    pub(super) fn namespace(&self) -> &str {
        match self {
            Entry::Namespace(namespace) | Entry::Value { namespace, .. } => namespace,
        }
    }
}

/// The keys under the prefix.
#[derive(Debug, Clone)]
pub(super) struct Keys {
    /// `P/`: what is read and watched (the trailing slash keeps a sibling prefix such as `P2`
    /// out of the range).
    pub(super) dir: String,
}

impl Keys {
    pub(super) fn new(prefix: &str) -> Self {
        Keys {
            dir: format!("{}/", prefix.trim_end_matches('/')),
        }
    }

    pub(super) fn namespace(&self, namespace: &str) -> String {
        format!("{}{}", self.dir, encode(namespace))
    }

    pub(super) fn value(&self, namespace: &str, key: &str) -> String {
        format!("{}{}/{key}", self.dir, encode(namespace))
    }

    /// The first key after every key under the prefix: the end of the range read.
    pub(super) fn end(&self) -> String {
        // `dir` ends in '/', and the character after '/' is '0'.
        format!("{}0", self.dir.trim_end_matches('/'))
    }

    /// What an etcd key is, `None` if it is none of ours (another layout, not UTF-8).
    pub(super) fn parse(&self, key: &[u8]) -> Option<Entry> {
        let rest = key.strip_prefix(self.dir.as_bytes())?;
        let rest = std::str::from_utf8(rest).ok()?;
        Some(match rest.split_once('/') {
            None => Entry::Namespace(decode(rest)?),
            Some((namespace, key)) => Entry::Value {
                namespace: decode(namespace)?,
                key: key.to_owned(),
            },
        })
    }
}

/// The namespace as a key segment: `%` and `/` escaped, everything else as it is.
fn encode(namespace: &str) -> String {
    let mut out = String::with_capacity(namespace.len());
    for c in namespace.chars() {
        match c {
            '%' => out.push_str("%25"),
            '/' => out.push_str("%2F"),
            c => out.push(c),
        }
    }
    out
}

/// The namespace of a key segment; `None` unless the segment is exactly what [`encode`] makes
/// (so that two etcd keys never stand for one entry).
fn decode(segment: &str) -> Option<String> {
    let mut parts = segment.split('%');
    let mut out = parts.next().unwrap_or_default().to_owned();
    for part in parts {
        if let Some(rest) = part.strip_prefix("25") {
            out.push('%');
            out.push_str(rest);
        } else if let Some(rest) = part.strip_prefix("2F") {
            out.push('/');
            out.push_str(rest);
        } else {
            return None;
        }
    }
    Some(out)
}
