//! The PROXY protocol header (v1 text, v2 binary) at the start of a connection: detection, then
//! parsing as the front door does. A complete header must lie within the bytes read, parse the
//! same from exactly its own bytes, and be found only where a signature was detected; every
//! split of it into two reads must give the same header (each shorter prefix waits for more).
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
            // Cut anywhere after its signature (the front door reads until `detect` says
            // Present), the same header is not complete yet: the first read waits for the rest.
            for cut in 12.min(header.len)..header.len {
                if proxy::detect(&data[..cut]) == Detection::Present {
                    assert_eq!(proxy::parse(&data[..cut]), Parsed::Incomplete, "cut at {cut}");
                }
            }
        }
        Parsed::Incomplete => {
            // The front door reads more only while the protocol allows more.
            assert!(data.len() < MAX_HEADER_BYTES);
        }
        Parsed::Invalid(_) => {}
    }
});
