//! The address server following DNS (`http.nsaddr_dns`), against a real DNS server (dnsmasq on
//! 127.0.0.1) whose records change during the test, as a StatefulSet's headless service does
//! when it scales: `/rocketmq/nsaddr` answers the current A and AAAA records with the port,
//! follows each change within a refresh, keeps the last list when DNS stops answering, and says
//! why (503) while nothing was ever resolved.

mod support;

use std::time::{Duration, Instant};

use rmq_namesrv::config::Config;
use support::http::get;
use support::*;

/// The name the records are for (the test's DNS server answers nothing else).
const NAME: &str = "rmq-namesrv-headless.rocketmq.svc.cluster.local";

fn dns_config(server: std::net::SocketAddr) -> Config {
    let mut config = test_config();
    config.http.listen = Some("127.0.0.1:0".parse().expect("address"));
    config.http.nsaddr_dns = format!("{NAME}:9876");
    config.http.nsaddr_refresh = Duration::from_secs(1);
    config.http.nsaddr_dns_server = Some(server);
    config
}

/// Polls `/rocketmq/nsaddr` until it answers `status` with `body` (bounded); the last answer
/// otherwise.
async fn wait_for(http: std::net::SocketAddr, status: u16, body: &str) -> (u16, String) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let answer = get(http, "/rocketmq/nsaddr", "").await;
        if (answer.status == status && answer.body == body) || Instant::now() >= deadline {
            return (answer.status, answer.body);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[actix::test]
async fn the_address_list_follows_the_records_of_the_name_and_survives_a_dns_outage() {
    let mut dns = dnsmasq::start(&[("127.0.0.12", NAME), ("127.0.0.11", NAME)]);
    let server = start_server(dns_config(dns.addr()));
    let http = server.http_addr().expect("the HTTP port is on");

    let two = "127.0.0.11:9876;127.0.0.12:9876\n";
    assert_eq!(wait_for(http, 200, two).await, (200, two.to_owned()));
    // Every subgroup gets the list, as with a fixed one.
    assert_eq!(
        get(http, "/rocketmq/nsaddr-unit1?nofix=1", "").await.body,
        two
    );

    // Scaled up, with an IPv6 member.
    dns.set_records(&[
        ("127.0.0.11", NAME),
        ("127.0.0.12", NAME),
        ("127.0.0.13", NAME),
        ("fd00::3", NAME),
    ]);
    let four = "127.0.0.11:9876;127.0.0.12:9876;127.0.0.13:9876;[fd00::3]:9876\n";
    assert_eq!(wait_for(http, 200, four).await, (200, four.to_owned()));

    // Scaled down: the first pod is gone.
    dns.set_records(&[("127.0.0.12", NAME), ("127.0.0.13", NAME)]);
    let down = "127.0.0.12:9876;127.0.0.13:9876\n";
    assert_eq!(wait_for(http, 200, down).await, (200, down.to_owned()));

    // The name loses every record (all pods unready): the last list is kept.
    dns.set_records(&[("127.0.0.99", "someone-else.test")]);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(wait_for(http, 200, down).await, (200, down.to_owned()));

    // DNS stops answering: the last list is kept through several refreshes.
    dns.kill();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(wait_for(http, 200, down).await, (200, down.to_owned()));
    server.stop().await;
}

#[actix::test]
async fn an_unresolved_name_is_a_503_that_says_why() {
    let mut dns = dnsmasq::start(&[("127.0.0.99", "someone-else.test")]);
    let server = start_server(dns_config(dns.addr()));
    let http = server.http_addr().expect("the HTTP port is on");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let answer = get(http, "/rocketmq/nsaddr", "").await;
    assert_eq!(answer.status, 503, "{answer:?}");
    assert!(answer.body.contains("http.nsaddr_dns"), "{answer:?}");
    assert!(answer.body.contains(NAME), "{answer:?}");

    // The name appears: served from the next refresh on.
    dns.set_records(&[("127.0.0.21", NAME)]);
    let one = "127.0.0.21:9876\n";
    assert_eq!(wait_for(http, 200, one).await, (200, one.to_owned()));
    dns.kill();
    server.stop().await;
}

#[test]
fn a_fixed_list_and_a_dns_name_together_are_refused_naming_the_key() {
    let mut config = dns_config("127.0.0.1:53".parse().expect("address"));
    config.http.nsaddr = "10.0.0.1:9876".into();
    let err = config.validate().expect_err("both set").to_string();
    assert!(err.contains("http.nsaddr_dns"), "{err}");

    let mut config = dns_config("127.0.0.1:53".parse().expect("address"));
    config.http.nsaddr_dns = "no-port.example".into();
    let err = config.validate().expect_err("no port").to_string();
    assert!(err.contains("http.nsaddr_dns"), "{err}");

    let mut config = dns_config("127.0.0.1:53".parse().expect("address"));
    config.http.nsaddr_refresh = Duration::from_millis(10);
    let err = config.validate().expect_err("too often").to_string();
    assert!(err.contains("http.nsaddr_refresh"), "{err}");
}
