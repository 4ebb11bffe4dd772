//! Network by name: sandboxed commands have a network namespace of their own (loopback only)
//! and reach other hosts through this proxy, which runs in the server, outside their
//! namespace. It speaks HTTP (`CONNECT`, and plain requests in absolute form) and SOCKS5 on
//! one port of each command's loopback (`register.rs` puts the listener there), resolves
//! names itself (a command cannot resolve or reach anything else: no DNS to exfiltrate
//! through), checks every address a name resolved to, and connects to an address it checked.
//!
//! What may be reached is the [`Rules`]': in `allow` mode every public address; in
//! `allowlist` mode the names and addresses listed; in both, loopback, private, link-local
//! (cloud metadata) and multicast addresses only when listed as exactly that address, and
//! never the server's own listening addresses. A destination the rules do not list is put to
//! the link's [`Asker`] (the user, through the client), when it has one: the connection waits
//! for the answer; what the user allowed holds for the rest of the command (an address allowed
//! so counts as listed exactly). What is refused is remembered per command, so its result can
//! say why `npm install` failed.

pub mod addr;
pub mod register;
mod rules;
mod serve;

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

pub use crate::mode::REGISTRIES;
pub use addr::{Class, Host};
pub use rules::{Allowed, Pattern, Rules};

/// The port of a command's loopback the proxy listens on (`HTTP_PROXY=http://127.0.0.1:PORT`).
pub const PORT: u16 = 3128;

/// Most connections one command may have open through the proxy at once.
const MAX_CONNECTIONS: usize = 256;

/// Most questions one command may put to the user; past them, unlisted hosts are refused.
const MAX_QUESTIONS: usize = 8;

/// Asks whether a command may reach `host:port`, which its rules do not list (the host as
/// normalised, e.g. `example.com` or `[::1]`; for an address that is not public, what it is:
/// "a loopback address (this machine)"): `None` if allowed, else why not.
pub type Asker = Arc<
    dyn Fn(String, u16, Option<&'static str>) -> std::pin::Pin<Box<dyn Future<Output = Option<String>> + Send>>
        + Send
        + Sync,
>;

/// What a command's link decided about destinations its rules do not list.
#[derive(Default)]
struct Asked {
    /// Allowed by the user for this command.
    allowed: Vec<(Host, u16)>,
    /// Refused, with why (not asked again).
    refused: Vec<(Host, u16, String)>,
    /// Questions put so far.
    questions: usize,
}

/// One command's use of the proxy: its rules, and what it was refused.
#[derive(Debug)]
pub struct Link {
    token: String,
    socket: PathBuf,
    /// The port the command reaches the proxy on: [`PORT`] of its own loopback, or the one a
    /// [`loopback_link`] listens on in the machine's.
    port: u16,
    /// On the machine's loopback, which every local process reaches: the password a
    /// connection must give (HTTP `Proxy-Authorization: Basic`, SOCKS5 username and password;
    /// it is in the command's proxy variables, and nowhere else).
    secret: Option<String>,
    rules: Rules,
    /// Who is asked about unlisted destinations, if anyone.
    asker: Option<AskerSlot>,
    /// What was asked, one question at a time.
    asked: tokio::sync::Mutex<Asked>,
    refused: Mutex<Vec<String>>,
    slots: Arc<tokio::sync::Semaphore>,
    /// The accept loop on the command's listener (aborted when the link goes).
    task: Mutex<Option<tokio::task::AbortHandle>>,
}

/// An [`Asker`] in a link (shown as such in its debug form).
struct AskerSlot(Asker);

impl std::fmt::Debug for AskerSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Asker")
    }
}

impl std::fmt::Debug for Asked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asked").field("questions", &self.questions).finish_non_exhaustive()
    }
}

impl Link {
    /// A link named `token`, served on `port`, behind `secret` when it has one; its listener
    /// is served later (`Hub::take`, `loopback_link`).
    fn new(
        token: String,
        socket: PathBuf,
        port: u16,
        secret: Option<String>,
        rules: Rules,
        asker: Option<Asker>,
    ) -> Self {
        Self {
            token,
            socket,
            port,
            secret,
            rules,
            asker: asker.map(AskerSlot),
            asked: tokio::sync::Mutex::default(),
            refused: Mutex::default(),
            slots: Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS)),
            task: Mutex::new(None),
        }
    }

    /// Why `host:port`, which the rules do not list, may not be reached: asked of the user
    /// once per command (at most [`MAX_QUESTIONS`] questions), or refused when nobody can be.
    async fn ask(&self, host: &Host, port: u16) -> Option<String> {
        let unlisted = || "not on the list of hosts commands may reach (`network_allow`)".to_string();
        let Some(AskerSlot(asker)) = &self.asker else { return Some(unlisted()) };
        let mut asked = self.asked.lock().await;
        if asked.allowed.iter().any(|(h, p)| h == host && *p == port) {
            return None;
        }
        if let Some((_, _, why)) = asked.refused.iter().find(|(h, p, _)| h == host && *p == port) {
            return Some(why.clone());
        }
        if asked.questions >= MAX_QUESTIONS {
            return Some(format!("{}; this command already asked {MAX_QUESTIONS} times", unlisted()));
        }
        asked.questions += 1;
        let what = match host {
            Host::Ip(ip) => Some(addr::classify(*ip)).filter(|class| *class != Class::Public).map(Class::words),
            Host::Name(_) => None,
        };
        match asker(host.to_string(), port, what).await {
            None => {
                asked.allowed.push((host.clone(), port));
                None
            }
            Some(why) => {
                asked.refused.push((host.clone(), port, why.clone()));
                Some(why)
            }
        }
    }

    /// Whether the user allowed exactly the address `ip:port` for this command.
    async fn allowed_address(&self, ip: IpAddr, port: u16) -> bool {
        self.asked.lock().await.allowed.iter().any(|(host, p)| *p == port && *host == Host::Ip(ip))
    }

    /// What the command's contract says of this link: the server's registration socket,
    /// where the helper hands the listener over, the token it names the command by, and the
    /// port of the command's loopback to listen on.
    pub fn contract(&self) -> crate::contract::ProxyLink {
        crate::contract::ProxyLink { socket: self.socket.clone(), token: self.token.clone(), port: self.port }
    }

    /// Whether a connection that gave `password` may use this link: any may on a command's
    /// own loopback; on the machine's, only one that gave the link's secret.
    fn admits(&self, password: Option<&[u8]>) -> bool {
        match (&self.secret, password) {
            (None, _) => true,
            (Some(secret), Some(given)) => same_bytes(secret.as_bytes(), given),
            (Some(_), None) => false,
        }
    }

    /// Whether the link asks connections for its secret.
    fn needs_password(&self) -> bool {
        self.secret.is_some()
    }

    /// The environment that points a command's programs at this link: the upper- and
    /// lower-case variables curl, git, pip, npm, cargo, Go and Node (with
    /// `NODE_USE_ENV_PROXY`) read, and the local names that stay direct. On the machine's
    /// loopback the URLs carry the link's secret (`http://toolbelt:SECRET@127.0.0.1:PORT`).
    pub fn environment(&self) -> Vec<(String, String)> {
        let credentials = self.secret.as_ref().map(|secret| format!("{USER}:{secret}@")).unwrap_or_default();
        let http = format!("http://{credentials}127.0.0.1:{}", self.port);
        let socks = format!("socks5h://{credentials}127.0.0.1:{}", self.port);
        let local = "localhost,127.0.0.1,::1".to_string();
        vec![
            ("HTTP_PROXY".into(), http.clone()),
            ("HTTPS_PROXY".into(), http.clone()),
            ("http_proxy".into(), http.clone()),
            ("https_proxy".into(), http.clone()),
            ("ALL_PROXY".into(), socks.clone()),
            ("all_proxy".into(), socks),
            ("NO_PROXY".into(), local.clone()),
            ("no_proxy".into(), local),
            ("NODE_USE_ENV_PROXY".into(), "1".into()),
            // Tools that read their own settings first.
            ("npm_config_proxy".into(), http.clone()),
            ("npm_config_https_proxy".into(), http.clone()),
            ("PIP_PROXY".into(), http.clone()),
            ("CARGO_HTTP_PROXY".into(), http.clone()),
            ("GIT_CONFIG_COUNT".into(), "1".into()),
            ("GIT_CONFIG_KEY_0".into(), "http.proxy".into()),
            ("GIT_CONFIG_VALUE_0".into(), http),
        ]
    }

    /// The destinations refused so far (`host:port (why)`), each once.
    pub fn refused(&self) -> Vec<String> {
        self.refused.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn note(list: &Mutex<Vec<String>>, line: String) {
        let mut list = list.lock().unwrap_or_else(|p| p.into_inner());
        if list.len() < 64 && !list.contains(&line) {
            list.push(line);
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if let Some(task) = self.task.get_mut().unwrap_or_else(|p| p.into_inner()).take() {
            task.abort();
        }
    }
}

/// The server's proxy: the registration socket, and the commands it serves.
#[derive(Debug)]
pub struct Hub {
    socket: PathBuf,
    links: Mutex<HashMap<String, Weak<Link>>>,
    runtime: tokio::runtime::Handle,
}

impl Hub {
    /// Starts the proxy: binds the registration socket at `socket` (in the state dir, where
    /// commands cannot reach) and takes registrations on a thread of its own; connections
    /// are served on the current runtime.
    pub fn start(socket: &Path) -> std::io::Result<Arc<Self>> {
        if let Some(dir) = socket.parent() {
            crate::fs::create_private_dir(dir)?;
        }
        let listener = register::bind(socket)?;
        let hub = Arc::new(Self {
            socket: socket.to_path_buf(),
            links: Mutex::new(HashMap::new()),
            runtime: tokio::runtime::Handle::current(),
        });
        let weak = Arc::downgrade(&hub);
        std::thread::Builder::new().name("proxy-registrations".into()).spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let Some(hub) = weak.upgrade() else { return };
                let taken = match register::receive(&stream) {
                    Ok((token, fd)) => hub.take(&token, fd),
                    Err(err) => {
                        tracing::debug!(%err, "a proxy registration could not be read");
                        false
                    }
                };
                register::answer(&stream, taken);
            }
        })?;
        Ok(hub)
    }

    /// A new link for one command, under a fresh token: `asker` is asked about destinations
    /// `rules` do not list (refused without one).
    pub fn link(&self, rules: Rules, asker: Option<Asker>) -> std::io::Result<Arc<Link>> {
        let token = random_hex()?;
        let link = Arc::new(Link::new(token.clone(), self.socket.clone(), PORT, None, rules, asker));
        let mut links = self.links.lock().unwrap_or_else(|p| p.into_inner());
        links.retain(|_, weak| weak.strong_count() > 0);
        links.insert(token, Arc::downgrade(&link));
        Ok(link)
    }

    /// Takes a command's listening socket: serves it until the command's link goes.
    fn take(&self, token: &str, fd: std::os::fd::OwnedFd) -> bool {
        let link = self.links.lock().unwrap_or_else(|p| p.into_inner()).remove(token).and_then(|weak| weak.upgrade());
        let Some(link) = link else { return false };
        let listener = std::net::TcpListener::from(fd);
        if listener.set_nonblocking(true).is_err() {
            return false;
        }
        let weak = Arc::downgrade(&link);
        let _guard = self.runtime.enter();
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return false };
        let task = self.runtime.spawn(serve::accept(listener, weak));
        *link.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task.abort_handle());
        true
    }
}

/// A link served on the machine's loopback (`127.0.0.1`, a port of its own), for a sandbox
/// that cannot give a command a loopback of its own (macOS: Seatbelt lets the command reach
/// only this port). Every local process can reach the port, so a connection must give the
/// link's secret, which only the command's environment holds. Must be called within a Tokio
/// runtime; the listener closes when the link goes.
pub fn loopback_link(rules: Rules, asker: Option<Asker>) -> std::io::Result<Arc<Link>> {
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let link = Arc::new(Link::new(random_hex()?, PathBuf::new(), port, Some(random_hex()?), rules, asker));
    let task = tokio::spawn(serve::accept(listener, Arc::downgrade(&link)));
    *link.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task.abort_handle());
    Ok(link)
}

/// 128 random bits in hex: a link's token or secret.
fn random_hex() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    Ok(hex::encode(bytes))
}

/// The user name in a loopback link's proxy URLs (any is taken; the secret is what counts).
const USER: &str = "toolbelt";

/// Whether `a` and `b` are the same bytes, in a time that does not depend on where they
/// first differ.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |differ, (x, y)| differ | (x ^ y)) == 0
}

/// The process's hub, started on first use with its socket in `state_dir` (one per process:
/// every connection's commands register there).
pub fn hub(state_dir: &Path) -> std::io::Result<Arc<Hub>> {
    static HUB: std::sync::OnceLock<Arc<Hub>> = std::sync::OnceLock::new();
    if let Some(hub) = HUB.get() {
        return Ok(hub.clone());
    }
    let socket = state_dir.join("proxy").join(format!("{}.sock", std::process::id()));
    let hub = Hub::start(&socket)?;
    Ok(HUB.get_or_init(|| hub).clone())
}

/// The addresses this server listens on (`serve --http`): commands never reach them.
pub fn own_listeners() -> Vec<SocketAddr> {
    OWN.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Notes an address this server listens on.
pub fn note_own_listener(address: SocketAddr) {
    OWN.lock().unwrap_or_else(|p| p.into_inner()).push(address);
}

static OWN: Mutex<Vec<SocketAddr>> = Mutex::new(Vec::new());

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// An upstream on the machine's loopback that answers each connection's first bytes with
    /// `echo:` and them, and a plain HTTP request with a 200.
    async fn upstream() -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    let n = stream.read(&mut buf).await.unwrap_or(0);
                    let reply = if buf[..n].starts_with(b"GET ") {
                        b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nupstream".to_vec()
                    } else {
                        [b"echo:".as_slice(), &buf[..n]].concat()
                    };
                    let _ = stream.write_all(&reply).await;
                });
            }
        });
        address
    }

    /// The port and secret in a link's `HTTPS_PROXY`.
    fn port_and_secret(link: &Link) -> (u16, String) {
        let env = link.environment();
        let url = &env.iter().find(|(name, _)| name == "HTTPS_PROXY").unwrap().1;
        let rest = url.strip_prefix("http://toolbelt:").unwrap();
        let (secret, port) = rest.split_once("@127.0.0.1:").unwrap();
        (port.parse().unwrap(), secret.to_string())
    }

    async fn answer(stream: &mut tokio::net::TcpStream) -> String {
        let mut buf = vec![0u8; 4096];
        let n = stream.read(&mut buf).await.unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[tokio::test]
    async fn a_loopback_link_serves_only_connections_that_give_its_secret() {
        use base64::Engine as _;
        let target = upstream().await;
        let rules =
            Rules { public: false, allowed: vec![Allowed::parse(&target.to_string()).unwrap()], own: Vec::new() };
        let link = loopback_link(rules, None).unwrap();
        let (port, secret) = port_and_secret(&link);
        assert_eq!(link.contract().port, port);
        assert!(
            link.environment().iter().all(|(_, value)| !value.contains(":3128")),
            "every variable names the link's own port"
        );
        let proxy = SocketAddr::from(([127, 0, 0, 1], port));
        let connect = |authorization: Option<String>| async move {
            let mut stream = tokio::net::TcpStream::connect(proxy).await.unwrap();
            let header = authorization.map(|a| format!("Proxy-Authorization: Basic {a}\r\n")).unwrap_or_default();
            let head = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{header}\r\n");
            stream.write_all(head.as_bytes()).await.unwrap();
            let said = answer(&mut stream).await;
            (stream, said)
        };
        let basic = |user: &str, password: &str| {
            Some(base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")))
        };
        for (authorization, what) in [
            (None, "no password"),
            (basic("toolbelt", "wrong"), "a wrong one"),
            (basic("toolbelt", ""), "an empty one"),
        ] {
            let (_, said) = connect(authorization).await;
            assert!(said.starts_with("HTTP/1.1 407 ") && said.contains("Proxy-Authenticate: Basic"), "{what}: {said}");
        }
        let (mut tunnel, said) = connect(basic("anyone", &secret)).await;
        assert!(said.starts_with("HTTP/1.1 200 "), "{said}");
        tunnel.write_all(b"ping").await.unwrap();
        assert_eq!(answer(&mut tunnel).await, "echo:ping");
        assert!(link.refused().is_empty(), "a connection without the password is not a destination refused");

        // SOCKS5: no-authentication is not offered; a wrong password is turned away.
        let mut socks = tokio::net::TcpStream::connect(proxy).await.unwrap();
        socks.write_all(&[5, 1, 0]).await.unwrap();
        let mut reply = [0u8; 2];
        socks.read_exact(&mut reply).await.unwrap();
        assert_eq!(reply, [5, 0xff]);
        let login = |password: &[u8]| {
            let mut bytes = vec![5, 1, 2, 1, 8];
            bytes.extend_from_slice(b"toolbelt");
            bytes.push(u8::try_from(password.len()).unwrap());
            bytes.extend_from_slice(password);
            bytes
        };
        let mut socks = tokio::net::TcpStream::connect(proxy).await.unwrap();
        socks.write_all(&login(b"wrong")).await.unwrap();
        let mut reply = [0u8; 4];
        socks.read_exact(&mut reply).await.unwrap();
        assert_eq!(reply, [5, 2, 1, 1], "username/password chosen, then refused");
        let mut socks = tokio::net::TcpStream::connect(proxy).await.unwrap();
        socks.write_all(&login(secret.as_bytes())).await.unwrap();
        socks.read_exact(&mut reply).await.unwrap();
        assert_eq!(reply, [5, 2, 1, 0]);
        let std::net::IpAddr::V4(ip) = target.ip() else { unreachable!() };
        let mut request = vec![5, 1, 0, 1];
        request.extend_from_slice(&ip.octets());
        request.extend_from_slice(&target.port().to_be_bytes());
        socks.write_all(&request).await.unwrap();
        let mut granted = [0u8; 10];
        socks.read_exact(&mut granted).await.unwrap();
        assert_eq!(granted[..2], [5, 0]);
        socks.write_all(b"pong").await.unwrap();
        assert_eq!(answer(&mut socks).await, "echo:pong");

        // curl reads the password from the proxy URL, as the command's programs do.
        let url = link.environment().into_iter().find(|(name, _)| name == "HTTP_PROXY").unwrap().1;
        let curl = tokio::process::Command::new("curl")
            .args(["-sS", "--max-time", "10", "--proxy", &url, &format!("http://{target}/")])
            .output()
            .await
            .expect("curl runs");
        assert_eq!(String::from_utf8_lossy(&curl.stdout), "upstream", "{}", String::from_utf8_lossy(&curl.stderr));
        let unlisted = tokio::process::Command::new("curl")
            .args(["-fsS", "--max-time", "10", "--proxy", &url, "http://127.0.0.1:9/"])
            .output()
            .await
            .expect("curl runs");
        assert!(!unlisted.status.success());
        assert!(link.refused().iter().any(|line| line.starts_with("127.0.0.1:9 ")), "{:?}", link.refused());

        // The port closes with the link (once the connections it serves, which hold it, end).
        drop((tunnel, socks));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        drop(link);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(tokio::net::TcpStream::connect(proxy).await.is_err(), "nothing listens once the link is gone");
    }
}
