//! The KV side of the run: writers that PUT and DELETE keys of one namespace and remember what
//! the server acknowledged ([`KvModel`]), checks of what a server holds (over the wire, and in its
//! file after a kill -9), a watcher that parses every KV file while the servers run, and the
//! kill -9 rounds.
//!
//! The rule: a key must hold the state of its last acknowledged PUT or DELETE, or the state of an
//! operation sent after it whose outcome is unknown (in flight at a kill, unanswered, or answered
//! with an error — an error leaves the change in memory, to be saved with the next one). Each key
//! belongs to one writer, which has one operation in flight at a time, so this set is exact.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use rmq_protocol::body::KvTable;
use rmq_protocol::fastjson;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_tools::client::Client;

use crate::faults::inject;
use crate::ledger::{Ledger, Loss, Rng};
use crate::servers::{Phase, Server};

/// The namespace the soak owns.
pub const NAMESPACE: &str = "SOAK";

/// One key as far as its outcome is known.
#[derive(Debug, Default)]
struct KeyState {
    /// The state last acknowledged (`Some(None)`: an acknowledged delete).
    acked: Option<Option<String>>,
    /// States sent since, with no or an error answer: any of them may be what the server kept.
    since: Vec<Option<String>>,
}

/// What the server may hold, key by key.
#[derive(Debug, Default)]
pub struct KvModel {
    keys: BTreeMap<String, KeyState>,
}

impl KvModel {
    /// An operation is sent: `state` is the value it stores (`None`: a delete).
    pub fn sent(&mut self, key: &str, state: Option<String>) {
        self.keys
            .entry(key.to_owned())
            .or_default()
            .since
            .push(state);
    }

    /// The operation in flight on `key` was acknowledged.
    pub fn acked(&mut self, key: &str, state: Option<String>) {
        let entry = self.keys.entry(key.to_owned()).or_default();
        entry.acked = Some(state);
        entry.since.clear();
    }

    /// Keys the model knows.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Checks what a server holds in the namespace; one line per key that breaks the rule.
    pub fn check(&self, actual: &BTreeMap<String, String>) -> Vec<String> {
        let mut wrong = Vec::new();
        for (key, state) in &self.keys {
            let found = actual.get(key).cloned();
            let acked = state.acked.clone().unwrap_or(None);
            if found == acked || state.since.contains(&found) {
                continue;
            }
            let show = |s: &Option<String>| {
                s.as_deref()
                    .map_or("(absent)".to_owned(), |v| format!("{v:?}"))
            };
            wrong.push(match &state.acked {
                Some(acked) => format!(
                    "key {key}: acknowledged {} but found {}",
                    show(acked),
                    show(&found)
                ),
                None => format!("key {key}: found {}, never written", show(&found)),
            });
        }
        for key in actual.keys().filter(|k| !self.keys.contains_key(*k)) {
            wrong.push(format!("key {key}: present, never written"));
        }
        wrong
    }
}

/// The namespace's keys in a KV file's text (Java's `{"configTable":{ns:{key:value}}}`).
pub fn parse_file(bytes: &[u8]) -> Result<BTreeMap<String, String>, String> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let table = value
        .as_object()
        .ok_or("not a JSON object")?
        .get("configTable");
    let Some(table) = table else {
        return Ok(BTreeMap::new());
    };
    let table = table.as_object().ok_or("configTable is not an object")?;
    let Some(namespace) = table.get(NAMESPACE) else {
        return Ok(BTreeMap::new());
    };
    let namespace = namespace
        .as_object()
        .ok_or_else(|| format!("namespace {NAMESPACE} is not an object"))?;
    let mut keys = BTreeMap::new();
    for (key, value) in namespace {
        match value {
            serde_json::Value::String(v) => {
                keys.insert(key.clone(), v.clone());
            }
            serde_json::Value::Null => {}
            other => return Err(format!("key {key}: not a string: {other}")),
        }
    }
    Ok(keys)
}

/// A server the writers write to, with its model.
pub struct KvTarget {
    pub server: Rc<Server>,
    pub model: RefCell<KvModel>,
    paused: Cell<bool>,
    in_flight: Cell<u32>,
    /// Where evidence (copies of bad files) goes.
    evidence: PathBuf,
}

impl KvTarget {
    pub fn new(server: Rc<Server>, evidence: &Path) -> Rc<Self> {
        Rc::new(Self {
            server,
            model: RefCell::new(KvModel::default()),
            paused: Cell::new(false),
            in_flight: Cell::new(0),
            evidence: evidence.to_owned(),
        })
    }
}

/// How a writer runs.
#[derive(Debug, Clone)]
pub struct WriterSettings {
    pub pace: Duration,
    pub timeout: Duration,
    pub until: Instant,
}

/// Writes `keys` (this writer's alone) one operation at a time: PUT of a unique value, or now
/// and then a DELETE; until `stop` or `until`.
pub async fn writer(
    target: Rc<KvTarget>,
    ledger: Ledger,
    keys: Vec<String>,
    tag: String,
    settings: WriterSettings,
    stop: Rc<Cell<bool>>,
    mut rng: Rng,
) {
    let mut client: Option<Client> = None;
    let mut seq = 0u64;
    // Bounded by `stop` and `until`.
    while !stop.get() && Instant::now() < settings.until {
        if target.paused.get() || target.server.phase() != Phase::Running {
            client = client.filter(|_| target.server.phase() == Phase::Running);
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        }
        let Some(conn) = client.as_mut() else {
            match Client::connect(&target.server.addr_text(), settings.timeout).await {
                Ok(c) => client = Some(c),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
            continue;
        };
        let Some(key) = rng.pick(&keys).cloned() else {
            return;
        };
        seq += 1;
        let state = (!rng.percent(15)).then(|| format!("{tag}-{seq}"));
        let request = match &state {
            Some(value) => RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
                .with_ext("namespace", NAMESPACE)
                .with_ext("key", key.clone())
                .with_ext("value", value.clone()),
            None => RemotingCommand::request(RequestCode::DELETE_KV_CONFIG)
                .with_ext("namespace", NAMESPACE)
                .with_ext("key", key.clone()),
        };
        target.model.borrow_mut().sent(&key, state.clone());
        ledger.stat(|s| s.kv_sent += 1);
        target.in_flight.set(target.in_flight.get() + 1);
        let result = conn.request(request).await;
        target
            .in_flight
            .set(target.in_flight.get().saturating_sub(1));
        match result {
            Ok(reply) if reply.response_code() == ResponseCode::SUCCESS => {
                target.model.borrow_mut().acked(&key, state);
                ledger.stat(|s| s.kv_acked += 1);
            }
            Ok(_) => ledger.stat(|s| s.kv_refused += 1),
            Err(_) => {
                ledger.stat(|s| s.kv_unanswered += 1);
                client = None;
            }
        }
        tokio::time::sleep(settings.pace).await;
    }
}

/// Unpauses the writers when dropped.
struct Resume<'a>(&'a Cell<bool>);

impl Drop for Resume<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// Pauses the writers, waits for their operations in flight, and checks the namespace as the
/// server answers it (GET_KVLIST_BY_NAMESPACE) against the model.
pub async fn verify_wire(target: &KvTarget, ledger: &Ledger, what: &str, timeout: Duration) {
    target.paused.set(true);
    let _resume = Resume(&target.paused);
    let deadline = Instant::now() + timeout * 2 + Duration::from_secs(1);
    // Bounded by `deadline`: every request in flight has `timeout`.
    while target.in_flight.get() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut last_error = String::new();
    for _attempt in 0..3 {
        match read_namespace(&target.server, timeout).await {
            Ok(actual) => {
                let model = target.model.borrow();
                report(ledger, what, &model.check(&actual));
                let keys = model.len() as u64;
                ledger.stat(|s| {
                    s.kv_checks += 1;
                    s.kv_keys_checked += keys;
                });
                return;
            }
            Err(e) => last_error = e,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    ledger.say(format!(
        "KV check {what}: not done, the server did not answer ({last_error})"
    ));
}

async fn read_namespace(
    server: &Server,
    timeout: Duration,
) -> Result<BTreeMap<String, String>, String> {
    let mut client = Client::connect(&server.addr_text(), timeout)
        .await
        .map_err(|e| e.to_string())?;
    let reply = client
        .request(
            RemotingCommand::request(RequestCode::GET_KVLIST_BY_NAMESPACE)
                .with_ext("namespace", NAMESPACE),
        )
        .await
        .map_err(|e| e.to_string())?;
    match reply.response_code() {
        ResponseCode::SUCCESS => fastjson::from_slice::<KvTable>(reply.body_bytes())
            .map(|t| t.table)
            .map_err(|e| format!("unreadable KV table: {e}")),
        ResponseCode::QUERY_NOT_FOUND => Ok(BTreeMap::new()),
        code => Err(format!(
            "code {} ({})",
            code.0,
            reply.remark.unwrap_or_default()
        )),
    }
}

fn report(ledger: &Ledger, what: &str, wrong: &[String]) {
    for line in wrong {
        ledger.lost(Loss::KvWriteMissing, format!("{what}: {line}"));
    }
}

/// Parses the server's KV file (the server is down) and checks it against the model.
pub fn check_file(target: &KvTarget, ledger: &Ledger, what: &str) {
    let path = target.server.kv_path();
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::from(&b"{}"[..]),
        Err(e) => {
            ledger.lost(
                Loss::KvFileUnparsable,
                format!("{what}: cannot read {}: {e}", path.display()),
            );
            return;
        }
    };
    ledger.stat(|s| s.kv_file_parses += 1);
    match parse_file(&bytes) {
        Ok(actual) => {
            let model = target.model.borrow();
            report(ledger, what, &model.check(&actual));
            let keys = model.len() as u64;
            ledger.stat(|s| {
                s.kv_checks += 1;
                s.kv_keys_checked += keys;
            });
        }
        Err(e) => {
            let copy = keep_evidence(&target.evidence, &bytes);
            ledger.lost(
                Loss::KvFileUnparsable,
                format!("{what}: {} {e} (copy: {copy})", path.display()),
            );
        }
    }
}

/// Whether the target's KV file parses (a missing one does).
fn file_parses(target: &KvTarget) -> bool {
    match fs::read(target.server.kv_path()) {
        Ok(bytes) => parse_file(&bytes).is_ok(),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Keeps a copy of a bad file; returns where.
fn keep_evidence(dir: &Path, bytes: &[u8]) -> String {
    let _ = fs::create_dir_all(dir);
    // Bounded: the first 20 bad files are kept.
    for n in 0..20 {
        let path = dir.join(format!("bad-kv-file-{n}.json"));
        if !path.exists() {
            return match fs::write(&path, bytes) {
                Ok(()) => path.display().to_string(),
                Err(e) => format!("not kept: {e}"),
            };
        }
    }
    "not kept".into()
}

/// Watches every server's KV file while the servers run, as if each moment were a kill: the
/// file must parse (checked every 2 ms by a thread of its own) and hold every write acknowledged
/// so far (checked every 10 ms against the models). Both hold at every moment when the file is
/// only ever replaced whole by a rename, after the change and before its reply (the driver
/// records an acknowledgement only after the reply arrived). A key found wrong is reported once.
pub async fn watch_files(
    targets: Vec<Rc<KvTarget>>,
    ledger: Ledger,
    stop: Rc<Cell<bool>>,
    until: Instant,
) {
    let paths: Vec<PathBuf> = targets.iter().map(|t| t.server.kv_path()).collect();
    let parser_stop = Arc::new(AtomicBool::new(false));
    let parses = Arc::new(AtomicU64::new(0));
    let (torn_tx, torn) = mpsc::channel();
    let parser = {
        let stop = Arc::clone(&parser_stop);
        let parses = Arc::clone(&parses);
        std::thread::Builder::new()
            .name("kv-file-parser".into())
            .spawn(move || parse_continuously(&paths, &stop, until, &parses, &torn_tx))
            .ok()
    };
    let mut reported = std::collections::HashSet::new();
    // Bounded by `stop` and `until`.
    while !stop.get() && Instant::now() < until {
        for target in &targets {
            let Ok(bytes) = fs::read(target.server.kv_path()) else {
                continue;
            };
            if let Ok(actual) = parse_file(&bytes) {
                let wrong = target.model.borrow().check(&actual);
                for line in wrong {
                    let line = format!("{} file while it ran: {line}", target.server.name);
                    if reported.insert(line.clone()) {
                        ledger.lost(Loss::KvWriteMissing, line);
                    }
                }
            }
        }
        while let Ok((index, bytes, error)) = torn.try_recv() {
            report_torn(&ledger, targets.get(index), &bytes, &error);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    parser_stop.store(true, Ordering::Relaxed);
    if let Some(parser) = parser {
        let _ = parser.join();
    }
    while let Ok((index, bytes, error)) = torn.try_recv() {
        report_torn(&ledger, targets.get(index), &bytes, &error);
    }
    let parses = parses.load(Ordering::Relaxed);
    ledger.stat(|s| s.kv_file_parses += parses);
}

fn report_torn(ledger: &Ledger, target: Option<&Rc<KvTarget>>, bytes: &[u8], error: &str) {
    let Some(target) = target else {
        return;
    };
    let copy = keep_evidence(&target.evidence, bytes);
    ledger.lost(
        Loss::KvFileUnparsable,
        format!(
            "{} while {} ran: {error} (copy: {copy})",
            target.server.kv_path().display(),
            target.server.name
        ),
    );
}

/// Parses the files in a loop (a 2 ms pause between rounds) until `stop` or `until`; sends the
/// bytes of a file that does not parse, with its index, once per episode (until it parses
/// again).
fn parse_continuously(
    paths: &[PathBuf],
    stop: &AtomicBool,
    until: Instant,
    parses: &AtomicU64,
    torn: &mpsc::Sender<(usize, Vec<u8>, String)>,
) {
    let mut torn_now = vec![false; paths.len()];
    // Bounded by `stop` and `until`.
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        for ((index, path), was_torn) in paths.iter().enumerate().zip(torn_now.iter_mut()) {
            let Ok(bytes) = fs::read(path) else {
                continue;
            };
            parses.fetch_add(1, Ordering::Relaxed);
            match parse_file(&bytes) {
                Ok(_) => *was_torn = false,
                Err(error) => {
                    if !*was_torn {
                        let _ = torn.send((index, bytes, error));
                    }
                    *was_torn = true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// How the kill -9 rounds run.
#[derive(Debug, Clone)]
pub struct RoundSettings {
    pub rounds: u64,
    /// Time between the starts of two rounds.
    pub spacing: Duration,
    pub writers: usize,
    pub keys_per_writer: usize,
    pub timeout: Duration,
    pub ready_within: Duration,
    pub until: Instant,
}

/// The KV rounds: start the server on its file, check what it serves, write from several
/// connections, kill -9 it at a random moment (in half the rounds after a burst of KV panics,
/// then in half of those within 30 ms of the last one), parse the file and check it. Ends with a
/// graceful stop and a last check.
pub async fn rounds(
    target: Rc<KvTarget>,
    ledger: Ledger,
    settings: RoundSettings,
    mut rng: Rng,
    stop: Rc<Cell<bool>>,
) {
    let first = Instant::now();
    let mut done = 0u64;
    for round in 1..=settings.rounds {
        if stop.get() || Instant::now() >= settings.until {
            break;
        }
        let due = first + settings.spacing.mul_f64((round - 1) as f64);
        tokio::time::sleep_until(due.into()).await;
        if let Err(e) = target.server.start(settings.ready_within).await {
            if file_parses(&target) {
                ledger.lost(
                    Loss::ServerDied,
                    format!("KV round {round}: no restart: {e}"),
                );
                continue;
            }
            // The file the last kill left does not parse (already counted): the server refuses
            // it at every start, so the rounds cannot go on.
            ledger.say(format!(
                "KV rounds stop at round {round}: the server cannot start on the file the last kill left: {e}"
            ));
            return;
        }
        verify_wire(
            &target,
            &ledger,
            &format!("KV round {round}, after the restart"),
            settings.timeout,
        )
        .await;
        let writers_stop = Rc::new(Cell::new(false));
        let writers: Vec<_> = (0..settings.writers)
            .map(|w| {
                let keys = (0..settings.keys_per_writer)
                    .map(|k| format!("w{w}-k{k}"))
                    .collect();
                tokio::task::spawn_local(writer(
                    Rc::clone(&target),
                    ledger.clone(),
                    keys,
                    format!("r{round}w{w}"),
                    WriterSettings {
                        pace: Duration::ZERO,
                        timeout: settings.timeout,
                        until: settings.until,
                    },
                    Rc::clone(&writers_stop),
                    rng.fork(),
                ))
            })
            .collect();
        let writing = Instant::now();
        let kill_after = if rng.percent(30) {
            rng.between(Duration::ZERO, Duration::from_millis(50))
        } else {
            rng.between(Duration::from_millis(50), Duration::from_millis(600))
        };
        let mut note = String::new();
        if rng.percent(50) {
            // A burst of 1–8 KV panics, 5–40 ms apart, under the writes; then the kill, in half
            // of these rounds while the store is still coming back from the last one (the saves
            // it had under way finishing, the next ones starting).
            tokio::time::sleep(rng.between(Duration::ZERO, kill_after)).await;
            let burst = 1 + rng.below(8);
            let mut injected = 0u64;
            for _ in 0..burst {
                match inject(&target.server.addr_text(), "kv", settings.timeout).await {
                    Ok(reply) if reply.response_code() == ResponseCode::SUCCESS => injected += 1,
                    Ok(reply) => note = format!(", a KV panic refused: code {}", reply.code),
                    Err(e) => note = format!(", a KV panic not injected: {e}"),
                }
                tokio::time::sleep(
                    rng.between(Duration::from_millis(5), Duration::from_millis(40)),
                )
                .await;
            }
            ledger.stat(|s| s.kv_round_panics += injected);
            note = format!(", {injected} KV panic(s){note}");
            let rest = if rng.percent(50) {
                rng.between(Duration::ZERO, Duration::from_millis(30))
            } else {
                rng.between(Duration::ZERO, kill_after)
            };
            tokio::time::sleep(rest).await;
        } else {
            tokio::time::sleep(kill_after).await;
        }
        let acked_before = ledger.stats(|s| s.kv_acked);
        let killed_after = writing.elapsed();
        if let Err(e) = target.server.kill9().await {
            ledger.say(format!("KV round {round}: kill failed: {e}"));
        }
        writers_stop.set(true);
        for handle in writers {
            let _ = tokio::time::timeout(settings.timeout * 2, handle).await;
        }
        check_file(
            &target,
            &ledger,
            &format!("KV round {round}, after kill -9"),
        );
        done += 1;
        ledger.stat(|s| s.kv_rounds += 1);
        if round % 10 == 0 || round == settings.rounds {
            ledger.say(format!(
                "KV round {round}/{}: kill -9 after {} ms{note}; {} writes acknowledged in all rounds so far",
                settings.rounds,
                killed_after.as_millis(),
                acked_before
            ));
        }
    }
    if done < settings.rounds {
        ledger.say(format!(
            "KV rounds: {done} of {} done before the end",
            settings.rounds
        ));
    }
    // The last state: served after a restart, and written by a graceful stop.
    match target.server.start(settings.ready_within).await {
        Ok(_) => {
            verify_wire(
                &target,
                &ledger,
                "KV rounds, after the last round",
                settings.timeout,
            )
            .await;
            match target.server.stop(Duration::from_secs(30)).await {
                Ok(status) if status.success() => {}
                Ok(status) => ledger.lost(
                    Loss::UncleanStop,
                    format!("{} exited {status} on SIGTERM", target.server.name),
                ),
                Err(e) => ledger.lost(Loss::UncleanStop, e),
            }
            check_file(&target, &ledger, "KV rounds, after a graceful stop");
        }
        Err(e) => ledger.lost(
            Loss::ServerDied,
            format!("KV rounds: no final restart: {e}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn an_acknowledged_value_must_stay() {
        let mut m = KvModel::default();
        m.sent("k", Some("1".into()));
        m.acked("k", Some("1".into()));
        assert!(m.check(&map(&[("k", "1")])).is_empty());
        assert_eq!(m.check(&map(&[])).len(), 1, "lost");
        assert_eq!(m.check(&map(&[("k", "0")])).len(), 1, "never written");
        // In flight: either state.
        m.sent("k", Some("2".into()));
        assert!(m.check(&map(&[("k", "1")])).is_empty());
        assert!(m.check(&map(&[("k", "2")])).is_empty());
        // Answered with an error and followed by another: any of them.
        m.sent("k", None);
        assert!(m.check(&map(&[])).is_empty());
        assert!(m.check(&map(&[("k", "2")])).is_empty());
        // Acknowledged: only that one.
        m.acked("k", None);
        assert!(m.check(&map(&[])).is_empty());
        assert_eq!(m.check(&map(&[("k", "1")])).len(), 1);
        assert_eq!(m.check(&map(&[("k", "2")])).len(), 1);
    }

    #[test]
    fn unacknowledged_keys_may_be_absent_and_strangers_may_not_appear() {
        let mut m = KvModel::default();
        m.sent("k", Some("1".into()));
        assert!(m.check(&map(&[])).is_empty());
        assert!(m.check(&map(&[("k", "1")])).is_empty());
        assert_eq!(m.check(&map(&[("j", "1")])).len(), 1);
    }

    #[test]
    fn files_parse_as_java_writes_them() {
        let text =
            br#"{"configTable":{"ORDER_TOPIC_CONFIG":{"T":"b:4"},"SOAK":{"a":"1","b":null}}}"#;
        assert_eq!(parse_file(text).unwrap(), map(&[("a", "1")]));
        assert!(parse_file(br#"{"configTable":{}}"#).unwrap().is_empty());
        assert!(parse_file(b"{}").unwrap().is_empty());
        assert!(parse_file(br#"{"configTable":{"SOAK":{"a":"1""#).is_err());
        assert!(parse_file(b"").is_err());
        assert!(parse_file(b"\0\0\0").is_err());
    }
}
