//! The REGISTER_BROKER body: its JSON form by request version, and the zlib-compressed form a
//! 4.x broker with `compressedRegister=true` sends, inflated within a budget.

use std::collections::BTreeMap;
use std::io::Read;

use serde::{Deserialize, Serialize};

use super::error::BodyError;
use super::json::{json_objects, null_default, to_json};
use super::topic_config::{DataVersion, TopicConfig, TopicConfigWrapper, TopicQueueMappingInfo};
use crate::code::version;
use crate::fastjson;

json_objects!(RegisterBrokerBody);

/// REGISTER_BROKER body (docs/protocol.md#registerbrokerbody).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct RegisterBrokerBody {
    #[serde(rename = "filterServerList", deserialize_with = "null_default")]
    pub filter_server_list: Vec<String>,
    #[serde(
        rename = "topicConfigSerializeWrapper",
        deserialize_with = "null_default"
    )]
    pub topic_config_wrapper: TopicConfigWrapper,
}

/// Whether `bytes` begin as a zlib stream does (RFC 1950: deflate, a window of at most 32 KiB,
/// no preset dictionary, the header's check bits right). No JSON text can: its first byte is `{`,
/// `[` or white space, none of which names the deflate method.
pub fn is_zlib_stream(bytes: &[u8]) -> bool {
    let [cmf, flg, ..] = *bytes else {
        return false;
    };
    cmf & 0x0F == 8
        && cmf >> 4 <= 7
        && flg & 0x20 == 0
        && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0
}

impl RegisterBrokerBody {
    /// Decodes a REGISTER_BROKER body as Java does for a request of `request_version`
    /// (docs/protocol.md#registerbrokerbody): below V3_0_11 the body is a bare topic-config
    /// wrapper; otherwise JSON or, when `compressed`, the zlib form. `max_inflated` bounds the
    /// inflated size of a compressed body (a zlib bomb is an error, not an allocation).
    pub fn decode(
        body: Option<&[u8]>,
        compressed: bool,
        request_version: i32,
        max_inflated: usize,
    ) -> Result<Self, BodyError> {
        let Some(bytes) = body.filter(|b| !b.is_empty()) else {
            return Ok(Self::default());
        };
        if request_version < version::V3_0_11 {
            let wrapper: TopicConfigWrapper = fastjson::from_slice(bytes)?;
            return Ok(Self {
                filter_server_list: Vec::new(),
                topic_config_wrapper: wrapper,
            });
        }
        // A 5.x broker with `compressedRegister=true` compresses the body but sends
        // `compressed=false` (BrokerOuterAPI): the body itself says which form it is.
        if !compressed && !is_zlib_stream(bytes) {
            return Ok(fastjson::from_slice(bytes)?);
        }
        Self::decode_compressed(bytes, request_version >= version::V5_0_0, max_inflated)
    }

    /// The compressed form: zlib over `len|DataVersion JSON`, `count × (len|topic text)`,
    /// `len|filter-server JSON array`, and from 5.0.0 `count × (len|mapping JSON)`. Inflated as
    /// it is read, one chunk at a time into one reused buffer: what it holds at most is the
    /// decoded result plus the largest chunk, and it stops as soon as the chunks read add up to
    /// more than `max_inflated` bytes (a zlib bomb costs the time to inflate `max_inflated`
    /// bytes, never the memory).
    pub fn decode_compressed(
        bytes: &[u8],
        with_mappings: bool,
        max_inflated: usize,
    ) -> Result<Self, BodyError> {
        let mut stream = Inflating::new(bytes, max_inflated);
        let data_version: DataVersion = chunk_json(stream.chunk()?, "DataVersion")?;
        let topic_count = stream.count()?;
        let mut topic_config_table = BTreeMap::new();
        for _ in 0..topic_count {
            let text = std::str::from_utf8(stream.chunk()?)
                .map_err(|_| BodyError::Compressed("topic config is not UTF-8".into()))?;
            let config = TopicConfig::decode_text(text)?;
            topic_config_table.insert(config.topic_name.clone(), config);
        }
        // Java logs and ignores a bad filter-server list.
        let filter_server_list = fastjson::from_slice(stream.chunk()?).unwrap_or_default();
        let mut topic_queue_mapping_info_map = BTreeMap::new();
        if with_mappings {
            let mapping_count = stream.count()?;
            for _ in 0..mapping_count {
                let info: TopicQueueMappingInfo =
                    chunk_json(stream.chunk()?, "TopicQueueMappingInfo")?;
                topic_queue_mapping_info_map.insert(info.topic.clone().unwrap_or_default(), info);
            }
        }
        Ok(Self {
            filter_server_list,
            topic_config_wrapper: TopicConfigWrapper {
                data_version,
                topic_config_table,
                topic_queue_mapping_info_map,
            },
        })
    }

    /// Encodes the compressed form (what a 4.x broker with `compressedRegister=true` sends).
    pub fn encode_compressed(&self, with_mappings: bool) -> Vec<u8> {
        use std::io::Write;
        let mut raw = Vec::new();
        let put_chunk = |raw: &mut Vec<u8>, bytes: &[u8]| {
            raw.extend_from_slice(&len_i32(bytes.len()).to_be_bytes());
            raw.extend_from_slice(bytes);
        };
        let wrapper = &self.topic_config_wrapper;
        put_chunk(
            &mut raw,
            &to_json(&wrapper.data_version, fastjson::JsonStyle::Legacy),
        );
        raw.extend_from_slice(&len_i32(wrapper.topic_config_table.len()).to_be_bytes());
        for config in wrapper.topic_config_table.values() {
            put_chunk(&mut raw, config.encode_text().as_bytes());
        }
        put_chunk(
            &mut raw,
            &to_json(&self.filter_server_list, fastjson::JsonStyle::Legacy),
        );
        if with_mappings {
            raw.extend_from_slice(
                &len_i32(wrapper.topic_queue_mapping_info_map.len()).to_be_bytes(),
            );
            for info in wrapper.topic_queue_mapping_info_map.values() {
                put_chunk(&mut raw, &to_json(info, fastjson::JsonStyle::Legacy));
            }
        }
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        // Writing to a Vec cannot fail.
        let _ = encoder.write_all(&raw);
        encoder.finish().unwrap_or_default()
    }
}

fn len_i32(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

/// A chunk of the compressed form read as JSON; its errors are errors of the compressed body.
fn chunk_json<T: serde::de::DeserializeOwned>(chunk: &[u8], what: &str) -> Result<T, BodyError> {
    fastjson::from_slice(chunk).map_err(|e| BodyError::Compressed(format!("bad {what}: {e}")))
}

/// A zlib stream read as the compressed registration's length-prefixed chunks, with a budget of
/// inflated bytes.
struct Inflating<'a> {
    zlib: flate2::read::ZlibDecoder<&'a [u8]>,
    /// Inflated bytes still allowed.
    left: usize,
    limit: usize,
    chunk: Vec<u8>,
}

impl<'a> Inflating<'a> {
    fn new(bytes: &'a [u8], limit: usize) -> Self {
        Inflating {
            zlib: flate2::read::ZlibDecoder::new(bytes),
            left: limit,
            limit,
            chunk: Vec::new(),
        }
    }

    /// Takes `n` more inflated bytes from the budget.
    fn spend(&mut self, n: usize) -> Result<(), BodyError> {
        self.left = self.left.checked_sub(n).ok_or_else(|| {
            BodyError::Compressed(format!("inflates to more than {} bytes", self.limit))
        })?;
        Ok(())
    }

    /// The next big-endian `i32`, which must not be negative.
    fn count(&mut self) -> Result<usize, BodyError> {
        self.spend(4)?;
        let mut word = [0u8; 4];
        self.zlib.read_exact(&mut word).map_err(inflate_error)?;
        let n = i32::from_be_bytes(word);
        usize::try_from(n).map_err(|_| BodyError::Compressed(format!("negative count {n}")))
    }

    /// The next length-prefixed chunk, valid until the next call.
    fn chunk(&mut self) -> Result<&[u8], BodyError> {
        let len = self.count()?;
        self.spend(len)?;
        self.chunk.clear();
        // `len` is within the budget, but the stream may end sooner: read, do not reserve.
        let read = (&mut self.zlib)
            .take(len as u64)
            .read_to_end(&mut self.chunk)
            .map_err(inflate_error)?;
        if read < len {
            return Err(end_of_data());
        }
        Ok(&self.chunk)
    }
}

fn end_of_data() -> BodyError {
    BodyError::Compressed("End of compressed data has reached".into())
}

fn inflate_error(err: std::io::Error) -> BodyError {
    if err.kind() == std::io::ErrorKind::UnexpectedEof {
        end_of_data()
    } else {
        BodyError::Compressed(format!("bad zlib stream: {err}"))
    }
}
