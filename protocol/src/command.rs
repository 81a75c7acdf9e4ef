//! `RemotingCommand`: one request or response, header fields plus an optional body
//! (docs/protocol.md#frames, #json-header, #rocketmq-header, #flags-opaque-and-oneway).

use bytes::Bytes;
use compact_str::CompactString;
use serde::ser::{Serialize, SerializeMap, Serializer};
use smallvec::SmallVec;

use crate::code::{version, LanguageCode, RequestCode, ResponseCode, SerializeType};

/// `flag` bit 0: the command is a response.
pub const FLAG_RESPONSE: i32 = 1;
/// `flag` bit 1: the request wants no response.
pub const FLAG_ONEWAY: i32 = 2;

/// The custom header: string keys to string values, in the order they were received or added.
///
/// A small vector rather than a map: headers have a handful of entries, lookups are linear scans
/// over a few strings, and the sender's order is kept for re-encoding. One entry, with key and
/// value up to 24 bytes each, lives inline: reading the header of a route query (one `topic`)
/// allocates nothing. (Four inline entries were measured too: the larger command then costs more
/// in copies than the allocation it saves.)
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtFields(SmallVec<[(CompactString, CompactString); 1]>);

impl ExtFields {
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of `key`, if present. Java looks fields up by exact name; of a key read twice,
    /// the later value counts (Java's map keeps the last).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Appends an entry read from the wire, in constant time (a header of many keys decodes in
    /// linear time): a repeated key is kept, and [`ExtFields::get`] answers its last value.
    pub(crate) fn push_read(&mut self, key: &str, value: &str) {
        self.0
            .push((CompactString::from(key), CompactString::from(value)));
    }

    /// Sets `key` to `value`, replacing an earlier value of the same key.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.insert_str(&key.into(), &value.into());
    }

    /// [`ExtFields::insert`] from borrowed text, copied only if it does not fit inline.
    pub fn insert_str(&mut self, key: &str, value: &str) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = CompactString::from(value),
            None => self
                .0
                .push((CompactString::from(key), CompactString::from(value))),
        }
    }

    /// Builder form of [`ExtFields::insert`].
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.insert(key, value);
        self
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for ExtFields {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut fields = Self::new();
        for (k, v) in iter {
            fields.insert(k, v);
        }
        fields
    }
}

impl Serialize for ExtFields {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k.as_str(), v.as_str())?;
        }
        map.end()
    }
}

/// One frame's command: the decoded header and the (zero-copy) body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotingCommand {
    /// Request code in requests, response code in responses.
    pub code: i32,
    pub language: LanguageCode,
    /// The sender's `MQVersion` ordinal.
    pub version: i32,
    /// Request id chosen by the requester; echoed in the response.
    pub opaque: i32,
    pub flag: i32,
    pub remark: Option<String>,
    /// `None` when the header has no `extFields` at all (Java omits the key).
    pub ext_fields: Option<ExtFields>,
    /// How the header was (or will be) serialized.
    pub serialize_type: SerializeType,
    /// `None` for an empty body: Java cannot tell an empty body from an absent one.
    pub body: Option<Bytes>,
}

impl RemotingCommand {
    /// A request as a Java 5.3.3 client sends it (the release the Java fixtures of
    /// `tests/fixtures/` were captured with).
    pub fn request(code: RequestCode) -> Self {
        Self {
            code: code.0,
            language: LanguageCode::Java,
            version: version::V5_3_3,
            opaque: 0,
            flag: 0,
            remark: None,
            ext_fields: None,
            serialize_type: SerializeType::Json,
            body: None,
        }
    }

    /// A response with `code` and `remark`; opaque, version and serialize type are set by the caller
    /// (see [`RemotingCommand::answering`]).
    pub fn response(code: ResponseCode, remark: Option<String>) -> Self {
        Self {
            code: code.0,
            language: LanguageCode::Java,
            version: version::V5_5_0,
            opaque: 0,
            flag: FLAG_RESPONSE,
            remark,
            ext_fields: None,
            serialize_type: SerializeType::Json,
            body: None,
        }
    }

    pub fn success() -> Self {
        Self::response(ResponseCode::SUCCESS, None)
    }

    /// Marks this response as the answer to a request with `opaque`.
    pub fn answering(mut self, opaque: i32) -> Self {
        self.opaque = opaque;
        self.flag = FLAG_RESPONSE;
        self
    }

    pub fn with_opaque(mut self, opaque: i32) -> Self {
        self.opaque = opaque;
        self
    }

    pub fn with_version(mut self, version: i32) -> Self {
        self.version = version;
        self
    }

    pub fn with_language(mut self, language: LanguageCode) -> Self {
        self.language = language;
        self
    }

    pub fn with_serialize_type(mut self, serialize_type: SerializeType) -> Self {
        self.serialize_type = serialize_type;
        self
    }

    pub fn with_ext_fields(mut self, ext_fields: ExtFields) -> Self {
        self.ext_fields = Some(ext_fields);
        self
    }

    /// Adds one ext field, creating the map if needed.
    pub fn with_ext(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.ext_fields
            .get_or_insert_with(ExtFields::new)
            .insert(key, value);
        self
    }

    /// Sets the body; an empty body is stored as `None`, as Java decodes it.
    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        let body = body.into();
        self.body = (!body.is_empty()).then_some(body);
        self
    }

    pub fn with_flag(mut self, flag: i32) -> Self {
        self.flag = flag;
        self
    }

    pub fn request_code(&self) -> RequestCode {
        RequestCode(self.code)
    }

    pub fn response_code(&self) -> ResponseCode {
        ResponseCode(self.code)
    }

    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    /// An ext field of this command.
    pub fn ext(&self, key: &str) -> Option<&str> {
        self.ext_fields.as_ref().and_then(|f| f.get(key))
    }

    pub fn body_bytes(&self) -> &[u8] {
        self.body.as_deref().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext_fields_keep_order_and_replace() {
        let mut f = ExtFields::new().with("b", "1").with("a", "2");
        f.insert("b", "3");
        assert_eq!(f.iter().collect::<Vec<_>>(), vec![("b", "3"), ("a", "2")]);
        assert_eq!(f.get("a"), Some("2"));
        assert_eq!(f.get("c"), None);
    }

    #[test]
    fn empty_body_is_no_body() {
        let cmd = RemotingCommand::success().with_body(Vec::new());
        assert_eq!(cmd.body, None);
        assert!(cmd.body_bytes().is_empty());
    }

    #[test]
    fn flags() {
        let req = RemotingCommand::request(RequestCode::BROKER_HEARTBEAT).with_flag(FLAG_ONEWAY);
        assert!(req.is_oneway());
        assert!(!req.is_response());
        let resp = RemotingCommand::success().answering(5);
        assert!(resp.is_response());
        assert_eq!(resp.opaque, 5);
    }
}
