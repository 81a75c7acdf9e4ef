//! NOTIFY_MIN_BROKER_ID_CHANGE (905) over TCP: brokers of a group whose smallest broker id
//! changes are told, as Java's RouteInfoManager tells them when `notifyMinBrokerIdChanged` is
//! on — after a registration of a smaller id, and after the smallest one leaves a group of
//! acting-master brokers. Brokers here are listeners of this test that read the frames.

mod support;

use std::time::Duration;

use futures_util::StreamExt;
use rmq_namesrv::protocol::{RemotingCodec, RemotingCommand};
use rmq_namesrv::tools::broker::FakeBroker;
use support::*;
use tokio::net::TcpListener;
use tokio_util::codec::FramedRead;

/// A broker's port: the next 905 it receives within `limit`, or `None`.
async fn next_notification(port: &TcpListener, limit: Duration) -> Option<RemotingCommand> {
    let (stream, _) = tokio::time::timeout(limit, port.accept())
        .await
        .ok()?
        .ok()?;
    let mut frames = FramedRead::new(stream, RemotingCodec::default());
    tokio::time::timeout(limit, frames.next()).await.ok()??.ok()
}

fn broker(id: i64, port: &TcpListener, acting: bool) -> FakeBroker {
    let mut b = FakeBroker::new(
        "DefaultCluster",
        "broker-min",
        id,
        port.local_addr().unwrap().port(),
        vec!["TopicMin".into(), "TopicMin2".into()],
    );
    b.enable_acting_master = Some(acting);
    b
}

#[actix::test]
async fn a_smaller_id_and_the_loss_of_the_smallest_are_told_to_the_group() {
    let mut config = test_config();
    config.registry.notify_min_broker_id_changed = true;
    let server = start_server(config);
    let mut conn = connect(&server).await;
    let slave_port = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let master_port = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let slave = broker(1, &slave_port, true);
    let master = broker(0, &master_port, true);

    // The slave alone: nothing to tell.
    assert_eq!(conn.request(slave.register()).await.unwrap().code, 0);
    assert!(next_notification(&slave_port, Duration::from_millis(500))
        .await
        .is_none());
    // The master joins: id 0 < 1, the slave is told.
    assert_eq!(conn.request(master.register()).await.unwrap().code, 0);
    let n = next_notification(&slave_port, Duration::from_secs(5))
        .await
        .expect("905 to the slave");
    assert_eq!(n.code, 905, "{n:?}");
    assert!(n.is_oneway());
    assert_eq!(n.ext("minBrokerId"), Some("0"));
    assert_eq!(n.ext("minBrokerAddr"), Some(master.addr.as_str()));
    assert_eq!(n.ext("haBrokerAddr"), Some(master.ha_addr.as_str()));
    assert_eq!(n.ext("offlineBrokerAddr"), None);
    // The master leaves: the remaining broker learns it is the smallest, and who went.
    assert_eq!(conn.request(master.unregister()).await.unwrap().code, 0);
    let n = next_notification(&slave_port, Duration::from_secs(5))
        .await
        .expect("905 after the removal");
    assert_eq!(n.ext("minBrokerId"), Some("1"));
    assert_eq!(n.ext("minBrokerAddr"), Some(slave.addr.as_str()));
    assert_eq!(n.ext("offlineBrokerAddr"), Some(master.addr.as_str()));
    server.stop().await;
}

#[actix::test]
async fn nothing_is_sent_when_off_or_for_a_removal_in_a_group_without_acting_master() {
    for (notify, acting) in [(false, true), (true, false)] {
        let mut config = test_config();
        config.registry.notify_min_broker_id_changed = notify;
        let server = start_server(config);
        let mut conn = connect(&server).await;
        let slave_port = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let master_port = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let slave = broker(1, &slave_port, acting);
        let master = broker(0, &master_port, acting);
        assert_eq!(conn.request(slave.register()).await.unwrap().code, 0);
        assert_eq!(conn.request(master.register()).await.unwrap().code, 0);
        if notify {
            // A registration is told whatever the flag (as Java does).
            assert!(next_notification(&slave_port, Duration::from_secs(5))
                .await
                .is_some());
        }
        assert_eq!(conn.request(master.unregister()).await.unwrap().code, 0);
        assert!(
            next_notification(&slave_port, Duration::from_millis(700))
                .await
                .is_none(),
            "notify={notify} acting={acting}"
        );
        server.stop().await;
    }
}
