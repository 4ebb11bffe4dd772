//! The macOS backend: a Seatbelt (SBPL) profile generated from the [`Contract`], and the
//! `/usr/bin/sandbox-exec -p PROFILE -DNAME=PATH… -- PROGRAM…` line that runs a command under
//! it. The generator is pure (it is compiled and snapshot-tested on every OS); paths reach the
//! profile as `-D` parameters, so no path is ever quoted into SBPL text, except the writable
//! roots inside the regexes of the protected names, which are escaped (`regex_escape`).
//!
//! What the profile allows, last matching rule winning: everything `base.sbpl` allows
//! (processes, sysctls, devices, PTYs); reading everything but the deny-read list (`hidden`,
//! with the roots and the session's output dir `visible` again inside it); writing beneath
//! the writable dirs and the session's temp dir; then denied again: the contract's read-only
//! paths (`binds`), renaming or removing the protected paths, the directories that lead to
//! them and the roots themselves, and the protected names of `protected.rs` anywhere beneath a
//! writable dir. The network: all of it (`host`), the proxy's loopback port (`allow` and
//! `allowlist`: the proxy decides where it goes), or loopback (`deny`); Unix sockets beneath the
//! writable dirs in the last two.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::contract::{Bind, Contract};
use crate::mode::Network;
use crate::protected::{RULES, Shape};

/// Where macOS keeps `sandbox-exec` (never looked up on `PATH`).
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// What every profile starts with.
const BASE: &str = include_str!("seatbelt/base.sbpl");

/// The network rules of a command that may reach other hosts (after Codex's network policy:
/// DNS, TLS trust, network configuration).
const NETWORK_ALLOWED: &str = r#"(allow network*)
(allow system-socket)
(allow mach-lookup
  (global-name "com.apple.bsd.dirhelper")
  (global-name "com.apple.system.opendirectoryd.membership")
  (global-name "com.apple.SecurityServer")
  (global-name "com.apple.networkd")
  (global-name "com.apple.ocspd")
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.SystemConfiguration.DNSConfiguration")
  (global-name "com.apple.SystemConfiguration.configd"))
(allow sysctl-read (sysctl-name-regex #"^net.routetable"))
"#;

/// The network rules of a command kept to loopback (Unix sockets are added per writable dir).
const NETWORK_LOOPBACK: &str = r#"(allow network-bind (local ip "localhost:*"))
(allow network-inbound (local ip "localhost:*"))
(allow network-outbound (remote ip "localhost:*"))
(allow system-socket (socket-domain AF_UNIX))
"#;

/// The network rules of a command that reaches other hosts through its proxy link (on the
/// machine's loopback, `PORT` substituted): its own servers on loopback, and outbound only to
/// the proxy's port, so names are resolved by the proxy, never by the command (no DNS, no
/// `networkd`, no resolver configuration). The trust services stay, so TLS through the proxy
/// verifies certificates.
const NETWORK_PROXIED: &str = r#"(allow network-bind (local ip "localhost:*"))
(allow network-inbound (local ip "localhost:*"))
(allow network-outbound (remote ip "localhost:PORT"))
(allow system-socket (socket-domain AF_UNIX))
(allow mach-lookup
  (global-name "com.apple.SecurityServer")
  (global-name "com.apple.trustd.agent"))
"#;

/// A generated profile: its text and the values of the parameters it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The SBPL text.
    pub text: String,
    /// `(param "NAME")` values, passed as `-DNAME=PATH`.
    pub params: Vec<(String, PathBuf)>,
}

impl Profile {
    /// `(param "PREFIX_N")` for `path`: the same parameter each time the same path is named
    /// with the same prefix.
    fn param(&mut self, prefix: &str, path: &Path) -> String {
        let family = format!("{prefix}_");
        let same = self.params.iter().filter(|(name, _)| name.starts_with(&family));
        let name = match same.clone().find(|(_, known)| known == path) {
            Some((name, _)) => name.clone(),
            None => {
                let name = format!("{family}{}", same.count());
                self.params.push((name.clone(), path.to_path_buf()));
                name
            }
        };
        format!("(param \"{name}\")")
    }

    fn rule(&mut self, action: &str, filter: &str, paths: &[PathBuf], prefix: &str) {
        if paths.is_empty() {
            return;
        }
        let filters: Vec<String> = paths.iter().map(|p| format!("({filter} {})", self.param(prefix, p))).collect();
        self.text.push_str(&format!("({action}\n  {})\n", filters.join("\n  ")));
    }
}

/// The profile that enforces `contract`.
pub fn profile(contract: &Contract) -> Profile {
    let mut profile = Profile { text: String::from(BASE), params: Vec::new() };
    let beneath_any = |path: &Path, dirs: &[PathBuf]| dirs.iter().any(|dir| path.starts_with(dir));

    profile.text.push_str("\n; reads: everything but the deny-read list\n(allow file-read*)\n");
    profile.rule("deny file-read*", "subpath", &contract.hidden, "HIDDEN");
    let visible: Vec<PathBuf> =
        contract.visible.iter().filter(|path| beneath_any(path, &contract.hidden)).cloned().collect();
    profile.rule("allow file-read*", "subpath", &visible, "VISIBLE");
    // A hidden path inside a visible one inside a hidden one (a deny-read file in a root in
    // a hidden home) stays hidden.
    let hidden_again: Vec<PathBuf> =
        contract.hidden.iter().filter(|path| beneath_any(path, &visible)).cloned().collect();
    profile.rule("deny file-read*", "subpath", &hidden_again, "HIDDEN");

    profile.text.push_str("\n; writes: beneath the writable dirs and the command's own temp dir\n");
    let mut writable = contract.writable.clone();
    writable.push(contract.temp.clone());
    profile.rule("allow file-write*", "subpath", &writable, "WRITABLE");
    profile.rule("deny file-write*", "subpath", &contract.hidden, "HIDDEN");
    let reopened: Vec<PathBuf> = writable.iter().filter(|dir| beneath_any(dir, &contract.hidden)).cloned().collect();
    profile.rule("allow file-write*", "subpath", &reopened, "REOPENED");
    let hidden_again: Vec<PathBuf> =
        contract.hidden.iter().filter(|path| beneath_any(path, &reopened)).cloned().collect();
    profile.rule("deny file-write*", "subpath", &hidden_again, "HIDDEN");

    profile.text.push_str("\n; protected: read-only, and neither they nor the directories above them moved\n");
    let read_only: Vec<PathBuf> = contract
        .binds
        .iter()
        .filter_map(|bind| if let Bind::ReadOnly(path) = bind { Some(path.clone()) } else { None })
        .collect();
    profile.rule("deny file-write*", "subpath", &read_only, "READONLY");
    profile.rule("deny file-write-unlink", "literal", &kept_in_place(contract), "KEPT");
    for dir in &contract.writable {
        profile.text.push_str(&format!("(deny file-write*\n  {})\n", protected_names(dir).join("\n  ")));
    }

    profile.text.push_str("\n; network\n");
    match (contract.network, &contract.proxy) {
        (Network::Host, _) => profile.text.push_str(NETWORK_ALLOWED),
        // `allow` and `allowlist` go through the command's proxy link; without one, nowhere.
        (Network::Allow | Network::Allowlist, Some(link)) => {
            profile.text.push_str(&NETWORK_PROXIED.replace("PORT", &link.port.to_string()));
            unix_sockets(&mut profile, &writable);
        }
        (Network::Allow | Network::Allowlist, None) | (Network::Deny, _) => {
            profile.text.push_str(NETWORK_LOOPBACK);
            unix_sockets(&mut profile, &writable);
        }
    }
    profile
}

/// Unix sockets beneath the writable dirs: bound and connected to.
fn unix_sockets(profile: &mut Profile, writable: &[PathBuf]) {
    let dirs: Vec<String> = writable.iter().map(|dir| profile.param("SOCKETS", dir)).collect();
    for (action, side) in [("network-bind", "local"), ("network-outbound", "remote")] {
        let filters: Vec<String> = dirs.iter().map(|d| format!("({side} unix-socket (subpath {d}))")).collect();
        profile.text.push_str(&format!("(allow {action}\n  {})\n", filters.join("\n  ")));
    }
}

/// The paths that cannot be renamed or removed: the protected paths (read-only or pinned),
/// the hidden ones inside a writable dir, every directory from a writable dir down to them,
/// and the writable dirs themselves (renaming one moves all it holds out of its rules).
fn kept_in_place(contract: &Contract) -> Vec<PathBuf> {
    let mut kept: Vec<PathBuf> = contract.writable.clone();
    let protected = contract
        .binds
        .iter()
        .map(|bind| match bind {
            Bind::ReadOnly(path) | Bind::Pinned(path) => path,
        })
        .chain(&contract.hidden);
    for path in protected {
        let Some(dir) = contract.writable.iter().filter(|dir| path.starts_with(dir)).max() else { continue };
        for ancestor in path.ancestors().take_while(|a| a.starts_with(dir) && *a != dir.as_path()) {
            kept.push(ancestor.to_path_buf());
        }
    }
    kept.sort();
    kept.dedup();
    kept
}

/// The regex filters of the protected names (`protected.rs`'s tables, as `classify` reads
/// them) at any depth beneath `dir`.
fn protected_names(dir: &Path) -> Vec<String> {
    let root = regex_escape(&dir.to_string_lossy());
    let alternatives = |names: &[&str]| names.iter().map(|n| regex_escape(n)).collect::<Vec<_>>().join("|");
    let of = |shape: Shape| RULES.iter().filter(|rule| rule.shape == shape).map(|rule| rule.path).collect::<Vec<_>>();
    vec![
        format!("(regex #\"^{root}/(.*/)?({})(/.*)?$\")", alternatives(&of(Shape::Tree))),
        format!("(regex #\"^{root}/(.*/)?({})$\")", alternatives(&of(Shape::File))),
    ]
}

/// `text` as a literal in an SBPL regex inside `#"…"`: the regex operators escaped; a quote
/// (which would end the string) and control characters matched by `.`, so the rule can only
/// match more, never less.
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '.' | '^' | '$' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '"' => out.push('.'),
            c if c.is_control() => out.push('.'),
            c => out.push(c),
        }
    }
    out
}

/// The program and arguments that run `program args…` under `contract`'s profile, in its
/// working directory's temp dir (`TMPDIR`: the session's own).
pub fn command(contract: &Contract, program: &OsStr, args: &[OsString]) -> (PathBuf, Vec<OsString>) {
    let profile = profile(contract);
    let mut argv: Vec<OsString> = vec!["-p".into(), profile.text.into()];
    for (name, path) in &profile.params {
        let mut define = OsString::from(format!("-D{name}="));
        define.push(path);
        argv.push(define);
    }
    let mut tmpdir = OsString::from("TMPDIR=");
    tmpdir.push(contract.temp.join("tmp"));
    argv.extend(["--".into(), "/usr/bin/env".into(), tmpdir, program.to_os_string()]);
    argv.extend(args.iter().cloned());
    (PathBuf::from(SANDBOX_EXEC), argv)
}

/// Whether `sandbox-exec` can apply a profile here (it cannot inside another sandbox), checked
/// once per process with a profile that allows everything.
#[cfg(target_os = "macos")]
pub fn probe() -> &'static Result<(), String> {
    static PROBE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    PROBE.get_or_init(|| {
        let out = std::process::Command::new(SANDBOX_EXEC)
            .args(["-p", "(version 1)(allow default)", "--", "/usr/bin/true"])
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("`{SANDBOX_EXEC}` cannot be run ({e})"))?;
        if out.status.success() {
            return Ok(());
        }
        let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
        Err(format!("`{SANDBOX_EXEC}` cannot apply a profile here ({said})"))
    })
}

#[cfg(test)]
#[path = "seatbelt/tests.rs"]
mod tests;
