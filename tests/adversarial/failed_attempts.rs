//! The failed-attempt limit (`access.max_failures` per `access.failure_window`): it outlives
//! connections and threads, and a ledger full of other sources never turns it off.

use rmq_namesrv::config::{ProxyMode, ProxyProtocolSettings};
use rmq_namesrv::protocol::RemotingCommand;

use crate::support::*;

use super::{add_write_perm, ask_raw, secure_config};

fn wrong_guess() -> RemotingCommand {
    add_write_perm("guessed")
}

/// Whether an answer is a checked guess (bad signature) or refused unchecked.
fn checked(answer: &RemotingCommand) -> bool {
    let remark = answer.remark.as_deref().unwrap_or("");
    assert_eq!(answer.code, 16, "{remark}");
    assert!(
        remark.contains("bad signature") || remark.contains("too many failed attempts"),
        "{remark}"
    );
    remark.contains("bad signature")
}

#[actix::test]
async fn the_limit_outlives_connections_and_threads() {
    let dir = test_dir("failed-attempts");
    let mut config = secure_config(&dir);
    config.server.workers = 2;
    let server = start_server(config);
    // 40 guesses, each on a connection of its own, one after the other: connections alternate
    // between the two threads and none lives past its answer.
    let mut guesses_checked = 0;
    for _ in 0..40 {
        let answers = ask_raw(server.local_addr(), None, &[wrong_guess()]).await;
        assert_eq!(answers.len(), 1);
        guesses_checked += usize::from(checked(&answers[0]));
    }
    assert!(
        guesses_checked == 10,
        "{guesses_checked} of 40 guesses checked, the limit is 10"
    );
    // The right secret is refused too while the window lasts (a guess that hit must not tell).
    let right = add_write_perm("adminSecret");
    let answers = ask_raw(server.local_addr(), None, &[right]).await;
    assert!(answers[0]
        .remark
        .as_deref()
        .is_some_and(|r| r.contains("too many failed attempts")));
    server.stop().await;
}

#[actix::test]
async fn a_flood_of_sources_does_not_turn_the_limit_off() {
    let dir = test_dir("failed-attempts-flood");
    let mut config = secure_config(&dir);
    config.proxy_protocol = ProxyProtocolSettings {
        mode: ProxyMode::Optional,
        trusted_networks: vec!["127.0.0.0/8".parse().unwrap()],
    };
    let server = start_server(config);
    let addr = server.local_addr();
    // 8,600 sources (PROXY headers from the trusted balancer), one failure each, each in a /24
    // of its own, 32 connections at a time.
    let sources: Vec<String> = (0..8600u32)
        .map(|i| format!("10.{}.{}.1", i >> 8, i & 0xff))
        .collect();
    for batch in sources.chunks(32) {
        let asks = batch.iter().map(|source| {
            let source = source.clone();
            async move { ask_raw(addr, Some(&source), &[wrong_guess()]).await }
        });
        for answers in futures_util::future::join_all(asks).await {
            assert_eq!(answers.len(), 1);
        }
    }
    // A fresh source then gets the limit, not 500 of 500 guesses, even all on one connection.
    let guesses: Vec<RemotingCommand> = (0..500).map(|_| wrong_guess()).collect();
    let answers = ask_raw(addr, Some("198.51.100.7"), &guesses).await;
    assert_eq!(answers.len(), 500);
    let guesses_checked = answers.iter().filter(|a| checked(a)).count();
    assert_eq!(guesses_checked, 10, "of 500 guesses from a fresh source");
    server.stop().await;
}
