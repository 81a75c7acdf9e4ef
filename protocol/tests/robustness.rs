//! Every decoder is fed random and mutated input: it must answer Ok or Err, never panic, and never
//! allocate beyond what the input allows. Deterministic (fixed xorshift seeds), bounded in count.

use bytes::BytesMut;
use rmq_protocol::body::{to_json, DataVersion, RegisterBrokerBody, TopicConfig, TopicRouteData};
use rmq_protocol::codec::{encode_frame, RemotingCodec};
use rmq_protocol::custom_headers::{CommandHeader, GetRouteInfoHeader, RegisterBrokerHeader};
use rmq_protocol::fastjson::{self, JsonStyle};
use rmq_protocol::{properties, RemotingCommand, RequestCode, SerializeType};
use tokio_util::codec::Decoder;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// Flips, inserts, deletes or overwrites a few bytes.
    fn mutate(&mut self, input: &[u8]) -> Vec<u8> {
        let mut out = input.to_vec();
        for _ in 0..=self.below(4) {
            let at = self.below(out.len() + 1);
            match self.below(4) {
                0 if at < out.len() => out[at] ^= 1 << self.below(8),
                1 => out.insert(at, self.next() as u8),
                2 if at < out.len() => {
                    out.remove(at);
                }
                _ if at < out.len() => out[at] = [0, 0xff, b'{', b'"', b':', b'\\'][self.below(6)],
                _ => {}
            }
        }
        out
    }
}

fn sample_frames() -> Vec<Vec<u8>> {
    let mut body = RegisterBrokerBody::default();
    body.topic_config_wrapper.data_version = DataVersion {
        counter: 3,
        state_version: 1,
        timestamp: 1_700_000_000_000,
    };
    for t in ["a", "b"] {
        body.topic_config_wrapper
            .topic_config_table
            .insert(t.into(), TopicConfig::new(t, 4, 6));
    }
    let register = RemotingCommand::request(RequestCode::REGISTER_BROKER)
        .with_ext("brokerName", "b")
        .with_ext("brokerAddr", "127.0.0.1:1")
        .with_ext("clusterName", "c")
        .with_ext("brokerId", "0")
        .with_body(to_json(&body, JsonStyle::Legacy));
    let route =
        RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "T");
    let mut frames = Vec::new();
    for cmd in [register, route] {
        for st in [SerializeType::Json, SerializeType::RocketMq] {
            let mut out = BytesMut::new();
            encode_frame(&cmd.clone().with_serialize_type(st), &mut out).unwrap();
            frames.push(out.to_vec());
        }
    }
    frames
}

/// Decodes every frame in `input` until an error or the end, then every header and body in it.
fn exercise(input: &[u8]) {
    let mut codec = RemotingCodec::new(64 * 1024);
    let mut buf = BytesMut::from(input);
    while let Ok(Some(cmd)) = codec.decode(&mut buf) {
        let _ = RegisterBrokerHeader::decode(&cmd);
        let _ = GetRouteInfoHeader::decode(&cmd);
        let body = cmd.body.as_deref();
        for (compressed, version) in [(false, 479), (true, 479), (true, 409), (false, 0)] {
            let _ = RegisterBrokerBody::decode(body, compressed, version, 1 << 20);
        }
        let _ = fastjson::from_slice::<TopicRouteData>(cmd.body_bytes());
        let _ = properties::parse(&String::from_utf8_lossy(cmd.body_bytes()));
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..20_000 {
        let len = rng.below(96);
        exercise(&rng.bytes(len));
    }
}

#[test]
fn mutated_frames_never_panic() {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let frames = sample_frames();
    for _ in 0..20_000 {
        let frame = &frames[rng.below(frames.len())];
        exercise(&rng.mutate(frame));
    }
}

#[test]
fn mutated_bodies_never_panic() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut body = RegisterBrokerBody::default();
    body.topic_config_wrapper
        .topic_config_table
        .insert("t".into(), TopicConfig::new("t", 4, 6));
    let json = to_json(&body, JsonStyle::Legacy);
    let zipped = body.encode_compressed(true);
    for _ in 0..20_000 {
        let mutated_json = rng.mutate(&json);
        let _ = RegisterBrokerBody::decode(Some(&mutated_json), false, 479, 1 << 20);
        let mutated_zip = rng.mutate(&zipped);
        let _ = RegisterBrokerBody::decode(Some(&mutated_zip), true, 479, 1 << 20);
        let _ = fastjson::quote_bare_keys(&mutated_json);
    }
}
