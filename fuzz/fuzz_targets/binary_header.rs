//! The ROCKETMQ binary header (serialize type 1). A decoded header must encode again and decode
//! to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmq_fuzz::assert_header_round_trip;
use rmq_protocol::code::SerializeType;
use rmq_protocol::header_codec;

fuzz_target!(|data: &[u8]| {
    if let Ok(cmd) = header_codec::decode(SerializeType::RocketMq, data) {
        assert_header_round_trip(&cmd);
    }
});
