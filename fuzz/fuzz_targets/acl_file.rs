//! Access control's parsers on hostile text: the first line as a RocketMQ white-address pattern
//! (matched against a few addresses), the rest as an ACL file (plain_acl.yml / users). Every
//! account parsed then has a request carrying its key decided under a signed policy, with the
//! input as the request's body (the signature content and HMAC on arbitrary bytes). A file that
//! does not parse is refused with a reason that never shows a secret's text.
#![no_main]

use std::net::IpAddr;

use libfuzzer_sys::fuzz_target;
use rmq_namesrv::actors::access::patterns::AddressPattern;
use rmq_namesrv::actors::access::{check, AccessClass, Accounts, Client, Policy, Security};
use rmq_protocol::{RemotingCommand, RequestCode};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let addresses: [IpAddr; 3] = [
        IpAddr::from([192, 168, 1, 7]),
        IpAddr::from([0xfe80, 0, 0, 0, 0, 0, 0, 1]),
        IpAddr::from([0, 0, 0, 0, 0, 0xffff, 0x0a00, 0x0001]),
    ];
    if let Ok(pattern) = AddressPattern::parse(first) {
        for ip in addresses {
            let _ = pattern.matches(ip);
        }
    }
    let accounts = match Accounts::parse(rest) {
        Ok(accounts) => accounts,
        Err(reason) => {
            for secret in secrets(rest) {
                assert!(!reason.contains(secret), "{reason:?} shows {secret:?}");
            }
            return;
        }
    };
    let policy = Policy {
        networks: None,
        signed: true,
        ..Policy::default()
    };
    for key in accounts.by_key.keys().take(4) {
        let cmd = RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
            .with_ext("AccessKey", key.as_str())
            .with_ext("Signature", first)
            .with_body(data.to_vec());
        for ip in addresses {
            let client = Client {
                ip,
                security: Security::default(),
            };
            let _ = check(&policy, AccessClass::AdminWrite, &accounts, client, &cmd, false);
        }
    }
});

/// What follows `secretKey:` or `password:` on a line, when it is long and holds a digit (so
/// that it cannot be a word of the error's own text).
fn secrets(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|line| {
        let (_, value) = line
            .split_once("secretKey:")
            .or_else(|| line.split_once("password:"))?;
        let value = value.trim().trim_matches(['"', '\'', '[', ']', '{', '}', ' ']);
        (value.len() >= 8 && value.chars().any(|c| c.is_ascii_digit())).then_some(value)
    })
}
