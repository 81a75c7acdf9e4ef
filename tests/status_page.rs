//! The status page `GET /` in a real headless browser: Chromium from the OS packages
//! (`/usr/bin/chromium`, or `$CHROMIUM`) loads the page of a server with two clusters of a
//! master and a slave each, topics and KV entries registered over TCP, and the test asserts on
//! the DOM the browser built (`--dump-dom`): every cluster, broker group, address, role and
//! RocketMQ version (the one each broker's registration frame carried), the topics with their
//! queues and permissions, the KV namespaces, the counters, the `?topic=` search. Screenshots
//! are kept as artifacts in `target/artifacts/` (assertions, not pixel diffs). Without Chromium
//! the test fails, saying how to install it: CI installs it (.ci/run).

mod support;

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rmq_namesrv::protocol::body::perm;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::tools::client::Client;
use rmq_namesrv::NameServerHandle;
use support::*;

/// Bound on one Chromium run; on expiry its whole process group is killed.
const BROWSER_LIMIT: Duration = Duration::from_secs(60);
/// A KV value that would become an element if the page did not escape it.
const HOSTILE: &str = "<i id=\"injected\">x</i> & 'more'";

/// The Chromium binary: `$CHROMIUM`, else the Debian package's `/usr/bin/chromium`. Fails the
/// test (never skips it) when there is none.
fn chromium() -> PathBuf {
    let path = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.is_file(),
        "Chromium not found at {}: the status-page test needs a headless browser. Install it \
         with `apt-get install -y --no-install-recommends chromium` (CI does, in .ci/run) or \
         set CHROMIUM to its path.",
        path.display()
    );
    path
}

/// Where screenshots are kept: `$CARGO_TARGET_DIR/artifacts` or `target/artifacts`.
fn artifacts_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("artifacts");
    std::fs::create_dir_all(&dir).expect("artifacts dir");
    dir
}

/// What one Chromium run printed.
#[derive(Debug)]
struct BrowserRun {
    stdout: String,
    stderr: String,
}

/// Runs headless Chromium on `url` with `args` (`--dump-dom`, `--screenshot=...`), with a
/// private profile directory, in a process group of its own that is killed if the run takes
/// longer than [`BROWSER_LIMIT`].
fn run_chromium(browser: &Path, args: &[String], url: &str) -> BrowserRun {
    let profile = test_dir("chromium-profile");
    let mut child = Command::new(browser)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
            "--force-color-profile=srgb",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", browser.display()));
    let pid = child.id();
    // Read both pipes on their own threads, so a large DOM never blocks the browser.
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let stdout = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = out.read_to_string(&mut text);
        text
    });
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + BROWSER_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            break status;
        }
        if Instant::now() >= deadline {
            // The group Chromium leads (its renderer and GPU processes): only what we started.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .status();
            let _ = child.wait();
            panic!("chromium did not finish {url} within {BROWSER_LIMIT:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let run = BrowserRun {
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    };
    let _ = std::fs::remove_dir_all(&profile);
    assert!(
        status.success(),
        "chromium failed on {url}: {status}: {run:?}"
    );
    run
}

/// The DOM Chromium built for `url`, serialized.
async fn dump_dom(browser: &Path, url: &str) -> String {
    let (browser, url) = (browser.to_owned(), url.to_owned());
    let run = tokio::task::spawn_blocking(move || {
        run_chromium(&browser, &["--dump-dom".to_owned()], &url)
    })
    .await
    .expect("chromium thread");
    assert!(
        run.stdout.contains("</html>"),
        "no DOM dumped: {}",
        run.stderr
    );
    run.stdout
}

/// A 1280x2000 screenshot of `url` in `target/artifacts/<name>`; returns its path.
async fn screenshot(browser: &Path, url: &str, name: &str) -> PathBuf {
    let path = artifacts_dir().join(name);
    let _ = std::fs::remove_file(&path);
    let args = vec![
        format!("--screenshot={}", path.display()),
        "--window-size=1280,2000".to_owned(),
    ];
    let (browser, url) = (browser.to_owned(), url.to_owned());
    tokio::task::spawn_blocking(move || run_chromium(&browser, &args, &url))
        .await
        .expect("chromium thread");
    let png =
        std::fs::read(&path).unwrap_or_else(|e| panic!("no screenshot at {}: {e}", path.display()));
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "{} is not a PNG of a rendered page ({} bytes)",
        path.display(),
        png.len()
    );
    println!("status page screenshot: {}", path.display());
    path
}

/// Text with tags removed and the entities Chromium writes decoded.
fn text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
}

/// The parts of `html` from each `open` to the next `close` (both excluded).
fn sections<'a>(html: &'a str, open: &str, close: &str) -> Vec<&'a str> {
    let mut found = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find(open) {
        let after = &rest[start + open.len()..];
        let end = after.find(close).unwrap_or(after.len());
        found.push(&after[..end]);
        rest = &after[end..];
    }
    found
}

/// The cells' text of each `<tr class="{class}">` in `html`.
fn rows(html: &str, class: &str) -> Vec<Vec<String>> {
    sections(html, &format!("<tr class=\"{class}\">"), "</tr>")
        .into_iter()
        .map(|row| {
            sections(row, "<td", "</td>")
                .into_iter()
                .map(|cell| text(cell.split_once('>').map_or("", |(_, c)| c)))
                .collect()
        })
        .collect()
}

fn strings(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|row| row.iter().map(|c| (*c).to_owned()).collect())
        .collect()
}

/// Registers `broker` on its own connection as a broker of RocketMQ `version` (an `MQVersion`
/// ordinal, the frame's `version`); it stays registered while the connection lives.
async fn register(server: &NameServerHandle, broker: FakeBroker, version: i32) -> Client {
    let mut conn = connect(server).await;
    let resp = conn
        .request(broker.register().with_version(version))
        .await
        .expect("register");
    assert_eq!(resp.code, 0, "{resp:?}");
    conn
}

async fn put_kv(server: &NameServerHandle, namespace: &str, key: &str, value: &str) {
    let mut conn = connect(server).await;
    let resp = conn
        .request(
            RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
                .with_ext("namespace", namespace)
                .with_ext("key", key)
                .with_ext("value", value),
        )
        .await
        .expect("PUT_KV_CONFIG");
    assert_eq!(resp.code, 0, "{resp:?}");
}

fn broker(cluster: &str, group: &str, id: i64, port: u16, topics: &[&str]) -> FakeBroker {
    let topics = topics.iter().map(|t| (*t).to_owned()).collect();
    FakeBroker::new(cluster, group, id, port, topics)
}

#[actix::test]
async fn the_status_page_shows_clusters_brokers_topics_and_kv_in_chromium() {
    let browser = chromium();
    let mut config = test_config();
    config.http.listen = Some("127.0.0.1:0".parse().expect("loopback"));
    let server = start_server(config);
    let http = server.http_addr().expect("the HTTP port is on");
    let remoting = server.local_addr().to_string();

    let east = ["OrderTopic", "PaymentTopic"];
    let mut west_master = broker("ClusterWest", "broker-west", 0, 10921, &["InventoryTopic"]);
    west_master.topics.push("AuditTopic".to_owned());
    west_master.perm = perm::READ;
    let west_slave = FakeBroker {
        id: 1,
        addr: "127.0.0.1:10922".to_owned(),
        ha_addr: "127.0.0.1:10923".to_owned(),
        ..west_master.clone()
    };
    // East runs RocketMQ 5.3.1, west 4.9.4 (MQVersion ordinals, as in MQVersion.java).
    let (v5_3_1, v4_9_4) = (475, 401);
    let _brokers = [
        register(
            &server,
            broker("ClusterEast", "broker-east", 0, 10911, &east),
            v5_3_1,
        )
        .await,
        register(
            &server,
            broker("ClusterEast", "broker-east", 1, 10912, &east),
            v5_3_1,
        )
        .await,
        register(&server, west_master, v4_9_4).await,
        register(&server, west_slave, v4_9_4).await,
    ];
    put_kv(
        &server,
        "ORDER_TOPIC_CONFIG",
        "OrderTopic",
        "broker-east:4;broker-west:2",
    )
    .await;
    put_kv(&server, "ESCAPE_CHECK", "hostile", HOSTILE).await;

    let url = format!("http://{http}/");
    let dom = dump_dom(&browser, &url).await;
    let shown = text(&dom);

    // The head: address, health, a self-refresh and no script or external asset.
    assert!(
        dom.contains(&format!("<title>rmq-namesrv {remoting}</title>")),
        "{dom}"
    );
    assert!(dom.contains("http-equiv=\"refresh\""), "{dom}");
    assert!(!dom.contains("<script"), "{dom}");
    assert!(!dom.contains("src=\"http") && !dom.contains("href=\"http"));
    assert!(shown.contains("healthy"), "{shown}");
    assert!(
        shown.contains("2 clusters, 2 broker groups, 4 live brokers, 4 topics, 2 KV entries"),
        "{shown}"
    );

    // Every cluster, group, address, role and RocketMQ version, each broker in its cluster's
    // table.
    for (cluster, expected) in [
        (
            "ClusterEast",
            [
                [
                    "broker-east",
                    "0",
                    "master",
                    "127.0.0.1:10911",
                    "V5_3_1 (475)",
                ],
                [
                    "broker-east",
                    "1",
                    "slave",
                    "127.0.0.1:10912",
                    "V5_3_1 (475)",
                ],
            ],
        ),
        (
            "ClusterWest",
            [
                [
                    "broker-west",
                    "0",
                    "master",
                    "127.0.0.1:10921",
                    "V4_9_4 (401)",
                ],
                [
                    "broker-west",
                    "1",
                    "slave",
                    "127.0.0.1:10922",
                    "V4_9_4 (401)",
                ],
            ],
        ),
    ] {
        assert!(
            dom.contains(&format!("<h3 class=\"cluster\">{cluster}</h3>")),
            "{dom}"
        );
        let table = sections(
            &dom,
            &format!("<table class=\"brokers\" data-cluster=\"{cluster}\">"),
            "</table>",
        );
        assert_eq!(table.len(), 1, "one table for {cluster}: {dom}");
        let brokers = rows(table[0], "broker");
        let identity: Vec<Vec<String>> = brokers.iter().map(|r| r[..5].to_vec()).collect();
        let expected: Vec<&[&str]> = expected.iter().map(|r| &r[..]).collect();
        assert_eq!(identity, strings(&expected), "{cluster}");
        for row in &brokers {
            // data version, heartbeat age, expiry countdown (120 s by default)
            assert_eq!(row.len(), 8, "{row:?}");
            assert_eq!(row[5], "1/0", "{row:?}");
            let age: f64 = row[6].trim_end_matches(" s").parse().expect("age");
            let left: f64 = row[7].trim_end_matches(" s").parse().expect("countdown");
            assert!(age < 60.0 && left > 60.0 && left <= 120.0, "{row:?}");
        }
    }

    // Topics with their group, queues and permissions; the read-only group shows R--.
    assert_eq!(
        rows(&dom, "topic"),
        strings(&[
            &["AuditTopic", "broker-west", "4", "4", "R-- (4)"],
            &["InventoryTopic", "broker-west", "4", "4", "R-- (4)"],
            &["OrderTopic", "broker-east", "4", "4", "RW- (6)"],
            &["PaymentTopic", "broker-east", "4", "4", "RW- (6)"],
        ])
    );
    assert!(shown.contains("4 matching, 4 shown"), "{shown}");

    // KV namespaces and entries; a value with markup is shown as text, not as an element.
    assert!(dom.contains("<h3 class=\"namespace\">ORDER_TOPIC_CONFIG</h3>"));
    assert!(dom.contains("<h3 class=\"namespace\">ESCAPE_CHECK</h3>"));
    assert_eq!(
        rows(&dom, "kv-entry"),
        strings(&[
            &["hostile", HOSTILE],
            &["OrderTopic", "broker-east:4;broker-west:2"],
        ])
    );
    assert!(!dom.contains("<i id=\"injected\">"), "{dom}");

    // Counters and connections (the four brokers' connections at least).
    for counter in [
        "live_brokers: 4",
        "broker_groups: 2",
        "clusters: 2",
        "topics: 4",
        "kv_entries: 2",
        "registrations_new: 4",
    ] {
        assert!(shown.contains(counter), "{counter}: {shown}");
    }
    let requests = sections(&dom, "<table id=\"requests\">", "</table>");
    assert!(
        text(requests.first().copied().unwrap_or_default()).contains("REGISTER_BROKER"),
        "{dom}"
    );
    let connections = sections(&dom, "<table id=\"connections\">", "</table>");
    let peers = connections
        .first()
        .map_or(0, |t| t.matches("127.0.0.1:").count());
    assert!(peers >= 4, "{dom}");

    // The search form submits ?topic=; a search narrows the list and keeps its text.
    assert!(
        dom.contains("<form method=\"get\" action=\"/\" role=\"search\">"),
        "{dom}"
    );
    assert!(dom.contains("name=\"topic\""), "{dom}");
    let searched = dump_dom(&browser, &format!("http://{http}/?topic=order")).await;
    assert_eq!(
        rows(&searched, "topic"),
        strings(&[&["OrderTopic", "broker-east", "4", "4", "RW- (6)"]])
    );
    assert!(searched.contains("value=\"order\""), "{searched}");
    assert!(text(&searched).contains("1 matching"), "{searched}");
    assert!(searched.contains("id=\"topic-clear\""), "{searched}");
    // The rest of the page is unchanged by a search.
    assert_eq!(rows(&searched, "broker").len(), 4);
    let none = dump_dom(&browser, &format!("http://{http}/?topic=%3Cb%3Enothing")).await;
    assert!(rows(&none, "topic").is_empty());
    assert!(
        text(&none).contains("No topic matches the search."),
        "{none}"
    );
    assert!(none.contains("value=\"&lt;b&gt;nothing\""), "{none}");

    // Screenshots, kept for a look: assertions above, no pixel diff.
    screenshot(&browser, &url, "status-page.png").await;
    screenshot(
        &browser,
        &format!("http://{http}/?topic=Topic"),
        "status-page-search.png",
    )
    .await;
}

#[actix::test]
async fn the_controller_section_shows_broker_sets_masters_and_sync_state_sets_in_chromium() {
    use support::controller::requests::{alter, elect};
    use support::controller::{controller, controller_config, join};
    const CLUSTER: &str = "ClusterHa";
    let browser = chromium();
    let dir = test_dir("status-controller");
    let mut config = controller_config(&dir);
    config.http.listen = Some("127.0.0.1:0".parse().expect("loopback"));
    config.controller.notify_broker_role_changed = false;
    let server = start_server(config);
    let http = server.http_addr().expect("the HTTP port is on");
    let me = server.controller_addr().expect("controller on").to_string();

    // A master and an in-sync slave; a third member that joined and went away.
    let (mut master, mut slave) = (controller(&server).await, controller(&server).await);
    join(
        &mut master,
        CLUSTER,
        "broker-ha",
        1,
        "127.0.0.1:10911",
        60_000,
    )
    .await;
    let r = master
        .request(elect(CLUSTER, "broker-ha", 1))
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    join(
        &mut slave,
        CLUSTER,
        "broker-ha",
        2,
        "127.0.0.1:10921",
        60_000,
    )
    .await;
    let r = master
        .request(alter("broker-ha", 1, 1, &[1, 2], 1))
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    let mut gone = controller(&server).await;
    join(
        &mut gone,
        CLUSTER,
        "broker-ha",
        3,
        "127.0.0.1:10931",
        60_000,
    )
    .await;
    drop(gone);
    let api = format!("http://{http}/api/status");
    let third_gone = eventually(TIMEOUT, || async {
        let answer = support::http::get(http, "/api/status", "").await;
        let status: serde_json::Value = serde_json::from_str(&answer.body).unwrap_or_default();
        status["controller"]["broker_sets"][0]["members"][2]["alive"] == false
            && status["controller"]["broker_sets"][0]["members"][1]["alive"] == true
    })
    .await;
    assert!(third_gone, "{api}: the third member still alive");

    let url = format!("http://{http}/");
    let dom = dump_dom(&browser, &url).await;
    let page = text(&dom);
    assert!(
        page.contains(&format!("this node n0 ({me}): leader")),
        "{page}"
    );
    assert!(page.contains(&format!("leader: n0 ({me})")), "{page}");
    assert_eq!(
        rows(&dom, "broker-set"),
        strings(&[&[
            CLUSTER,
            "broker-ha",
            "1",
            "127.0.0.1:10911",
            "1",
            "1, 2",
            "2",
            "3"
        ]])
    );
    let members: Vec<Vec<String>> = rows(&dom, "controller-member")
        .into_iter()
        .map(|mut row| {
            let age = row.pop().unwrap_or_default();
            row.push(if age.ends_with(" s") {
                "age".into()
            } else {
                age
            });
            row
        })
        .collect();
    let expected: &[&[&str]] = &[
        &[
            "broker-ha",
            "1",
            "127.0.0.1:10911",
            "master",
            "alive",
            "yes",
            "age",
        ],
        &[
            "broker-ha",
            "2",
            "127.0.0.1:10921",
            "slave",
            "alive",
            "yes",
            "age",
        ],
        &[
            "broker-ha",
            "3",
            "127.0.0.1:10931",
            "slave",
            "not alive",
            "no",
            "none",
        ],
    ];
    assert_eq!(members, strings(expected), "{dom}");
    let requests = rows(&dom, "controller-request");
    let elections = strings(&[&["CONTROLLER_ELECT_MASTER", "1", "0", "0"]]);
    assert!(requests.contains(&elections[0]), "{requests:?}");
    screenshot(&browser, &url, "status-page-controller.png").await;
    server.stop().await;
}
