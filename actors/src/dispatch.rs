//! Request code + headers + body -> typed message (pure; runs on the connection's thread, so
//! CRC checks, inflating and JSON parsing of registrations stay off the registry's mailbox).

use std::hash::Hasher;
use std::time::Duration;

use rmq_protocol::body::{DataVersion, RegisterBrokerBody, TopicRouteData};
use rmq_protocol::code::version;
use rmq_protocol::custom_headers::{
    BrokerHeartbeatHeader, BrokerIdentityHeader, BrokerNameHeader, CommandHeader,
    DeleteKvConfigHeader, DeleteTopicHeader, GetBrokerMemberGroupHeader, GetKvConfigHeader,
    GetKvListByNamespaceHeader, GetRouteInfoHeader, GetTopicsByClusterHeader, HeaderFieldError,
    PutKvConfigHeader, QueryDataVersionHeader, RegisterBrokerHeader, RegisterTopicHeader,
};
use rmq_protocol::fastjson::{self, JsonStyle};
use rmq_protocol::{ExtFields, RemotingCommand, RequestCode};

use crate::kv::{DeleteKvConfig, GetKvConfig, GetKvList, PutKvConfig};
use crate::messages::*;
use crate::response::{not_supported, system_error};
use crate::route::{
    BrokerInstance, ConnId, Registration, TopicSummary, TopicTable, TopicsPayload, Unregistration,
};
use crate::settings::ConnectionSettings;

/// A decoded request, addressed to the actor that answers it.
#[derive(Debug)]
pub enum Request {
    /// REGISTER_BROKER is decoded by the connection with [`decode_registration`], which needs
    /// the connection's memory of the previous body.
    RegisterBroker(RemotingCommand),
    UnregisterBroker(UnregisterBroker),
    BrokerHeartbeat(BrokerHeartbeat),
    QueryDataVersion(QueryDataVersion),
    GetRouteInfo(GetRouteInfo),
    GetClusterInfo(GetClusterInfo),
    GetBrokerMemberGroup(GetBrokerMemberGroup),
    WipeWritePerm(WipeWritePerm),
    AddWritePerm(AddWritePerm),
    GetTopicList(GetTopicList),
    DeleteTopic(DeleteTopic),
    RegisterTopic(RegisterTopic),
    PutKvConfig(PutKvConfig),
    GetKvConfig(GetKvConfig),
    DeleteKvConfig(DeleteKvConfig),
    GetKvList(GetKvList),
    UpdateNamesrvConfig(UpdateNamesrvConfig),
    GetNamesrvConfig(GetNamesrvConfig),
}

/// Decodes `cmd` into a [`Request`], or the response to send at once: unknown codes, bad
/// headers and undecodable bodies. Registrations are decoded by [`decode_registration`].
pub fn dispatch(cmd: &RemotingCommand) -> Result<Request, RemotingCommand> {
    let code = cmd.request_code();
    let request = match code {
        RequestCode::REGISTER_BROKER => Request::RegisterBroker(cmd.clone()),
        RequestCode::UNREGISTER_BROKER => {
            let h = header::<BrokerIdentityHeader>(cmd)?;
            Request::UnregisterBroker(UnregisterBroker {
                request: Unregistration {
                    cluster: h.cluster_name.into(),
                    addr: h.broker_addr.into(),
                    name: h.broker_name.into(),
                    id: h.broker_id,
                },
            })
        }
        RequestCode::BROKER_HEARTBEAT => {
            let h = header::<BrokerHeartbeatHeader>(cmd)?;
            Request::BrokerHeartbeat(BrokerHeartbeat {
                instance: BrokerInstance::new(h.cluster_name, h.broker_addr),
            })
        }
        RequestCode::QUERY_DATA_VERSION => {
            let h = header::<QueryDataVersionHeader>(cmd)?;
            let version = match cmd.body.as_deref() {
                Some(bytes) => Some(
                    fastjson::from_slice::<DataVersion>(bytes)
                        .map_err(|e| system_error(format!("bad DataVersion body: {e}")))?,
                ),
                None => None,
            };
            Request::QueryDataVersion(QueryDataVersion {
                instance: BrokerInstance::new(h.cluster_name, h.broker_addr),
                version,
            })
        }
        RequestCode::GET_ROUTEINFO_BY_TOPIC => {
            let h = header::<GetRouteInfoHeader>(cmd)?;
            let style =
                if cmd.version >= version::V4_9_4 || h.accept_standard_json_only == Some(true) {
                    JsonStyle::Standard
                } else {
                    JsonStyle::Legacy
                };
            let zone = h
                .zone_name
                .filter(|zone| h.zone_mode && !zone.trim().is_empty());
            Request::GetRouteInfo(GetRouteInfo {
                topic: h.topic,
                style,
                zone,
            })
        }
        RequestCode::GET_BROKER_CLUSTER_INFO => Request::GetClusterInfo(GetClusterInfo),
        RequestCode::GET_BROKER_MEMBER_GROUP => {
            let h = header::<GetBrokerMemberGroupHeader>(cmd)?;
            Request::GetBrokerMemberGroup(GetBrokerMemberGroup {
                cluster: h.cluster_name,
                name: h.broker_name,
            })
        }
        RequestCode::WIPE_WRITE_PERM_OF_BROKER => Request::WipeWritePerm(WipeWritePerm {
            name: header::<BrokerNameHeader>(cmd)?.broker_name,
        }),
        RequestCode::ADD_WRITE_PERM_OF_BROKER => Request::AddWritePerm(AddWritePerm {
            name: header::<BrokerNameHeader>(cmd)?.broker_name,
        }),
        RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER => topic_list(TopicListKind::All),
        RequestCode::GET_TOPICS_BY_CLUSTER => topic_list(TopicListKind::ByCluster(
            header::<GetTopicsByClusterHeader>(cmd)?.cluster,
        )),
        RequestCode::GET_SYSTEM_TOPIC_LIST_FROM_NS => topic_list(TopicListKind::System),
        RequestCode::GET_UNIT_TOPIC_LIST => topic_list(TopicListKind::Unit),
        RequestCode::GET_HAS_UNIT_SUB_TOPIC_LIST => topic_list(TopicListKind::HasUnitSub),
        RequestCode::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST => {
            topic_list(TopicListKind::HasUnitSubUnUnit)
        }
        RequestCode::DELETE_TOPIC_IN_NAMESRV => {
            let h = header::<DeleteTopicHeader>(cmd)?;
            Request::DeleteTopic(DeleteTopic {
                topic: h.topic,
                cluster: h.cluster_name,
            })
        }
        RequestCode::REGISTER_TOPIC_IN_NAMESRV => {
            let h = header::<RegisterTopicHeader>(cmd)?;
            let queue_datas = match cmd.body.as_deref() {
                Some(bytes) => {
                    fastjson::from_slice::<TopicRouteData>(bytes)
                        .map_err(|e| system_error(format!("bad TopicRouteData body: {e}")))?
                        .queue_datas
                }
                None => Vec::new(),
            };
            Request::RegisterTopic(RegisterTopic {
                topic: h.topic,
                queue_datas,
            })
        }
        RequestCode::PUT_KV_CONFIG => {
            let h = header::<PutKvConfigHeader>(cmd)?;
            Request::PutKvConfig(PutKvConfig {
                namespace: h.namespace,
                key: h.key,
                value: h.value,
            })
        }
        RequestCode::GET_KV_CONFIG => {
            let h = header::<GetKvConfigHeader>(cmd)?;
            Request::GetKvConfig(GetKvConfig {
                namespace: h.namespace,
                key: h.key,
            })
        }
        RequestCode::DELETE_KV_CONFIG => {
            let h = header::<DeleteKvConfigHeader>(cmd)?;
            Request::DeleteKvConfig(DeleteKvConfig {
                namespace: h.namespace,
                key: h.key,
            })
        }
        RequestCode::GET_KVLIST_BY_NAMESPACE => Request::GetKvList(GetKvList {
            namespace: header::<GetKvListByNamespaceHeader>(cmd)?.namespace,
        }),
        RequestCode::UPDATE_NAMESRV_CONFIG => Request::UpdateNamesrvConfig(UpdateNamesrvConfig {
            body: cmd.body.clone(),
        }),
        RequestCode::GET_NAMESRV_CONFIG => Request::GetNamesrvConfig(GetNamesrvConfig),
        _ => return Err(not_supported(cmd.code)),
    };
    Ok(request)
}

fn topic_list(kind: TopicListKind) -> Request {
    Request::GetTopicList(GetTopicList { kind })
}

/// Reads a custom header; a missing or unparsable required field is a SYSTEM_ERROR naming it.
fn header<H: CommandHeader>(cmd: &RemotingCommand) -> Result<H, RemotingCommand> {
    H::decode(cmd).map_err(|e: HeaderFieldError| system_error(e.to_string()))
}

/// What a connection remembers of the last registration body it decoded, to recognise the same
/// bytes next time (brokers re-send an unchanged body every 30 s) without decoding them again.
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

fn version_class(version: i32) -> u8 {
    if version < version::V3_0_11 {
        0
    } else if version < version::V5_0_0 {
        1
    } else {
        2
    }
}

fn body_hash(body: &[u8]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    hasher.write(body);
    hasher.finish()
}

/// REGISTER_BROKER (spec §3.4 steps 1-2): checksum, then the body by request version. A body
/// byte-identical to `previous` (same hash, length and decoding rules) is not decoded again: the
/// registration carries the summary remembered from it ([`TopicsPayload::Same`]).
pub fn decode_registration(
    cmd: &RemotingCommand,
    conn: ConnId,
    settings: &ConnectionSettings,
    previous: Option<&BodyMemo>,
) -> Result<(RegisterBroker, BodyMemo), RemotingCommand> {
    let h = header::<RegisterBrokerHeader>(cmd)?;
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
    let same = previous.filter(|p| {
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
                settings.max_inflated_body,
            )
            .map_err(|e| system_error(e.to_string()))?;
            let filter_servers =
                (cmd.version >= version::V3_0_11).then_some(decoded.filter_server_list);
            let table = TopicTable::new(decoded.topic_config_wrapper);
            let payload = TopicsPayload::Full(table);
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
    };
    Ok((RegisterBroker { registration }, memo))
}

#[cfg(test)]
mod tests {
    use rmq_protocol::body::{to_json, TopicConfig};
    use rmq_protocol::custom_headers::{CommandHeader, RegisterBrokerHeader};

    use super::*;

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

    #[test]
    fn register_checks_crc_and_decodes() {
        let json = to_json(&sample_body(), JsonStyle::Legacy);
        let crc = (crc32fast::hash(&json) & 0x7FFF_FFFF) as i32;
        let settings = ConnectionSettings::default();
        let dispatch = |cmd: &RemotingCommand, conn: ConnId, settings: &ConnectionSettings| {
            decode_registration(cmd, conn, settings, None).map(|(msg, _)| msg)
        };
        match dispatch(
            &register_request(json.clone(), crc, false),
            ConnId(1),
            &settings,
        ) {
            Ok(m) => {
                assert_eq!(m.registration.topics.summary().topic_count, 2);
                assert_eq!(m.registration.heartbeat_timeout, Some(Duration::ZERO));
                assert_eq!(m.registration.filter_servers, Some(Vec::new()));
            }
            other => panic!("{other:?}"),
        }
        let err = dispatch(
            &register_request(json.clone(), crc ^ 1, false),
            ConnId(1),
            &settings,
        )
        .unwrap_err();
        assert_eq!(
            (err.code, err.remark.as_deref()),
            (1, Some("crc32 not match"))
        );
        // crc 0: unchecked.
        assert!(dispatch(&register_request(json, 0, false), ConnId(1), &settings).is_ok());
        // Compressed, with a wrong flag: a decode error naming the body.
        let zipped = sample_body().encode_compressed(true);
        assert!(dispatch(
            &register_request(zipped.clone(), 0, true),
            ConnId(1),
            &settings
        )
        .is_ok());
        let err = dispatch(&register_request(zipped, 0, false), ConnId(1), &settings).unwrap_err();
        assert_eq!(err.code, 1);
    }

    #[test]
    fn identical_bodies_are_not_decoded_again() {
        let settings = ConnectionSettings::default();
        let json = to_json(&sample_body(), JsonStyle::Legacy);
        let request = register_request(json, 0, false);
        let (first, memo) = decode_registration(&request, ConnId(1), &settings, None).unwrap();
        assert!(matches!(first.registration.topics, TopicsPayload::Full(_)));
        let (again, _) = decode_registration(&request, ConnId(1), &settings, Some(&memo)).unwrap();
        assert!(
            matches!(again.registration.topics, TopicsPayload::Same(s) if s == first.registration.topics.summary())
        );
        // Another body, or the same read under other rules, is decoded.
        let other = register_request(
            to_json(&RegisterBrokerBody::default(), JsonStyle::Legacy),
            0,
            false,
        );
        let (third, _) = decode_registration(&other, ConnId(1), &settings, Some(&memo)).unwrap();
        assert!(matches!(third.registration.topics, TopicsPayload::Full(_)));
        let old = request.clone().with_version(100);
        let (fourth, _) = decode_registration(&old, ConnId(1), &settings, Some(&memo)).unwrap();
        assert!(matches!(fourth.registration.topics, TopicsPayload::Full(_)));
        // dispatch leaves registrations to the connection.
        assert!(matches!(dispatch(&request), Ok(Request::RegisterBroker(_))));
    }

    #[test]
    fn route_style_by_version_and_flag() {
        let style = |cmd: RemotingCommand| match dispatch(&cmd) {
            Ok(Request::GetRouteInfo(m)) => m.style,
            other => panic!("{other:?}"),
        };
        let req =
            RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "T");
        assert_eq!(style(req.clone()), JsonStyle::Standard);
        assert_eq!(style(req.clone().with_version(317)), JsonStyle::Legacy);
        assert_eq!(
            style(
                req.with_version(317)
                    .with_ext("acceptStandardJsonOnly", "true")
            ),
            JsonStyle::Standard
        );
    }

    #[test]
    fn unknown_and_bad_requests_answer_at_once() {
        let err = dispatch(&RemotingCommand::request(RequestCode(10))).unwrap_err();
        assert_eq!(err.code, 3);
        let err = dispatch(&RemotingCommand::request(RequestCode::UNREGISTER_BROKER)).unwrap_err();
        assert_eq!(
            err.remark.as_deref(),
            Some("the custom field <brokerName> is null")
        );
        let bad_version = RemotingCommand::request(RequestCode::QUERY_DATA_VERSION)
            .with_ext("brokerAddr", "a")
            .with_ext("clusterName", "c")
            .with_body(&b"{not json"[..]);
        assert_eq!(dispatch(&bad_version).unwrap_err().code, 1);
    }
}
