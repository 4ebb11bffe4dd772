//! The environment commands run with: a predictable base inherited from the server, a
//! configurable allow-list, no variables that look like secrets, then what the call passes.

use std::collections::BTreeMap;
use std::ffi::OsString;

/// Inherited by every command.
#[cfg(unix)]
const BASE: &[&str] = &["PATH", "HOME", "LANG", "TERM", "USER", "LOGNAME", "SHELL", "TZ", "TMPDIR"];
/// Inherited by every command: what Windows programs need to start at all (`SystemRoot`,
/// `COMSPEC`, `PATHEXT`, the profile and temp dirs).
#[cfg(windows)]
const BASE: &[&str] = &[
    "PATH",
    "PATHEXT",
    "SystemRoot",
    "SystemDrive",
    "windir",
    "COMSPEC",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "USERNAME",
    "USERDOMAIN",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "ProgramData",
    "ProgramFiles",
    "ProgramFiles(x86)",
    "CommonProgramFiles",
    "NUMBER_OF_PROCESSORS",
    "PROCESSOR_ARCHITECTURE",
    "OS",
    "TZ",
    "LANG",
    "TERM",
];

/// Whether two variable names are the same (Windows: case-insensitively).
fn same_name(a: &str, b: &str) -> bool {
    if cfg!(windows) { a.eq_ignore_ascii_case(b) } else { a == b }
}
/// Name fragments that mark a variable as a likely secret (matched case-insensitively).
const SECRET_MARKS: &[&str] = &["TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// Whether a variable's name looks like it holds a secret.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_MARKS.iter().any(|mark| upper.contains(mark))
}

/// How a command's environment is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terminal {
    /// Output goes to pipes: pagers and prompts are turned off so nothing waits for a human.
    Pipes,
    /// An interactive PTY session (none on Windows).
    #[cfg(unix)]
    Pty,
}

/// The environment for one command: `inherited` filtered by the base list and `allow`
/// (`NAME`, or `PREFIX*`; a secret-looking name passes only when listed exactly), plus
/// defaults for `terminal`, plus `extra` (the call's own, always applied last).
pub fn build(
    inherited: impl IntoIterator<Item = (OsString, OsString)>,
    allow: &[String],
    terminal: Terminal,
    extra: &BTreeMap<String, String>,
) -> Vec<(OsString, OsString)> {
    let mut env: BTreeMap<OsString, OsString> = BTreeMap::new();
    for (name, value) in inherited {
        let Some(text) = name.to_str() else { continue };
        let exact =
            BASE.iter().any(|b| same_name(b, text)) || text.starts_with("LC_") || allow.iter().any(|a| a == text);
        let by_prefix = allow.iter().any(|a| a.strip_suffix('*').is_some_and(|prefix| text.starts_with(prefix)));
        if exact && (!looks_secret(text) || allow.iter().any(|a| a == text)) || by_prefix && !looks_secret(text) {
            env.insert(name, value);
        }
    }
    let defaults: &[(&str, &str)] = match terminal {
        Terminal::Pipes => &[("PAGER", "cat"), ("GIT_PAGER", "cat"), ("GIT_TERMINAL_PROMPT", "0"), ("TERM", "dumb")],
        #[cfg(unix)]
        Terminal::Pty => &[("TERM", "xterm-256color")],
    };
    for (name, value) in defaults {
        let keep_inherited = *name == "TERM" && terminal == Terminal::Pipes && env.contains_key(&OsString::from(name));
        if !keep_inherited {
            env.insert(name.into(), value.into());
        }
    }
    for (name, value) in extra {
        env.insert(name.into(), value.into());
    }
    env.into_iter().collect()
}

/// Checks the names a call passes in `env`: non-empty, no `=` or NUL.
pub fn check_names(extra: &BTreeMap<String, String>) -> Result<(), String> {
    for (name, value) in extra {
        if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
            return Err(format!("`{name}`: names must be non-empty without `=` or NUL, values without NUL"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    #[test]
    fn keeps_the_base_drops_secrets_and_applies_the_call_last() {
        let inherited = vars(&[
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("LC_ALL", "C"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("GITHUB_TOKEN", "t"),
            ("CARGO_HOME", "/c"),
            ("CARGO_REGISTRY_TOKEN", "r"),
            ("RANDOM_THING", "x"),
        ]);
        let allow = vec!["CARGO_*".to_string(), "GITHUB_TOKEN".to_string()];
        let extra = BTreeMap::from([("PATH".to_string(), "/call".to_string())]);
        let env: BTreeMap<_, _> = build(inherited, &allow, Terminal::Pipes, &extra).into_iter().collect();
        let names: Vec<_> = env.keys().map(|k| k.to_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "CARGO_HOME",
                "GITHUB_TOKEN",
                "GIT_PAGER",
                "GIT_TERMINAL_PROMPT",
                "HOME",
                "LC_ALL",
                "PAGER",
                "PATH",
                "TERM"
            ]
        );
        assert_eq!(env[&OsString::from("PATH")], "/call");
        assert_eq!(env[&OsString::from("TERM")], "dumb");
        #[cfg(unix)]
        {
            let pty: BTreeMap<_, _> =
                build(vars(&[("TERM", "screen")]), &[], Terminal::Pty, &BTreeMap::new()).into_iter().collect();
            assert_eq!(pty[&OsString::from("TERM")], "xterm-256color");
        }
    }

    #[test]
    fn rejects_bad_names() {
        assert!(check_names(&BTreeMap::from([("A=B".to_string(), String::new())])).is_err());
        assert!(check_names(&BTreeMap::from([("OK".to_string(), "v".to_string())])).is_ok());
    }
}
