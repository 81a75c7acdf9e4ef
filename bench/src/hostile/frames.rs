//! The hostile frames: for each kind, the costliest frame the server's limits allow, and per
//! hostile connection the variants it alternates.

use bytes::{Bytes, BytesMut};
use rmq_protocol::codec::encode_frame;
use rmq_protocol::custom_headers::{CommandHeader, RegisterBrokerHeader};
use rmq_protocol::{RemotingCommand, RequestCode};

use super::args::{HostileArgs, Kind};
use super::names::{HOSTILE_OPAQUE, KV_NAMESPACE, PROBE_GROUP, PROBE_TOPIC};
use crate::broker::CLUSTER;
use crate::cost::build::{
    compressed_raw, numbered, raw_frame, repeat, text, topic_entry, unit, zlib, HEADER_TAIL,
};
use crate::BenchError;

/// The frames of one hostile kind: per hostile connection, the variants it alternates.
pub(super) struct Hostile {
    pub(super) kind: Kind,
    /// What the frames are, for the report.
    pub(super) what: String,
    pub(super) wire_bytes: usize,
    pub(super) frames: Vec<Vec<Bytes>>,
}

/// What the frames of a kind are, for the report, and per connection the variants it
/// alternates (one set for every connection when there is just one).
type Frames = (String, Vec<Vec<Bytes>>);

/// Builds the frames of `kind` for `conns` connections.
pub(super) fn hostile_frames(
    kind: Kind,
    conns: usize,
    args: &HostileArgs,
) -> Result<Hostile, BenchError> {
    // Room for the length field and header-length word; a header is at most 24 bits long.
    let frame_room = args.max_frame.saturating_sub(8);
    let header_room = frame_room.min(0x00FF_FFFF).saturating_sub(64);
    let (what, per_conn): Frames = match kind {
        Kind::HeaderFields => header_fields(header_room),
        Kind::HeaderNested => header_nested(header_room),
        Kind::KvValue => kv_value(header_room),
        Kind::RegisterPlain => register_plain(frame_room, conns)?,
        Kind::RegisterCompressed | Kind::RegisterCompressedSmall => {
            register_compressed(kind, conns, args)?
        }
        Kind::TopicRoute => topic_route(frame_room),
        Kind::DataVersion => data_version(frame_room),
        Kind::Config => config(frame_room),
        Kind::TopicLists => topic_lists(),
    };
    let wire_bytes = per_conn
        .first()
        .and_then(|v| v.first())
        .map_or(0, Bytes::len);
    let frames = if per_conn.len() >= conns {
        per_conn
    } else {
        // One set of frames shared by every connection (the Bytes are reference-counted).
        let first = per_conn.into_iter().next().unwrap_or_default();
        vec![first; conns]
    };
    Ok(Hostile {
        kind,
        what,
        wire_bytes,
        frames,
    })
}

/// One frame, for every connection.
fn shared(frame: Vec<u8>) -> Vec<Bytes> {
    vec![Bytes::from(frame)]
}

/// GET_ROUTEINFO_BY_TOPIC whose header fills the frame with ext fields, on the serde path.
fn header_fields(header_room: usize) -> Frames {
    let prefix = format!(r#"{{"code":"105","extFields":{{"topic":"{PROBE_TOPIC}","#);
    let suffix = format!("}}{HEADER_TAIL}");
    let header = text(
        header_room,
        prefix.as_bytes(),
        b",",
        numbered(r#""k"#, r#"":"v""#),
        suffix.as_bytes(),
    );
    let what = format!("route query, {} ext fields", header.len() / 15);
    (what, vec![shared(raw_frame(0, &header, b""))])
}

/// GET_ROUTEINFO_BY_TOPIC whose header carries arrays nested 100 deep, side by side.
fn header_nested(header_room: usize) -> Frames {
    let prefix = format!(r#"{{"code":105,"extFields":{{"topic":"{PROBE_TOPIC}","n":["#);
    let suffix = format!("]}}{HEADER_TAIL}");
    // Arrays nested 100 deep (within serde_json's limit of 128), side by side.
    let block = [vec![b'['; 100], vec![b']'; 100]].concat();
    let header = text(
        header_room,
        prefix.as_bytes(),
        b",",
        |_, out| out.extend_from_slice(&block),
        suffix.as_bytes(),
    );
    let what = format!(
        "route query, one ext value of {} arrays nested 100 deep",
        header.len() / 201
    );
    (what, vec![shared(raw_frame(0, &header, b""))])
}

/// PUT_KV_CONFIG whose header carries a value of unicode escapes.
fn kv_value(header_room: usize) -> Frames {
    let prefix = format!(
        r#"{{"code":100,"extFields":{{"namespace":"{KV_NAMESPACE}-big","key":"big","value":""#
    );
    let suffix = format!(r#""}}{HEADER_TAIL}"#);
    let header = text(
        header_room,
        prefix.as_bytes(),
        b"",
        unit(br"\u0041"),
        suffix.as_bytes(),
    );
    let what = format!(
        "PUT_KV_CONFIG, value of {} unicode escapes",
        header.len() / 6
    );
    (what, vec![shared(raw_frame(0, &header, b""))])
}

/// REGISTER_BROKER with a JSON body of as many topics as fit, in two versions.
fn register_plain(frame_room: usize, conns: usize) -> Result<Frames, BenchError> {
    let mut variants = Vec::new();
    let mut topics = 0;
    for counter in [1, 2] {
        let prefix = format!(
            r#"{{"filterServerList":[],"topicConfigSerializeWrapper":{{"dataVersion":{{"counter":{counter},"stateVersion":0,"timestamp":1700000000000}},"mappingDataVersion":{{"counter":1,"stateVersion":0,"timestamp":1700000000000}},"topicConfigTable":{{"#
        );
        let suffix = br#"},"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#;
        let mut body = Vec::with_capacity(frame_room);
        body.extend_from_slice(prefix.as_bytes());
        topics = repeat(
            &mut body,
            frame_room.saturating_sub(suffix.len() + 512),
            b",",
            topic_entry(|i| format!("BenchHostileP{i:07}")),
        );
        body.extend_from_slice(suffix);
        variants.push(body);
    }
    let frames = register_frames(&variants, false, conns, "plain")?;
    Ok((format!("JSON body, {topics} topics"), frames))
}

/// Compressed REGISTER_BROKER inflating to the inflation limit: distinct topics, or (small) one
/// topic text of spaces.
fn register_compressed(kind: Kind, conns: usize, args: &HostileArgs) -> Result<Frames, BenchError> {
    let small = kind == Kind::RegisterCompressedSmall;
    let mut variants = Vec::new();
    let mut topics = 0;
    for counter in [1, 2] {
        let version =
            format!(r#"{{"counter":{counter},"stateVersion":0,"timestamp":1700000000000}}"#);
        let target = args.max_inflated.saturating_sub(64);
        let raw = if small {
            // One topic whose text runs on in spaces to the limit, and a plain one (a
            // broker's first registration may not carry exactly one topic).
            let mut text = b"BenchHostileSpaces 8 8 6 SINGLE_TAG".to_vec();
            text.resize(target.saturating_sub(256), b' ');
            let mut texts =
                vec![text, b"BenchHostileSpaces2 8 8 6 SINGLE_TAG".to_vec()].into_iter();
            compressed_raw(
                target,
                version.as_bytes(),
                move |_, out| {
                    if let Some(text) = texts.next() {
                        out.extend_from_slice(&text);
                    }
                },
                &[],
            )
        } else {
            compressed_raw(
                target,
                version.as_bytes(),
                numbered("BenchHostileC", " 8 8 6 SINGLE_TAG {}"),
                &[],
            )
        };
        topics = raw.len() / 40;
        variants.push(zlib(&raw)?);
    }
    let frames = register_frames(&variants, true, conns, if small { "small" } else { "zlib" })?;
    let what = if small {
        format!(
            "zlib body inflating to {}, one topic text of spaces",
            human(args.max_inflated)
        )
    } else {
        format!(
            "zlib body inflating to {}, ~{topics} topics",
            human(args.max_inflated)
        )
    };
    Ok((what, frames))
}

/// REGISTER_TOPIC_IN_NAMESRV with a TopicRouteData body of as many queueDatas as fit.
fn topic_route(frame_room: usize) -> Frames {
    let header =
        format!(r#"{{"code":217,"extFields":{{"topic":"BenchHostileRoute"}}{HEADER_TAIL}"#);
    let body = text(
        frame_room.saturating_sub(header.len() + 64),
        br#"{"brokerDatas":[],"filterServerTable":{},"queueDatas":["#,
        b",",
        numbered(
            r#"{"brokerName":"b"#,
            r#"","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}"#,
        ),
        b"]}",
    );
    let what = format!("TopicRouteData of {} queueDatas", body.len() / 80);
    (what, vec![shared(raw_frame(0, header.as_bytes(), &body))])
}

/// QUERY_DATA_VERSION with a DataVersion body of as many unknown fields as fit.
fn data_version(frame_room: usize) -> Frames {
    let header = format!(
        r#"{{"code":322,"extFields":{{"brokerAddr":"127.0.0.1:20000","brokerName":"{PROBE_GROUP}-000","clusterName":"{CLUSTER}","brokerId":"0"}}{HEADER_TAIL}"#
    );
    let body = text(
        frame_room.saturating_sub(header.len() + 64),
        br#"{"counter":1"#,
        b"",
        numbered(r#","x"#, r#"":1"#),
        b"}",
    );
    let what = format!("DataVersion with {} unknown fields", body.len() / 14);
    (what, vec![shared(raw_frame(0, header.as_bytes(), &body))])
}

/// UPDATE_NAMESRV_CONFIG with a properties body of as many distinct keys as fit.
fn config(frame_room: usize) -> Frames {
    let header = format!(r#"{{"code":318{HEADER_TAIL}"#);
    let body = text(
        frame_room.saturating_sub(header.len() + 64),
        b"",
        b"",
        numbered("benchHostile", "=v\n"),
        b"",
    );
    let what = format!("properties of {} distinct keys", body.len() / 23);
    (what, vec![shared(raw_frame(0, header.as_bytes(), &body))])
}

/// The two topic lists, small requests with the server's largest answers, in turn.
fn topic_lists() -> Frames {
    let all = format!(r#"{{"code":206{HEADER_TAIL}"#);
    let by_cluster = format!(r#"{{"code":224,"extFields":{{"cluster":"{CLUSTER}"}}{HEADER_TAIL}"#);
    let frames = [all, by_cluster]
        .iter()
        .map(|header| Bytes::from(raw_frame(0, header.as_bytes(), b"")))
        .collect();
    (
        "GET_ALL_TOPIC_LIST and GET_TOPICS_BY_CLUSTER in turn".to_owned(),
        vec![frames],
    )
}

/// REGISTER_BROKER frames of the body variants, one broker per connection.
fn register_frames(
    bodies: &[Vec<u8>],
    compressed: bool,
    conns: usize,
    tag: &str,
) -> Result<Vec<Vec<Bytes>>, BenchError> {
    (0..conns)
        .map(|conn| {
            bodies
                .iter()
                .map(|body| {
                    let header = RegisterBrokerHeader {
                        broker_name: format!("bench-hostile-{tag}-{conn}"),
                        broker_addr: format!("127.0.0.1:{}", 30_000 + conn),
                        cluster_name: CLUSTER.to_owned(),
                        ha_server_addr: None,
                        broker_id: 0,
                        heartbeat_timeout_millis: None,
                        enable_acting_master: Some(false),
                        compressed,
                        body_crc32: rmq_tools::broker::body_crc32(body),
                        zone_name: None,
                    };
                    let cmd = RemotingCommand::request(RequestCode::REGISTER_BROKER)
                        .with_opaque(HOSTILE_OPAQUE)
                        .with_ext_fields(header.to_ext())
                        .with_body(body.clone());
                    let mut frame = BytesMut::new();
                    encode_frame(&cmd, &mut frame).map_err(|e| {
                        BenchError::Protocol(format!("cannot encode registration: {e}"))
                    })?;
                    Ok(frame.freeze())
                })
                .collect()
        })
        .collect()
}

pub(super) fn human(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}
