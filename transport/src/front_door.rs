//! The front door of a server port: what happens to a new connection before its first frame.
//! First its first byte, within `first_byte_timeout` (the idle timeout: a client may connect
//! well before it speaks, as Java brokers do). Then, in order, within `handshake_timeout`:
//!
//! 1. **PROXY header** (unless the mode is off): the first bytes are compared with the v1 and v2
//!    signatures. A header is accepted only from a trusted source network; its client address
//!    becomes the connection's. In `required` mode a connection without one is refused.
//! 2. **TLS or plaintext** by the next byte (0x16 starts a TLS handshake), as the TLS mode says:
//!    `disabled` refuses TLS, `enforcing` refuses plaintext, `permissive` takes both. A TLS
//!    connection is handshaken with the server configuration current when it arrived.
//!
//! A refused or failed connection is closed alone; the caller logs why with the peer's address.
//! A plaintext connection without PROXY header is only peeked at: nothing is copied and its
//! socket halves go to the connection as they are.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use rustls::ServerConfig;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use crate::proxy::{self, Detection, Parsed};
use crate::settings::{ProxyMode, ProxyProtocolSettings, TlsMode};

/// The first byte of a TLS record carrying a handshake message.
const TLS_HANDSHAKE: u8 = 0x16;

/// The read half of an admitted connection.
pub type BoxedRead = Box<dyn AsyncRead + Unpin>;
/// The write half of an admitted connection.
pub type BoxedWrite = Box<dyn AsyncWrite + Unpin>;

/// How a port admits connections. Cheap to clone (one per connection); a new TLS configuration
/// (a reloaded certificate) replaces `tls` for the connections that come after.
#[derive(Clone)]
pub struct FrontDoor {
    pub mode: TlsMode,
    /// The TLS configuration; `None` when there is no certificate to serve.
    pub tls: Option<Arc<ServerConfig>>,
    pub proxy: Arc<ProxyProtocolSettings>,
    /// Bounds the PROXY header and the TLS handshake, from the connection's first byte.
    pub handshake_timeout: Duration,
    /// How long a new connection may stay silent before its first byte; `None`: as long as it
    /// likes. A client may connect well before it speaks (a Java broker opens its NameServer
    /// connections about 10 s before its first registration), so this is the idle timeout,
    /// not the handshake timeout.
    pub first_byte_timeout: Option<Duration>,
}

impl std::fmt::Debug for FrontDoor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrontDoor")
            .field("mode", &self.mode)
            .field("tls", &self.tls.is_some())
            .field("proxy", &self.proxy)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .finish()
    }
}

/// A connection let in.
pub struct Admitted {
    pub read: BoxedRead,
    pub write: BoxedWrite,
    /// The client: the address of the PROXY header, or the socket's peer.
    pub client: SocketAddr,
    pub tls: bool,
    /// TLS with a client certificate the server verified (mutual TLS).
    pub client_certificate: bool,
}

/// How a connection's bytes travel, as access control sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Security {
    pub tls: bool,
    /// A client certificate the server verified (only with `tls`).
    pub client_certificate: bool,
}

impl Admitted {
    pub fn security(&self) -> Security {
        Security {
            tls: self.tls,
            client_certificate: self.client_certificate,
        }
    }
}

/// Why a connection was not let in.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("no PROXY header or TLS handshake within {0:?}")]
    Timeout(Duration),
    #[error("nothing sent within {0:?} of connecting")]
    Silent(Duration),
    #[error("closed by the peer before its first frame")]
    Closed,
    #[error("plaintext connection refused: TLS is enforced")]
    Plaintext,
    #[error("TLS handshake refused: TLS is disabled")]
    TlsDisabled,
    #[error("TLS handshake refused: no certificate is configured")]
    NoCertificate,
    #[error("connection without PROXY header refused: the header is required")]
    ProxyRequired,
    #[error("PROXY header from {source_ip}, which is not a trusted network, refused")]
    ProxyUntrusted { source_ip: std::net::IpAddr },
    #[error("{0}")]
    ProxyInvalid(String),
    #[error("TLS handshake failed: {0}")]
    Handshake(#[source] io::Error),
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl FrontDoor {
    /// Runs the front door for a new connection from `peer`: waits (up to
    /// `first_byte_timeout`) for its first byte, then gives the PROXY header and the TLS
    /// handshake `handshake_timeout`.
    pub async fn admit(&self, stream: TcpStream, peer: SocketAddr) -> Result<Admitted, Refused> {
        let mut byte = [0u8; 1];
        let first = stream.peek(&mut byte);
        let peeked = match self.first_byte_timeout {
            Some(limit) => tokio::time::timeout(limit, first)
                .await
                .map_err(|_| Refused::Silent(limit))?,
            None => first.await,
        };
        if peeked? == 0 {
            return Err(Refused::Closed);
        }
        match tokio::time::timeout(self.handshake_timeout, self.enter(stream, peer)).await {
            Ok(admitted) => admitted,
            Err(_) => Err(Refused::Timeout(self.handshake_timeout)),
        }
    }

    async fn enter(&self, mut stream: TcpStream, peer: SocketAddr) -> Result<Admitted, Refused> {
        let mut client = peer;
        let mut prefix = BytesMut::new();
        if self.proxy.mode != ProxyMode::Off {
            match self.proxy_header(&mut stream, peer, &mut prefix).await? {
                Some(source) => client = source,
                None if self.proxy.mode == ProxyMode::Required => {
                    return Err(Refused::ProxyRequired)
                }
                None => {}
            }
        }
        let first = match prefix.first() {
            Some(byte) => *byte,
            None => {
                let mut byte = [0u8; 1];
                if stream.peek(&mut byte).await? == 0 {
                    return Err(Refused::Closed);
                }
                byte[0]
            }
        };
        let prefix = prefix.freeze();
        if first != TLS_HANDSHAKE {
            if self.mode == TlsMode::Enforcing {
                return Err(Refused::Plaintext);
            }
            let (read, write) = stream.into_split();
            let read: BoxedRead = if prefix.is_empty() {
                Box::new(read)
            } else {
                Box::new(Prefixed::new(prefix, read))
            };
            return Ok(Admitted {
                read,
                write: Box::new(write),
                client,
                tls: false,
                client_certificate: false,
            });
        }
        if self.mode == TlsMode::Disabled {
            return Err(Refused::TlsDisabled);
        }
        let Some(config) = &self.tls else {
            return Err(Refused::NoCertificate);
        };
        let tls = TlsAcceptor::from(Arc::clone(config))
            .accept(Prefixed::new(prefix, stream))
            .await
            .map_err(Refused::Handshake)?;
        // With client authentication on, a certificate the client presented was verified in
        // the handshake (a bad one fails it).
        let client_certificate = tls.get_ref().1.peer_certificates().is_some();
        let (read, write) = tokio::io::split(tls);
        Ok(Admitted {
            read: Box::new(read),
            write: Box::new(write),
            client,
            tls: true,
            client_certificate,
        })
    }

    /// Reads a PROXY header if the connection starts with one; what it read beyond the header
    /// stays in `buf`. Answers the client address the header names.
    async fn proxy_header(
        &self,
        stream: &mut TcpStream,
        peer: SocketAddr,
        buf: &mut BytesMut,
    ) -> Result<Option<SocketAddr>, Refused> {
        loop {
            match proxy::detect(buf) {
                Detection::Absent => return Ok(None),
                Detection::NeedMore => read_more(stream, buf).await?,
                Detection::Present => break,
            }
        }
        if !proxy::is_trusted(peer.ip(), &self.proxy.trusted_networks) {
            return Err(Refused::ProxyUntrusted {
                source_ip: peer.ip(),
            });
        }
        loop {
            match proxy::parse(buf) {
                Parsed::Incomplete => read_more(stream, buf).await?,
                Parsed::Invalid(reason) => return Err(Refused::ProxyInvalid(reason)),
                Parsed::Complete(header) => {
                    buf.advance(header.len);
                    return Ok(Some(header.source.unwrap_or(peer)));
                }
            }
        }
    }
}

/// Reads what is available into `buf`; the end of the stream is [`Refused::Closed`].
async fn read_more(stream: &mut TcpStream, buf: &mut BytesMut) -> Result<(), Refused> {
    buf.reserve(1024);
    if stream.read_buf(buf).await? == 0 {
        return Err(Refused::Closed);
    }
    Ok(())
}

/// A stream whose first bytes were already read: they are served again before the rest.
#[derive(Debug)]
pub struct Prefixed<S> {
    prefix: Bytes,
    inner: S,
}

impl<S> Prefixed<S> {
    pub fn new(prefix: Bytes, inner: S) -> Self {
        Self { prefix, inner }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.prefix.is_empty() {
            let n = this.prefix.len().min(buf.remaining());
            buf.put_slice(&this.prefix.split_to(n));
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    use super::*;

    async fn pair() -> (TcpStream, TcpStream, SocketAddr) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, peer) = listener.accept().await.unwrap();
        (client, server, peer)
    }

    fn door(mode: TlsMode, proxy: ProxyMode) -> FrontDoor {
        FrontDoor {
            mode,
            tls: None,
            first_byte_timeout: Some(Duration::from_secs(120)),
            proxy: Arc::new(ProxyProtocolSettings {
                mode: proxy,
                trusted_networks: vec!["127.0.0.0/8".parse().unwrap()],
            }),
            handshake_timeout: Duration::from_secs(2),
        }
    }

    #[tokio::test]
    async fn plaintext_is_peeked_not_copied() {
        let (mut client, server, peer) = pair().await;
        client.write_all(b"\0\0\0\x05hello").await.unwrap();
        let mut admitted = door(TlsMode::Permissive, ProxyMode::Off)
            .admit(server, peer)
            .await
            .unwrap();
        assert!(!admitted.tls);
        assert_eq!(admitted.client, peer);
        let mut got = [0u8; 9];
        admitted.read.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"\0\0\0\x05hello");
    }

    #[tokio::test]
    async fn a_proxy_header_names_the_client_and_the_rest_follows() {
        let (mut client, server, peer) = pair().await;
        client
            .write_all(b"PROXY TCP4 10.1.2.3 127.0.0.1 40000 9876\r\n\0\0\0\x01x")
            .await
            .unwrap();
        let mut admitted = door(TlsMode::Permissive, ProxyMode::Required)
            .admit(server, peer)
            .await
            .unwrap();
        assert_eq!(admitted.client, "10.1.2.3:40000".parse().unwrap());
        let mut got = [0u8; 5];
        admitted.read.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"\0\0\0\x01x");
    }

    #[tokio::test]
    async fn refusals() {
        let (mut client, server, peer) = pair().await;
        client.write_all(b"\0\0\0\x01x").await.unwrap();
        let refused = door(TlsMode::Enforcing, ProxyMode::Off)
            .admit(server, peer)
            .await;
        assert!(matches!(refused, Err(Refused::Plaintext)));

        let (mut client, server, peer) = pair().await;
        client.write_all(&[0x16, 3, 1, 0, 5]).await.unwrap();
        let refused = door(TlsMode::Disabled, ProxyMode::Off)
            .admit(server, peer)
            .await;
        assert!(matches!(refused, Err(Refused::TlsDisabled)));

        let (mut client, server, peer) = pair().await;
        client.write_all(&[0x16, 3, 1, 0, 5]).await.unwrap();
        let refused = door(TlsMode::Permissive, ProxyMode::Off)
            .admit(server, peer)
            .await;
        assert!(matches!(refused, Err(Refused::NoCertificate)));

        let (mut client, server, peer) = pair().await;
        client.write_all(b"\0\0\0\x01x").await.unwrap();
        let refused = door(TlsMode::Permissive, ProxyMode::Required)
            .admit(server, peer)
            .await;
        assert!(matches!(refused, Err(Refused::ProxyRequired)));

        let (mut client, server, peer) = pair().await;
        client
            .write_all(b"PROXY TCP4 10.1.2.3 127.0.0.1 4")
            .await
            .unwrap();
        let mut untrusted = door(TlsMode::Permissive, ProxyMode::Optional);
        untrusted.proxy = Arc::new(ProxyProtocolSettings {
            mode: ProxyMode::Optional,
            trusted_networks: vec!["10.0.0.0/8".parse().unwrap()],
        });
        let refused = untrusted.admit(server, peer).await;
        assert!(matches!(refused, Err(Refused::ProxyUntrusted { .. })));

        let (mut client, server, peer) = pair().await;
        client.write_all(b"PROXY TCP4 10.1.2.3").await.unwrap();
        drop(client);
        let refused = door(TlsMode::Permissive, ProxyMode::Optional)
            .admit(server, peer)
            .await;
        assert!(matches!(refused, Err(Refused::Closed)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_connection_waits_for_the_idle_timeout_not_the_handshake_timeout() {
        let (_client, server, peer) = pair().await;
        let refused = door(TlsMode::Permissive, ProxyMode::Off)
            .admit(server, peer)
            .await;
        assert!(matches!(refused, Err(Refused::Silent(d)) if d == Duration::from_secs(120)));
    }

    #[tokio::test]
    async fn a_client_that_speaks_after_the_handshake_timeout_is_admitted() {
        let (mut client, server, peer) = pair().await;
        let door = door(TlsMode::Permissive, ProxyMode::Optional);
        let speak_late = async {
            // Longer than the door's 2 s handshake timeout, as a broker's first registration.
            tokio::time::sleep(Duration::from_millis(2500)).await;
            client.write_all(b"\0\0\0\x05hello").await.unwrap();
        };
        let (admitted, ()) = tokio::join!(door.admit(server, peer), speak_late);
        assert!(matches!(admitted, Ok(Admitted { tls: false, .. })));
    }

    #[tokio::test(start_paused = true)]
    async fn a_started_proxy_header_must_finish_within_the_handshake_timeout() {
        let (mut client, server, peer) = pair().await;
        client.write_all(b"PROXY TCP4 10.1.2.3").await.unwrap();
        let refused = door(TlsMode::Permissive, ProxyMode::Optional)
            .admit(server, peer)
            .await;
        assert!(matches!(refused, Err(Refused::Timeout(_))));
        drop(client);
    }
}
