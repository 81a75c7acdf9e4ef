//! RocketMQ's white-address patterns (`globalWhiteRemoteAddresses`, an account's
//! `whiteRemoteAddress`), with the meaning Java's `RemoteAddressStrategyFactory` gives them:
//!
//! | Pattern | Matches |
//! |---|---|
//! | empty | nothing |
//! | `*`, `*.*.*.*`, `*:*:*:*:*:*:*:*` | every address |
//! | `192.168.1.1` (or an IPv6 address) | that address |
//! | `192.168.1.1,192.168.1.2` | any address of the list |
//! | `192.168.1.{1,2,3}` (`{..}` in the last part) | any of the expanded addresses |
//! | `192.168.*.*`, `192.168.1.1-100`, `10.*` | one part a range (`*` = 0-255, `a-b`), every later part `*` |
//! | `10.0.0.0/8` (beyond Java: ACL 2.0 takes CIDR) | the network |
//!
//! IPv6 ranges work alike on the eight groups (hex). An IPv4-mapped IPv6 source
//! (`::ffff:10.0.0.1`) is matched as its IPv4 address. A pattern Java would refuse is refused
//! here with the reason.

use std::net::IpAddr;

use ipnet::IpNet;

/// One parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressPattern {
    /// Empty: no address.
    Nothing,
    /// `*`: every address.
    Any,
    /// One address or a list of them.
    Set(Vec<IpAddr>),
    /// Parts up to `index` fixed, part `index` within `low..=high`, later parts anything.
    Range {
        head: RangeHead,
        index: usize,
        low: u16,
        high: u16,
    },
    Network(IpNet),
}

/// The fixed leading parts of a range pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RangeHead {
    V4(Vec<u8>),
    V6(Vec<u16>),
}

impl AddressPattern {
    /// Parses a pattern (see the module docs).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Self::Nothing);
        }
        if matches!(text, "*" | "*.*.*.*" | "*:*:*:*:*:*:*:*") {
            return Ok(Self::Any);
        }
        if text.contains('/') {
            return text
                .parse::<IpNet>()
                .map(|net| Self::Network(net.trunc()))
                .map_err(|e| format!("{text:?} is not a network: {e}"));
        }
        if let Some(open) = text.strip_suffix('}') {
            return braces(text, open);
        }
        if text.contains(',') {
            return text
                .split(',')
                .map(|one| address(one.trim()))
                .collect::<Result<Vec<_>, _>>()
                .map(Self::Set);
        }
        if text.contains('*') || text.contains('-') {
            return range(text);
        }
        address(text).map(|a| Self::Set(vec![a]))
    }

    /// Whether `ip` matches.
    pub fn matches(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match self {
            Self::Nothing => false,
            Self::Any => true,
            Self::Set(set) => set.contains(&ip),
            Self::Network(net) => net.contains(&ip),
            Self::Range {
                head,
                index,
                low,
                high,
            } => {
                let part = match (head, ip) {
                    (RangeHead::V4(head), IpAddr::V4(v4)) => {
                        let octets = v4.octets();
                        (octets.get(..head.len()) == Some(head.as_slice()))
                            .then(|| octets.get(*index).map(|&o| u16::from(o)))
                            .flatten()
                    }
                    (RangeHead::V6(head), IpAddr::V6(v6)) => {
                        let groups = v6.segments();
                        (groups.get(..head.len()) == Some(head.as_slice()))
                            .then(|| groups.get(*index).copied())
                            .flatten()
                    }
                    _ => None,
                };
                part.is_some_and(|p| (*low..=*high).contains(&p))
            }
        }
    }
}

/// An IPv4-mapped IPv6 address as its IPv4 address; any other as it is.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

fn address(text: &str) -> Result<IpAddr, String> {
    text.parse::<IpAddr>()
        .map(canonical)
        .map_err(|_| format!("{text:?} is not an IP address"))
}

/// `prefix.{a,b,c}` (IPv4) or `prefix:{a,b}` (IPv6): `open` is the pattern without its `}`.
fn braces(text: &str, open: &str) -> Result<AddressPattern, String> {
    let (prefix, list) = open
        .rsplit_once('{')
        .ok_or_else(|| format!("{text:?}: a '}}' without '{{'"))?;
    let separator = if prefix.contains(':') { ':' } else { '.' };
    if !prefix.ends_with(separator) {
        return Err(format!("{text:?}: '{{...}}' must be a whole last part"));
    }
    list.split(',')
        .map(|last| address(&format!("{prefix}{}", last.trim())))
        .collect::<Result<Vec<_>, _>>()
        .map(AddressPattern::Set)
}

/// A range pattern: leading fixed parts, one `*` or `a-b` part, then only `*` parts.
fn range(text: &str) -> Result<AddressPattern, String> {
    let v6 = text.contains(':');
    let (parts, total, radix, max) = if v6 {
        (text.split(':').collect::<Vec<_>>(), 8, 16, 0xffff)
    } else {
        (text.split('.').collect::<Vec<_>>(), 4, 10, 255)
    };
    if parts.len() > total {
        return Err(format!("{text:?} has more than {total} parts"));
    }
    let bad = |why: &str| format!("{text:?}: {why}");
    let index = parts
        .iter()
        .position(|p| p.trim() == "*" || p.contains('-'))
        .ok_or_else(|| bad("no '*' or 'a-b' part"))?;
    if index == 0 {
        return Err(bad("the first part cannot be a range"));
    }
    if parts.iter().skip(index + 1).any(|p| p.trim() != "*") {
        return Err(bad("every part after a range must be '*'"));
    }
    let number = |p: &str| {
        u16::from_str_radix(p.trim(), radix)
            .ok()
            .filter(|n| *n <= max)
            .ok_or_else(|| bad(&format!("{p:?} is not a part of an address")))
    };
    let (low, high) = match parts.get(index).map(|p| p.trim()) {
        Some("*") => (0, max),
        Some(part) => {
            let (low, high) = part
                .split_once('-')
                .ok_or_else(|| bad("a range is 'low-high'"))?;
            let (low, high) = (number(low)?, number(high)?);
            if low > high {
                return Err(bad("a range's low end is above its high end"));
            }
            (low, high)
        }
        None => return Err(bad("no range")),
    };
    let fixed = parts.get(..index).unwrap_or_default();
    let head = if v6 {
        RangeHead::V6(fixed.iter().map(|p| number(p)).collect::<Result<_, _>>()?)
    } else {
        RangeHead::V4(
            fixed
                .iter()
                .map(|p| number(p).map(|n| n as u8))
                .collect::<Result<_, _>>()?,
        )
    };
    Ok(AddressPattern::Range {
        head,
        index,
        low,
        high,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn matches(pattern: &str, addr: &str) -> bool {
        AddressPattern::parse(pattern).unwrap().matches(ip(addr))
    }

    #[test]
    fn java_s_patterns_mean_what_they_mean_in_java() {
        assert!(!matches("", "10.0.0.1"));
        assert!(matches("*", "10.0.0.1"));
        assert!(matches("*.*.*.*", "::1"));
        assert!(matches("192.168.1.1", "192.168.1.1"));
        assert!(!matches("192.168.1.1", "192.168.1.2"));
        assert!(matches("192.168.1.1,192.168.1.2", "192.168.1.2"));
        assert!(matches("192.168.1.{1,2,3}", "192.168.1.3"));
        assert!(!matches("192.168.1.{1,2,3}", "192.168.1.4"));
        assert!(matches("192.168.*.*", "192.168.200.7"));
        assert!(!matches("192.168.*.*", "192.169.0.1"));
        assert!(matches("192.168.1.1-100", "192.168.1.100"));
        assert!(!matches("192.168.1.1-100", "192.168.1.101"));
        assert!(matches("10.*", "10.1.2.3"));
        assert!(matches("192.168.1-3.*", "192.168.2.9"));
        assert!(matches(
            "1050:0000:0000:0000:0005:0600:300c:*",
            "1050::5:600:300c:326b"
        ));
        assert!(matches(
            "1050::5:600:300c:326b",
            "1050:0:0:0:5:600:300c:326b"
        ));
        assert!(matches("10.0.0.0/8", "10.255.0.1"));
        assert!(!matches("10.0.0.0/8", "11.0.0.1"));
        // An IPv4-mapped source matches its IPv4 pattern.
        assert!(matches("127.0.0.1", "::ffff:127.0.0.1"));
    }

    #[test]
    fn patterns_java_refuses_are_refused_with_a_reason() {
        for bad in [
            "192.168.1.300",
            "192.168.*.1",
            "192.168.100-1.*",
            "*.168.1.1",
            "192.168.1.{1,x}",
            "192.168.1{1,2}",
            "10.0.0.0/40",
            "a.b.c.d",
            "1.2.3.4.5.*",
        ] {
            let err = AddressPattern::parse(bad).unwrap_err();
            assert!(err.contains('"'), "{bad}: {err}");
        }
    }
}
