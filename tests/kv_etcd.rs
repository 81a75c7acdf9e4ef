//! `kv.backend = "etcd"` over TCP: NameServers sharing one etcd (started here from the OS
//! package, see support/etcd.rs) answer the same KV config, ORDER_TOPIC_CONFIG written on one
//! reaches the routes of another, and a NameServer keeps serving while etcd is gone and takes
//! writes again once it is back. Every wait is bounded.

mod support;

use std::ffi::OsString;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rmq_namesrv::actors::settings::KvBackend;
use rmq_namesrv::config::{Config, Overrides};
use rmq_namesrv::protocol::body::KvTable;
use rmq_namesrv::protocol::fastjson;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::tools::client::Client;
use std::net::SocketAddr;
use support::etcd::Etcd;
use support::*;

/// The longest wait for a change to show on another NameServer (normally milliseconds).
const SEEN: Duration = Duration::from_secs(5);

/// The longest wait for a NameServer to (re)connect to etcd: its backoff is at most 3 s and each
/// attempt at most 3 s.
const CONNECTED: Duration = Duration::from_secs(20);

fn etcd_config(etcd: &Etcd, prefix: &str) -> Config {
    let mut config = test_config();
    config.kv.backend = KvBackend::Etcd;
    config.kv.etcd_endpoints = etcd.endpoint();
    config.kv.etcd_prefix = prefix.to_owned();
    config
}

/// Puts until the server answers SUCCESS (it connects to etcd after it starts); fails the test
/// after `limit` with the last answer.
async fn put_when_connected(conn: &mut Client, request: RemotingCommand, limit: Duration) {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let resp = conn.request(request.clone()).await.unwrap();
        if resp.code == 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "PUT not taken within {limit:?}: {} {:?}",
            resp.code,
            resp.remark
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn dial(server: SocketAddr) -> Client {
    Client::connect(&server.to_string(), TIMEOUT)
        .await
        .expect("connect")
}

/// The value GET_KV_CONFIG answers, `None` for QUERY_NOT_FOUND.
async fn value_of(server: SocketAddr, ns: &str, key: &str) -> Option<String> {
    let mut conn = dial(server).await;
    let resp = conn.request(get_kv(ns, key)).await.unwrap();
    match resp.code {
        0 => Some(resp.ext("value").unwrap_or_default().to_owned()),
        22 => None,
        code => panic!("GET_KV_CONFIG answered {code} {:?}", resp.remark),
    }
}

/// GET_KVLIST_BY_NAMESPACE's code and body.
async fn list_of(server: SocketAddr, ns: &str) -> (i32, String) {
    let mut conn = dial(server).await;
    let resp = conn.request(kv_list(ns)).await.unwrap();
    (resp.code, body_text(&resp))
}

/// Whether `server` answers `want` for the key within [`SEEN`].
async fn shows(server: SocketAddr, ns: &str, key: &str, want: Option<&str>) -> bool {
    let (ns, key, want) = (ns.to_owned(), key.to_owned(), want.map(str::to_owned));
    eventually(SEEN, move || {
        let (ns, key, want) = (ns.clone(), key.clone(), want.clone());
        async move { value_of(server, &ns, &key).await == want }
    })
    .await
}

/// Whether `server`'s route of `topic` contains `text` within [`SEEN`] (or, with `absent`, has
/// stopped containing it).
async fn route_shows(server: SocketAddr, topic: &str, text: &str, absent: bool) -> bool {
    let (topic, text) = (topic.to_owned(), text.to_owned());
    eventually(SEEN, move || {
        let (topic, text) = (topic.clone(), text.clone());
        async move {
            let route = dial(server)
                .await
                .request(route_request(&topic))
                .await
                .unwrap();
            route.code == 0 && body_text(&route).contains(&text) != absent
        }
    })
    .await
}

#[actix::test]
async fn two_nameservers_on_one_etcd_answer_the_same_kv() {
    let etcd = support::etcd::start();
    let a = start_server(etcd_config(&etcd, "/fleet/kv"));
    let b = start_server(etcd_config(&etcd, "/fleet/kv"));
    let (a_addr, b_addr) = (a.local_addr(), b.local_addr());
    let mut on_a = connect(&a).await;
    let mut on_b = connect(&b).await;

    put_when_connected(&mut on_a, put_kv("ns", "k", "v1"), CONNECTED).await;
    // A answers its own write at once, B within a moment.
    assert_eq!(value_of(a_addr, "ns", "k").await.as_deref(), Some("v1"));
    assert!(
        shows(b_addr, "ns", "k", Some("v1")).await,
        "B never saw A's put"
    );

    // Any characters round-trip: a `/` in a namespace or key, `%`, non-ASCII, line breaks.
    let odd_ns = "team/a%2Fb ü";
    let odd_key = "key/with/slashes %25";
    let odd_value = "line one\nline two; ünïcödé = 中文 / %2F";
    put_when_connected(&mut on_b, put_kv(odd_ns, odd_key, odd_value), SEEN).await;
    assert!(shows(a_addr, odd_ns, odd_key, Some(odd_value)).await);
    // ... and do not collide with their neighbours.
    assert_eq!(
        value_of(a_addr, "team", "a%2Fb ü/key/with/slashes %25").await,
        None
    );

    // A delete on B disappears on A; the emptied namespace stays, as with the file.
    put_when_connected(&mut on_a, put_kv("ns", "k2", "v2"), SEEN).await;
    assert!(shows(b_addr, "ns", "k2", Some("v2")).await);
    assert_eq!(on_b.request(delete_kv("ns", "k")).await.unwrap().code, 0);
    assert_eq!(value_of(b_addr, "ns", "k").await, None);
    assert!(
        shows(a_addr, "ns", "k", None).await,
        "A still shows B's delete"
    );
    let want = (0, r#"{"table":{"k2":"v2"}}"#.to_owned());
    assert_eq!(list_of(a_addr, "ns").await, want);
    assert_eq!(list_of(b_addr, "ns").await, want);
    assert_eq!(on_a.request(delete_kv("ns", "k2")).await.unwrap().code, 0);
    assert!(shows(b_addr, "ns", "k2", None).await);
    assert_eq!(
        list_of(b_addr, "ns").await,
        (0, r#"{"table":{}}"#.to_owned())
    );
    assert_eq!(
        list_of(a_addr, "ns").await,
        (0, r#"{"table":{}}"#.to_owned())
    );

    // A value-less PUT creates the namespace everywhere, as Java's null does.
    let create = RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
        .with_ext("namespace", "created")
        .with_ext("key", "k");
    assert_eq!(on_a.request(create).await.unwrap().code, 0);
    let created = eventually(SEEN, || async move {
        list_of(b_addr, "created").await == (0, r#"{"table":{}}"#.to_owned())
    })
    .await;
    assert!(created, "B never saw the namespace A created");
    assert_eq!(list_of(a_addr, "nothing").await.0, 22);

    // A NameServer started later reads the whole KV at start.
    let c = start_server(etcd_config(&etcd, "/fleet/kv"));
    let c_addr = c.local_addr();
    assert!(shows(c_addr, odd_ns, odd_key, Some(odd_value)).await);
    assert_eq!(
        list_of(c_addr, "ns").await,
        (0, r#"{"table":{}}"#.to_owned())
    );
    // Another prefix is another KV.
    let other = start_server(etcd_config(&etcd, "/fleet/kv2"));
    let other_addr = other.local_addr();
    let mut on_other = connect(&other).await;
    put_when_connected(&mut on_other, put_kv("ns", "k", "elsewhere"), CONNECTED).await;
    assert_eq!(value_of(other_addr, odd_ns, odd_key).await, None);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(value_of(a_addr, "ns", "k").await, None);

    for server in [a, b, c, other] {
        server.stop().await;
    }
}

#[actix::test]
async fn order_topic_config_put_on_one_shows_in_the_routes_of_another() {
    let etcd = support::etcd::start();
    let a = start_server(etcd_config(&etcd, "/fleet/kv"));
    let mut config_b = etcd_config(&etcd, "/fleet/kv");
    config_b.registry.order_message_enable = true;
    let b = start_server(config_b);
    let mut on_a = connect(&a).await;
    let mut on_b = connect(&b).await;
    let broker = FakeBroker::master("broker-a", 10911, &["Ordered", "Plain"]);
    assert_eq!(on_b.request(broker.register()).await.unwrap().code, 0);
    let before = on_b.request(route_request("Ordered")).await.unwrap();
    assert!(!body_text(&before).contains("orderTopicConf"));

    put_when_connected(
        &mut on_a,
        put_kv("ORDER_TOPIC_CONFIG", "Ordered", "broker-a:4"),
        CONNECTED,
    )
    .await;
    // B's routes show it (its cached route dropped), as after a put on B itself.
    let b_addr = b.local_addr();
    assert!(
        route_shows(b_addr, "Ordered", r#""orderTopicConf":"broker-a:4""#, false).await,
        "B's route never showed A's ORDER_TOPIC_CONFIG"
    );
    let plain = on_b.request(route_request("Plain")).await.unwrap();
    assert!(!body_text(&plain).contains("orderTopicConf"));
    // Its registration answers carry the namespace too.
    let resp = on_b.request(broker.register()).await.unwrap();
    let table: KvTable = fastjson::from_slice(resp.body_bytes()).unwrap();
    assert_eq!(
        table.table.get("Ordered").map(String::as_str),
        Some("broker-a:4")
    );

    // A change and a removal on A follow the same way.
    put_when_connected(
        &mut on_a,
        put_kv("ORDER_TOPIC_CONFIG", "Ordered", "broker-a:8"),
        SEEN,
    )
    .await;
    assert!(route_shows(b_addr, "Ordered", r#""orderTopicConf":"broker-a:8""#, false).await);
    let deleted = on_a
        .request(delete_kv("ORDER_TOPIC_CONFIG", "Ordered"))
        .await
        .unwrap();
    assert_eq!(deleted.code, 0);
    assert!(route_shows(b_addr, "Ordered", "orderTopicConf", true).await);
    a.stop().await;
    b.stop().await;
}

/// An etcd started again after a kill, with the very command line (ports, data directory) it had;
/// killed by its own handle when dropped (declare it after the [`Etcd`] whose files it uses).
struct Restarted(Child);

impl Drop for Restarted {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The command line of a running process (Linux).
fn command_line(pid: u32) -> Vec<OsString> {
    use std::os::unix::ffi::OsStringExt;
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).expect("etcd's command line");
    raw.split(|b| *b == 0)
        .filter(|arg| !arg.is_empty())
        .map(|arg| OsString::from_vec(arg.to_vec()))
        .collect()
}

/// Starts `argv` again and waits (bounded) until `etcd` answers its health check.
fn restart(etcd: &Etcd, argv: &[OsString]) -> Restarted {
    let (program, args) = argv.split_first().expect("a command line");
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("ETCD_") {
            command.env_remove(name);
        }
    }
    let restarted = Restarted(command.spawn().expect("start etcd again"));
    let deadline = std::time::Instant::now() + support::etcd::READY_LIMIT;
    while !etcd.healthy() {
        assert!(
            std::time::Instant::now() < deadline,
            "etcd not healthy again within {:?}",
            support::etcd::READY_LIMIT
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    restarted
}

#[actix::test]
async fn etcd_gone_refuses_changes_keeps_reads_and_comes_back() {
    let mut etcd = support::etcd::start();
    let argv = command_line(etcd.pid());
    let a = start_server(etcd_config(&etcd, "/fleet/kv"));
    let a_addr = a.local_addr();
    let mut on_a = connect(&a).await;
    put_when_connected(&mut on_a, put_kv("ns", "kept", "1"), CONNECTED).await;

    etcd.kill();
    // Whether the store has noticed yet (the watch broke) or not (the write times out), the
    // change is refused, saying why, and nothing changes.
    let resp = on_a.request(put_kv("ns", "lost", "2")).await.unwrap();
    assert_eq!(resp.code, 1, "{:?}", resp.remark);
    let remark = resp.remark.unwrap_or_default();
    assert!(
        remark.contains("the KV store (etcd) is unavailable"),
        "{remark}"
    );
    let resp = on_a.request(delete_kv("ns", "kept")).await.unwrap();
    assert_eq!(resp.code, 1, "{:?}", resp.remark);
    // Reads are answered from the last view; the server keeps serving everything else.
    assert_eq!(value_of(a_addr, "ns", "kept").await.as_deref(), Some("1"));
    assert_eq!(value_of(a_addr, "ns", "lost").await, None);
    assert_eq!(
        list_of(a_addr, "ns").await,
        (0, r#"{"table":{"kept":"1"}}"#.to_owned())
    );
    let route = on_a.request(route_request("NoSuchTopic")).await.unwrap();
    assert_eq!(route.code, 17);

    // A NameServer that starts while etcd is down starts anyway, with an empty view.
    let b = start_server(etcd_config(&etcd, "/fleet/kv"));
    let b_addr = b.local_addr();
    let mut on_b = connect(&b).await;
    assert_eq!(value_of(b_addr, "ns", "kept").await, None);
    let resp = on_b.request(put_kv("ns", "early", "3")).await.unwrap();
    assert_eq!(resp.code, 1, "{:?}", resp.remark);
    assert!(resp
        .remark
        .unwrap_or_default()
        .contains("the KV store (etcd) is unavailable"));

    // etcd back on the same ports and data: both take writes again, B reads what was there.
    let _restarted = restart(&etcd, &argv);
    put_when_connected(&mut on_a, put_kv("ns", "after", "4"), CONNECTED).await;
    put_when_connected(&mut on_b, put_kv("ns", "fromb", "5"), CONNECTED).await;
    assert!(
        shows(b_addr, "ns", "kept", Some("1")).await,
        "B never loaded"
    );
    assert!(shows(b_addr, "ns", "after", Some("4")).await);
    assert!(
        shows(a_addr, "ns", "fromb", Some("5")).await,
        "A's watch is not back"
    );
    assert_eq!(value_of(a_addr, "ns", "lost").await, None);
    a.stop().await;
    b.stop().await;
}

#[test]
fn etcd_backend_without_endpoints_is_refused_naming_the_key() {
    let dir = test_dir("kv-etcd-config");
    let file = dir.join("namesrv.toml");
    std::fs::write(&file, "[kv]\nbackend = \"etcd\"\n").unwrap();
    let err = Config::load(Some(&file), Vec::new(), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("kv.etcd_endpoints"), "{err}");

    // The same from a Java properties file, and accepted once the endpoints are there.
    let props = dir.join("namesrv.properties");
    std::fs::write(&props, "kvBackend=etcd\n").unwrap();
    let err = Config::load(Some(&props), Vec::new(), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("kv.etcd_endpoints"), "{err}");
    std::fs::write(
        &props,
        "kvBackend=etcd\nkvEtcdEndpoints=127.0.0.1:2379;127.0.0.1:22379\nkvEtcdPrefix=/fleet/kv\n",
    )
    .unwrap();
    let config = Config::load(Some(&props), Vec::new(), &Overrides::default()).unwrap();
    assert_eq!(config.kv.backend, KvBackend::Etcd);
    assert_eq!(
        config.kv.etcd_endpoint_list(),
        ["127.0.0.1:2379", "127.0.0.1:22379"]
    );
    assert_eq!(config.kv.etcd_prefix, "/fleet/kv");
    let env = [("NAMESRV__KV__BACKEND".to_owned(), "etcd".to_owned())];
    let err = Config::load(None::<&Path>, env, &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("kv.etcd_endpoints"), "{err}");
}

/// One of the endpoints is down (its port refuses connections): the client connects to the
/// other when it is made, whichever it tries first, and stays there, so once a write is taken
/// every later one is (a balanced channel kept choosing the dead endpoint: a member killed out
/// of three failed a third of the writes until it came back).
#[actix::test]
async fn an_endpoint_that_is_down_is_left_for_one_that_answers() {
    let etcd = support::etcd::start();
    // Bound and never listening: connections to it are refused, and while the socket lives no
    // other process (another test's etcd) can take its port.
    let dead_socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    dead_socket
        .bind("127.0.0.1:0".parse().expect("an address"))
        .expect("a free port");
    let dead = dead_socket.local_addr().expect("its address");
    let mut config = etcd_config(
        &etcd,
        &format!("/dead-endpoint-{}", support::etcd::unique()),
    );
    config.kv.etcd_endpoints = format!("{dead},{}", etcd.endpoint());
    let server = start_server(config);
    let mut conn = dial(server.local_addr()).await;
    put_when_connected(&mut conn, put_kv("ns", "first", "v"), CONNECTED).await;
    for i in 0..20 {
        let resp = conn
            .request(put_kv("ns", &format!("k{i}"), "v"))
            .await
            .unwrap();
        assert_eq!(resp.code, 0, "write {i}: {:?}", resp.remark);
    }
    assert_eq!(
        value_of(server.local_addr(), "ns", "k19").await.as_deref(),
        Some("v")
    );
    server.stop().await;
    drop(dead_socket);
}

/// The daemon binary on `etcd` (its KV under `prefix`), killed by PID when dropped.
struct Daemon(Child);

impl Daemon {
    fn start(etcd: &Etcd, prefix: &str, dir: &Path) -> (Daemon, SocketAddr) {
        let (child, addr) = spawn_listening(
            Command::new(env!("CARGO_BIN_EXE_rmq-namesrv"))
                .args(["--listen", "127.0.0.1:0", "--log-level", "warn"])
                .arg("--kv-config-path")
                .arg(dir.join("kvConfig.json"))
                .arg("--config-store-path")
                .arg(dir.join("namesrv.properties"))
                .env("NAMESRV__KV__BACKEND", "etcd")
                .env("NAMESRV__KV__ETCD_ENDPOINTS", etcd.endpoint())
                .env("NAMESRV__KV__ETCD_PREFIX", prefix)
                .stderr(Stdio::null()),
            "rmq-namesrv listening on ",
        );
        let daemon = Daemon(child);
        let addr = addr
            .parse()
            .unwrap_or_else(|e| panic!("listening address {addr:?}: {e}"));
        (daemon, addr)
    }

    fn signal(&self, signal: &str) {
        support::etcd::signal(self.0.id(), signal);
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A NameServer frozen (SIGSTOP) while a PUT waits in its socket and another NameServer takes a
/// later PUT of the same key: on waking it refuses the old PUT (its client may have given up
/// long ago) instead of writing it over the later one; it takes changes again a moment later.
/// The chaos run's ns-pause found the old PUT applied (bench/chaos/README.md).
#[actix::test]
async fn a_frozen_nameserver_refuses_the_changes_it_finds_on_waking() {
    let etcd = support::etcd::start();
    let dir = test_dir("kv-frozen");
    let (frozen, frozen_addr) = Daemon::start(&etcd, "/frozen/kv", &dir);
    let mut on_frozen = Client::connect(&frozen_addr.to_string(), Duration::from_secs(20))
        .await
        .expect("connect");
    put_when_connected(&mut on_frozen, put_kv("ns", "k", "v1"), CONNECTED).await;
    let other = start_server(etcd_config(&etcd, "/frozen/kv"));
    let other_addr = other.local_addr();
    let mut on_other = connect(&other).await;
    put_when_connected(&mut on_other, put_kv("ns", "warm", "1"), CONNECTED).await;

    frozen.signal("-STOP");
    let waiting =
        actix_rt::spawn(async move { on_frozen.request(put_kv("ns", "k", "stale")).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let resp = on_other.request(put_kv("ns", "k", "v3")).await.unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    tokio::time::sleep(Duration::from_secs(5)).await;
    frozen.signal("-CONT");

    let resp = waiting
        .await
        .expect("task")
        .expect("an answer after waking");
    assert_eq!(resp.code, 1, "the stale PUT was taken: {:?}", resp.remark);
    let remark = resp.remark.unwrap_or_default();
    assert!(remark.contains("was frozen"), "{remark}");
    assert_eq!(value_of(other_addr, "ns", "k").await.as_deref(), Some("v3"));
    assert!(shows(frozen_addr, "ns", "k", Some("v3")).await);
    // Awake again: it takes changes.
    let mut on_frozen = dial(frozen_addr).await;
    put_when_connected(&mut on_frozen, put_kv("ns", "k", "v4"), CONNECTED).await;
    assert!(shows(other_addr, "ns", "k", Some("v4")).await);
    other.stop().await;
    drop(frozen);
    let _ = std::fs::remove_dir_all(&dir);
}
