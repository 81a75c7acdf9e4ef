//! The setup: the brokers registered (unless `--preregistered`) and kept registered, one route
//! template per topic, and a probe that the first route exists.

use std::time::Instant;

use bytes::BytesMut;
use rmq_protocol::ResponseCode;
use tokio::task::JoinSet;

use super::args::ConnsArgs;
use crate::broker;
use crate::routes::{route_brokers, TOPIC_PREFIX};
use crate::wire::{self, route_request, RequestTemplate};
use crate::{BenchError, Common};

/// The route templates (one per topic) and the route body size of the first, after the brokers
/// (if any) are registered; the keepers re-register them until `run_end`.
pub(super) async fn setup(
    common: &Common,
    args: &ConnsArgs,
    run_end: Instant,
) -> Result<(Vec<RequestTemplate>, Option<JoinSet<()>>, usize), BenchError> {
    let addr = common.addr;
    let (topics, keepers) = if args.preregistered {
        println!(
            "setup: none, {} topics expected to be registered already",
            args.topics
        );
        (broker::topic_names(TOPIC_PREFIX, args.topics), None)
    } else {
        let (topics, brokers) = route_brokers(args.brokers, args.topics, args.queues)?;
        let (registered, setup) =
            broker::register_all(addr, None, brokers, args.brokers, common.timeout).await?;
        println!(
            "setup: {} broker groups x {} topics registered in {:.2} s",
            args.brokers,
            args.topics,
            setup.as_secs_f64()
        );
        let keepers = broker::keep_alive(registered, args.register_period, run_end, common.timeout);
        (topics, Some(keepers))
    };
    let templates: Vec<RequestTemplate> = topics
        .iter()
        .map(|t| RequestTemplate::new(&route_request(t)))
        .collect::<Result<_, _>>()?;
    // One probe: the route must exist before anything is measured.
    let first = templates
        .first()
        .ok_or_else(|| BenchError::Usage("no topic to poll".into()))?;
    let mut stream = wire::connect(addr, common.timeout).await?;
    let mut frame = BytesMut::new();
    first.encode(1, &mut frame);
    let mut buf = BytesMut::new();
    let reply = wire::call(&mut stream, &frame, 1, &mut buf, common.timeout).await?;
    if reply.code != ResponseCode::SUCCESS.0 || reply.body_len == 0 {
        return Err(BenchError::Protocol(format!(
            "route probe answered code {} with {} body bytes",
            reply.code, reply.body_len
        )));
    }
    Ok((templates, keepers, reply.body_len))
}
