//! Every case, in report order: the headers' (`headers`), then the bodies' (`bodies`).

mod bodies;
mod headers;

use super::case::Case;

/// Every case, in report order.
pub(super) fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    headers::codec(&mut all);
    headers::json_header_fields(&mut all);
    headers::json_header_numbers_and_escapes(&mut all);
    headers::json_header_nesting(&mut all);
    headers::json_header_late_refusals(&mut all);
    headers::binary_headers(&mut all);
    headers::typed_headers(&mut all);
    bodies::register_json(&mut all);
    bodies::register_compressed_topics(&mut all);
    bodies::register_compressed_limits(&mut all);
    bodies::topic_route(&mut all);
    bodies::data_version(&mut all);
    bodies::properties(&mut all);
    all
}

#[cfg(test)]
mod tests {
    use rmq_protocol::codec::DEFAULT_MAX_FRAME;

    use super::*;
    use crate::cost::measure::json_path;

    #[test]
    fn every_case_builds_within_its_size() {
        for case in cases() {
            for target in [4096, 20_000] {
                let input = (case.build)(target, DEFAULT_MAX_FRAME).unwrap();
                assert!(
                    input.size <= target + 64,
                    "{} / {}: {} > {target}",
                    case.decoder,
                    case.shape,
                    input.size
                );
                let _ = (case.decode)(&input);
            }
        }
    }

    #[test]
    fn accepted_shapes_are_accepted() {
        // The shapes meant to be accepted are (a builder mistake would time a refusal instead).
        for case in cases() {
            let refusal = case.shape.contains("refus") || case.shape.contains("too deep");
            let input = (case.build)(20_000, DEFAULT_MAX_FRAME).unwrap();
            let outcome = (case.decode)(&input);
            assert_eq!(
                outcome.is_ok(),
                !refusal,
                "{} / {}: {outcome:?}",
                case.decoder,
                case.shape
            );
        }
    }

    #[test]
    fn json_header_paths_are_as_named() {
        for case in cases().iter().filter(|c| c.decoder == "json header") {
            let input = (case.build)(20_000, DEFAULT_MAX_FRAME).unwrap();
            let path = json_path(&input.data);
            if case.shape.contains("(serde)") {
                assert_eq!(path, "serde", "{}", case.shape);
            }
        }
    }
}
