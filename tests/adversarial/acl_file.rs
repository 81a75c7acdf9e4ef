//! The ACL file: a secret is its text as written, whatever YAML would make of it, and no error
//! about the file (at start, at a reload, in the log) shows a value from it.

use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::NameServer;

use crate::support::*;

use super::{secure_config, signed};

/// Secrets YAML would read as numbers (hex, floats, octal, signed, too large for 64 bits).
const NUMERIC_LOOKING: &[&str] = &[
    "0x1F",
    "1e3",
    "1.10",
    "0o17",
    "+12",
    "98765432109876543210987",
    "00123456",
    "1_000",
];

/// A value no log line or error may show.
const SECRET: &str = "98765432109876543210987";

#[actix::test]
async fn numeric_looking_secrets_sign_with_their_text_and_errors_never_show_one() {
    crate::logs::install();
    let dir = test_dir("acl-file");
    let mut config = secure_config(&dir);
    let mut acl = String::from("accounts:\n");
    for (i, secret) in NUMERIC_LOOKING.iter().enumerate() {
        acl.push_str(&format!(
            "  - accessKey: admin{i}\n    secretKey: {secret}\n    admin: true\n"
        ));
    }
    std::fs::write(&config.access.acl_file, &acl).unwrap();
    config.access.reload_check_interval = std::time::Duration::from_secs(3600);
    let acl_path = config.access.acl_file.clone();
    let server = start_server(config.clone());
    let mut conn = connect(&server).await;
    for (i, secret) in NUMERIC_LOOKING.iter().enumerate() {
        let request = signed(
            RemotingCommand::request(RequestCode::ADD_WRITE_PERM_OF_BROKER)
                .with_ext("brokerName", "b1"),
            &format!("admin{i}"),
            secret,
        );
        let answer = conn.request(request).await.unwrap();
        assert_eq!(
            (answer.code, answer.remark.as_deref()),
            (0, None),
            "{secret}"
        );
    }

    // A file that does not parse, reloaded: the old accounts stay, the reason shows no value.
    for broken in [
        format!("accounts:\n  - accessKey: k\n    secretKey: [{SECRET}]\n"),
        format!("accounts:\n  - accessKey: k\n    secretKey: {{x: {SECRET}}}\n"),
        format!("accounts:\n  - accessKey: k\n    secretKey: \"{SECRET}\n"),
        format!("accounts: {SECRET}\n"),
    ] {
        std::fs::write(&acl_path, &broken).unwrap();
        let reason = server.reload_accounts().await.unwrap_err();
        assert!(!reason.contains(SECRET), "{reason}");
        assert!(reason.contains("plain_acl.yml"), "names the file: {reason}");
    }
    assert!(
        crate::logs::lines_with(SECRET).is_empty(),
        "a log line shows the secret"
    );
    server.stop().await;

    // At start, the same.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let Err(err) = NameServer::new(config).start(listener) else {
        panic!("a broken ACL file stops the start");
    };
    let err = err.to_string();
    assert!(!err.contains(SECRET), "{err}");
    assert!(err.contains("accounts"), "names the entry: {err}");
}
