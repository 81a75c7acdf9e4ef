//! The JSON header (serialize type 0) as the frame decoder reads it, and the differential check
//! of its two paths: whenever the fast scanner (header_scan.rs) accepts a text, the serde path
//! must accept it too and give the same command. A decoded header must encode again and decode
//! to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmq_fuzz::assert_header_round_trip;
use rmq_protocol::code::SerializeType;
use rmq_protocol::header_codec;

fuzz_target!(|data: &[u8]| {
    let decoded = header_codec::decode(SerializeType::Json, data);
    if let Ok(text) = std::str::from_utf8(data) {
        let (fast, serde) = header_codec::json_paths(text);
        if let Some(fast) = fast {
            match &serde {
                Ok(slow) => assert_eq!(&fast, slow, "scanner and serde disagree on {text:?}"),
                Err(err) => panic!("the scanner accepted what serde refuses ({err}): {text:?}"),
            }
            // What the decoder answers is the scanner's answer.
            match &decoded {
                Ok(cmd) => assert_eq!(cmd, &fast),
                Err(err) => panic!("the scanner accepted what the decoder refuses ({err})"),
            }
        }
    }
    if let Ok(cmd) = decoded {
        assert_header_round_trip(&cmd);
    }
});
