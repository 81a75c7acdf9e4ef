//! The REGISTER_BROKER body, plain (uncompressed) JSON, as the registration path decodes it:
//! the first byte picks the request version (below V3_0_11 the body is a bare topic-config
//! wrapper). A body that decodes must encode in both fastjson styles and read back; after one
//! trip the value is a fixed point, and both styles read back to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmq_protocol::body::{to_json, RegisterBrokerBody};
use rmq_protocol::fastjson::JsonStyle;

/// 4 MiB, as a small server limit: plain bodies ignore it.
const MAX_INFLATED: usize = 4 << 20;

/// Request versions around the boundaries the decoder knows (V3_0_11 = 37, V5_0_0 = 413).
const VERSIONS: [i32; 8] = [0, 36, 37, 317, 409, 413, 479, 513];

/// Reads back a body this crate wrote, as a current broker's; failing to is a finding.
fn read_own(text: &[u8], style: JsonStyle) -> RegisterBrokerBody {
    RegisterBrokerBody::decode(Some(text), false, 479, MAX_INFLATED).unwrap_or_else(|err| {
        panic!(
            "our own {style:?} body does not decode: {err}: {}",
            String::from_utf8_lossy(text)
        )
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, body)) = data.split_first() else {
        return;
    };
    let version = VERSIONS[usize::from(control) % VERSIONS.len()];
    let Ok(decoded) = RegisterBrokerBody::decode(Some(body), false, version, MAX_INFLATED) else {
        return;
    };
    let mut trips = Vec::with_capacity(2);
    for style in [JsonStyle::Legacy, JsonStyle::Standard] {
        let once = read_own(&to_json(&decoded, style), style);
        let twice = read_own(&to_json(&once, style), style);
        assert_eq!(once, twice, "{style:?} round trip is not a fixed point");
        trips.push(once);
    }
    assert_eq!(trips[0], trips[1], "the two styles read back differently");
});
