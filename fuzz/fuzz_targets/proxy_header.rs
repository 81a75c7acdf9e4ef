//! The PROXY protocol header (v1 text, v2 binary) at the start of a connection: detection, then
//! parsing as the front door does. A complete header must lie within the bytes read, parse the
//! same from exactly its own bytes, and be found only where a signature was detected.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmq_transport::proxy::{self, Detection, Parsed, MAX_HEADER_BYTES};

fuzz_target!(|data: &[u8]| {
    let detection = proxy::detect(data);
    match proxy::parse(data) {
        Parsed::Complete(header) => {
            assert!(header.len > 0 && header.len <= data.len(), "{header:?}");
            assert!(header.len <= MAX_HEADER_BYTES, "{header:?}");
            assert_eq!(
                detection,
                Detection::Present,
                "a header without a signature"
            );
            assert_eq!(proxy::parse(&data[..header.len]), Parsed::Complete(header));
            // One byte short of its end, the same header is not complete yet (or not valid).
            assert!(!matches!(
                proxy::parse(&data[..header.len - 1]),
                Parsed::Complete(_)
            ));
        }
        Parsed::Incomplete => {
            // The front door reads more only while the protocol allows more.
            assert!(data.len() < MAX_HEADER_BYTES);
        }
        Parsed::Invalid(_) => {}
    }
});
