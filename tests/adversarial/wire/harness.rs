//! The harness of the first hostile suite: a server, a registered witness broker, and a witness
//! connection that every case checks before and after.

use std::net::SocketAddr;
use std::time::Duration;

use rmq_namesrv::config::Config;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::tools::client::Client;
use rmq_namesrv::NameServerHandle;

use crate::frames::summary;
use crate::logs;
use crate::raw::{Next, Raw, BIG_STEP, STEP};
use crate::support::*;

/// The topic the witness broker registers; every witness must see its route.
pub(crate) const WITNESS_TOPIC: &str = "WitnessTopic";
pub(crate) const WITNESS_ADDR: &str = "127.0.0.1:10911";

pub(crate) struct Harness {
    pub(crate) server: NameServerHandle,
    pub(crate) addr: SocketAddr,
    pub(crate) broker: FakeBroker,
    /// The witness broker's own connection (its registration lives as long as it does).
    pub(crate) broker_conn: Client,
    /// The witness opened before every case.
    pub(crate) before: Client,
    pub(crate) max_frame: usize,
    pub(crate) max_inflated: usize,
}

impl Harness {
    pub(crate) async fn start(config: Config) -> Self {
        logs::install();
        let max_frame = config.server.max_frame_bytes;
        let max_inflated = config.server.max_inflated_body_bytes;
        let server = start_server(config);
        let addr = server.local_addr();
        let broker = FakeBroker::master("broker-w", 10911, &[WITNESS_TOPIC, "WitnessTopic2"]);
        let mut broker_conn = connect(&server).await;
        let resp = broker_conn
            .request(broker.register())
            .await
            .expect("the witness broker registers");
        assert_eq!(resp.code, 0, "witness broker: {:?}", resp.remark);
        let before = connect(&server).await;
        let mut harness = Self {
            server,
            addr,
            broker,
            broker_conn,
            before,
            max_frame,
            max_inflated,
        };
        harness.witnesses_ok("start").await;
        harness
    }

    pub(crate) async fn new() -> Self {
        Self::start(test_config()).await
    }

    /// The witness opened before the case still gets its answers.
    pub(crate) async fn quick(&mut self, case: &str) {
        witness_answers(&mut self.before, case, "the witness opened before").await;
    }

    /// Both witnesses and the witness broker's connection get their normal answers.
    pub(crate) async fn witnesses_ok(&mut self, case: &str) {
        self.quick(case).await;
        let mut after = Client::connect(&self.addr.to_string(), STEP)
            .await
            .unwrap_or_else(|e| panic!("{case}: a new connection: {e}"));
        witness_answers(&mut after, case, "a witness opened after").await;
        let resp = self
            .broker_conn
            .request(self.broker.query_data_version(&self.broker.version))
            .await
            .unwrap_or_else(|e| panic!("{case}: the witness broker's connection: {e}"));
        assert_eq!(
            (resp.code, resp.ext("changed")),
            (0, Some("false")),
            "{case}: the witness broker's connection"
        );
    }

    /// Every connection of the case is gone: only the broker's and the first witness remain.
    pub(crate) async fn settled(&self, case: &str) {
        let server = &self.server;
        let settled =
            eventually(STEP, || async move { server.open_connections().await <= 2 }).await;
        assert!(
            settled,
            "{case}: the server still holds {} connections, 2 expected",
            self.server.open_connections().await
        );
    }

    /// After a case: witnesses answered, and no connection of the case left behind.
    pub(crate) async fn check(&mut self, case: &str) {
        self.witnesses_ok(case).await;
        self.settled(case).await;
    }

    /// `bytes` on a new connection closes it without any reply.
    pub(crate) async fn closes(&mut self, case: &str, bytes: &[u8]) {
        let mut raw = Raw::open(self.addr, case).await;
        // The server may close before it has read everything: write errors are expected.
        let _ = raw.send_within(bytes, BIG_STEP).await;
        raw.expect_closed().await;
        drop(raw);
        self.quick(case).await;
    }

    /// `bytes` on a new connection is answered; the answer.
    pub(crate) async fn answers(&mut self, case: &str, bytes: &[u8]) -> RemotingCommand {
        let mut raw = Raw::open(self.addr, case).await;
        raw.must_send(bytes).await;
        let resp = raw.response().await;
        drop(raw);
        self.quick(case).await;
        resp
    }

    /// For input whose treatment docs/protocol.md leaves open: answered (`Some`) or closed
    /// (`None`), but not left hanging.
    pub(crate) async fn answers_or_closes(
        &mut self,
        case: &str,
        bytes: &[u8],
    ) -> Option<RemotingCommand> {
        let mut raw = Raw::open(self.addr, case).await;
        let _ = raw.send_within(bytes, BIG_STEP).await;
        let outcome = raw.answer_or_close().await;
        drop(raw);
        self.quick(case).await;
        outcome
    }

    /// A well-formed request on a client connection of its own.
    pub(crate) async fn client(&self, case: &str) -> Client {
        Client::connect(&self.addr.to_string(), TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("{case}: connect: {e}"))
    }

    pub(crate) async fn request_on_new(
        &mut self,
        case: &str,
        cmd: RemotingCommand,
    ) -> RemotingCommand {
        let mut conn = self.client(case).await;
        let resp = conn
            .request(cmd)
            .await
            .unwrap_or_else(|e| panic!("{case}: no answer: {e}"));
        drop(conn);
        self.quick(case).await;
        resp
    }

    /// A REGISTER_BROKER that must be refused with SYSTEM_ERROR and a remark starting with
    /// `remark`; the broker at `broker_addr` must not be registered.
    pub(crate) async fn register_refused(
        &mut self,
        case: &str,
        cmd: RemotingCommand,
        broker_addr: &str,
        remark: &str,
    ) {
        if let Err(failure) = self.register_outcome(case, cmd, broker_addr, remark).await {
            panic!("{failure}");
        }
    }

    /// [`Harness::register_refused`] that reports a wrong answer instead of panicking (the
    /// witnesses are checked all the same).
    pub(crate) async fn register_outcome(
        &mut self,
        case: &str,
        cmd: RemotingCommand,
        broker_addr: &str,
        remark: &str,
    ) -> Result<(), String> {
        let mut conn = self.client(case).await;
        let resp = conn
            .request(cmd)
            .await
            .unwrap_or_else(|e| panic!("{case}: no answer: {e}"));
        let text = resp.remark.as_deref().unwrap_or("");
        let mut outcome = Ok(());
        if resp.code != 1 || !text.starts_with(remark) {
            outcome = Err(format!(
                "{case}: answered {}, expected code 1 and a remark starting {remark:?}",
                summary(&resp)
            ));
        } else if self.is_registered(case, broker_addr).await {
            outcome = Err(format!("{case}: {broker_addr} was registered"));
        }
        drop(conn);
        self.check(case).await;
        outcome
    }

    /// The cluster table lists no broker at `broker_addr`. (Looking for the name would not do: a
    /// refused first registration may leave its empty group behind, as Java does;
    /// docs/route-rules.md, step 7.)
    pub(crate) async fn not_registered(&mut self, case: &str, broker_addr: &str) {
        assert!(
            !self.is_registered(case, broker_addr).await,
            "{case}: {broker_addr} was registered"
        );
    }

    pub(crate) async fn is_registered(&mut self, case: &str, broker_addr: &str) -> bool {
        let resp = self
            .before
            .request(RemotingCommand::request(
                RequestCode::GET_BROKER_CLUSTER_INFO,
            ))
            .await
            .unwrap_or_else(|e| panic!("{case}: cluster info: {e}"));
        assert_eq!(resp.code, 0, "{case}: cluster info");
        body_text(&resp).contains(broker_addr)
    }

    /// Waits up to `limit` for the server to close `raw` without a reply, talking to the
    /// witnesses every 300 ms meanwhile (which also keeps them from idling out).
    pub(crate) async fn wait_closed(&mut self, raw: &mut Raw, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match raw.next(Duration::from_millis(300)).await {
                Next::Closed => return,
                Next::Frame(cmd) => panic!("{}: answered {}", raw.case, summary(&cmd)),
                Next::Silent => {}
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{}: not closed within {limit:?}",
                raw.case
            );
            self.witnesses_ok(&raw.case).await;
        }
    }

    pub(crate) async fn stop(self) {
        let Self {
            server,
            broker_conn,
            before,
            ..
        } = self;
        drop(broker_conn);
        drop(before);
        server.stop().await;
    }
}

/// A route query for the witness topic and the topic list, with their normal answers.
pub(crate) async fn witness_answers(conn: &mut Client, case: &str, who: &str) {
    let resp = conn
        .request(route_request(WITNESS_TOPIC))
        .await
        .unwrap_or_else(|e| panic!("{case}: {who}: route query: {e}"));
    assert_eq!(
        resp.code,
        0,
        "{case}: {who}: route query {}",
        summary(&resp)
    );
    assert!(
        body_text(&resp).contains(WITNESS_ADDR),
        "{case}: {who}: the route lacks the witness broker"
    );
    let resp = conn
        .request(RemotingCommand::request(
            RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        ))
        .await
        .unwrap_or_else(|e| panic!("{case}: {who}: topic list: {e}"));
    assert_eq!(resp.code, 0, "{case}: {who}: topic list {}", summary(&resp));
    assert!(
        body_text(&resp).contains(WITNESS_TOPIC),
        "{case}: {who}: the topic list lacks the witness topic"
    );
}
