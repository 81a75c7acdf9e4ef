//! A PROXY header split over two TCP reads at every byte, v1 (TCP4, TCP6, UNKNOWN) and v2: the
//! server waits for the whole header, then serves the request that follows, with the address
//! the header names.

use std::time::Duration;

use bytes::BytesMut;
use rmq_namesrv::config::{ProxyMode, ProxyProtocolSettings};
use rmq_namesrv::protocol::codec::{encode_frame, RemotingCodec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::codec::Decoder;

use crate::support::*;

/// A v2 PROXY header for TCP over IPv4 from 10.20.30.40:40000.
fn v2() -> Vec<u8> {
    let mut out = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    out.extend_from_slice(&[0x21, 0x11, 0, 12]);
    out.extend_from_slice(&[10, 20, 30, 40, 127, 0, 0, 1, 0x9c, 0x40, 0x26, 0x94]);
    out
}

#[actix::test]
async fn headers_split_at_every_byte_are_read_whole() {
    let mut config = test_config();
    config.proxy_protocol = ProxyProtocolSettings {
        mode: ProxyMode::Required,
        trusted_networks: vec!["127.0.0.0/8".parse().unwrap()],
    };
    config.server.workers = 2;
    let server = start_server(config);
    let headers: Vec<Vec<u8>> = vec![
        b"PROXY TCP4 10.20.30.40 127.0.0.1 40000 9876\r\n".to_vec(),
        b"PROXY TCP6 2001:db8::7 ::1 40000 9876\r\n".to_vec(),
        b"PROXY UNKNOWN\r\n".to_vec(),
        v2(),
    ];
    let mut request = BytesMut::new();
    encode_frame(&route_request("T").with_opaque(7), &mut request).unwrap();
    for header in &headers {
        for cut in 1..header.len() {
            let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
            stream.set_nodelay(true).unwrap();
            stream.write_all(&header[..cut]).await.unwrap();
            stream.flush().await.unwrap();
            // Two reads on the server's side: wait until the first has surely happened.
            tokio::time::sleep(Duration::from_millis(5)).await;
            let mut rest = header[cut..].to_vec();
            rest.extend_from_slice(&request);
            stream.write_all(&rest).await.unwrap();
            let mut buf = BytesMut::new();
            let mut codec = RemotingCodec::default();
            let answer = tokio::time::timeout(TIMEOUT, async {
                loop {
                    if let Some(cmd) = codec.decode(&mut buf).unwrap() {
                        return Some(cmd);
                    }
                    let mut chunk = [0u8; 4096];
                    match stream.read(&mut chunk).await {
                        Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                        _ => return None,
                    }
                }
            })
            .await
            .expect("answered in time");
            let header_text = String::from_utf8_lossy(header);
            let answer = answer.unwrap_or_else(|| panic!("{header_text:?} cut at {cut}: closed"));
            assert_eq!(
                (answer.code, answer.opaque),
                (17, 7),
                "{header_text:?} cut at {cut}"
            );
        }
    }
    server.stop().await;
}
