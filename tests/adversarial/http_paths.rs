//! The HTTP port decides access on the path its router matches: percent-encoding, dot
//! segments or doubled slashes cannot reach the status page (`status` class) without
//! credentials, whatever spelling the router accepts.

use crate::support::http::get;
use crate::support::*;

use super::secure_config;

/// Spellings of `/api/status` and `/` a router might decode or normalize.
const SPELLINGS: &[&str] = &[
    "/api/status",
    "/%61pi/status",
    "/ap%69/status",
    "/%61%70%69/%73%74%61%74%75%73",
    "/%61%70%69%2f%73%74%61%74%75%73",
    "/API/status",
    "/api/status/",
    "//api/status",
    "/api//status",
    "/./api/status",
    "/api/./status",
    "/x/../api/status",
    "/api/status?x=1",
    "/api/status%3Fx",
    "/api/status%00",
    "/api/status#frag",
    "/",
    "/%2f",
    "/?topic=x",
    "//",
    "/.",
];

#[actix::test]
async fn no_spelling_of_a_status_path_passes_without_credentials() {
    let dir = test_dir("http-paths");
    let server = start_server(secure_config(&dir));
    let http = server.http_addr().expect("an HTTP port");
    let admin = "Authorization: Basic YWRtaW5LZXk6YWRtaW5TZWNyZXQ=\r\n"; // adminKey:adminSecret
    for path in SPELLINGS {
        let anonymous = get(http, path, "").await;
        assert!(
            anonymous.status != 200,
            "{path}: answered {} without credentials: {}",
            anonymous.status,
            anonymous.body
        );
        assert!(
            !anonymous.body.contains("\"clusters\"") && !anonymous.body.contains("<table"),
            "{path}: status content without credentials"
        );
        // Whatever the router made of it, an admin gets the same answer the page would give:
        // a spelling the router takes for the page is served, others are not found.
        let authorized = get(http, path, admin).await;
        assert!(
            [200, 400, 404].contains(&authorized.status),
            "{path}: {}",
            authorized.status
        );
        if authorized.status == 200 {
            assert_eq!(anonymous.status, 401, "{path}: the page's own refusal");
        }
    }
    // The probes stay open, under any spelling the router takes for them.
    assert_eq!(get(http, "/health", "").await.status, 200);
    assert_eq!(get(http, "/%68ealth", "").await.status, 200);
    server.stop().await;
}
