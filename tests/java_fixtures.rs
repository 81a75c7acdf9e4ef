//! Byte parity with the official Java NameServer 5.5.0, without a JVM: the files in
//! `tests/fixtures/` hold bodies (and one remark) the Java server sent for precisely described
//! states, and the request frames the Go and C++ clients sent it (see `tests/fixtures/README.md`;
//! written by `interop/captures/make_fixtures.py`). Each test recreates a state on our server over
//! TCP with the same registrations, asks the same questions and compares the replies: code, remark
//! and extFields as Java answered them, the body byte for byte.
//!
//! Exception, stated per fixture in the manifest (`"compare": "reordered"`): where Java writes a
//! list or map in `HashMap` order (String.hashCode buckets) and ours sorts by name, the bodies are
//! compared parsed (lists of named elements as sets) and must be permutations of the same bytes.
//! The strict byte comparison of those fixtures is the ignored test
//! `java_hash_order_bytes_strict` (a known difference, see `tests/fixtures/README.md`); run it
//! with `cargo test --test java_fixtures -- --ignored` to see the bytes.

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use bytes::BytesMut;
use futures_util::StreamExt;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio_util::codec::{Decoder, Framed};

use rmq_namesrv::protocol::fastjson;
use rmq_namesrv::protocol::{
    LanguageCode, RemotingCodec, RemotingCommand, RequestCode, SerializeType,
};
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::tools::client::Client;
use support::*;

const MANIFEST: &str = "java_5_5_0_manifest.json";

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
        .join(name)
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixture_path(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

fn manifest() -> Value {
    serde_json::from_slice(&fixture(MANIFEST)).expect("the manifest is JSON")
}

fn state<'m>(manifest: &'m Value, name: &str) -> &'m Value {
    manifest["states"]
        .as_array()
        .expect("states")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("state {name} not in the manifest"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Frames of a `.hex` fixture: one frame per non-comment line.
fn hex_frames(name: &str) -> Vec<Vec<u8>> {
    let content = String::from_utf8(fixture(name)).expect("hex fixture is text");
    content
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            assert!(l.len() % 2 == 0, "{name}: odd number of hex digits");
            (0..l.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&l[i..i + 2], 16).expect("hex digit"))
                .collect()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// the states of the manifest, built with FakeBroker

/// `single_master`: broker-a (DefaultCluster, id 0, 127.0.0.1:10911, HA :10912), topics InteropCpp
/// and InteropGo, 4 queues, perm 6, DataVersion {1, 0, 1700000000000}: the captures' state.
fn single_master_brokers() -> Vec<FakeBroker> {
    vec![FakeBroker::master(
        "broker-a",
        10911,
        &["InteropCpp", "InteropGo"],
    )]
}

/// `multi_group`: broker-a master (TopicA, TopicAB), broker-b master + slave (TopicAB, TopicBC,
/// TopicMS) in DefaultCluster; broker-c master in ClusterB (TopicBC, TopicC; 8 queues).
fn multi_group_brokers() -> Vec<FakeBroker> {
    let b_topics = ["TopicAB", "TopicBC", "TopicMS"];
    vec![
        FakeBroker::master("broker-a", 10911, &["TopicA", "TopicAB"]),
        FakeBroker::master("broker-b", 10921, &b_topics),
        FakeBroker::slave("broker-b", 10931, &b_topics),
        FakeBroker {
            queues: 8,
            ..FakeBroker::new(
                "ClusterB",
                "broker-c",
                0,
                10941,
                vec!["TopicBC".into(), "TopicC".into()],
            )
        },
    ]
}

// ---------------------------------------------------------------------------------------------
// comparisons

fn ext_map(cmd: &RemotingCommand) -> Option<BTreeMap<String, String>> {
    cmd.ext_fields.as_ref().map(|f| {
        f.iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    })
}

fn json_ext(value: &Value) -> Option<BTreeMap<String, String>> {
    value.as_object().map(|m| {
        m.iter()
            .map(|(k, v)| (k.clone(), v.as_str().expect("string ext value").to_owned()))
            .collect()
    })
}

/// Our reply has Java's code, remark and extFields (`java` is the manifest's record).
fn assert_same_header(what: &str, ours: &RemotingCommand, java: &Value) {
    assert_eq!(
        i64::from(ours.code),
        java["code"].as_i64().expect("code"),
        "{what}: code (remark {:?})",
        ours.remark
    );
    assert_eq!(
        ours.remark.as_deref(),
        java["remark"].as_str(),
        "{what}: remark"
    );
    assert_eq!(ext_map(ours), json_ext(&java["ext"]), "{what}: extFields");
}

/// A body in a form where only content counts: parsed (bare keys accepted), lists of objects
/// sorted by `brokerName` and lists of strings sorted.
fn normalized(body: &[u8]) -> Value {
    fn walk(v: Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, walk(v))).collect()),
            Value::Array(items) => {
                let mut items: Vec<Value> = items.into_iter().map(walk).collect();
                items.sort_by_key(|i| match i {
                    Value::Object(m) => m
                        .get("brokerName")
                        .map(|n| n.to_string())
                        .unwrap_or_else(|| i.to_string()),
                    other => other.to_string(),
                });
                Value::Array(items)
            }
            other => other,
        }
    }
    walk(
        fastjson::from_slice(body)
            .unwrap_or_else(|e| panic!("unparsable body {}: {e}", text(body))),
    )
}

fn sorted_bytes(bytes: &[u8]) -> Vec<u8> {
    let mut v = bytes.to_vec();
    v.sort_unstable();
    v
}

/// Compares our reply's body (or remark) with the fixture, the way the manifest says.
fn assert_fixture(what: &str, compare: &str, ours: &RemotingCommand, expected: &[u8]) {
    match compare {
        "remark" => {
            assert_eq!(
                ours.remark.as_deref(),
                Some(text(expected).as_str()),
                "{what}: remark"
            );
            assert_eq!(ours.body, None, "{what}: no body");
        }
        "bytes" => {
            // as text first for a readable failure, then the raw bytes (no lossy decoding)
            assert_eq!(text(ours.body_bytes()), text(expected), "{what}: body");
            assert_eq!(ours.body_bytes(), expected, "{what}: body bytes");
        }
        "reordered" => {
            assert_eq!(
                normalized(ours.body_bytes()),
                normalized(expected),
                "{what}: parsed body\nours: {}\njava: {}",
                text(ours.body_bytes()),
                text(expected)
            );
            assert_eq!(
                sorted_bytes(ours.body_bytes()),
                sorted_bytes(expected),
                "{what}: not the same bytes in another order\nours: {}\njava: {}",
                text(ours.body_bytes()),
                text(expected)
            );
        }
        other => panic!("{what}: unknown compare mode {other}"),
    }
}

fn request_of(record: &Value) -> RemotingCommand {
    let code = record["code"].as_i64().expect("request code") as i32;
    let version = record["version"].as_i64().expect("request version") as i32;
    let mut cmd = RemotingCommand::request(RequestCode(code)).with_version(version);
    if let Some(ext) = record["ext"].as_object() {
        for (k, v) in ext {
            cmd = cmd.with_ext(k.clone(), v.as_str().expect("string ext value").to_owned());
        }
    }
    if let Some(body) = record["body"].as_str() {
        cmd = cmd.with_body(body.as_bytes().to_vec());
    }
    cmd
}

// ---------------------------------------------------------------------------------------------
// one state end to end

/// What [`check_state`] leaves: the server, the connection holding the registrations (closing
/// it would unregister the brokers), and with `strict` the reordered fixtures whose bytes differ.
struct Checked {
    server: rmq_namesrv::NameServerHandle,
    conn: Client,
    strict_differences: Vec<String>,
}

/// Checks that `brokers` register exactly as the generator registered them with Java, builds
/// the state on a fresh server (registrations and KV entries on one connection, kept open, as the
/// generator did) and compares every fixture of the state. `strict`: also collects the reordered
/// fixtures whose bytes are not Java's exactly.
async fn check_state(name: &str, brokers: &[FakeBroker], strict: bool) -> Checked {
    let manifest = manifest();
    let state = state(&manifest, name);
    let registrations = state["registrations"].as_array().expect("registrations");
    assert_eq!(registrations.len(), brokers.len(), "{name}: broker count");

    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    for (broker, reg) in brokers.iter().zip(registrations) {
        let what = format!("{name}: REGISTER_BROKER {}/{}", broker.name, broker.id);
        // the very registration Java got
        let cmd = broker.register();
        assert_eq!(
            i64::from(cmd.version),
            reg["version"].as_i64().unwrap(),
            "{what}: version"
        );
        assert_eq!(ext_map(&cmd), json_ext(&reg["ext"]), "{what}: ext fields");
        assert_eq!(
            text(cmd.body_bytes()),
            reg["body"].as_str().unwrap(),
            "{what}: body"
        );
        let resp = conn.request(cmd).await.expect("register");
        assert_same_header(&what, &resp, &reg["java"]);
        assert_eq!(
            resp.body.as_deref().map(text),
            reg["java"]["body"].as_str().map(str::to_owned),
            "{what}: body"
        );
    }
    for kv in state["kv"].as_array().expect("kv") {
        let put = RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
            .with_ext("namespace", kv["namespace"].as_str().unwrap())
            .with_ext("key", kv["key"].as_str().unwrap())
            .with_ext("value", kv["value"].as_str().unwrap());
        assert_eq!(
            conn.request(put).await.unwrap().code,
            0,
            "{name}: PUT_KV_CONFIG {kv}"
        );
    }

    let mut client = connect(&server).await;
    let mut strict_differences = Vec::new();
    let fixtures = state["fixtures"].as_array().expect("fixtures");
    assert!(!fixtures.is_empty());
    for f in fixtures {
        let file = f["file"].as_str().unwrap();
        let compare = f["compare"].as_str().unwrap();
        let expected = fixture(file);
        for (i, record) in f["requests"].as_array().unwrap().iter().enumerate() {
            let what = format!(
                "{file} request {i} (code {}, version {}, ext {})",
                record["code"], record["version"], record["ext"]
            );
            let resp = client.request(request_of(record)).await.expect("reply");
            assert_same_header(&what, &resp, &record["java"]);
            assert_fixture(&what, compare, &resp, &expected);
            if strict && compare == "reordered" && resp.body_bytes() != expected {
                strict_differences.push(format!(
                    "{what}:\n  ours: {}\n  java: {}",
                    text(resp.body_bytes()),
                    text(&expected)
                ));
            }
        }
    }
    Checked {
        server,
        conn,
        strict_differences,
    }
}

#[actix::test]
async fn single_master_matches_java() {
    let checked = check_state("single_master", &single_master_brokers(), false).await;
    drop(checked.conn);
    checked.server.stop().await;
}

#[actix::test]
async fn multi_group_matches_java() {
    let checked = check_state("multi_group", &multi_group_brokers(), false).await;
    drop(checked.conn);
    checked.server.stop().await;
}

/// Known difference: Java writes route lists and cluster-info maps in HashMap order, ours sorted by
/// name. Run with `--ignored` to see the bytes of every such fixture.
#[actix::test]
#[ignore = "known difference: Java's HashMap order vs our name order (tests/fixtures/README.md)"]
async fn java_hash_order_bytes_strict() {
    let checked = check_state("multi_group", &multi_group_brokers(), true).await;
    drop(checked.conn);
    checked.server.stop().await;
    assert!(
        checked.strict_differences.is_empty(),
        "{} fixture(s) not byte-identical:\n{}",
        checked.strict_differences.len(),
        checked.strict_differences.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// the captured client request frames

/// Every captured Go and C++ request frame decodes with our codec to what the client meant.
#[test]
fn captured_client_frames_decode() {
    let manifest = manifest();
    let replays = manifest["replays"].as_array().expect("replays");
    assert_eq!(replays.len(), 10, "five frames per client");
    for r in replays {
        let file = r["frames"].as_str().unwrap();
        let index = r["index"].as_u64().unwrap() as usize;
        let frame = hex_frames(file)[index].clone();
        let what = format!("{file} frame {index} ({})", r["capture_line"]);
        let mut buf = BytesMut::from(&frame[..]);
        let cmd = RemotingCodec::default()
            .decode(&mut buf)
            .unwrap_or_else(|e| panic!("{what}: {e}"))
            .unwrap_or_else(|| panic!("{what}: incomplete frame"));
        assert!(buf.is_empty(), "{what}: {} bytes left over", buf.len());
        assert_eq!(cmd.code, 105, "{what}");
        assert_eq!(cmd.request_code(), RequestCode::GET_ROUTEINFO_BY_TOPIC);
        assert_eq!(cmd.serialize_type, SerializeType::Json, "{what}");
        assert_eq!(
            i64::from(cmd.version),
            r["version"].as_i64().unwrap(),
            "{what}"
        );
        assert_eq!(
            i64::from(cmd.opaque),
            r["opaque"].as_i64().unwrap(),
            "{what}"
        );
        assert_eq!(cmd.flag, 0, "{what}: a request, not oneway");
        assert!(!cmd.is_response() && !cmd.is_oneway(), "{what}");
        assert_eq!(cmd.remark.as_deref().unwrap_or(""), "", "{what}: remark");
        assert_eq!(cmd.body, None, "{what}: no body");
        assert_eq!(cmd.ext("topic"), r["topic"].as_str(), "{what}");
        match r["language"].as_str().unwrap() {
            "GO" => {
                assert_eq!(cmd.language, LanguageCode::Go, "{what}");
                assert_eq!(cmd.ext_fields.as_ref().map(|f| f.len()), Some(1), "{what}");
            }
            "CPP" => {
                assert_eq!(cmd.language, LanguageCode::Cpp, "{what}");
                // The C++ client's header ends with a newline counted in the header length.
                let hlen = u32::from_be_bytes(frame[4..8].try_into().unwrap()) as usize;
                assert_eq!(frame[8 + hlen - 1], b'\n', "{what}: trailing newline");
                assert_eq!(cmd.ext("AccessKey"), Some(""), "{what}");
                assert_eq!(cmd.ext("OnsChannel"), Some("ALIYUN"), "{what}");
                assert!(
                    cmd.ext("Signature").is_some_and(|s| !s.is_empty()),
                    "{what}"
                );
            }
            other => panic!("{what}: language {other}"),
        }
    }
}

/// The captured frames, sent byte for byte to our server in the single-master state, get Java's
/// replies: the legacy route body, or TOPIC_NOT_EXIST with Java's remark.
#[actix::test]
async fn captured_client_frames_get_java_replies() {
    let Checked { server, conn, .. } =
        check_state("single_master", &single_master_brokers(), false).await;
    let manifest = manifest();
    for r in manifest["replays"].as_array().expect("replays") {
        let file = r["frames"].as_str().unwrap();
        let index = r["index"].as_u64().unwrap() as usize;
        let what = format!("{file} frame {index} (topic {})", r["topic"]);
        let frame = hex_frames(file)[index].clone();
        // a fresh connection per frame, as each captured client process had
        let mut stream = tokio::net::TcpStream::connect(server.local_addr())
            .await
            .expect("connect");
        stream
            .write_all(&frame)
            .await
            .expect("send the captured frame");
        let mut framed = Framed::new(stream, RemotingCodec::default());
        let resp = tokio::time::timeout(TIMEOUT, framed.next())
            .await
            .unwrap_or_else(|_| panic!("{what}: no reply within {TIMEOUT:?}"))
            .unwrap_or_else(|| panic!("{what}: connection closed"))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(resp.is_response(), "{what}");
        assert_eq!(
            i64::from(resp.opaque),
            r["opaque"].as_i64().unwrap(),
            "{what}: opaque"
        );
        assert_eq!(
            resp.serialize_type,
            SerializeType::Json,
            "{what}: JSON reply to a JSON request"
        );
        let java = &r["java"];
        assert_same_header(&what, &resp, java);
        match java["body_fixture"].as_str() {
            Some(body) => assert_fixture(&what, "bytes", &resp, &fixture(body)),
            None => assert_eq!(resp.body, None, "{what}: no body"),
        }
    }
    drop(conn);
    server.stop().await;
}

/// Every file in tests/fixtures/ is described by the manifest (no stale fixture lingers).
#[test]
fn every_fixture_file_is_in_the_manifest() {
    let manifest = manifest();
    let mut named: Vec<String> = vec![MANIFEST.to_owned(), "README.md".to_owned()];
    for s in manifest["states"].as_array().unwrap() {
        for f in s["fixtures"].as_array().unwrap() {
            named.push(f["file"].as_str().unwrap().to_owned());
        }
    }
    for r in manifest["replays"].as_array().unwrap() {
        named.push(r["frames"].as_str().unwrap().to_owned());
    }
    let dir = fixture_path("");
    let mut present: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    present.sort();
    named.sort();
    named.dedup();
    assert_eq!(present, named);
}
