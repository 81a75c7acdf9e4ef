//! `rmq-soak`: the chaos and soak run behind `bench/soak.sh` (bench/SOAK.md).
//!
//! Starts a pair of NameServers and a third one for the KV rounds (the `rmq-namesrv` daemon,
//! built with the `soak` profile so that it answers FAULT_INJECTION), runs the dev cluster's
//! simulated brokers and client against the pair, plus two victim brokers, judged route
//! lookups and KV writers; injects faults one at a time for `--duration` (the last part quiet);
//! then checks that every broker is back in every route, every acknowledged KV write is there,
//! every server stops cleanly. Prints what was injected and what was lost; exits 0 when nothing
//! was lost, 1 when something was, 2 when the run could not be set up.
//!
//! ```text
//! rmq-soak --server target/soak/rmq-namesrv --dir /tmp/soak-dir --duration 10m [--seed N]
//! ```

mod faults;
mod kv;
mod ledger;
mod routes;
mod servers;
mod wire;

use std::cell::Cell;
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use clap::Parser;
use rmq_tools::sim::{SimClient, SimClientSpec};

use crate::faults::Chaos;
use crate::kv::{KvTarget, RoundSettings, WriterSettings};
use crate::ledger::{Ledger, Loss, Ns, Rng};
use crate::routes::{BrokerSettings, Brokers, LookupSettings, Topology, NO_SUCH_TOPIC};
use crate::servers::Server;

#[derive(Debug, Parser)]
#[command(
    name = "rmq-soak",
    about = "Chaos and soak run against rmq-namesrv processes (see bench/SOAK.md)"
)]
struct Args {
    /// The rmq-namesrv binary, built with debug assertions (cargo build --profile soak).
    #[arg(long)]
    server: PathBuf,
    /// Working directory for the servers' KV files and logs.
    #[arg(long)]
    dir: PathBuf,
    /// How long faults are injected, the quiet period at the end included (at least 30s).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    duration: Duration,
    /// Kill -9 rounds of the KV server; default 100 per 10 minutes, at least 20.
    #[arg(long)]
    kv_rounds: Option<u64>,
    /// Seed of the fault schedule (default: from the clock). Timing still varies between runs.
    #[arg(long)]
    seed: Option<u64>,
    /// How often the brokers register (real brokers: 30 s); broker windows last about two.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "2s")]
    register_interval: Duration,
    /// Mean time between two faults.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "2500ms")]
    fault_interval: Duration,
    /// Time between two judged route lookups on each NameServer.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "50ms")]
    lookup_interval: Duration,
    /// Per-request timeout. An answer that does not come in time is counted as slow, not lost.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    timeout: Duration,
}

/// How long a server may take to print its ready line (a loaded machine included).
const READY_WITHIN: Duration = Duration::from_secs(60);

fn main() -> ExitCode {
    let args = Args::parse();
    if args.duration < Duration::from_secs(30) {
        eprintln!("rmq-soak: --duration must be at least 30s");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("rmq-soak: cannot start a runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let pidfile = args.dir.join("pids");
    let made = |name: &str, fixed: bool| {
        Server::new(name, &args.server, &args.dir, &pidfile, fixed, Vec::new()).map(Rc::new)
    };
    let servers = match (made("ns-a", true), made("ns-b", true), made("ns-kv", false)) {
        (Ok(a), Ok(b), Ok(k)) => [a, b, k],
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            eprintln!("rmq-soak: {e}");
            return ExitCode::from(2);
        }
    };
    // SimBroker and SimClient run as local tasks (the dev cluster runs them on an actix
    // arbiter): the whole driver is one thread.
    let local = tokio::task::LocalSet::new();
    let code = local.block_on(&runtime, async {
        tokio::select! {
            code = run(&args, &servers) => code,
            () = interrupted() => {
                println!("rmq-soak: interrupted; stopping the servers");
                3
            }
        }
    });
    for server in &servers {
        server.kill_now();
    }
    ExitCode::from(code)
}

async fn interrupted() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// The whole run; returns the exit code.
async fn run(args: &Args, servers: &[Rc<Server>; 3]) -> u8 {
    let ledger = Ledger::new();
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let mut rng = Rng::new(seed);
    let started = Instant::now();
    let quiet = (args.duration / 20).clamp(Duration::from_secs(15), Duration::from_secs(60));
    let fault_end = started + args.duration - quiet;
    let end = started + args.duration;
    // Every loop of the run also stops here, whatever happens.
    let hard_until = end + Duration::from_secs(600);
    let rounds = args.kv_rounds.unwrap_or_else(|| {
        let per_10m = args.duration.as_secs_f64() / 600.0 * 100.0;
        (per_10m.round() as u64).max(20)
    });
    let [ns_a, ns_b, ns_kv] = servers;
    let pair = vec![Rc::clone(ns_a), Rc::clone(ns_b)];

    println!(
        "== rmq-soak: {} of faults (the last {} quiet), seed {seed}, {rounds} KV rounds",
        humantime::format_duration(args.duration),
        humantime::format_duration(quiet)
    );
    for server in &pair {
        if let Err(e) = server.start(READY_WITHIN).await {
            eprintln!("rmq-soak: {e}");
            return 2;
        }
    }
    let (addr_a, addr_b) = (ns_a.addr_text(), ns_b.addr_text());
    let addrs = vec![addr_a.clone(), addr_b.clone()];
    if let Err(e) = faults::can_inject(&addr_a, args.timeout).await {
        eprintln!("rmq-soak: {e}");
        return 2;
    }
    let topo = Rc::new(Topology::new());
    println!(
        "   pair: ns-a {} (pid {}), ns-b {} (pid {}); ns-kv: kill -9 rounds on its own port",
        addr_a,
        ns_a.pid().unwrap_or(0),
        addr_b,
        ns_b.pid().unwrap_or(0)
    );
    println!(
        "   brokers: {} simulated (dev cluster) + {} victims, {} topics, registering every {}; logs in {}",
        topo.instances.len() - topo.victims().len(),
        topo.victims().len(),
        topo.topics.len(),
        humantime::format_duration(args.register_interval),
        args.dir.display()
    );

    let brokers = Brokers::start(
        Rc::clone(&topo),
        &addrs,
        &BrokerSettings {
            register_interval: args.register_interval,
            timeout: args.timeout,
            until: hard_until,
        },
        &ledger,
    );
    let registered_by = Instant::now() + Duration::from_secs(60);
    // Bounded by `registered_by`.
    while !brokers.all_registered(1, pair.len()) {
        if Instant::now() >= registered_by {
            eprintln!("rmq-soak: the brokers did not register within 60 s");
            return 2;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ledger.say("every broker registered with both NameServers; faults start");

    let stop = Rc::new(Cell::new(false));
    let evidence = args.dir.join("evidence");
    let kv_pair: Vec<Rc<KvTarget>> = pair
        .iter()
        .map(|s| KvTarget::new(Rc::clone(s), &evidence))
        .collect();
    let kv_rounds = KvTarget::new(Rc::clone(ns_kv), &evidence);
    let mut tasks = Vec::new();
    tasks.push(tokio::task::spawn_local(Rc::clone(&brokers).watch(
        ledger.clone(),
        Rc::clone(&stop),
        hard_until,
    )));
    for (n, server) in pair.iter().enumerate() {
        tasks.push(tokio::task::spawn_local(routes::lookups(
            Ns(n),
            Rc::clone(server),
            Rc::clone(&topo),
            ledger.clone(),
            LookupSettings {
                interval: args.lookup_interval,
                timeout: args.timeout,
                until: hard_until,
            },
            Rc::clone(&stop),
        )));
    }
    for (n, target) in kv_pair.iter().enumerate() {
        for w in 0..2 {
            let keys = (0..8).map(|k| format!("w{w}-k{k}")).collect();
            tasks.push(tokio::task::spawn_local(kv::writer(
                Rc::clone(target),
                ledger.clone(),
                keys,
                format!("{}w{w}", Ns(n)),
                WriterSettings {
                    pace: Duration::from_millis(50),
                    timeout: args.timeout,
                    until: hard_until,
                },
                Rc::clone(&stop),
                rng.fork(),
            )));
        }
    }
    let mut watched = kv_pair.clone();
    watched.push(Rc::clone(&kv_rounds));
    tasks.push(tokio::task::spawn_local(kv::watch_files(
        watched,
        ledger.clone(),
        Rc::clone(&stop),
        hard_until,
    )));
    tasks.push(tokio::task::spawn_local(faults::monitor(
        vec![
            (Some(Ns(0)), Rc::clone(ns_a)),
            (Some(Ns(1)), Rc::clone(ns_b)),
            (None, Rc::clone(ns_kv)),
        ],
        Rc::clone(&brokers),
        ledger.clone(),
        READY_WITHIN,
        Rc::clone(&stop),
        hard_until,
    )));
    let mut client_topics = topo.topics.clone();
    client_topics.push(NO_SUCH_TOPIC.to_owned());
    let sim_client = SimClient::spawn(SimClientSpec {
        namesrv: addrs.clone(),
        topics: client_topics,
        interval: Duration::from_millis(100),
        timeout: args.timeout,
        tls: None,
    });
    let rounds_task = tokio::task::spawn_local(kv::rounds(
        Rc::clone(&kv_rounds),
        ledger.clone(),
        RoundSettings {
            rounds,
            spacing: fault_end
                .saturating_duration_since(Instant::now())
                .div_f64(rounds as f64),
            writers: 4,
            keys_per_writer: 8,
            timeout: args.timeout,
            ready_within: READY_WITHIN,
            until: hard_until,
        },
        rng.fork(),
        Rc::clone(&stop),
    ));
    let progress = tokio::task::spawn_local(progress(
        ledger.clone(),
        if args.duration > Duration::from_secs(300) {
            Duration::from_secs(30)
        } else {
            Duration::from_secs(10)
        },
        Rc::clone(&stop),
        hard_until,
    ));

    let mut chaos = Chaos {
        ledger: ledger.clone(),
        pair: pair.clone(),
        kv: kv_pair.clone(),
        brokers: Rc::clone(&brokers),
        topo: Rc::clone(&topo),
        timeout: args.timeout,
        ready_within: READY_WITHIN,
        rng: rng.fork(),
        injected: 0,
    };
    // Short runs deal faster, so that every kind of fault comes at least once (two decks).
    let interval = args.fault_interval.min((fault_end - started).div_f64(20.0));
    chaos.run(interval, fault_end, Rc::clone(&stop)).await;
    ledger.say(format!(
        "{} faults injected; quiet until the end, windows still open: {}",
        chaos.injected,
        ledger.open_windows()
    ));
    tokio::time::sleep_until(end.into()).await;
    let settle_by = Instant::now() + Duration::from_secs(60);
    // Bounded by `settle_by`.
    while ledger.open_windows() > 0 && Instant::now() < settle_by {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if ledger.open_windows() > 0 {
        ledger.say(format!(
            "{} fault windows still open 60 s after the end",
            ledger.open_windows()
        ));
    }

    // Final checks with the traffic still running, then a clean stop.
    let missing =
        routes::final_check(&topo, &pair, &ledger, args.timeout, Duration::from_secs(30)).await;
    ledger.say(format!(
        "final check: every broker in every route and in the cluster info of both NameServers: {}",
        if missing.is_empty() { "yes" } else { "NO" }
    ));
    for (n, target) in kv_pair.iter().enumerate() {
        kv::verify_wire(
            target,
            &ledger,
            &format!("{} at the end", Ns(n)),
            args.timeout,
        )
        .await;
    }
    // The rounds finish their last round (bounded by `hard_until`).
    let _ = rounds_task.await;
    stop.set(true);
    for task in tasks {
        let _ = tokio::time::timeout(args.timeout * 2, task).await;
    }
    let _ = progress.await;
    let client_stats = sim_client.stats();
    sim_client.stop().await;
    brokers.stop().await;
    for (n, target) in kv_pair.iter().enumerate() {
        let server = &target.server;
        match server.stop(Duration::from_secs(30)).await {
            Ok(status) if status.success() => {}
            Ok(status) => ledger.lost(
                Loss::UncleanStop,
                format!(
                    "{} exited {status} on SIGTERM: {}",
                    Ns(n),
                    server.log_tail(3)
                ),
            ),
            Err(e) => ledger.lost(Loss::UncleanStop, e),
        }
        kv::check_file(target, &ledger, &format!("{} after a graceful stop", Ns(n)));
    }
    let in_logs = |needle: &str| servers.iter().map(|s| count_in_log(s, needle)).sum::<u64>();
    let logs = Logged {
        panics: in_logs("handler panicked"),
        kv_not_saved: in_logs("KV file not saved"),
    };
    summary(&ledger, args, seed, chaos.injected, &logs, client_stats);
    if ledger.total_losses() == 0 {
        0
    } else {
        1
    }
}

/// Lines of the server's log that contain `needle`.
fn count_in_log(server: &Server, needle: &str) -> u64 {
    std::fs::read_to_string(server.log_path())
        .map(|text| text.lines().filter(|l| l.contains(needle)).count() as u64)
        .unwrap_or(0)
}

async fn progress(ledger: Ledger, every: Duration, stop: Rc<Cell<bool>>, until: Instant) {
    let mut next = Instant::now() + every;
    // Bounded by `stop` and `until`.
    while !stop.get() && Instant::now() < until {
        if Instant::now() >= next {
            let line = ledger.stats(|s| {
                format!(
                    "progress: {} lookups ({} ok, {} excused, {} slow), {} KV writes acknowledged, {} KV rounds, {} windows opened",
                    s.lookups, s.lookups_ok, s.lookups_excused, s.lookups_slow, s.kv_acked, s.kv_rounds, s.windows
                )
            });
            ledger.say(format!("{line}; lost so far: {}", ledger.total_losses()));
            next += every;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What the servers' logs say, for the summary.
struct Logged {
    /// "handler panicked": contained actor panics.
    panics: u64,
    /// "KV file not saved": saves that failed (their changes were answered with an error).
    kv_not_saved: u64,
}

fn summary(
    ledger: &Ledger,
    args: &Args,
    seed: u64,
    injected: u64,
    logs: &Logged,
    client: rmq_tools::sim::SimClientStats,
) {
    let join = |m: &std::collections::BTreeMap<String, u64>| {
        if m.is_empty() {
            return "none".to_owned();
        }
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let lines = ledger.stats(|s| {
        let cuts: std::collections::BTreeMap<String, u64> =
            s.cut_in.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
        let panics: std::collections::BTreeMap<String, u64> =
            s.panics.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
        let panic_total: u64 = s.panics.values().sum();
        // Every contained actor panic is logged at ERROR ("handler panicked"); a connection's
        // panic is not (its connection just closes).
        let loggable = s.actor_panics_contained + s.kv_round_panics;
        vec![
            format!("== soak summary: {} of faults, seed {seed}", humantime::format_duration(args.duration)),
            "injected:".to_owned(),
            format!("  faults dealt                                  {injected} ({} skipped: target not connected or not running)", s.faults_skipped),
            format!("  broker connections killed mid-frame           {} (cut in: {}; {} by RST, {} by FIN)", s.mid_frame_kills, join(&cuts), s.resets, s.mid_frame_kills - s.resets),
            format!("  NameServers SIGKILLed and restarted           {} ({}; longest restart {} ms, {:.1} s down in all)", s.sigkills.values().sum::<u64>(), join(&s.sigkills), s.restart_time_max.as_millis(), s.downtime.as_secs_f64()),
            format!("  panics injected                               {panic_total} ({}); contained: {}; actor panics logged by the servers: {} of {loggable}", join(&panics), s.panics_contained, logs.panics),
            format!("  KV rounds (writes, then kill -9)              {} ({} KV panics injected during their writes)", s.kv_rounds, s.kv_round_panics),
            "observed:".to_owned(),
            format!("  judged route lookups                          {} ({} ok, {} failed inside a fault window, {} slow)", s.lookups, s.lookups_ok, s.lookups_excused, s.lookups_slow),
            format!("  fault windows                                 {} (longest {:.1} s)", s.windows, s.window_max.as_secs_f64()),
            format!("  KV writes                                     {} sent, {} acknowledged, {} refused, {} unanswered", s.kv_sent, s.kv_acked, s.kv_refused, s.kv_unanswered),
            format!("  KV saves the servers logged as failed         {} (\"KV file not saved\": the changes were answered with an error)", logs.kv_not_saved),
            format!("  KV checks                                     {} (over the wire and of files; {} key checks), {} file parses", s.kv_checks, s.kv_keys_checked, s.kv_file_parses),
            format!("  dev-cluster client (not judged)               {} route queries: {} found, {} not found, {} errors", client.queries, client.found, client.not_found, client.errors),
        ]
    });
    for line in lines {
        println!("{line}");
    }
    println!("lost (every line must be 0):");
    for kind in Loss::ALL {
        println!("  {:<52} {}", kind.label(), ledger.losses(kind));
    }
    let total = ledger.total_losses();
    if total == 0 {
        println!("RESULT: PASS: nothing lost");
    } else {
        println!(
            "RESULT: FAIL: {total} lost (the LOST lines above say what; logs and evidence in {})",
            args.dir.display()
        );
    }
}
