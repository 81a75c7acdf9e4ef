//! Every JSON body decoder: fastjson::from_slice into each body type of body.rs (bare numeric
//! keys included, through quote_bare_keys). A body that decodes must encode in both fastjson
//! styles and read back; after one trip the value is a fixed point, both styles read back to the
//! same value, and the standard style is pure ASCII.
#![no_main]

use std::fmt::Debug;

use libfuzzer_sys::fuzz_target;
use rmq_protocol::body::{
    to_json, BrokerData, BrokerMemberGroup, ClusterInfo, DataVersion,
    GetBrokerMemberGroupResponseBody, KvTable, QueueData, RegisterBrokerBody, TopicConfig,
    TopicConfigWrapper, TopicList, TopicQueueMappingInfo, TopicRouteData,
};
use rmq_protocol::fastjson::{self, JsonStyle};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Reads back a text this crate wrote; failing to is a finding.
fn read_own<T: DeserializeOwned>(text: &[u8], style: JsonStyle) -> T {
    fastjson::from_slice(text).unwrap_or_else(|err| {
        panic!(
            "our own {style:?} {} does not decode: {err}: {}",
            std::any::type_name::<T>(),
            String::from_utf8_lossy(text)
        )
    })
}

fn check<T: DeserializeOwned + Serialize + PartialEq + Debug>(data: &[u8]) {
    let Ok(value) = fastjson::from_slice::<T>(data) else {
        return;
    };
    let standard = to_json(&value, JsonStyle::Standard);
    assert!(standard.is_ascii(), "the standard style is not ASCII");
    let mut trips = Vec::with_capacity(2);
    for style in [JsonStyle::Legacy, JsonStyle::Standard] {
        let once: T = read_own(&to_json(&value, style), style);
        let twice: T = read_own(&to_json(&once, style), style);
        assert_eq!(once, twice, "{style:?} round trip is not a fixed point");
        trips.push(once);
    }
    assert_eq!(trips[0], trips[1], "the two styles read back differently");
}

fuzz_target!(|data: &[u8]| {
    // The rewrite of bare keys only adds quotes.
    let quoted = fastjson::quote_bare_keys(data);
    assert!(quoted.len() >= data.len());
    check::<DataVersion>(data);
    check::<TopicConfig>(data);
    check::<TopicQueueMappingInfo>(data);
    check::<TopicConfigWrapper>(data);
    check::<RegisterBrokerBody>(data);
    check::<QueueData>(data);
    check::<BrokerData>(data);
    check::<TopicRouteData>(data);
    check::<ClusterInfo>(data);
    check::<TopicList>(data);
    check::<KvTable>(data);
    check::<BrokerMemberGroup>(data);
    check::<GetBrokerMemberGroupResponseBody>(data);
});
