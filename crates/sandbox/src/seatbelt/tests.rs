//! Snapshot tests of the generated profiles (`snapshots/*.sb`; `TOOLBELT_UPDATE_SNAPSHOTS=1`
//! rewrites them), and checks that hold for any profile: parameters all defined and all used,
//! parentheses balanced, the protected-name regexes matching what `protected::classify` says.

#![allow(clippy::disallowed_methods)]

use super::*;
use crate::contract::Limits;

fn contract(writable: &[&str], binds: Vec<Bind>, hidden: &[&str], visible: &[&str], network: Network) -> Contract {
    let paths = |list: &[&str]| list.iter().map(PathBuf::from).collect::<Vec<_>>();
    Contract {
        abi: 0,
        writable: paths(writable),
        binds,
        hidden: paths(hidden),
        watch: Vec::new(),
        visible: paths(visible),
        temp: PathBuf::from("/private/var/folders/xy/abc/T/toolbelt-501/session-1"),
        network,
        limits: Limits::default(),
        parent: 1,
        cwd: PathBuf::from("/Users/dev/project"),
        stage: Vec::new(),
        proxy: None,
        join: None,
    }
}

fn workspace() -> Contract {
    let git = Path::new("/Users/dev/project/.git");
    contract(
        &["/Users/dev/project"],
        vec![
            Bind::Pinned(git.to_path_buf()),
            Bind::ReadOnly(git.join("config")),
            Bind::ReadOnly(git.join("hooks")),
            Bind::ReadOnly(git.join("info")),
            Bind::ReadOnly(PathBuf::from("/Users/dev/project/packages/a/.git")),
            Bind::ReadOnly(PathBuf::from("/Users/dev/project/.envrc")),
        ],
        &["/Users/dev/.ssh", "/Users/dev/project/secrets"],
        &["/Users/dev/project"],
        Network::Deny,
    )
}

fn read_only_home_hidden() -> Contract {
    let mut contract = contract(
        &[],
        Vec::new(),
        &["/Users/dev", "/Users/dev/project/.env"],
        &["/Users/dev/project", "/Users/dev/Library/Application Support/toolbelt-mcp/out"],
        Network::Allow,
    );
    contract.proxy = Some(crate::contract::ProxyLink { socket: PathBuf::new(), token: "0123".into(), port: 49152 });
    contract
}

/// The profile as a snapshot: its text, then its parameters.
fn render(profile: &Profile) -> String {
    let mut out = profile.text.clone();
    out.push_str("\n; parameters\n");
    for (name, path) in &profile.params {
        out.push_str(&format!("; -D{name}={}\n", path.display()));
    }
    out
}

fn assert_snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/seatbelt/snapshots").join(format!("{name}.sb"));
    if std::env::var_os("TOOLBELT_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == actual,
        "the profile `{name}` changed; if that is meant, run with TOOLBELT_UPDATE_SNAPSHOTS=1 and review the diff of {}",
        path.display()
    );
}

/// Every parameter the text names is defined, and every defined one is named.
fn assert_params_consistent(profile: &Profile) {
    let named: std::collections::BTreeSet<&str> =
        profile.text.split("(param \"").skip(1).filter_map(|rest| rest.split('"').next()).collect();
    let defined: std::collections::BTreeSet<&str> = profile.params.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(named, defined);
    assert_eq!(defined.len(), profile.params.len(), "no parameter defined twice");
}

/// Parentheses balance outside strings and comments (a broken profile fails at run time only).
fn assert_balanced(text: &str) {
    let mut depth = 0i32;
    for line in text.lines() {
        let mut in_string = false;
        for c in line.chars() {
            match c {
                '"' => in_string = !in_string,
                ';' if !in_string => break,
                '(' if !in_string => depth += 1,
                ')' if !in_string => depth -= 1,
                _ => {}
            }
            assert!(depth >= 0, "a `)` too many: {line}");
        }
    }
    assert_eq!(depth, 0, "unbalanced profile");
}

#[test]
fn a_workspace_with_a_repository_and_a_deny_read_list() {
    let profile = profile(&workspace());
    assert_params_consistent(&profile);
    assert_balanced(&profile.text);
    assert_snapshot("workspace_write", &render(&profile));
    let defined = |path: &str| profile.params.iter().any(|(_, p)| p == Path::new(path));
    for path in ["/Users/dev/project/.git/config", "/Users/dev/project/.envrc", "/Users/dev/project/packages/a/.git"] {
        assert!(defined(path), "{path} is read-only");
    }
    let kept: Vec<&Path> =
        profile.params.iter().filter(|(n, _)| n.starts_with("KEPT_")).map(|(_, p)| p.as_path()).collect();
    for path in [
        "/Users/dev/project",
        "/Users/dev/project/.git",
        "/Users/dev/project/packages",
        "/Users/dev/project/packages/a",
    ] {
        assert!(kept.contains(&Path::new(path)), "{path} cannot be moved: {kept:?}");
    }
    assert!(!kept.contains(&Path::new("/Users/dev")), "outside the writable dirs: denied anyway");
    assert!(profile.text.contains("(allow network-outbound (remote ip \"localhost:*\"))"));
    assert!(!profile.text.contains("(allow network*)"));
}

#[test]
fn read_only_with_the_home_hidden_and_the_network_allowed() {
    let profile = profile(&read_only_home_hidden());
    assert_params_consistent(&profile);
    assert_balanced(&profile.text);
    assert_snapshot("read_only", &render(&profile));
    let writable: Vec<&Path> =
        profile.params.iter().filter(|(n, _)| n.starts_with("WRITABLE_")).map(|(_, p)| p.as_path()).collect();
    assert_eq!(writable, [Path::new("/private/var/folders/xy/abc/T/toolbelt-501/session-1")], "only the temp dir");
    let visible = profile.params.iter().filter(|(n, _)| n.starts_with("VISIBLE_")).count();
    assert_eq!(visible, 2, "the root and the output dir stay readable inside the hidden home");
    let last_env_rule = profile.text.rfind("(subpath (param \"HIDDEN_1\"))").unwrap();
    let last_visible_rule = profile.text.rfind("(param \"VISIBLE_0\")").unwrap();
    assert!(last_env_rule > last_visible_rule, "the hidden file in the root is denied after the root is allowed");
    assert!(profile.text.contains("(allow network-outbound (remote ip \"localhost:49152\"))"), "the proxy's port");
    assert!(!profile.text.contains("(allow network*)") && !profile.text.contains("remote ip \"localhost:*\""));
    assert!(!profile.text.contains("DNSConfiguration") && !profile.text.contains("com.apple.networkd"), "no resolver");
}

#[test]
fn only_host_mode_shares_the_network_and_a_proxied_mode_without_its_link_gets_loopback() {
    let mut host = read_only_home_hidden();
    host.network = Network::Host;
    let host = profile(&host);
    assert!(host.text.contains("(allow network*)"));
    for network in [Network::Allow, Network::Allowlist] {
        let mut unlinked = read_only_home_hidden();
        (unlinked.network, unlinked.proxy) = (network, None);
        let unlinked = profile(&unlinked);
        assert_params_consistent(&unlinked);
        assert!(!unlinked.text.contains("(allow network*)"), "{network:?}");
        assert!(unlinked.text.contains("(allow network-outbound (remote ip \"localhost:*\"))"), "{network:?}");
    }
}

#[test]
fn the_protected_names_match_what_classify_protects() {
    let root = Path::new("/Users/dev/my.proj (v2)+");
    let patterns: Vec<regex::Regex> = protected_names(root)
        .iter()
        .map(|filter| {
            let inner = filter.trim_start_matches("(regex #\"").trim_end_matches("\")");
            regex::Regex::new(inner).unwrap()
        })
        .collect();
    let denied = |path: &str| patterns.iter().any(|p| p.is_match(path));
    let base = root.display().to_string();
    for inside in [
        ".bashrc",
        "sub/dir/.zshrc",
        ".vscode/settings.json",
        "a/.vscode/tasks.json",
        ".idea/workspace.xml",
        ".envrc",
        "mise.toml",
        ".config/fish/config.fish",
        ".gitconfig",
        ".config/git/config",
    ] {
        let path = format!("{base}/{inside}");
        assert!(denied(&path), "{path}");
        assert!(crate::protected::classify(Path::new(&path)).is_some(), "the table agrees: {path}");
    }
    for allowed in ["src/main.rs", ".bashrc.bak", "notes/.vscode", "x.envrc", "a.gitconfig"] {
        let path = format!("{base}/{allowed}");
        assert!(!denied(&path), "{path}");
        assert!(crate::protected::classify(Path::new(&path)).is_none(), "the table agrees: {path}");
    }
    assert!(!denied("/Users/dev/my-proj (v2)+/.bashrc"), "the root's `.` is literal");
}

#[test]
fn a_quote_in_a_root_cannot_end_the_regex_string() {
    assert_eq!(regex_escape("/a\"b/c.d(e)"), "/a.b/c\\.d\\(e\\)");
    assert_eq!(regex_escape("/x\ny"), "/x.y");
}

#[test]
fn the_command_runs_under_sandbox_exec_with_the_session_temp_dir() {
    let contract = workspace();
    let (program, argv) = command(&contract, OsStr::new("/bin/bash"), &["-c".into(), "echo hi".into()]);
    assert_eq!(program, Path::new(SANDBOX_EXEC));
    assert_eq!(argv[0], "-p");
    assert_eq!(argv[1], OsString::from(profile(&contract).text));
    assert!(argv.contains(&OsString::from("-DWRITABLE_0=/Users/dev/project")));
    let dashes = argv.iter().position(|a| a == "--").unwrap();
    assert!(argv[2..dashes].iter().all(|a| a.to_string_lossy().starts_with("-D")));
    assert_eq!(
        argv[dashes + 1..],
        [
            "/usr/bin/env",
            "TMPDIR=/private/var/folders/xy/abc/T/toolbelt-501/session-1/tmp",
            "/bin/bash",
            "-c",
            "echo hi"
        ]
    );
}
