//! The compressed REGISTER_BROKER body (`compressed=true`), through RegisterBrokerBody::decode
//! with a 4 MiB inflation limit. The first byte: bit 0 picks a 5.x request (with the mapping
//! section) or a 4.x one; bit 1 feeds the rest as the zlib stream itself, otherwise the rest is
//! the inflated content and is deflated first (so the fuzzer mutates the structure, not zlib).
//! A body that decodes must encode in the compressed form again and read back to the same body,
//! but for what the form cannot carry (see `comparable`).
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use rmq_protocol::body::{RegisterBrokerBody, TopicQueueMappingInfo};

const MAX_INFLATED: usize = 4 << 20;

/// `body` without what one trip through the compressed form loses, as it does in Java:
/// - a topic's attributes are read from the sixth space-separated token only, so attributes whose
///   JSON text has a space in it (an escaped one in a key or value, written back raw) are lost;
/// - a mapping's `null` scope is omitted when written, and an omitted scope reads as the default.
fn comparable(mut body: RegisterBrokerBody) -> RegisterBrokerBody {
    let wrapper = &mut body.topic_config_wrapper;
    for config in wrapper.topic_config_table.values_mut() {
        if config.encode_text().split(' ').count() > 6 {
            config.attributes.clear();
        }
    }
    for info in wrapper.topic_queue_mapping_info_map.values_mut() {
        if info.scope.is_none() {
            info.scope = TopicQueueMappingInfo::default().scope;
        }
    }
    body
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let with_mappings = control & 1 != 0;
    let version = if with_mappings { 479 } else { 409 };
    let zlib = if control & 2 != 0 {
        rest.to_vec()
    } else {
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(rest).expect("deflate into a Vec");
        encoder.finish().expect("deflate into a Vec")
    };
    let Ok(decoded) = RegisterBrokerBody::decode(Some(&zlib), true, version, MAX_INFLATED) else {
        return;
    };
    let again = decoded.encode_compressed(with_mappings);
    let back = RegisterBrokerBody::decode_compressed(&again, with_mappings, MAX_INFLATED)
        .unwrap_or_else(|err| panic!("our own compressed body does not decode: {err}"));
    assert_eq!(
        comparable(back),
        comparable(decoded),
        "compressed round trip"
    );
});
