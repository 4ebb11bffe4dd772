//! What the second adversarial review of security v3 found, each tried the way it was found:
//! grants that covered more than the question showed, a script changed between its check and
//! its run, and permission bits that let another local user into `.git`.

#[cfg(target_os = "linux")]
use std::process::Command;

use serde_json::json;

use super::common::Workspace;
use super::policy::{Asker, run, start};
use super::review::repo;

/// F3, F11, F12, F17, and the third and fourth reviews' G1, H5–H7: a session grant for an
/// unsandboxed line covered lines that ran code or wrote files (`${x@P}`, arithmetic on a
/// variable, `1<>file`, `GIT_TRACE`, `env`, other options), and then the same line that read an
/// agent-written Makefile, module or symlink. Nothing outside the sandbox is granted for the
/// session: the same line, and every other, is asked every time.
#[tokio::test]
async fn an_unsandboxed_run_is_asked_every_time() {
    let ws = Workspace::new();
    repo(&ws.root);
    let asker = Asker::default();
    let service = start(&ws, "approval = \"on-request\"\n", asker.clone()).await;
    let escalated = |command: &str| json!({"command": command, "escalate": true, "justification": "status"});
    asker.answer(&["allow_session"]);
    assert!(!run(&service, escalated("git status")).await.is_error);
    assert!(asker.messages()[0].contains("asks every time"), "{}", asker.messages()[0]);
    asker.answer(&["deny"]);
    assert!(run(&service, escalated("git status")).await.is_error, "the same line again is asked");
    assert_eq!(asker.asked(), 2);
    let marker = |n: usize| ws.outside.join(format!("PWNED_{n}"));
    let lines = [
        format!("x='$(touch {})'; git status -- \"${{x@P}}\"", marker(0).display()),
        format!("x='a[$(touch {})]'; git status -- $((x))", marker(1).display()),
        format!("git status 1<>{}", marker(2).display()),
        format!("git status >/dev/null <>{}", marker(3).display()),
        format!("GIT_TRACE={} git status", marker(4).display()),
        format!("env -C {} git status", ws.outside.display()),
        format!("git status --short > /dev/null; touch {}", marker(6).display()),
        "git status --porcelain".to_string(),
    ];
    for (n, line) in lines.iter().enumerate() {
        asker.answer(&["deny"]);
        let reply = run(&service, escalated(line)).await;
        assert!(reply.is_error, "{line}: {}", reply.text);
        assert_eq!(asker.asked(), 3 + n, "{line} ran unasked: {}", reply.text);
    }
    asker.answer(&["deny"]);
    let given = json!({"command": "git status", "env": [format!("GIT_TRACE={}", marker(9).display())], "escalate": true, "justification": "x"});
    assert!(run(&service, given).await.is_error);
    assert_eq!(asker.asked(), 3 + lines.len(), "a variable given in `env` is asked");
    for n in 0..10 {
        assert!(!marker(n).exists(), "marker {n} was written");
    }
    service.cancel().await.unwrap();
}

/// F4: a grant for an escalated `bash deploy.sh` was checked against the script's content,
/// then the script was replaced before bash read it. A script the agent can write (in a root)
/// is never what a grant covers: each run asks.
#[tokio::test]
async fn a_script_the_agent_can_write_is_asked_every_time() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("deploy.sh"), "echo deploying\n").unwrap();
    let asker = Asker::default();
    let service = start(&ws, "approval = \"on-request\"\n", asker.clone()).await;
    let escalated = json!({"command": "bash deploy.sh", "escalate": true, "justification": "deploy"});
    asker.answer(&["allow_session"]);
    let first = run(&service, escalated.clone()).await;
    assert!(!first.is_error && first.text.contains("deploying"), "{}", first.text);
    asker.answer(&["deny"]);
    assert!(run(&service, escalated).await.is_error);
    assert_eq!(asker.asked(), 2, "the script in the root is asked about again");
    service.cancel().await.unwrap();
}

/// F13: a command's `chmod 777 .git .git/hooks; chmod 666 .git/config` reached the real tree,
/// and another local user then planted a hook. What a command leaves is never writable by
/// group or others (unless it was before).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn no_fold_makes_a_file_writable_by_other_users() {
    let ws = Workspace::new();
    repo(&ws.root);
    let client = super::common::Client::start(&ws, &[]).await;
    let reply = client
        .term(
            "run_command",
            json!({"command": "chmod 777 .git .git/hooks && chmod 666 .git/config && mkdir pub && chmod 1777 pub && touch pub/f && chmod 666 pub/f"}),
        )
        .await;
    assert!(!reply.is_error, "{}", reply.text);
    for path in [".git", ".git/hooks", ".git/config", "pub", "pub/f"] {
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(ws.root.join(path)).unwrap().permissions());
        assert_eq!(mode & 0o022, 0, "`{path}` is writable by group or others: {mode:o}");
    }
    client.close().await;
}

/// F2: a command took the sandbox's init's descriptors (`pidfd_getfd` on PID 1: the secret
/// watcher, the status channel) and read its arguments. Init is not dumpable and holds no
/// watch: its descriptors, environment and memory are closed to the command.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_sandbox_init_is_private_to_its_command() {
    let ws = Workspace::new();
    let client = super::common::Client::start(&ws, &[]).await;
    // (`/proc/1/cmdline` stays readable, as every process's is.)
    let probe = "cat /proc/1/environ >/dev/null 2>&1 && echo OPEN environ; \
                 for f in /proc/1/fd/*; do readlink $f >/dev/null 2>&1 && echo OPEN $f; done; \
                 cat /proc/1/mem >/dev/null 2>&1 && echo OPEN mem; echo done";
    let reply = client.term("run_command", json!({"command": probe})).await;
    assert!(!reply.is_error, "{}", reply.text);
    assert!(reply.text.contains("done"), "{}", reply.text);
    assert!(!reply.text.contains("OPEN"), "init's /proc entries are open to the command: {}", reply.text);
    client.close().await;
}

/// F1: a `.env` setting an exported bash function, an editor's or TLS's startup variable, or
/// a value that substitutes a command passed; and its siblings (`.env.local`, `dev.env`,
/// `.flaskenv`) were not judged at all. F15: deleting the root's `.git`, then `git init` with
/// another remote, changed whose todos and memories the root sees. F16: a symlink above a
/// directory on `PATH` (`.venv` → a directory the agent filled) put its programs there.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn dotenv_siblings_the_root_repository_and_links_above_path_hold() {
    let ws = Workspace::new();
    assert!(Command::new("git").args(["init", "-q"]).current_dir(&ws.root).status().unwrap().success());
    assert!(
        Command::new("git")
            .args(["remote", "add", "origin", "https://example.com/me/mine.git"])
            .current_dir(&ws.root)
            .status()
            .unwrap()
            .success()
    );
    let path = format!("{}/.venv/bin:/usr/local/bin:/usr/bin:/bin", ws.root.display());
    let client = super::common::Client::start_with_env(&ws, &[], &[("PATH", path.as_str())]).await;
    let run = |command: &str| client.term("run_command", json!({"command": command}));
    for (file, line) in [
        (".env", "BASH_FUNC_ls%%=() { touch PWNED; }"),
        (".env", "VIMINIT=:!touch PWNED"),
        (".env", "A=$(touch PWNED)"),
        (".env", "touch PWNED"),
        (".env", "A=1;touch PWNED"),
        (".env", "'NODE_OPTIONS'=--require ./evil.js"),
        (".secrets", "NODE_OPTIONS=--require ./evil.js"),
        (".env.local", "NODE_OPTIONS=--require ./evil.js"),
        ("dev.env", "NODE_OPTIONS=--require ./evil.js"),
        (".flaskenv", "OPENSSL_CONF=./x"),
    ] {
        let reply = run(&format!("printf '%s\\n' '{line}' > {file}")).await;
        let now = std::fs::read_to_string(ws.root.join(file)).unwrap_or_default();
        assert!(!now.contains(line), "{file} with `{line}` reached the tree: {}", reply.text);
    }
    let reply = run("printf 'PORT=3000\\n' > .env.local").await;
    let now = std::fs::read_to_string(ws.root.join(".env.local")).unwrap_or_default();
    assert!(now.contains("PORT=3000"), "an ordinary sibling passes: {}", reply.text);
    // The root's repository is not removed, so its remote stays.
    let reply = run("rm -rf .git").await;
    assert!(ws.root.join(".git/HEAD").exists(), "the root's .git was removed: {}", reply.text);
    let config = std::fs::read_to_string(ws.root.join(".git/config")).unwrap();
    assert!(config.contains("example.com/me/mine.git"), "{config}");
    // A link above the PATH directory.
    let reply = run("mkdir -p v/bin && printf '#!/bin/sh\\ntouch PWNED\\n' > v/bin/python && chmod +x v/bin/python && ln -s v .venv").await;
    assert!(!ws.root.join(".venv").exists(), "a symlink above a PATH directory landed: {}", reply.text);
    assert!(!ws.root.join("PWNED").exists());
    client.close().await;
}

/// G3 (third review): the fold clamped modes but brought a default ACL a command set
/// (`os.setxattr`), so what the user later made in that directory was writable by others. The
/// fold brings no extended attribute but `user.*`.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn no_fold_brings_an_access_control_list() {
    let ws = Workspace::new();
    let client = super::common::Client::start(&ws, &[]).await;
    // A default ACL: owner rwx, group r-x, others rwx (version 2, then tag, perm, id entries).
    let script = "import os, struct\n\
                  os.mkdir('shared')\n\
                  acl = struct.pack('<I', 2) + b''.join(struct.pack('<HHI', t, p, 0xffffffff) for t, p in [(1, 7), (4, 5), (32, 7)])\n\
                  os.setxattr('shared', 'system.posix_acl_default', acl)\n\
                  os.setxattr('shared', 'system.posix_acl_access', acl)\n\
                  print('set', os.listxattr('shared'))\n";
    std::fs::write(ws.root.join("acl.py"), script).unwrap();
    let reply = client.term("run_command", json!({"command": "python3 acl.py"})).await;
    assert!(reply.text.contains("set ["), "the command could not set the ACL: {}", reply.text);
    let shared = ws.root.join("shared");
    assert!(shared.is_dir(), "{}", reply.text);
    let listed = Command::new("python3")
        .args(["-c", "import os, sys; print(os.listxattr(sys.argv[1]))", shared.to_str().unwrap()])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(!listed.contains("posix_acl"), "the ACL reached the real tree: {listed}");
    client.close().await;
}

/// G4 (third review): `rm .git/HEAD`, then `git init` with another remote, renamed the
/// workspace; H1 (fourth): `git remote remove origin` let the next remote name it.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_root_repository_keeps_its_head_and_its_remotes() {
    let ws = Workspace::new();
    repo(&ws.root);
    assert!(
        Command::new("git")
            .args(["remote", "add", "origin", "https://example.com/me/mine.git"])
            .current_dir(&ws.root)
            .status()
            .unwrap()
            .success()
    );
    let client = super::common::Client::start(&ws, &[]).await;
    let reply = client.term("run_command", json!({"command": "rm -f .git/HEAD"})).await;
    assert!(ws.root.join(".git/HEAD").exists(), "the root repository lost its HEAD: {}", reply.text);
    for command in ["git remote remove origin", "rm -f .git/config"] {
        let reply = client.term("run_command", json!({"command": command})).await;
        let config = std::fs::read_to_string(ws.root.join(".git/config")).unwrap_or_default();
        assert!(config.contains("example.com/me/mine.git"), "`{command}` changed the remote: {}", reply.text);
    }
    client.close().await;
}
