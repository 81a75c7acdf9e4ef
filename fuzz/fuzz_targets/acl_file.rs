//! Access control's parsers on hostile text: the first line as a RocketMQ white-address pattern
//! (matched against a few addresses), the rest as an ACL file (plain_acl.yml / users). Every
//! account parsed then has a request carrying its key decided under a signed policy, with the
//! input as the request's body (the signature content and HMAC on arbitrary bytes).
#![no_main]

use std::net::IpAddr;

use libfuzzer_sys::fuzz_target;
use rmq_namesrv::actors::access::patterns::AddressPattern;
use rmq_namesrv::actors::access::{check, AccessClass, Accounts, Policy};
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
    let Ok(accounts) = Accounts::parse(rest) else {
        return;
    };
    let policy = Policy {
        networks: None,
        signed: true,
    };
    for key in accounts.by_key.keys().take(4) {
        let cmd = RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
            .with_ext("AccessKey", key.as_str())
            .with_ext("Signature", first)
            .with_body(data.to_vec());
        for ip in addresses {
            let _ = check(&policy, AccessClass::AdminWrite, &accounts, ip, &cmd, false);
        }
    }
});
