//! One connection a command made to its proxy: SOCKS5 (first byte 5) or HTTP (`CONNECT
//! host:port`, or a plain request whose target is an absolute `http://` URL), decided on by
//! the command's rules, then relayed both ways. Every step has a time limit, so a client that
//! sends nothing holds only its own connection.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::Link;
use super::addr::{self, Host};

/// How long a client has to say where it goes.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a name may take to resolve and a connection to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// The most an HTTP request head may be.
const HEAD_MAX: usize = 32 * 1024;

/// Serves the command's listener until its link goes.
pub(super) async fn accept(listener: TcpListener, link: Weak<Link>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let Some(held) = link.upgrade() else { return };
        let Ok(slot) = held.slots.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let link = link.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let _ = stream.set_nodelay(true);
            let Some(held) = link.upgrade() else { return };
            drop(link);
            serve(stream, held).await;
        });
    }
}

/// Where a client asked to go, and how to answer it.
struct Asked {
    host: Host,
    port: u16,
    /// A plain HTTP request's head, rewritten for the origin (sent once connected), with what
    /// of its body came along.
    forward: Option<Vec<u8>>,
    /// The bytes of a plain request's body still to come from the client.
    body_left: u64,
    /// Whether the client gave the link's password, when it has one (an HTTP client is
    /// answered 407 when not; a SOCKS5 one is turned away while it authenticates).
    admitted: bool,
}

async fn serve(mut stream: TcpStream, link: Arc<Link>) {
    let mut first = [0u8; 1];
    let socks = matches!(tokio::time::timeout(HEAD_TIMEOUT, stream.peek(&mut first)).await, Ok(Ok(1)) if first[0] == 5);
    let asked = if socks {
        tokio::time::timeout(HEAD_TIMEOUT, socks_request(&mut stream, &link)).await
    } else {
        tokio::time::timeout(HEAD_TIMEOUT, http_request(&mut stream, &link)).await
    };
    let asked = match asked {
        Ok(Ok(asked)) if asked.admitted => asked,
        Ok(Ok(_)) => {
            let why = "this proxy needs the password in the command's proxy variables (`HTTPS_PROXY`)";
            return refuse(&mut stream, socks, Reply::Password, why).await;
        }
        Ok(Err(refusal)) => return refuse(&mut stream, socks, Reply::Bad, &refusal).await,
        Err(_) => return,
    };
    let target = format!("{}:{}", asked.host, asked.port);
    let outcome = connect(&link, &asked).await;
    let mut upstream = match outcome {
        Ok(upstream) => upstream,
        Err((reply, why)) => {
            Link::note(&link.refused, format!("{target} ({why})"));
            return refuse(&mut stream, socks, reply, &why).await;
        }
    };
    let ready = match (&asked.forward, socks) {
        (_, true) => stream.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).await,
        (Some(head), false) => upstream.write_all(head).await,
        (None, false) => stream.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await,
    };
    if ready.is_err() {
        return;
    }
    if asked.forward.is_some() {
        // One request per connection: its body goes on, nothing after it (a second request
        // on the same connection would reach this host with a `Host` nobody checked); then
        // the answer comes back.
        let (mut from_client, mut to_client) = stream.split();
        let (mut from_upstream, mut to_upstream) = upstream.split();
        let mut body = (&mut from_client).take(asked.body_left);
        if tokio::io::copy(&mut body, &mut to_upstream).await.is_ok() {
            let _ = tokio::io::copy(&mut from_upstream, &mut to_client).await;
        }
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut stream, &mut upstream).await;
}

/// Why a connection was not made, in each protocol's terms.
#[derive(Clone, Copy)]
enum Reply {
    /// The request was malformed or not supported.
    Bad,
    /// The rules refuse it.
    Refused,
    /// The name did not resolve or the host did not answer.
    Unreachable,
    /// The client did not give the link's password.
    Password,
}

async fn refuse(stream: &mut TcpStream, socks: bool, reply: Reply, why: &str) {
    if socks {
        let code = match reply {
            Reply::Bad => 7,
            Reply::Refused => 2,
            Reply::Unreachable => 4,
            Reply::Password => 2,
        };
        let _ = stream.write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0]).await;
        return;
    }
    let status = match reply {
        Reply::Bad => "400 Bad Request",
        Reply::Refused => "403 Forbidden",
        Reply::Unreachable => "502 Bad Gateway",
        Reply::Password => "407 Proxy Authentication Required",
    };
    let challenge = match reply {
        Reply::Password => "Proxy-Authenticate: Basic realm=\"toolbelt-mcp\"\r\n",
        _ => "",
    };
    let body = format!("toolbelt-mcp proxy: {why}\n");
    let head = format!(
        "HTTP/1.1 {status}\r\n{challenge}Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
}

/// Decides on `asked` and connects to an address that was checked (a name is resolved here,
/// once; no second lookup can lead elsewhere).
async fn connect(link: &Link, asked: &Asked) -> Result<TcpStream, (Reply, String)> {
    if !link.rules.host_allowed(&asked.host, asked.port)
        && let Some(why) = link.ask(&asked.host, asked.port).await
    {
        return Err((Reply::Refused, why));
    }
    let candidates: Vec<IpAddr> = match &asked.host {
        Host::Ip(ip) => vec![*ip],
        Host::Name(name) => {
            let lookup = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host((name.as_str(), asked.port)));
            match lookup.await {
                Ok(Ok(found)) => found.map(|a| a.ip()).collect(),
                Ok(Err(err)) => return Err((Reply::Unreachable, format!("the name does not resolve ({err})"))),
                Err(_) => return Err((Reply::Unreachable, "resolving the name took too long".into())),
            }
        }
    };
    let mut why = String::from("the name resolved to no address");
    let mut allowed = Vec::new();
    for ip in candidates {
        match link.rules.address_refusal(ip, asked.port) {
            // An address the user allowed for this command, asked by that address, counts as
            // listed exactly (but never the server's own).
            Some(_)
                if asked.host == Host::Ip(ip)
                    && link.allowed_address(ip, asked.port).await
                    && !link.rules.own_or_unspecified(ip, asked.port) =>
            {
                allowed.push(SocketAddr::new(ip, asked.port));
            }
            Some(refusal) => why = refusal,
            None => allowed.push(SocketAddr::new(ip, asked.port)),
        }
    }
    if allowed.is_empty() {
        return Err((Reply::Refused, why));
    }
    let mut last = String::new();
    for address in allowed {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(err)) => last = format!("{address}: {err}"),
            Err(_) => last = format!("{address}: no answer"),
        }
    }
    Err((Reply::Unreachable, format!("cannot connect ({last})")))
}

/// SOCKS5: a greeting offering no authentication (a link with a password: username and
/// password, RFC 1929), then `CONNECT` to an IPv4, IPv6 or domain address (the domain
/// resolved here). `BIND` and `UDP ASSOCIATE` are refused.
async fn socks_request(stream: &mut TcpStream, link: &Link) -> Result<Asked, String> {
    let mut head = [0u8; 2];
    stream.read_exact(&mut head).await.map_err(|e| e.to_string())?;
    let mut methods = vec![0u8; usize::from(head[1])];
    stream.read_exact(&mut methods).await.map_err(|e| e.to_string())?;
    let method = if link.needs_password() { 2 } else { 0 };
    if !methods.contains(&method) {
        let _ = stream.write_all(&[5, 0xff]).await;
        return Err("no acceptable authentication method".into());
    }
    stream.write_all(&[5, method]).await.map_err(|e| e.to_string())?;
    if method == 2 {
        let password = socks_password(stream).await?;
        let admitted = link.admits(Some(&password));
        stream.write_all(&[1, if admitted { 0 } else { 1 }]).await.map_err(|e| e.to_string())?;
        if !admitted {
            return Err("wrong proxy password".into());
        }
    }
    let mut request = [0u8; 4];
    stream.read_exact(&mut request).await.map_err(|e| e.to_string())?;
    if request[0] != 5 || request[1] != 1 {
        return Err("only CONNECT is supported".into());
    }
    let host = match request[3] {
        1 => {
            let mut ip = [0u8; 4];
            stream.read_exact(&mut ip).await.map_err(|e| e.to_string())?;
            Host::Ip(IpAddr::from(ip))
        }
        4 => {
            let mut ip = [0u8; 16];
            stream.read_exact(&mut ip).await.map_err(|e| e.to_string())?;
            Host::Ip(IpAddr::from(ip))
        }
        3 => {
            let mut len = [0u8; 1];
            stream.read_exact(&mut len).await.map_err(|e| e.to_string())?;
            let mut name = vec![0u8; usize::from(len[0])];
            stream.read_exact(&mut name).await.map_err(|e| e.to_string())?;
            let name = String::from_utf8(name).map_err(|_| "a host name that is not text".to_string())?;
            addr::parse_host(&name)?
        }
        _ => return Err("an unknown address type".into()),
    };
    let mut port = [0u8; 2];
    stream.read_exact(&mut port).await.map_err(|e| e.to_string())?;
    Ok(Asked { host, port: u16::from_be_bytes(port), forward: None, body_left: 0, admitted: true })
}

/// The password of a SOCKS5 username/password sub-negotiation (RFC 1929; the name is not
/// looked at).
async fn socks_password(stream: &mut TcpStream) -> Result<Vec<u8>, String> {
    let mut version_and_length = [0u8; 2];
    stream.read_exact(&mut version_and_length).await.map_err(|e| e.to_string())?;
    if version_and_length[0] != 1 {
        return Err("an unknown username/password version".into());
    }
    let mut user = vec![0u8; usize::from(version_and_length[1])];
    stream.read_exact(&mut user).await.map_err(|e| e.to_string())?;
    let mut length = [0u8; 1];
    stream.read_exact(&mut length).await.map_err(|e| e.to_string())?;
    let mut password = vec![0u8; usize::from(length[0])];
    stream.read_exact(&mut password).await.map_err(|e| e.to_string())?;
    Ok(password)
}

/// The password of a `Proxy-Authorization: Basic …` header among the request head's `lines`.
fn basic_password<'a>(lines: impl Iterator<Item = &'a str>) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let value = lines
        .filter_map(|line| line.split_once(':'))
        .find_map(|(name, value)| name.trim().eq_ignore_ascii_case("proxy-authorization").then_some(value.trim()))?;
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let colon = decoded.iter().position(|b| *b == b':')?;
    Some(decoded[colon + 1..].to_vec())
}

/// HTTP: the request head, then `CONNECT host:port`, or a request for `http://host[:port]/…`
/// rewritten for the origin (its target made relative, `Proxy-*` headers dropped, the
/// connection closed after it, and a `Host` header that names another host refused).
async fn http_request(stream: &mut TcpStream, link: &Link) -> Result<Asked, String> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 4096];
    let end = loop {
        let n = stream.read(&mut buf).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the request ended before its head did".into());
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        if head.len() > HEAD_MAX {
            return Err("a request head over 32 KiB".into());
        }
    };
    let (head, body_start) = head.split_at(end);
    let text = std::str::from_utf8(head).map_err(|_| "a request head that is not text".to_string())?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut words = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(format!("`{}` is not an HTTP request line", request_line.escape_debug()));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("HTTP version `{version}` is not supported"));
    }
    let admitted = !link.needs_password() || link.admits(basic_password(text.split("\r\n").skip(1)).as_deref());
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = authority(target, None)?;
        return Ok(Asked { host, port, forward: None, body_left: 0, admitted });
    }
    let rest = target
        .strip_prefix("http://")
        .ok_or_else(|| format!("`{method} {target}`: a proxy request needs an absolute `http://` URL (or CONNECT)"))?;
    let (authority_text, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let (host, port) = authority(authority_text, Some(80))?;
    let path = if path.is_empty() { "/".to_string() } else { path.to_string() };
    let mut forward = format!("{method} {path} {version}\r\n");
    let mut body: u64 = 0;
    let mut lengths = 0;
    for line in lines.filter(|l| !l.is_empty()) {
        // Strict, so that no server behind reads another request than this proxy did: a
        // header is `token: value`, with no CR, LF or NUL inside it.
        let Some((raw_name, raw_value)) = line.split_once(':') else {
            return Err(format!("`{}` is not a header", line.escape_debug()));
        };
        let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if raw_name.is_empty() || !raw_name.chars().all(token) || raw_value.contains(['\r', '\n', '\0']) {
            return Err(format!("`{}` is not a header this proxy forwards", line.escape_debug()));
        }
        let name = raw_name.to_ascii_lowercase();
        if name == "transfer-encoding" {
            return Err("a request body sent in chunks; send its length (`Content-Length`), or use https".into());
        }
        if name == "content-length" {
            // One length, or the server and the proxy could each read another body (smuggling).
            lengths += 1;
            if lengths > 1 {
                return Err("a request with two `Content-Length` headers; send one".into());
            }
            let value = raw_value.trim_matches(' ');
            let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
            if !digits || (value.len() > 1 && value.starts_with('0')) {
                return Err(format!("`Content-Length: {}` is not a length", value.escape_debug()));
            }
            body = value.parse().map_err(|_| format!("`Content-Length: {value}` is not a length"))?;
        }
        if name.starts_with("proxy-") || name == "connection" || name == "keep-alive" {
            continue;
        }
        if name == "host" {
            let value = line.split_once(':').map(|(_, v)| v.trim()).unwrap_or_default();
            let (named, named_port) = authority(value, Some(80))?;
            if named != host || named_port != port {
                return Err(format!("the `Host` header (`{value}`) names another host than the URL"));
            }
        }
        forward.push_str(line);
        forward.push_str("\r\n");
    }
    forward.push_str("Connection: close\r\n\r\n");
    let mut forward = forward.into_bytes();
    // Of what came after the head, only the body goes on (a request behind it does not).
    let came = body_start.len().min(usize::try_from(body).unwrap_or(usize::MAX));
    forward.extend_from_slice(&body_start[..came]);
    Ok(Asked { host, port, forward: Some(forward), body_left: body - came as u64, admitted })
}

/// `host:port` (or `[v6]:port`), the port defaulting to `default` when one is given.
fn authority(text: &str, default: Option<u16>) -> Result<(Host, u16), String> {
    if text.contains('@') {
        return Err("credentials in a proxy target are not supported".into());
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') && (!host.contains(':') || host.ends_with(']')) => {
            (host, Some(port.parse::<u16>().map_err(|_| format!("`{text}`: a bad port"))?))
        }
        _ => (text, None),
    };
    let port = port.or(default).ok_or_else(|| format!("`{text}`: CONNECT needs `host:port`"))?;
    Ok((addr::parse_host(host)?, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_parse_strictly() {
        assert_eq!(authority("Example.COM.:443", None).unwrap(), (Host::Name("example.com".into()), 443));
        assert_eq!(authority("[::1]:80", None).unwrap().1, 80);
        assert_eq!(authority("example.com", Some(80)).unwrap().1, 80);
        assert!(authority("example.com", None).is_err());
        assert!(authority("user:pw@example.com:443", None).is_err());
        assert!(authority("example.com:99999", None).is_err());
        assert!(authority("ex\0ample.com:443", None).is_err());
    }

    #[tokio::test]
    async fn a_request_with_two_lengths_is_refused() {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let listener = &listener;
        let rules = super::super::Rules { public: true, allowed: Vec::new(), own: Vec::new() };
        let link = super::super::loopback_link(rules, None).unwrap();
        let link = &link;
        let ask = |request: &'static str| async move {
            let mut client = TcpStream::connect(address).await.unwrap();
            client.write_all(request.as_bytes()).await.unwrap();
            let (mut served, _) = listener.accept().await.unwrap();
            http_request(&mut served, link).await.map(|asked| asked.body_left)
        };
        let one = "POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\n\r\n";
        assert_eq!(ask(one).await, Ok(3));
        let two = "POST http://example.com/ HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 47\r\n\r\n";
        assert!(ask(two).await.unwrap_err().contains("two `Content-Length`"));
        for bad in [
            "GET http://example.com/ HTTP/1.1\r\nX-A: a\rHost: internal.example\r\n\r\n",
            "POST http://example.com/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
            "POST http://example.com/ HTTP/1.1\r\nContent-Length: 05\r\n\r\n",
            "POST http://example.com/ HTTP/1.1\r\nContent-Length : 5\r\n\r\n",
            "POST http://example.com/ HTTP/1.1\r\nContent-Length:\t5\r\n\r\n",
            "GET http://example.com/ HTTP/1.1\r\nno colon here\r\n\r\n",
        ] {
            assert!(ask(bad).await.is_err(), "{bad:?}");
        }
    }
}
