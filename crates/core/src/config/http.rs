//! `HttpConfig::resolve`: the settings of `serve --http`, checked once before anything
//! listens: the address, the bearer token, the `Host` and `Origin` allow-lists and the limits.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::EnvLookup;
use crate::config::args::HttpArgs;
use crate::error::ConfigError;
use toolbelt_mcp_sandbox::fs;

/// Default limit on MCP sessions open at once.
pub const DEFAULT_MAX_SESSIONS: usize = 32;
/// Default time a session may go without a request before it is closed.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Default largest request body (the same as rmcp's).
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Default time calls in flight get to finish on `SIGTERM`.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// Shortest accepted token: 16 characters (`openssl rand -hex 32` gives 64).
const MIN_TOKEN_LEN: usize = 16;
/// The names a loopback server answers to.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
/// The browser origins of pages served from this machine.
const LOOPBACK_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// The resolved HTTP settings.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Where to listen (port 0: any free port).
    pub addr: SocketAddr,
    /// The bearer token every request must carry (`None` only with `--no-auth` on loopback).
    pub token: Option<Token>,
    /// Where the token came from, for the startup lines.
    pub token_source: TokenSource,
    /// `Host` values accepted (names or `name:port`; DNS-rebinding protection).
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin` values accepted (requests without `Origin` pass).
    pub allowed_origins: Vec<String>,
    /// Most MCP sessions open at once.
    pub max_sessions: usize,
    /// A session without a request for this long is closed and its commands killed.
    pub idle_timeout: Duration,
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// How long calls in flight may take to finish on shutdown.
    pub shutdown_grace: Duration,
}

/// A bearer token; never printed by `Debug`.
#[derive(Clone)]
pub struct Token(String);

/// Where the token came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// `--auth-token-file` or `TOOLBELT_AUTH_TOKEN`.
    Given,
    /// Generated on a first start (or read from that earlier start) into this file.
    Generated(std::path::PathBuf),
    /// `--no-auth`: none.
    None,
}

/// The file a generated token is kept in, under the state dir.
pub const TOKEN_FILE: &str = "http-token";

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// Whether `presented` is exactly the token, in time that does not depend on where they
    /// differ or on their lengths (both are hashed first).
    pub fn matches(&self, presented: &[u8]) -> bool {
        let (expected, given) = (Sha256::digest(self.0.as_bytes()), Sha256::digest(presented));
        bool::from(expected.as_slice().ct_eq(given.as_slice()))
    }

    /// The token itself, for the ready-to-paste host configs printed at start.
    pub fn reveal(&self) -> &str {
        &self.0
    }
}

impl HttpConfig {
    /// The settings for `serve --http ADDR`, or `None` for stdio.
    /// The settings for `serve --http ADDR`, or `None` for stdio. Without a token given, one
    /// is generated into `state_dir` (or read from there, made on an earlier start), so a
    /// loopback server is not open to every local user; `--no-auth` opts out on loopback.
    pub fn resolve(args: &HttpArgs, env: EnvLookup<'_>, state_dir: &Path) -> Result<Option<Self>, ConfigError> {
        let Some(given) = &args.http else { return Ok(None) };
        let addr = parse_addr(given)?;
        let given_token = match (&args.auth_token_file, env(crate::env_vars::AUTH_TOKEN.name)) {
            (Some(file), _) => {
                // Commands never read it, wherever it is (inside a root too).
                crate::config::sandbox::hide_from_commands(file);
                Some(read_token(file)?)
            }
            (None, Some(value)) => Some(check_token(value.to_string_lossy().trim(), "`TOOLBELT_AUTH_TOKEN`")?),
            (None, None) => None,
        };
        let (token, token_source) = match given_token {
            Some(token) if args.no_auth => {
                drop(token);
                return Err(ConfigError::Http(
                    "`--no-auth` and a token (`--auth-token-file` or `TOOLBELT_AUTH_TOKEN`) contradict each other; drop one".into(),
                ));
            }
            Some(token) => (Some(token), TokenSource::Given),
            None if args.no_auth && !addr.ip().is_loopback() => {
                return Err(ConfigError::Http(format!(
                    "refusing to serve `{addr}` without a bearer token: any machine that can reach it could run commands here; `--no-auth` is for loopback addresses only (e.g. `127.0.0.1:8765`)"
                )));
            }
            None if args.no_auth => (None, TokenSource::None),
            None if !addr.ip().is_loopback() => {
                return Err(ConfigError::Http(format!(
                    "refusing to serve `{addr}` without a bearer token given: any machine that can reach it could run commands here, and a generated one would have to be copied to every client; set one with `--auth-token-file FILE` or `TOOLBELT_AUTH_TOKEN` (e.g. `openssl rand -hex 32 > token`), or listen on `127.0.0.1`"
                )));
            }
            None => {
                let file = state_dir.join(TOKEN_FILE);
                (Some(generated_token(&file)?), TokenSource::Generated(file))
            }
        };
        let mut allowed_hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect();
        if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
            // Clients that reach a specific address by its number send it as `Host`.
            allowed_hosts.push(addr.ip().to_string());
        }
        allowed_hosts.extend(args.allow_hosts.iter().map(|h| h.trim().to_string()));
        if let Some(bad) = allowed_hosts.iter().find(|h| h.is_empty() || h.contains(['/', ' '])) {
            return Err(ConfigError::Http(format!(
                "`--allow-host` = `{bad}` is not a host: give a name or `name:port`, e.g. `mcp.example.com`"
            )));
        }
        let mut allowed_origins: Vec<String> = LOOPBACK_ORIGINS.iter().map(|o| o.to_string()).collect();
        for origin in &args.allow_origins {
            let origin = origin.trim().trim_end_matches('/');
            if !(origin.starts_with("http://") || origin.starts_with("https://")) || origin.matches('/').count() != 2 {
                return Err(ConfigError::Http(format!(
                    "`--allow-origin` = `{origin}` is not an origin: give a scheme and host, e.g. `https://app.example.com` (add `:*` for any port)"
                )));
            }
            allowed_origins.push(origin.to_string());
        }
        let max_sessions = args.max_http_sessions.unwrap_or(DEFAULT_MAX_SESSIONS);
        if !(1..=10_000).contains(&max_sessions) {
            return Err(out_of_range("max_http_sessions", max_sessions, "a number of sessions from 1 to 10000"));
        }
        let idle_timeout = args.idle_timeout.unwrap_or(DEFAULT_IDLE_TIMEOUT);
        if idle_timeout < Duration::from_secs(1) {
            return Err(out_of_range("idle_timeout", format!("{idle_timeout:?}"), "at least `1s`"));
        }
        let max_body_bytes = args.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
        if !(1024..=256 * 1024 * 1024).contains(&max_body_bytes) {
            return Err(out_of_range("max_body_bytes", max_body_bytes, "from 1024 to 268435456 bytes"));
        }
        let shutdown_grace = args.shutdown_grace.unwrap_or(DEFAULT_SHUTDOWN_GRACE);
        Ok(Some(Self {
            addr,
            token,
            token_source,
            allowed_hosts,
            allowed_origins,
            max_sessions,
            idle_timeout,
            max_body_bytes,
            shutdown_grace,
        }))
    }
}

/// `HOST:PORT` (a name is resolved), `[::1]:PORT`, or a bare port on `127.0.0.1`.
fn parse_addr(given: &str) -> Result<SocketAddr, ConfigError> {
    let given = given.trim();
    if let Ok(port) = given.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Ok(addr) = given.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let resolved = given.to_socket_addrs().ok().and_then(|mut addrs| addrs.next());
    resolved.ok_or_else(|| {
        ConfigError::Http(format!(
            "`--http` = `{given}` is not an address to listen on: give `HOST:PORT`, e.g. `127.0.0.1:8765` (port 0 picks a free port)"
        ))
    })
}

fn read_token(file: &Path) -> Result<Token, ConfigError> {
    // A token another user can read or write is theirs too: they could drive this server.
    if let Some(why) = toolbelt_mcp_sandbox::owned::others_control(file, true) {
        return Err(ConfigError::Http(format!(
            "{why}: another local user could read or replace the bearer token and drive this server; make it yours alone (`chmod 600 {}`) in a directory only you can write",
            file.display()
        )));
    }
    let text = fs::read_small_text(file).map_err(|err| {
        ConfigError::Http(format!(
            "cannot read the token file `{}`: {err}; create it (e.g. `openssl rand -hex 32 > {}`) or fix `--auth-token-file`",
            file.display(),
            file.display()
        ))
    })?;
    check_token(text.trim(), &format!("the token file `{}`", file.display()))
}

/// The token kept in `file` (mode 0600), made there first if there is none yet: 32 random
/// bytes as hex.
fn generated_token(file: &Path) -> Result<Token, ConfigError> {
    let dir = file.parent().unwrap_or(file);
    if let Some(why) = toolbelt_mcp_sandbox::owned::others_control(dir, false) {
        return Err(ConfigError::Http(format!(
            "{why}: another local user could plant the token kept there and drive this server; use a state dir of your own (`--state-dir`), or give a token with `--auth-token-file FILE`"
        )));
    }
    if fs::exists(file) {
        return read_token(file);
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|err| ConfigError::Http(format!("cannot make a random token: {err}")))?;
    let token = hex::encode(bytes);
    match fs::write_new_private(dir, file, format!("{token}\n").as_bytes()) {
        Ok(()) => Ok(Token(token)),
        // Another server starting at the same moment made it first: theirs is the token.
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => read_token(file),
        Err(err) => Err(ConfigError::Http(format!(
            "cannot keep the generated token in `{}`: {err}; give one with `--auth-token-file FILE`, or fix the state dir",
            file.display()
        ))),
    }
}

/// The token a loopback server generated into `state_dir`, if there is one (for a client on
/// the same machine).
pub fn generated_token_in(state_dir: &Path) -> Option<String> {
    let text = fs::read_small_text(&state_dir.join(TOKEN_FILE)).ok()?;
    Some(text.trim().to_string()).filter(|t| !t.is_empty())
}

fn check_token(token: &str, source: &str) -> Result<Token, ConfigError> {
    if token.len() < MIN_TOKEN_LEN || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ConfigError::Http(format!(
            "{source} must hold a token of at least {MIN_TOKEN_LEN} printable ASCII characters without spaces; make one with `openssl rand -hex 32`"
        )));
    }
    Ok(Token(token.to_string()))
}

fn out_of_range(key: &'static str, value: impl ToString, expected: &'static str) -> ConfigError {
    ConfigError::OutOfRange { key, value: value.to_string(), expected }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    /// Resolves with a state dir of the test's own (a generated token lands there), removed after.
    #[allow(clippy::disallowed_methods)]
    fn resolve(args: HttpArgs, token: Option<&str>) -> Result<Option<HttpConfig>, ConfigError> {
        let env = move |key: &str| (key == "TOOLBELT_AUTH_TOKEN").then(|| token.map(OsString::from)).flatten();
        let state = tempfile::tempdir().unwrap();
        HttpConfig::resolve(&args, &env, state.path())
    }

    fn on(addr: &str) -> HttpArgs {
        HttpArgs { http: Some(addr.into()), ..HttpArgs::default() }
    }

    #[test]
    fn stdio_has_no_http_settings() {
        assert!(resolve(HttpArgs::default(), None).unwrap().is_none());
    }

    #[test]
    #[allow(clippy::disallowed_methods)]
    fn loopback_gets_a_generated_token_and_defaults_apply() {
        let dir = tempfile::tempdir().unwrap();
        let env = |_: &str| None;
        let config = HttpConfig::resolve(&on("127.0.0.1:0"), &env, dir.path()).unwrap().unwrap();
        assert_eq!(config.addr, "127.0.0.1:0".parse().unwrap());
        let file = dir.path().join(TOKEN_FILE);
        assert_eq!(config.token_source, TokenSource::Generated(file.clone()));
        let token = config.token.unwrap();
        assert_eq!(token.reveal().len(), 64);
        #[cfg(unix)]
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions()) & 0o777,
            0o600
        );
        let again = HttpConfig::resolve(&on("127.0.0.1:0"), &env, dir.path()).unwrap().unwrap();
        assert!(again.token.unwrap().matches(token.reveal().as_bytes()), "the same token on every start");
        assert_eq!(config.allowed_hosts, ["localhost", "127.0.0.1", "::1"]);
        assert_eq!((config.max_sessions, config.idle_timeout), (32, Duration::from_secs(600)));
        assert_eq!(resolve(on("8765"), None).unwrap().unwrap().addr, "127.0.0.1:8765".parse().unwrap());
        assert_eq!(resolve(on("[::1]:9"), None).unwrap().unwrap().addr, "[::1]:9".parse().unwrap());
    }

    #[test]
    fn no_auth_is_for_loopback_only() {
        let open = HttpArgs { no_auth: true, ..on("127.0.0.1:0") };
        let config = resolve(open, None).unwrap().unwrap();
        assert!(config.token.is_none());
        assert_eq!(config.token_source, TokenSource::None);
        let wide = HttpArgs { no_auth: true, ..on("0.0.0.0:0") };
        assert!(resolve(wide, None).unwrap_err().to_string().contains("loopback addresses only"));
        let both = HttpArgs { no_auth: true, ..on("127.0.0.1:0") };
        assert!(resolve(both, Some("0123456789abcdef0123")).unwrap_err().to_string().contains("contradict"));
    }

    #[test]
    fn any_other_address_refuses_to_start_without_a_token() {
        for addr in ["0.0.0.0:8765", "[::]:8765", "192.0.2.7:1"] {
            let err = resolve(on(addr), None).unwrap_err().to_string();
            assert!(err.contains("refusing to serve") && err.contains("--auth-token-file"), "{err}");
        }
        let config = resolve(on("192.0.2.7:1"), Some("0123456789abcdef0123")).unwrap().unwrap();
        assert!(config.allowed_hosts.contains(&"192.0.2.7".to_string()));
        assert!(config.token.unwrap().matches(b"0123456789abcdef0123"));
    }

    #[test]
    fn tokens_are_checked_and_compared_exactly() {
        let err = resolve(on("127.0.0.1:0"), Some("short")).unwrap_err().to_string();
        assert!(err.contains("at least 16") && err.contains("openssl rand"), "{err}");
        let token = resolve(on("127.0.0.1:0"), Some(" 0123456789abcdef \n")).unwrap().unwrap().token.unwrap();
        assert!(token.matches(b"0123456789abcdef"));
        assert!(!token.matches(b"0123456789abcdeF"));
        assert!(!token.matches(b"0123456789abcdef0"));
        assert!(!token.matches(b""));
        assert_eq!(format!("{token:?}"), "Token(<redacted>)");
        let dir = tempfile::tempdir().unwrap();
        let missing = HttpArgs { auth_token_file: Some(dir.path().join("nope")), ..on("127.0.0.1:0") };
        assert!(resolve(missing, None).unwrap_err().to_string().contains("cannot read the token file"));
    }

    #[test]
    fn bad_values_say_what_to_send() {
        assert!(resolve(on("nowhere:x"), None).unwrap_err().to_string().contains("give `HOST:PORT`"));
        let origin = HttpArgs { allow_origins: vec!["app.example.com".into()], ..on("127.0.0.1:0") };
        assert!(resolve(origin, None).unwrap_err().to_string().contains("is not an origin"));
        let zero = HttpArgs { max_http_sessions: Some(0), ..on("127.0.0.1:0") };
        assert!(resolve(zero, None).unwrap_err().to_string().contains("max_http_sessions"));
        let fine = HttpArgs {
            allow_origins: vec!["https://app.example.com/".into()],
            allow_hosts: vec!["mcp.example.com".into()],
            ..on("127.0.0.1:0")
        };
        let config = resolve(fine, None).unwrap().unwrap();
        assert!(config.allowed_origins.contains(&"https://app.example.com".to_string()));
        assert!(config.allowed_hosts.contains(&"mcp.example.com".to_string()));
    }
}
