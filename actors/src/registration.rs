//! REGISTER_BROKER, from the connection that read it to the registry and back, in one place
//! (docs/registration.md). Brokers re-send their whole topic table every 30 s, usually unchanged,
//! and at scale it is megabytes of JSON, so a registration takes the cheapest road that is still
//! exact:
//!
//! 1. **Body memo.** A body byte-identical to one the same connection sent before (same hash,
//!    length, compression and request-version class) is not decoded again: the registration
//!    carries the summary remembered from it ([`TopicsPayload::Same`]). A connection remembers
//!    its last small body and up to [`BodyMemos::MAX`] large ones: a 5.x broker registering split
//!    sends a round of different parts, each the same as in its last round.
//! 2. **Off-loop decode.** A body that must be decoded is decoded on the connection's thread when
//!    small, on the CPU runtime (`background.rs`) at background priority when at least
//!    [`OFFLOAD_BODY_BYTES`] or compressed (after reserving what it may inflate to from the
//!    server-wide inflation budget), so a large registration never stalls the connections of
//!    its thread.
//! 3. **Two rounds.** If the registry cannot take a summary without the table (the instance is
//!    new or moved, the data version changed, topics were removed since), it changes nothing and
//!    answers [`NeedTopics`]; the body is then decoded after all and sent again. At most two
//!    rounds: the second always carries the table.
//! 4. **Release off the registry.** The registry drops its reference to a decoded table before
//!    answering; the last reference is here, and a large table is freed on the CPU runtime.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use rmq_protocol::body::{is_zlib_stream, RegisterBrokerBody, TopicConfigWrapper};
use rmq_protocol::code::version;
use rmq_protocol::custom_headers::{ExtReader, RegisterBrokerHeader};
use rmq_protocol::{ExtFields, RemotingCommand};
use tracing::warn;

use crate::limits::{InflationLease, Limit, Limits, Refused, ReserveInflation};
use crate::logging::Clipped;
use crate::messages::{RegisterBroker, RegisterBrokerReply};
use crate::registry::RouteRegistry;
use crate::response::read_header;
use crate::response::{overloaded, system_error, IntoResponse};
use crate::route::{ConnId, NeedTopics, Registration, TopicSummary, TopicTable, TopicsPayload};
use crate::stored;

/// Registration bodies of at least this size are decoded on the CPU runtime.
pub const OFFLOAD_BODY_BYTES: usize = 64 * 1024;

/// Topic tables of at least this many topics are freed on the CPU runtime.
const RELEASE_OFF_LOOP_TOPICS: usize = 1024;

/// What a connection remembers of the last registration body it decoded, to recognise the same
/// bytes next time without decoding them again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyMemo {
    body_hash: u64,
    body_len: usize,
    compressed: bool,
    /// The request-version ranges that read a body differently (< 3.0.11, < 5.0.0, newer).
    version_class: u8,
    summary: TopicSummary,
    filter_servers: Option<Vec<String>>,
}

/// The memos of the registration bodies a connection decoded, by body hash (see the module
/// docs): the last small one and up to [`BodyMemos::MAX`] large ones (a split broker's parts;
/// its last part, the rest, may be small), so that a client sending small bodies cannot make a
/// connection keep many.
#[derive(Debug, Clone, Default)]
pub struct BodyMemos {
    memos: HashMap<u64, BodyMemo>,
    /// The hash of the one small body kept.
    small: Option<u64>,
}

impl BodyMemos {
    /// The most large memos a connection keeps (4096 parts of 800 topics: 3.2 million topics);
    /// past it they start again.
    pub const MAX: usize = 4096;

    /// Remembers `memo` for the next registrations on the connection.
    pub fn keep(&mut self, memo: BodyMemo) {
        let hash = memo.body_hash;
        if memo.body_len < OFFLOAD_BODY_BYTES {
            if let Some(small) = self.small.replace(hash) {
                self.memos.remove(&small);
            }
        } else if self.memos.len() > Self::MAX {
            self.memos.clear();
            self.small = None;
        }
        self.memos.insert(hash, memo);
    }

    fn find(&self, body_hash: u64) -> Option<&BodyMemo> {
        self.memos.get(&body_hash)
    }
}

impl From<BodyMemo> for BodyMemos {
    fn from(memo: BodyMemo) -> Self {
        let mut memos = BodyMemos::default();
        memos.keep(memo);
        memos
    }
}

/// Why a registration got no registry answer.
#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    /// The request itself is refused (bad header, checksum or body): this is the answer.
    #[error("registration refused: {:?}", .0.remark)]
    Refused(Box<RemotingCommand>),
    /// The registry did not answer (stopped or restarting).
    #[error("route registry unavailable: {0}")]
    Unavailable(#[from] MailboxError),
    /// The registry asked for the table even with the decoded table (cannot happen while the
    /// rules are as they are; answered as an error, never looped on).
    #[error("registration could not be applied")]
    TableRefused,
}

impl IntoResponse for RegistrationError {
    fn into_response(self) -> RemotingCommand {
        match self {
            Self::Refused(response) => *response,
            Self::Unavailable(err) => {
                warn!(error = %err, "route registry unavailable");
                system_error(format!("name server busy or restarting: {err}"))
            }
            Self::TableRefused => system_error(self.to_string()),
        }
    }
}

/// Where a registration goes and what bounds it.
pub struct Registrar {
    pub routes: Addr<RouteRegistry>,
    /// Inflation budget for compressed bodies, and the count of refusals.
    pub limits: Addr<Limits>,
    /// `server.max_inflated_body_bytes`.
    pub max_inflated_body: usize,
    /// The client's address (its PROXY-header address where given): refusals are counted and
    /// logged by its IP, registrations logged with it.
    pub peer: SocketAddr,
}

/// The most a zlib stream inflates per compressed byte (deflate's limit is about 1032:1).
const MAX_ZLIB_RATIO: usize = 1032;

impl Registrar {
    /// Reserves, from the server-wide budget of bodies being decoded, what a body decoded off
    /// the connection thread may cost: a compressed body what it may inflate to, a large plain
    /// one its length; `Ok(None)` for a small plain body. Refused: SYSTEM_BUSY "[OVERLOAD]",
    /// counted.
    async fn reserve(
        &self,
        cmd: &RemotingCommand,
    ) -> Result<Option<InflationLease>, RegistrationError> {
        // The flag, or the body itself (a broker that compresses may say it does not).
        let compressed = ExtReader::of(cmd)
            .get("compressed")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || is_zlib_stream(cmd.body_bytes());
        let len = cmd.body_bytes().len();
        let bytes = if compressed && len > 0 {
            len.saturating_mul(MAX_ZLIB_RATIO)
                .min(self.max_inflated_body)
        } else if len >= OFFLOAD_BODY_BYTES {
            len
        } else {
            return Ok(None);
        };
        let reserve = ReserveInflation {
            bytes,
            release: self.limits.clone().recipient(),
        };
        match self.limits.send(reserve).await? {
            Some(lease) => Ok(Some(lease)),
            None => {
                self.limits.do_send(Refused {
                    limit: Limit::Decoding,
                    source: Some(self.peer.ip()),
                    detail: format!(
                        "compressed registration of {} bytes refused: inflation budget in use",
                        cmd.body_bytes().len()
                    ),
                });
                Err(RegistrationError::Refused(Box::new(overloaded(
                    "registration bodies being decoded use the budget (server.max_decoding_bytes)",
                ))))
            }
        }
    }
}

/// Registers `cmd`, which arrived on connection `conn` after registrations whose bodies are
/// remembered in `previous`. Answers the registry's reply and the memo to keep for the next one.
pub async fn register(
    to: Registrar,
    cmd: RemotingCommand,
    conn: ConnId,
    previous: Option<Arc<BodyMemos>>,
) -> Result<(RegisterBrokerReply, BodyMemo), RegistrationError> {
    let mut previous = previous;
    let routes = to.routes.clone();
    let max_inflated_body = to.max_inflated_body;
    // At most two rounds: the second has no memo to go by, so it always carries the table.
    for _ in 0..2 {
        let lease = to.reserve(&cmd).await?;
        // A body with a lease is large or compressed (small on the wire, large inflated):
        // decoded off-loop.
        let offload = lease.is_some();
        let (mut msg, memo) = decode_off_loop(
            cmd.clone(),
            conn,
            max_inflated_body,
            previous.take(),
            offload,
        )
        .await?;
        drop(lease);
        msg.registration.peer = Some(to.peer);
        let table = match &msg.registration.topics {
            TopicsPayload::Full(table) => Some(Arc::clone(&table.wrapper)),
            TopicsPayload::Same(_) => None,
        };
        let reply = routes.send(msg).await?;
        if let Some(table) = table {
            release(table);
        }
        match reply {
            Ok(reply) => return Ok((reply, memo)),
            Err(NeedTopics) => continue,
        }
    }
    Err(RegistrationError::TableRefused)
}

/// Decodes a registration, on the CPU runtime when `offload` (a large or compressed body).
async fn decode_off_loop(
    cmd: RemotingCommand,
    conn: ConnId,
    max_inflated_body: usize,
    previous: Option<Arc<BodyMemos>>,
    offload: bool,
) -> Result<(RegisterBroker, BodyMemo), RegistrationError> {
    if !offload {
        return decode_registration(&cmd, conn, max_inflated_body, previous.as_deref())
            .map_err(|response| RegistrationError::Refused(Box::new(response)));
    }
    let job = crate::background::spawn_cpu(move || {
        decode_registration(&cmd, conn, max_inflated_body, previous.as_deref())
    });
    match job.await {
        Ok(decoded) => decoded.map_err(|response| RegistrationError::Refused(Box::new(response))),
        Err(err) => Err(RegistrationError::Refused(Box::new(system_error(format!(
            "decoding failed: {err}"
        ))))),
    }
}

/// Drops a registration's topic table; a large one on the CPU runtime, whose threads decoded it.
fn release(topics: Arc<TopicConfigWrapper>) {
    if topics.topic_config_table.len() >= RELEASE_OFF_LOOP_TOPICS {
        drop(crate::background::spawn_cpu(move || drop(topics)));
    }
}

fn version_class(version: i32) -> u8 {
    if version < version::V3_0_11 {
        0
    } else if version < version::V5_0_0 {
        1
    } else {
        2
    }
}

/// A 64-bit hash of a body, to recognise it next time. foldhash, not SipHash: a body is up to
/// 16 MiB and hashed on every registration, and SipHash cost a tenth of decoding it. Only the
/// connection that sent a body compares against it, so a crafted collision fools its sender only.
fn body_hash(body: &[u8]) -> u64 {
    let mut hasher = foldhash::quality::FixedState::with_seed(BODY_HASH_SEED).build_hasher();
    hasher.write(body);
    hasher.finish()
}

const BODY_HASH_SEED: u64 = 0x6e61_6d65_7372_7600;

/// Reads REGISTER_BROKER (docs/protocol.md#registerbrokerbody): checksum, then the body by request
/// version, unless it is byte-identical to one of `previous` (same hash, length and decoding
/// rules). The error is the answer to send.
pub fn decode_registration(
    cmd: &RemotingCommand,
    conn: ConnId,
    max_inflated_body: usize,
    previous: Option<&BodyMemos>,
) -> Result<(RegisterBroker, BodyMemo), RemotingCommand> {
    let h = read_header::<RegisterBrokerHeader>(cmd)?;
    bounded_header(&h).map_err(refused)?;
    let body = cmd.body_bytes();
    if h.body_crc32 != 0 {
        let crc = (crc32fast::hash(body) & 0x7FFF_FFFF) as i32;
        if crc != h.body_crc32 {
            // Java builds this answer from the response-header class: an empty extFields object.
            return Err(system_error("crc32 not match").with_ext_fields(ExtFields::new()));
        }
    }
    if cmd.version < 0 {
        return Err(system_error(format!("unknown MQ version {}", cmd.version)));
    }
    let mut memo = BodyMemo {
        body_hash: body_hash(body),
        body_len: body.len(),
        compressed: h.compressed,
        version_class: version_class(cmd.version),
        summary: TopicSummary {
            data_version: Default::default(),
            fingerprint: 0,
            topic_count: 0,
        },
        filter_servers: None,
    };
    let same = previous.and_then(|p| p.find(memo.body_hash)).filter(|p| {
        (p.body_hash, p.body_len, p.compressed, p.version_class)
            == (
                memo.body_hash,
                memo.body_len,
                memo.compressed,
                memo.version_class,
            )
    });
    let (topics, filter_servers) = match same {
        Some(previous) => {
            memo = previous.clone();
            (
                TopicsPayload::Same(previous.summary),
                previous.filter_servers.clone(),
            )
        }
        None => {
            let decoded = RegisterBrokerBody::decode(
                cmd.body.as_deref(),
                h.compressed,
                cmd.version,
                max_inflated_body,
            )
            .map_err(|e| {
                warn!(broker = %Clipped(&h.broker_name), addr = %Clipped(&h.broker_addr),
                    cluster = %Clipped(&h.cluster_name), body_bytes = body.len(),
                    compressed_flag = h.compressed, reason = %Clipped(&e.to_string()),
                    "registration refused: its body cannot be read");
                system_error(e.to_string())
            })?;
            bounded_body(&decoded).map_err(refused)?;
            let filter_servers =
                (cmd.version >= version::V3_0_11).then_some(decoded.filter_server_list);
            let payload = TopicsPayload::Full(TopicTable::new(decoded.topic_config_wrapper));
            memo.summary = payload.summary();
            memo.filter_servers.clone_from(&filter_servers);
            (payload, filter_servers)
        }
    };
    let registration = Registration {
        cluster: h.cluster_name.into(),
        addr: h.broker_addr.into(),
        name: h.broker_name.into(),
        id: h.broker_id,
        ha_server_addr: h.ha_server_addr,
        zone_name: h.zone_name,
        heartbeat_timeout: h
            .heartbeat_timeout_millis
            .map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0))),
        enable_acting_master: h.enable_acting_master,
        topics,
        filter_servers,
        conn,
        peer: None,
        mq_version: cmd.version,
    };
    Ok((RegisterBroker { registration }, memo))
}

/// The answer to a registration holding a string longer than the registry keeps.
fn refused(too_long: stored::TooLong) -> RemotingCommand {
    system_error(format!("registration refused: {too_long}"))
}

/// REGISTER_BROKER's header strings the registry keeps, within their bounds (crate::stored).
fn bounded_header(h: &RegisterBrokerHeader) -> Result<(), stored::TooLong> {
    stored::name("clusterName", &h.cluster_name)?;
    stored::name("brokerName", &h.broker_name)?;
    stored::address("brokerAddr", &h.broker_addr)?;
    if let Some(ha) = &h.ha_server_addr {
        stored::address("haServerAddr", ha)?;
    }
    if let Some(zone) = &h.zone_name {
        stored::name("zoneName", zone)?;
    }
    Ok(())
}

/// The body's strings the registry keeps: topic names, topic attributes, the static-topic
/// mappings' names, filter servers.
fn bounded_body(body: &RegisterBrokerBody) -> Result<(), stored::TooLong> {
    let wrapper = &body.topic_config_wrapper;
    for (topic, config) in &wrapper.topic_config_table {
        stored::name("a topic name", topic)?;
        stored::name("a topic name", &config.topic_name)?;
        for (key, value) in &config.attributes {
            stored::name("a topic attribute's key", key)?;
            stored::bounded(
                "a topic attribute's value",
                value,
                stored::MAX_SETTING_BYTES,
            )?;
        }
    }
    for (topic, mapping) in &wrapper.topic_queue_mapping_info_map {
        stored::name("a mapped topic's name", topic)?;
        for name in [&mapping.bname, &mapping.scope, &mapping.topic]
            .into_iter()
            .flatten()
        {
            stored::name("a topic mapping's name", name)?;
        }
    }
    for server in &body.filter_server_list {
        stored::address("a filter server", server)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rmq_protocol::body::{to_json, TopicConfig};
    use rmq_protocol::custom_headers::CommandHeader;
    use rmq_protocol::fastjson::JsonStyle;
    use rmq_protocol::RequestCode;

    use super::*;

    const MAX_INFLATED: usize = 1 << 30;

    fn register_request(body: Vec<u8>, crc: i32, compressed: bool) -> RemotingCommand {
        let header = RegisterBrokerHeader {
            broker_name: "b".into(),
            broker_addr: "127.0.0.1:1".into(),
            cluster_name: "c".into(),
            ha_server_addr: None,
            broker_id: 0,
            heartbeat_timeout_millis: Some(-5),
            enable_acting_master: Some(false),
            compressed,
            body_crc32: crc,
            zone_name: None,
        };
        RemotingCommand::request(RequestCode::REGISTER_BROKER)
            .with_ext_fields(header.to_ext())
            .with_body(body)
    }

    fn sample_body() -> RegisterBrokerBody {
        let mut body = RegisterBrokerBody::default();
        for t in ["a", "b"] {
            body.topic_config_wrapper
                .topic_config_table
                .insert(t.into(), TopicConfig::new(t, 4, 6));
        }
        body
    }

    fn decode(cmd: &RemotingCommand) -> Result<RegisterBroker, RemotingCommand> {
        decode_registration(cmd, ConnId(1), MAX_INFLATED, None).map(|(msg, _)| msg)
    }

    #[test]
    fn register_checks_crc_and_decodes() {
        let json = to_json(&sample_body(), JsonStyle::Legacy);
        let crc = (crc32fast::hash(&json) & 0x7FFF_FFFF) as i32;
        match decode(&register_request(json.clone(), crc, false)) {
            Ok(m) => {
                assert_eq!(m.registration.topics.summary().topic_count, 2);
                assert_eq!(m.registration.heartbeat_timeout, Some(Duration::ZERO));
                assert_eq!(m.registration.filter_servers, Some(Vec::new()));
            }
            other => panic!("{other:?}"),
        }
        let err = decode(&register_request(json.clone(), crc ^ 1, false)).unwrap_err();
        assert_eq!(
            (err.code, err.remark.as_deref()),
            (1, Some("crc32 not match"))
        );
        // crc 0: unchecked.
        assert!(decode(&register_request(json.clone(), 0, false)).is_ok());
        // Compressed, flagged or not (a 5.x broker with compressedRegister=true sends
        // compressed=false): read either way, to the same topics.
        let zipped = sample_body().encode_compressed(true);
        for flag in [true, false] {
            match decode(&register_request(zipped.clone(), 0, flag)) {
                Ok(m) => assert_eq!(m.registration.topics.summary().topic_count, 2),
                other => panic!("compressed={flag}: {other:?}"),
            }
        }
        // JSON flagged as compressed: a decode error naming the body, as in Java.
        let err = decode(&register_request(json, 0, true)).unwrap_err();
        assert_eq!(err.code, 1);
    }

    #[test]
    fn identical_bodies_are_not_decoded_again() {
        let json = to_json(&sample_body(), JsonStyle::Legacy);
        let request = register_request(json, 0, false);
        let (first, memo) = decode_registration(&request, ConnId(1), MAX_INFLATED, None).unwrap();
        let memo = BodyMemos::from(memo);
        assert!(matches!(first.registration.topics, TopicsPayload::Full(_)));
        let (again, _) =
            decode_registration(&request, ConnId(1), MAX_INFLATED, Some(&memo)).unwrap();
        assert!(
            matches!(again.registration.topics, TopicsPayload::Same(s) if s == first.registration.topics.summary())
        );
        // Another body, or the same read under other rules, is decoded.
        let other = register_request(
            to_json(&RegisterBrokerBody::default(), JsonStyle::Legacy),
            0,
            false,
        );
        let (third, _) = decode_registration(&other, ConnId(1), MAX_INFLATED, Some(&memo)).unwrap();
        assert!(matches!(third.registration.topics, TopicsPayload::Full(_)));
        let old = request.clone().with_version(100);
        let (fourth, _) = decode_registration(&old, ConnId(1), MAX_INFLATED, Some(&memo)).unwrap();
        assert!(matches!(fourth.registration.topics, TopicsPayload::Full(_)));
    }

    #[test]
    fn the_registration_carries_the_request_version_memo_or_not() {
        let json = to_json(&sample_body(), JsonStyle::Legacy);
        let request = register_request(json, 0, false);
        let (first, memo) = decode_registration(&request, ConnId(1), MAX_INFLATED, None).unwrap();
        let memo = BodyMemos::from(memo);
        assert_eq!(first.registration.mq_version, version::V5_3_3);
        // A broker upgraded within the same body-reading rules sends the same bytes: the memo
        // spares the decoding, the version is still this request's.
        let upgraded = request.with_version(version::V5_3_3 + 2);
        let (again, _) =
            decode_registration(&upgraded, ConnId(1), MAX_INFLATED, Some(&memo)).unwrap();
        assert!(matches!(again.registration.topics, TopicsPayload::Same(_)));
        assert_eq!(again.registration.mq_version, version::V5_3_3 + 2);
    }

    /// A body of `topics` topics named after `part`, large enough to be decoded off-loop.
    fn part_request(part: usize, topics: usize) -> RemotingCommand {
        let mut body = RegisterBrokerBody::default();
        for t in 0..topics {
            let name = format!("Part{part}Topic{t:05}");
            let config = TopicConfig::new(&name, 8, 6);
            body.topic_config_wrapper
                .topic_config_table
                .insert(name, config);
        }
        register_request(to_json(&body, JsonStyle::Legacy), 0, false)
    }

    fn is_same(request: &RemotingCommand, memos: &BodyMemos) -> bool {
        let (msg, _) = decode_registration(request, ConnId(1), MAX_INFLATED, Some(memos)).unwrap();
        matches!(msg.registration.topics, TopicsPayload::Same(_))
    }

    #[test]
    fn the_parts_of_a_split_registration_are_each_recognised() {
        let parts: Vec<_> = (0..3).map(|p| part_request(p, 800)).collect();
        assert!(parts
            .iter()
            .all(|p| p.body_bytes().len() >= OFFLOAD_BODY_BYTES));
        let mut memos = BodyMemos::default();
        for part in &parts {
            let (_, memo) =
                decode_registration(part, ConnId(1), MAX_INFLATED, Some(&memos)).unwrap();
            memos.keep(memo);
        }
        // The next round: every part recognised, whatever the order.
        for part in parts.iter().rev() {
            assert!(is_same(part, &memos));
        }
        // A small body (the rest a split round ends with) is kept beside them, and only the
        // last small one is.
        let small = register_request(to_json(&sample_body(), JsonStyle::Legacy), 0, false);
        let (_, memo) = decode_registration(&small, ConnId(1), MAX_INFLATED, Some(&memos)).unwrap();
        memos.keep(memo);
        assert!(is_same(&small, &memos) && is_same(&parts[0], &memos));
        let empty = register_request(
            to_json(&RegisterBrokerBody::default(), JsonStyle::Legacy),
            0,
            false,
        );
        let (_, memo) = decode_registration(&empty, ConnId(1), MAX_INFLATED, Some(&memos)).unwrap();
        memos.keep(memo);
        assert!(is_same(&empty, &memos) && is_same(&parts[2], &memos));
        assert!(!is_same(&small, &memos));
    }

    #[actix::test]
    async fn a_summary_the_registry_cannot_take_is_sent_again_with_its_table() {
        use crate::settings::RegistrySettings;
        let routes = RouteRegistry::new(RegistrySettings::default(), false, Vec::new()).start();
        let limits = crate::limits::Limits::new(MAX_INFLATED).start();
        let to = || Registrar {
            routes: routes.clone(),
            limits: limits.clone(),
            max_inflated_body: MAX_INFLATED,
            peer: SocketAddr::from(([127, 0, 0, 1], 40_000)),
        };
        let json = to_json(&sample_body(), JsonStyle::Legacy);
        let request = register_request(json, 0, false);
        let (_, memo) = register(to(), request.clone(), ConnId(1), None)
            .await
            .unwrap();
        // The registry lost the broker (a restart): the memo alone is not enough, so the body is
        // decoded after all and the broker is back.
        routes
            .send(crate::messages::ChannelClosed {
                conns: vec![ConnId(1)],
            })
            .await
            .unwrap();
        let (reply, _) = register(to(), request, ConnId(1), Some(Arc::new(memo.into())))
            .await
            .unwrap();
        assert!(matches!(
            reply.outcome,
            crate::route::RegisterOutcome::Registered { .. }
        ));
        let stats = routes.send(crate::messages::GetRouteStats).await.unwrap();
        assert_eq!((stats.topics, stats.live_brokers), (2, 1));
    }
}
