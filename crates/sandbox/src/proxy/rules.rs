//! What a command may reach: the user's list (`network_allow`: names, `*.domain` suffixes,
//! addresses, each with an optional port), whether every public address is allowed, and the
//! server's own listening addresses, which are never reached.

use std::net::{IpAddr, SocketAddr};

use super::addr::{self, Class, Host};

/// What a command may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// Every public address (`allow`), or only what `allowed` lists (`allowlist`).
    pub public: bool,
    /// Hosts (and ports) the user allowed: `name`, `*.suffix`, an IP, each with an optional
    /// `:port`.
    pub allowed: Vec<Allowed>,
    /// The server's own listening addresses: never reached.
    pub own: Vec<SocketAddr>,
}

/// One entry of the user's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    /// The host pattern.
    pub host: Pattern,
    /// The port, or any.
    pub port: Option<u16>,
}

/// A host pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// Exactly this name.
    Name(String),
    /// This name's subdomains (`*.example.com`: `a.example.com`, not `example.com`).
    Suffix(String),
    /// Exactly this address (which may then be a loopback or private one).
    Ip(IpAddr),
}

impl Allowed {
    /// Reads `name`, `*.suffix`, an IPv4 address or `[IPv6]`, each with an optional `:port`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (host, port) = split_port(text)?;
        let host = match host.strip_prefix("*.") {
            Some(suffix) => match addr::parse_host(suffix)? {
                Host::Name(name) => Pattern::Suffix(name),
                Host::Ip(_) => return Err(format!("`{text}`: a wildcard needs a name after `*.`")),
            },
            None => match addr::parse_host(host)? {
                Host::Name(name) => Pattern::Name(name),
                Host::Ip(ip) => Pattern::Ip(ip),
            },
        };
        Ok(Self { host, port })
    }

    /// The `host:port` this entry names exactly (`port`, when it names none); `None` for a
    /// `*.suffix`, which names no one host.
    pub fn destination(&self, port: u16) -> Option<String> {
        let port = self.port.unwrap_or(port);
        match &self.host {
            Pattern::Name(name) => Some(format!("{name}:{port}")),
            Pattern::Ip(ip) => Some(SocketAddr::new(*ip, port).to_string()),
            Pattern::Suffix(_) => None,
        }
    }

    fn port_matches(&self, port: u16) -> bool {
        self.port.is_none_or(|p| p == port)
    }
}

/// `host[:port]` (an IPv6 address in brackets), the port checked.
fn split_port(text: &str) -> Result<(&str, Option<u16>), String> {
    let bad = || format!("`{text}` is not `host`, `host:port`, `*.domain` or `[IPv6]:port`");
    if let Some(rest) = text.strip_prefix('[') {
        let end = rest.find(']').ok_or_else(bad)?;
        let port = match &rest[end + 1..] {
            "" => None,
            tail => Some(tail.strip_prefix(':').ok_or_else(bad)?.parse().map_err(|_| bad())?),
        };
        return Ok((&text[..end + 2], port));
    }
    match text.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => Ok((host, Some(port.parse().map_err(|_| bad())?))),
        Some(_) => Ok((text, None)),
        None => Ok((text, None)),
    }
}

impl Rules {
    /// Whether `host:port` may be asked for at all (before resolving): listed, or any name
    /// in `allow` mode.
    pub(super) fn host_allowed(&self, host: &Host, port: u16) -> bool {
        self.public
            || self.allowed.iter().any(|allowed| {
                allowed.port_matches(port)
                    && match (&allowed.host, host) {
                        (Pattern::Name(name), Host::Name(asked)) => name == asked,
                        (Pattern::Suffix(suffix), Host::Name(asked)) => {
                            asked.strip_suffix(suffix.as_str()).is_some_and(|head| head.ends_with('.'))
                        }
                        (Pattern::Ip(ip), Host::Ip(asked)) => ip == asked,
                        _ => false,
                    }
            })
    }

    /// Whether `ip:port` is never reached, whoever allowed it: the unspecified address (this
    /// machine's every listener), or one of this server's own listening addresses.
    pub(super) fn own_or_unspecified(&self, ip: IpAddr, port: u16) -> bool {
        let unmapped = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        unmapped.is_unspecified()
            || self.own.iter().any(|own| own.port() == port && (own.ip() == unmapped || own.ip().is_unspecified()))
    }

    /// Why `ip:port` (a name resolved to it, or an IP literal) may not be reached, if so: the
    /// server's own address; a non-public address not listed as exactly that.
    pub(super) fn address_refusal(&self, ip: IpAddr, port: u16) -> Option<String> {
        let unmapped = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        // Connecting to the unspecified address reaches this machine's own listeners (this
        // server's too): never, listed or not.
        if unmapped.is_unspecified() {
            return Some(format!("{ip} is this machine itself (the unspecified address); name the host you mean"));
        }
        if self.own_or_unspecified(ip, port) {
            return Some("it is this server's own listening address".into());
        }
        let class = addr::classify(ip);
        let listed =
            self.allowed.iter().any(|allowed| allowed.port_matches(port) && allowed.host == Pattern::Ip(unmapped));
        (class != Class::Public && !listed).then(|| {
            format!(
                "{ip} is {}; add `network_allow = [\"{}:{port}\"]` to allow exactly that",
                class.words(),
                Host::Ip(unmapped)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::REGISTRIES;

    #[test]
    fn an_entry_names_one_destination_unless_it_is_a_suffix() {
        let of = |entry: &str| Allowed::parse(entry).unwrap().destination(443);
        assert_eq!(of("Example.COM"), Some("example.com:443".into()));
        assert_eq!(of("127.0.0.1:8080"), Some("127.0.0.1:8080".into()));
        assert_eq!(of("[::1]"), Some("[::1]:443".into()));
        assert_eq!(of("*.example.com"), None);
    }

    #[test]
    fn the_default_registries_are_names_on_443() {
        for entry in REGISTRIES {
            let allowed = Allowed::parse(entry).unwrap_or_else(|err| panic!("{entry}: {err}"));
            assert!(matches!(allowed.host, Pattern::Name(_)) && allowed.port == Some(443), "{entry}");
        }
    }

    #[test]
    fn the_list_matches_names_suffixes_addresses_and_ports() {
        let rules = Rules {
            public: false,
            allowed: ["registry.npmjs.org", "*.pythonhosted.org", "crates.io:443", "127.0.0.1:8080", "[::1]:9"]
                .iter()
                .map(|t| Allowed::parse(t).unwrap())
                .collect(),
            own: vec!["127.0.0.1:7000".parse().unwrap()],
        };
        let name = |n: &str| Host::Name(n.into());
        assert!(rules.host_allowed(&name("registry.npmjs.org"), 443));
        assert!(rules.host_allowed(&name("files.pythonhosted.org"), 443));
        assert!(!rules.host_allowed(&name("pythonhosted.org"), 443), "a wildcard is subdomains only");
        assert!(!rules.host_allowed(&name("evilpythonhosted.org"), 443));
        assert!(rules.host_allowed(&name("crates.io"), 443) && !rules.host_allowed(&name("crates.io"), 80));
        assert!(!rules.host_allowed(&name("example.com"), 443));
        assert!(rules.address_refusal("127.0.0.1".parse().unwrap(), 8080).is_none(), "listed exactly");
        assert!(rules.address_refusal("::ffff:127.0.0.1".parse().unwrap(), 8080).is_none());
        assert!(rules.address_refusal("127.0.0.1".parse().unwrap(), 8081).is_some());
        assert!(rules.address_refusal("169.254.169.254".parse().unwrap(), 80).is_some());
        assert!(rules.address_refusal("127.0.0.1".parse().unwrap(), 7000).unwrap().contains("own"));
        // The unspecified address is this machine, listed or not.
        assert!(rules.address_refusal("0.0.0.0".parse().unwrap(), 7000).is_some());
        assert!(rules.address_refusal("::".parse().unwrap(), 8080).is_some());
        assert!(rules.address_refusal("::ffff:0.0.0.0".parse().unwrap(), 8080).is_some());
        assert!(rules.address_refusal("93.184.216.34".parse().unwrap(), 443).is_none());
        for bad in ["", "a b", "*.1.2.3.4", "[::1", "host:port", "*."] {
            assert!(Allowed::parse(bad).is_err(), "{bad:?}");
        }
    }
}
