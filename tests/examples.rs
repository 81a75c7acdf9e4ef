//! The examples run as developers run them (short, on ephemeral ports): the dev cluster with its
//! kill/restart schedule, and the embedded application.

use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>/examples/<name>`, next to the binary cargo built for these tests.
fn example(name: &str) -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_rmq-namesrv"));
    let dir = bin.parent().expect("target dir").join("examples");
    dir.join(name)
}

fn run(name: &str, args: &[&str]) -> String {
    let path = example(name);
    assert!(path.exists(), "{} is built by `cargo test`", path.display());
    let out = Command::new(&path)
        .args(args)
        .output()
        .expect("run example");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{name} failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn dev_cluster_registers_expires_and_recovers() {
    let out = run(
        "cluster",
        &[
            "--base-port",
            "0",
            "--register-interval",
            "300ms",
            "--broker-expiry",
            "2s",
            "--chaos",
            "1500ms",
            "--view-interval",
            "500ms",
            "--client-interval",
            "50ms",
            "--run-for",
            "7s",
        ],
    );
    // Both NameServers saw all 4 brokers (2 groups x master+slave) and 6 topics.
    assert!(
        out.lines()
            .any(|l| l.matches("4 brokers, 6 topics").count() == 2),
        "{out}"
    );
    // The schedule stopped and restarted a NameServer and killed and restarted a broker.
    assert!(out.contains("chaos: stopping NameServer"), "{out}");
    assert!(out.contains("chaos: killing broker-"), "{out}");
    assert!(out.contains("is back"), "{out}");
    // The client found routes; the shutdown unregistered every broker.
    assert!(out.contains(" found,"), "{out}");
    assert!(out.contains("cluster stopped"), "{out}");
    let stops: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("stopping NameServer"))
        .collect();
    assert!(!stops.is_empty(), "{out}");
    assert!(
        stops.iter().all(|l| l.ends_with("(0 brokers left)")),
        "{out}"
    );
}

#[test]
fn embedded_application_sees_routes_through_typed_messages() {
    let out = run("embedded", &["--run-for", "2500ms"]);
    assert!(out.contains("watcher: OrderEvents -> broker-a"), "{out}");
    assert!(out.contains("embedded: stopped"), "{out}");
}
