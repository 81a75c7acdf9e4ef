//! Every case, in report order: the headers' (`headers`), then the bodies' (`bodies`).

mod bodies;
mod headers;

use super::case::Case;

/// The families of cases, each pushing its cases, in report order.
const FAMILIES: [fn(&mut Vec<Case>); 13] = [
    headers::codec,
    headers::json_header_fields,
    headers::json_header_numbers_and_escapes,
    headers::json_header_nesting,
    headers::json_header_late_refusals,
    headers::binary_headers,
    headers::typed_headers,
    bodies::register_json,
    bodies::register_compressed_topics,
    bodies::register_compressed_limits,
    bodies::topic_route,
    bodies::data_version,
    bodies::properties,
];

/// Every case, in report order.
pub(super) fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    for push in FAMILIES {
        push(&mut all);
    }
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
