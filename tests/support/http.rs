//! HTTP/1.1 by hand for the HTTP port's tests: one GET per connection (`Connection: close`),
//! read to the end, the status line checked, a chunked body joined.

use std::net::SocketAddr;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::TIMEOUT;

/// An HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    /// The status line and headers.
    pub head: String,
    pub body: String,
}

/// Sends `GET path` with `headers` (each `Name: value\r\n`) over `stream` and reads the answer
/// to the end; `None` when the connection closes without an HTTP/1.1 answer.
pub async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    addr: SocketAddr,
    path: &str,
    headers: &str,
) -> Option<Answer> {
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    stream.flush().await.ok()?;
    let mut raw = Vec::new();
    // A server that closes without TLS close_notify ends the read with an error: keep what came.
    let _ = stream.read_to_end(&mut raw).await;
    parse(&raw)
}

/// `GET path` with `headers` over a fresh plaintext connection, within [`TIMEOUT`]; `None` when
/// the server closes it without an answer.
pub async fn try_get(addr: SocketAddr, path: &str, headers: &str) -> Option<Answer> {
    let attempt = async {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        exchange(&mut stream, addr, path, headers).await
    };
    tokio::time::timeout(TIMEOUT, attempt)
        .await
        .expect("answered or closed in time")
}

/// [`try_get`] that must be answered.
pub async fn get(addr: SocketAddr, path: &str, headers: &str) -> Answer {
    try_get(addr, path, headers).await.expect("an HTTP answer")
}

fn parse(raw: &[u8]) -> Option<Answer> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut status_line = head.lines().next()?.split_whitespace();
    if status_line.next()? != "HTTP/1.1" {
        return None;
    }
    let status = status_line.next()?.parse().ok()?;
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Some(Answer {
        status,
        head: head.to_owned(),
        body,
    })
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || rest.len() < size + 2 {
            break;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
    out
}
