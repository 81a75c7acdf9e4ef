//! UPDATE_NAMESRV_CONFIG (318) and the config store file it writes: no update can plant a line
//! of its own in the file (CVE-2023-37582's kind: the next start with `--config` that file would
//! read it), whatever the escapes of its body.

use rmq_namesrv::protocol::{properties, RemotingCommand, RequestCode};

use crate::support::*;

fn update(body: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::UPDATE_NAMESRV_CONFIG).with_body(body.as_bytes().to_vec())
}

async fn config_text(conn: &mut rmq_namesrv::tools::client::Client) -> String {
    let resp = conn
        .request(RemotingCommand::request(RequestCode::GET_NAMESRV_CONFIG))
        .await
        .expect("GET_NAMESRV_CONFIG answered");
    body_text(&resp)
}

#[actix::test]
async fn escaped_line_breaks_cannot_plant_keys_in_the_config_store() {
    let config = test_config();
    let store = config.kv.config_store_path.clone();
    let kv_path = config.kv.path.clone();
    let server = start_server(config);
    let mut conn = connect(&server).await;

    // The attack: line breaks escaped in the properties text, so that the parsed value holds
    // them; written unescaped, they would become lines of their own.
    for body in [
        "productEnvName=x\\u000akvConfigPath=/ATT/kv.json\\u000atls.server.mode=disabled",
        "productEnvName=x\\nkvConfigPath=/ATT/kv.json",
        "productEnvName=x\\rkvConfigPath=/ATT/kv.json",
        "productEnvName=x\\u000dkvConfigPath=/ATT/kv.json",
        "productEnvName=x\\u0085kvConfigPath=/ATT/kv.json",
    ] {
        let resp = conn.request(update(body)).await.unwrap();
        assert_ne!(resp.code, 0, "{body}: refused");
        let remark = resp.remark.unwrap_or_default();
        assert!(remark.contains("productEnvName"), "{body}: {remark}");
        assert!(!store.exists(), "{body}: nothing written");
        let shown = config_text(&mut conn).await;
        assert!(!shown.contains("/ATT/"), "{body}: {shown}");
    }
    // A key holding a line break is refused the same way.
    let resp = conn
        .request(update("a\\u000akvConfigPath=/ATT/kv.json"))
        .await
        .unwrap();
    assert_ne!(resp.code, 0);

    // Separators, comment marks, backslashes and non-ASCII are values like any other: they
    // are stored escaped and read back exactly, by the server and by `--config`.
    let wanted = "a=b:c #d !e \\ é ☃";
    let body = format!(
        "productEnvName={}",
        properties::escape(wanted, false, properties::Style::File)
    );
    let resp = conn.request(update(&body)).await.unwrap();
    assert_eq!((resp.code, resp.remark.as_deref()), (0, None));
    let shown = properties::parse(&config_text(&mut conn).await).unwrap();
    assert_eq!(shown["productEnvName"], wanted);
    let saved_text = std::fs::read_to_string(&store).unwrap();
    assert!(saved_text.is_ascii(), "{saved_text}");
    let saved = properties::parse(&saved_text).unwrap();
    assert_eq!(saved["productEnvName"], wanted);
    assert_eq!(
        saved
            .keys()
            .filter(|k| k.as_str() == "kvConfigPath")
            .count(),
        1
    );
    server.stop().await;

    let loaded =
        rmq_namesrv::config::Config::load(Some(&store), Vec::new(), &Default::default()).unwrap();
    assert_eq!(loaded.cluster_test.product_env_name, wanted);
    assert_eq!(loaded.kv.path, kv_path);
    assert_eq!(
        loaded.tls.mode,
        rmq_namesrv::config::Config::default().tls.mode
    );
}
