//! Where a command asked to connect, read strictly: a host name normalised (case, one
//! trailing dot, IDNA to its ASCII form) or an IP literal (`[::1]`, `[::ffff:127.0.0.1]`),
//! and what class of address a name resolved to. Names are resolved by the proxy, never by the
//! command, and the connection goes to an address that was checked: a name that resolves to
//! loopback, a private or link-local range, multicast or a cloud metadata address is refused
//! unless the user allowed that exact address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A destination host as asked for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// A DNS name: ASCII (IDNA), lower-case, without a trailing dot.
    Name(String),
    /// An IP literal.
    Ip(IpAddr),
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Self::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// Reads `raw` (a host as a client sent it: a name, an IPv4 literal, or an IPv6 literal with
/// or without brackets) into a [`Host`], refusing what is not one (a NUL or control byte, a
/// space, an empty label, a name IDNA refuses).
pub fn parse_host(raw: &str) -> Result<Host, String> {
    if raw.is_empty() || raw.len() > 253 + 2 {
        return Err("an empty or overlong host".into());
    }
    if raw.bytes().any(|b| b.is_ascii_control() || b == b' ' || b == b'/' || b == b'\\' || b == b'@') {
        return Err(format!("`{}` is not a host name", raw.escape_debug()));
    }
    let unbracketed = raw.strip_prefix('[').and_then(|r| r.strip_suffix(']'));
    if let Some(inner) = unbracketed {
        return inner
            .parse::<Ipv6Addr>()
            .map(|ip| Host::Ip(IpAddr::V6(ip)))
            .map_err(|_| format!("`{raw}` is not an IPv6 address"));
    }
    if let Ok(ip) = raw.parse::<IpAddr>() {
        return Ok(Host::Ip(ip));
    }
    let trimmed = raw.strip_suffix('.').unwrap_or(raw);
    let ascii = idna::domain_to_ascii(trimmed).map_err(|_| format!("`{raw}` is not a valid host name"))?;
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
    };
    if ascii.is_empty() || ascii.len() > 253 || !ascii.split('.').all(label_ok) {
        return Err(format!("`{raw}` is not a valid host name"));
    }
    // A name made of digits and dots (or hex) is an IPv4 address to the resolver (`127.1`,
    // `2130706433`, `0x7f.1`): its resolved address is what is checked, whatever its spelling.
    Ok(Host::Name(ascii))
}

/// What kind of address an IP is, for the proxy's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Reachable on the internet.
    Public,
    /// The machine itself (`127.0.0.0/8`, `::1`).
    Loopback,
    /// A private network (`10/8`, `172.16/12`, `192.168/16`, `100.64/10`, `fc00::/7`).
    Private,
    /// Link-local, where cloud metadata services answer (`169.254/16`, `fe80::/10`).
    LinkLocal,
    /// Multicast or broadcast.
    Multicast,
    /// Unspecified, reserved, documentation or benchmarking ranges.
    Reserved,
}

impl Class {
    /// The class in words, for messages.
    pub fn words(self) -> &'static str {
        match self {
            Self::Public => "a public address",
            Self::Loopback => "a loopback address (this machine)",
            Self::Private => "a private network address",
            Self::LinkLocal => "a link-local address (where cloud metadata services answer)",
            Self::Multicast => "a multicast or broadcast address",
            Self::Reserved => "a reserved or unspecified address",
        }
    }
}

/// The class of `ip`; an IPv6 address that carries an IPv4 one (mapped `::ffff:a.b.c.d`,
/// compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is the IPv4 one's class.
pub fn classify(ip: IpAddr) -> Class {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => classify_v4(v4),
            None => classify_v6(v6),
        },
    }
}

fn classify_v4(ip: Ipv4Addr) -> Class {
    let [a, b, c, _] = ip.octets();
    if ip.is_loopback() {
        Class::Loopback
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) || (a == 198 && (b == 18 || b == 19)) {
        Class::Private
    } else if ip.is_link_local() {
        Class::LinkLocal
    } else if ip.is_multicast() || ip.is_broadcast() {
        Class::Multicast
    } else if ip.is_unspecified() || a == 0 || a >= 240 || ip.is_documentation() || (a == 192 && b == 0 && c == 0) {
        Class::Reserved
    } else {
        Class::Public
    }
}

fn classify_v6(ip: Ipv6Addr) -> Class {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        Class::Loopback
    } else if ip.is_unspecified() || first & 0xffc0 == 0xfec0 || (first == 0x2001 && ip.segments()[1] == 0x0db8) {
        Class::Reserved
    } else if first & 0xfe00 == 0xfc00 {
        Class::Private
    } else if first & 0xffc0 == 0xfe80 {
        Class::LinkLocal
    } else if ip.is_multicast() {
        Class::Multicast
    } else {
        Class::Public
    }
}

/// The IPv4 address an IPv6 one carries, if any.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    // `::a.b.c.d` (deprecated compatible form; `::` and `::1` are not).
    if s[..6].iter().all(|x| *x == 0) && !(s[6] == 0 && s[7] <= 1) {
        return Some(tail);
    }
    // NAT64's well-known prefix.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6].iter().all(|x| *x == 0) {
        return Some(tail);
    }
    // 6to4 carries the address in the second and third segments.
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_normalised_and_nonsense_refused() {
        assert_eq!(parse_host("Registry.NPMJS.org.").unwrap(), Host::Name("registry.npmjs.org".into()));
        assert_eq!(parse_host("bücher.example").unwrap(), Host::Name("xn--bcher-kva.example".into()));
        assert_eq!(parse_host("[::ffff:127.0.0.1]").unwrap(), Host::Ip("::ffff:127.0.0.1".parse().unwrap()));
        assert_eq!(parse_host("127.0.0.1").unwrap(), Host::Ip("127.0.0.1".parse().unwrap()));
        for bad in ["", "evil.com\0.allowed.org", "a b", "x/y", "user@host", "a..b", "[::1", "[nope]", ".", "-"] {
            assert!(
                parse_host(bad).is_err() || matches!(parse_host(bad), Ok(Host::Name(ref n)) if n == "-"),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn every_internal_range_is_not_public() {
        for (ip, class) in [
            ("127.0.0.1", Class::Loopback),
            ("127.8.9.10", Class::Loopback),
            ("::1", Class::Loopback),
            ("::ffff:127.0.0.1", Class::Loopback),
            ("::127.0.0.1", Class::Loopback),
            ("64:ff9b::7f00:1", Class::Loopback),
            ("2002:7f00:1::", Class::Loopback),
            ("10.1.2.3", Class::Private),
            ("172.20.0.1", Class::Private),
            ("192.168.1.1", Class::Private),
            ("100.100.100.200", Class::Private),
            ("fd00:ec2::254", Class::Private),
            ("169.254.169.254", Class::LinkLocal),
            ("::ffff:169.254.169.254", Class::LinkLocal),
            ("fe80::1", Class::LinkLocal),
            ("224.0.0.1", Class::Multicast),
            ("255.255.255.255", Class::Multicast),
            ("ff02::1", Class::Multicast),
            ("0.0.0.0", Class::Reserved),
            ("::", Class::Reserved),
            ("8.8.8.8", Class::Public),
            ("2606:4700::1111", Class::Public),
        ] {
            assert_eq!(classify(ip.parse().unwrap()), class, "{ip}");
        }
    }
}
