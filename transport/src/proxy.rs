//! The PROXY protocol header a load balancer puts before a connection's own bytes: v1 (text,
//! `PROXY TCP4 src dst sport dport\r\n`, at most 107 bytes) and v2 (binary, a 12-byte signature,
//! at most 16 + 65,535 bytes), told apart by their signatures as Java 5.x's HandshakeHandler
//! does. Parsing is the `ppp` crate's; this module decides when enough bytes have arrived, where
//! the header ends and which client address it names.

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;
use ppp::{HeaderResult, PartialResult};

/// The v2 signature.
const V2_SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
/// The v1 prefix, with its space.
const V1_PREFIX: &[u8; 6] = b"PROXY ";
/// The longest v1 header, its CRLF included.
const MAX_V1_BYTES: usize = 107;
/// The longest header: v2's 16 fixed bytes and a 65,535-byte payload.
pub const MAX_HEADER_BYTES: usize = 16 + u16::MAX as usize;

/// What the first bytes of a connection say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detection {
    /// They are a prefix of a signature: read more.
    NeedMore,
    /// No PROXY header.
    Absent,
    /// A PROXY header starts here.
    Present,
}

/// Whether `prefix` starts with a PROXY header signature.
pub fn detect(prefix: &[u8]) -> Detection {
    for signature in [&V2_SIGNATURE[..], &V1_PREFIX[..]] {
        let n = prefix.len().min(signature.len());
        if prefix[..n] == signature[..n] {
            return if n == signature.len() {
                Detection::Present
            } else {
                Detection::NeedMore
            };
        }
    }
    Detection::Absent
}

/// A complete header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyHeader {
    /// The client it names; `None` for LOCAL/UNKNOWN/unix headers (health checks of the
    /// balancer itself), whose connection keeps its socket address.
    pub source: Option<SocketAddr>,
    /// Its length: the connection's own bytes start after it.
    pub len: usize,
}

/// A header being read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// Not all of it has arrived.
    Incomplete,
    Complete(ProxyHeader),
    /// Not a valid header; the connection is closed.
    Invalid(String),
}

/// Parses the header at the start of `buf` (which [`detect`] found `Present`).
pub fn parse(buf: &[u8]) -> Parsed {
    if buf.starts_with(V1_PREFIX) {
        return parse_v1(buf);
    }
    let result = HeaderResult::parse(buf);
    if result.is_incomplete() {
        return if buf.len() >= MAX_HEADER_BYTES {
            Parsed::Invalid("PROXY header longer than the protocol allows".to_owned())
        } else {
            Parsed::Incomplete
        };
    }
    complete(result)
}

/// A v1 header is one line of at most 107 bytes, ended by CRLF: only a whole line is parsed
/// (ppp reads a line cut after a field, `PROXY TCP4 src dst sport ` waiting for its last
/// port, as a bad header), and once the line has ended (or cannot end in time) nothing more
/// can complete it.
fn parse_v1(buf: &[u8]) -> Parsed {
    let window = &buf[..buf.len().min(MAX_V1_BYTES)];
    let Some(cr) = window.iter().position(|b| *b == b'\r') else {
        return if buf.len() >= MAX_V1_BYTES {
            Parsed::Invalid("bad PROXY v1 header: no CRLF within 107 bytes".to_owned())
        } else {
            Parsed::Incomplete
        };
    };
    match buf.get(cr + 1) {
        None => Parsed::Incomplete,
        Some(b'\n') => complete(HeaderResult::parse(&buf[..cr + 2])),
        Some(_) => Parsed::Invalid("bad PROXY v1 header: it does not end in CRLF".to_owned()),
    }
}

/// What a header that ppp read whole says.
fn complete(result: HeaderResult<'_>) -> Parsed {
    match result {
        HeaderResult::V1(Ok(header)) if !header.header.ends_with("\r\n") => {
            Parsed::Invalid("bad PROXY v1 header: it does not end in CRLF".to_owned())
        }
        HeaderResult::V1(Ok(header)) => {
            let source = match header.addresses {
                ppp::v1::Addresses::Tcp4(a) => {
                    Some(SocketAddr::new(IpAddr::V4(a.source_address), a.source_port))
                }
                ppp::v1::Addresses::Tcp6(a) => {
                    Some(SocketAddr::new(IpAddr::V6(a.source_address), a.source_port))
                }
                ppp::v1::Addresses::Unknown => None,
            };
            Parsed::Complete(ProxyHeader {
                source,
                len: header.header.len(),
            })
        }
        HeaderResult::V2(Ok(header)) => {
            let source = match (header.command, header.addresses) {
                (ppp::v2::Command::Proxy, ppp::v2::Addresses::IPv4(a)) => {
                    Some(SocketAddr::new(IpAddr::V4(a.source_address), a.source_port))
                }
                (ppp::v2::Command::Proxy, ppp::v2::Addresses::IPv6(a)) => {
                    Some(SocketAddr::new(IpAddr::V6(a.source_address), a.source_port))
                }
                _ => None,
            };
            Parsed::Complete(ProxyHeader {
                source,
                len: header.len(),
            })
        }
        HeaderResult::V1(Err(err)) => Parsed::Invalid(format!("bad PROXY v1 header: {err}")),
        HeaderResult::V2(Err(err)) => Parsed::Invalid(format!("bad PROXY v2 header: {err}")),
    }
}

/// Whether `ip` is in one of `networks` (an IPv4-mapped IPv6 address counts as IPv4).
pub fn is_trusted(ip: IpAddr, networks: &[IpNet]) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    networks.iter().any(|net| net.contains(&ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2(command: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = V2_SIGNATURE.to_vec();
        out.push(0x20 | command);
        out.push(0x11); // TCP over IPv4
        out.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn detection_needs_only_as_many_bytes_as_it_takes() {
        assert_eq!(detect(b""), Detection::NeedMore);
        assert_eq!(detect(b"PRO"), Detection::NeedMore);
        assert_eq!(detect(b"\r\n\r\n"), Detection::NeedMore);
        assert_eq!(detect(b"PROXY TCP4"), Detection::Present);
        assert_eq!(detect(&V2_SIGNATURE[..]), Detection::Present);
        // A RocketMQ frame (length word) and a TLS ClientHello are decided at the first byte.
        assert_eq!(detect(&[0, 0, 0, 42]), Detection::Absent);
        assert_eq!(detect(&[0x16, 3, 1]), Detection::Absent);
        assert_eq!(detect(b"PROXYX"), Detection::Absent);
    }

    #[test]
    fn v1_and_v2_name_the_client_and_end_where_they_end() {
        let v1 = b"PROXY TCP4 10.1.2.3 127.0.0.1 40000 9876\r\nrest";
        assert_eq!(
            parse(v1),
            Parsed::Complete(ProxyHeader {
                source: Some("10.1.2.3:40000".parse().unwrap()),
                len: v1.len() - 4,
            })
        );
        assert_eq!(parse(&v1[..20]), Parsed::Incomplete);
        let unknown = b"PROXY UNKNOWN\r\n";
        assert_eq!(
            parse(unknown),
            Parsed::Complete(ProxyHeader {
                source: None,
                len: unknown.len()
            })
        );
        let payload = [10, 9, 8, 7, 127, 0, 0, 1, 0x9c, 0x40, 0x26, 0x94];
        let mut proxy = v2(1, &payload);
        let len = proxy.len();
        proxy.extend_from_slice(b"frame");
        assert_eq!(
            parse(&proxy),
            Parsed::Complete(ProxyHeader {
                source: Some("10.9.8.7:40000".parse().unwrap()),
                len,
            })
        );
        assert_eq!(parse(&proxy[..len - 1]), Parsed::Incomplete);
        let local = v2(0, &payload);
        assert!(matches!(
            parse(&local),
            Parsed::Complete(ProxyHeader { source: None, .. })
        ));
        assert!(matches!(
            parse(b"PROXY TCP4 nonsense here\r\n"),
            Parsed::Invalid(_)
        ));
    }

    /// Found by fuzz/proxy_header: a v1 line with a lone CR was a complete header ending one
    /// byte after that CR, and its length depended on where the read ended.
    #[test]
    fn a_v1_header_ends_only_at_crlf() {
        let input = b"PROXY UNKNOWN fff::2 1 2TCP6 \n\r\0::1 \0\0\x83{\xff\xff\"code\":";
        assert!(matches!(parse(input), Parsed::Invalid(_)));
        // The read ended at the CR: only the next byte tells.
        assert_eq!(parse(&input[..31]), Parsed::Incomplete);
        assert!(matches!(parse(b"PROXY UNKNOWN \n\rX"), Parsed::Invalid(_)));
        // Anything before the CRLF of an UNKNOWN line is ignored, a lone LF too.
        assert_eq!(
            parse(b"PROXY UNKNOWN \n\r\nrest"),
            Parsed::Complete(ProxyHeader {
                source: None,
                len: 17
            })
        );
    }

    #[test]
    fn every_prefix_of_a_header_waits_for_the_rest() {
        let headers: [&[u8]; 4] = [
            b"PROXY TCP4 10.20.30.40 127.0.0.1 40000 9876\r\n",
            b"PROXY TCP6 2001:db8::7 ::1 40000 9876\r\n",
            b"PROXY UNKNOWN\r\n",
            &v2(0x1, &[10, 20, 30, 40, 127, 0, 0, 1, 0x9c, 0x40, 0x26, 0x94]),
        ];
        for header in headers {
            let mut stream = header.to_vec();
            stream.extend_from_slice(b"\0\0\0\x10rest");
            for cut in 1..header.len() {
                assert_eq!(
                    parse(&stream[..cut]),
                    Parsed::Incomplete,
                    "{:?} cut at {cut}",
                    String::from_utf8_lossy(header)
                );
            }
            assert!(matches!(parse(&stream), Parsed::Complete(h) if h.len == header.len()));
        }
    }

    #[test]
    fn trust_is_by_network() {
        let nets: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()];
        assert!(is_trusted("10.3.4.5".parse().unwrap(), &nets));
        assert!(is_trusted("::ffff:10.3.4.5".parse().unwrap(), &nets));
        assert!(is_trusted("::1".parse().unwrap(), &nets));
        assert!(!is_trusted("11.0.0.1".parse().unwrap(), &nets));
    }
}
