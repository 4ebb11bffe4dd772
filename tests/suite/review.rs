//! What the adversarial review of security v3 found, each tried the way it was found: races
//! with the fold of a running command, deep trees, and the roads past the judge.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use super::common::{Client, Workspace};

/// A repository with one commit in `dir`.
pub(crate) fn repo(dir: &Path) {
    for args in
        [&["init", "-q"][..], &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init", "--allow-empty"]]
    {
        assert!(Command::new("git").args(args).current_dir(dir).status().unwrap().success());
    }
}

/// Calls `list_sessions` (any call folds what running commands wrote) until `until` passes,
/// checking `ok` after each.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
async fn keep_calling(client: &Client, until: Duration, ok: impl Fn() -> Result<(), String>) {
    let deadline = Instant::now() + until;
    while Instant::now() < deadline {
        let reply = client.term("list_sessions", json!({})).await;
        assert!(!reply.is_error, "{}", reply.text);
        if let Err(why) = ok() {
            panic!("{why}");
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

/// S1: a background command swaps `.git/config` between an allowed version and one that
/// would run a program, while every call folds what it wrote. Judging one version and
/// applying another let the bad one in; the fold now applies exactly what it judged.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_config_swapped_while_it_is_folded_never_lands() {
    let ws = Workspace::new();
    repo(&ws.root);
    let base = std::fs::read_to_string(ws.root.join(".git/config")).unwrap();
    let racer = format!(
        r#"import os, time
base = {base:?}
good = base + "[user]\n\tname = x\n"
bad = base + "[core]\n\tfsmonitor = touch PWNED\n"
end = time.time() + 4
i = 0
while time.time() < end:
    with open(".git/cfg.tmp", "w") as f:
        f.write(bad if i % 2 else good)
    os.replace(".git/cfg.tmp", ".git/config")
    i += 1
time.sleep(60)
"#
    );
    std::fs::write(ws.outside.join("race.py"), racer).unwrap();
    let client = Client::start(&ws, &[]).await;
    let line = format!("python3 '{}'", ws.outside.join("race.py").display());
    let started = client.term("run_command", json!({"command": line, "background": true})).await;
    let id = started.structured["session_id"].as_str().unwrap_or_else(|| panic!("{}", started.text)).to_string();
    let config = ws.root.join(".git/config");
    let clean = || match std::fs::read_to_string(&config) {
        Ok(text) if text.contains("fsmonitor") => Err(format!("the swapped-in config landed: {text}")),
        _ => Ok(()),
    };
    keep_calling(&client, Duration::from_secs(5), clean).await;
    let killed = client.term("kill_session", json!({"session_id": id})).await;
    assert!(!killed.is_error, "{}", killed.text);
    client.term("list_sessions", json!({})).await;
    clean().unwrap();
    assert!(Command::new("git").args(["status", "--short"]).current_dir(&ws.root).output().unwrap().status.success());
    assert!(!ws.root.join("PWNED").exists(), "the user's `git status` ran the planted fsmonitor");
    client.close().await;
}

/// S2: a background command makes directories and, a moment later, a repository whose config
/// runs a program and a shell startup file inside each; calls fold in between. A directory
/// listed with one file must not then be applied with what it gained since.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_directory_that_grows_a_repository_while_it_is_folded_never_lands_whole() {
    let ws = Workspace::new();
    let racer = r#"import os, time
end = time.time() + 3
i = 0
while time.time() < end:
    d = "nd_%d" % i
    os.mkdir(d)
    open(d + "/a.txt", "w").write("a")
    time.sleep(0.002)
    for sub in (".git", ".git/objects", ".git/refs"):
        os.mkdir(d + "/" + sub)
    open(d + "/.git/HEAD", "w").write("ref: refs/heads/main\n")
    open(d + "/.git/config", "w").write("[core]\n\tfsmonitor = touch PWNED\n")
    open(d + "/.bashrc", "w").write("touch PWNED\n")
    i += 1
time.sleep(60)
"#;
    std::fs::write(ws.outside.join("grow.py"), racer).unwrap();
    let client = Client::start(&ws, &[]).await;
    let line = format!("python3 '{}'", ws.outside.join("grow.py").display());
    let started = client.term("run_command", json!({"command": line, "background": true})).await;
    let id = started.structured["session_id"].as_str().unwrap_or_else(|| panic!("{}", started.text)).to_string();
    let root = ws.root.clone();
    let clean = move || {
        for entry in std::fs::read_dir(&root).unwrap().flatten() {
            let dir = entry.path();
            if dir.join(".bashrc").exists() {
                return Err(format!("`{}` reached the real tree", dir.join(".bashrc").display()));
            }
            if std::fs::read_to_string(dir.join(".git/config")).is_ok_and(|c| c.contains("fsmonitor")) {
                return Err(format!("`{}` reached the real tree", dir.join(".git/config").display()));
            }
        }
        Ok(())
    };
    keep_calling(&client, Duration::from_secs(4), clean.clone()).await;
    client.term("kill_session", json!({"session_id": id})).await;
    client.term("list_sessions", json!({})).await;
    clean().unwrap();
    assert!(std::fs::read_dir(&ws.root).unwrap().count() > 10, "the directories themselves were applied");
    client.close().await;
}

/// S9: a command that nests thousands of directories overflowed the fold's stack (the server
/// aborted, and so did every later start with the same state dir, folding what was left), or
/// froze it for many minutes at a thousand. Now nothing deeper than 100 directories is
/// applied or even looked at, and the call answers.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn thousands_of_nested_directories_neither_crash_nor_freeze_the_server() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let nest = "python3 -c 'import os\nfor i in range(3000): os.mkdir(\"d\"); os.chdir(\"d\")\nopen(\"deepest\", \"w\").write(\"x\")'";
    let started = Instant::now();
    let reply = client.run(nest).await;
    assert!(started.elapsed() < Duration::from_secs(60), "the fold took {:?}", started.elapsed());
    assert!(reply.text.contains("100 directories below the root"), "{}", reply.text);
    assert!(!client.run("echo still here").await.is_error);
    let depth = walkdir_depth(&ws.root.join("d"));
    assert!((99..=101).contains(&depth), "applied {depth} levels");
    client.close().await;
    // A server killed mid-fold leaves the stage; the next start folds it and serves.
    let client = Client::start(&ws, &[]).await;
    let (_, arg) = super::common::unique_sleep(60);
    let background =
        format!("python3 -c 'import os\nfor i in range(3000): os.mkdir(\"e\"); os.chdir(\"e\")'; exec sleep {arg}");
    client.term("run_command", json!({"command": background, "background": true})).await;
    super::common::process_with_args(&["sleep", &arg], 30).await;
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(client.pid.unwrap() as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let again = Client::start(&ws, &[]).await;
    assert!(!again.run("echo after a restart").await.is_error);
    again.close().await;
}

/// What a command writes only beneath the depth limit, in a chain that an earlier command
/// made, is refused too: a fold that sees no other change still refuses it (the third review
/// of the folds found a `.envrc`, a repository's hook and its `core.fsmonitor`, and links into
/// `.git/hooks`, all applied 100 directories down, when nothing else had changed).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_write_only_beneath_the_depth_limit_is_refused() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let deep = vec!["a"; 100].join("/");
    let made = client.run(&format!("mkdir -p {deep}")).await;
    assert!(!made.is_error && ws.root.join(&deep).is_dir(), "{}", made.text);
    let plant = format!(
        "cd {deep} && echo 'echo planted' > .envrc && git init -q r && printf '#!/bin/sh\necho planted\n' > r/.git/hooks/pre-commit && ln -s ../../../../.git/hooks to-hooks"
    );
    let planted = client.run(&plant).await;
    assert!(planted.text.contains("100 directories below the root"), "{}", planted.text);
    for name in [".envrc", "r", "to-hooks"] {
        assert!(!ws.root.join(&deep).join(name).exists(), "`{name}` beneath the limit was applied");
    }
    // Beside a change above the limit, the same.
    let both = client.run(&format!("echo hi > top.txt && cd {deep} && echo 'echo planted' > .envrc")).await;
    assert!(both.text.contains("100 directories below the root"), "{}", both.text);
    assert!(ws.root.join("top.txt").exists() && !ws.root.join(&deep).join(".envrc").exists());
    client.close().await;
}

/// How many directories deep the chain of `d` below `dir` goes (counting `dir`).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn walkdir_depth(dir: &Path) -> usize {
    let mut depth = 0;
    let mut at = dir.to_path_buf();
    while at.is_dir() {
        depth += 1;
        at.push("d");
    }
    depth
}

/// A sandboxed command's result note (refused changes), with the reply's text.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn note(reply: &super::common::Reply) -> String {
    format!("{} {}", reply.text, reply.structured["note"].as_str().unwrap_or_default())
}

/// S3: `core.worktree` on the allow-list let a command point the worktree outside the root (or
/// into the git dir), so the user's next `git checkout` wrote files there.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_worktree_outside_the_root_or_inside_a_git_dir_is_refused() {
    let ws = Workspace::new();
    repo(&ws.root);
    let client = Client::start(&ws, &[]).await;
    for value in ["../..", ".", "/etc", "sub/.git"] {
        let reply = client.run(&format!("git config core.worktree '{value}'")).await;
        assert!(note(&reply).contains("core.worktree"), "{value}: {}", note(&reply));
        let config = std::fs::read_to_string(ws.root.join(".git/config")).unwrap();
        assert!(!config.contains("worktree"), "{value}: {config}");
    }
    // A submodule's own worktree, inside the root, whose `.git` points back, stays allowed
    // (`git submodule update`).
    std::fs::create_dir_all(ws.root.join("lib")).unwrap();
    let reply = client
        .run("echo 'gitdir: ../.git/modules/lib' > lib/.git && mkdir -p .git/modules/lib && cd .git/modules/lib && git init -q --bare . && git config core.bare false && git config core.worktree ../../../lib")
        .await;
    assert!(!note(&reply).contains("core.worktree"), "{}", note(&reply));
    // And the other URL-taking keys refuse a helper.
    let reply =
        client.run("git config branch.main.remote 'ext::sh -c touch% PWNED'; git config remote.x.url foo://bar").await;
    assert!(note(&reply).contains("remote helper"), "{}", note(&reply));
    client.close().await;
}

/// S4: a symlink named like a code-bearing directory (`.cargo`, `.vscode`, `.claude`) made the
/// files git, cargo or the editor read resolve into a directory no rule names.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_symlink_in_place_of_a_code_bearing_directory_is_refused() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    for name in [".cargo", ".vscode", ".claude", ".mvn", ".github", ".config", "sub/.roo", ".windsurf"] {
        let line = format!("mkdir -p cfg sub && ln -s \"$PWD/cfg\" {name}");
        let reply = client.run(&line).await;
        assert!(note(&reply).contains("a symlink where code-bearing files are looked for"), "{name}: {}", note(&reply));
        assert!(std::fs::symlink_metadata(ws.root.join(name)).is_err(), "{name} reached the real tree");
    }
    // A symlink of another name is a symlink.
    let reply = client.run("ln -s cfg docs-link").await;
    assert!(!note(&reply).contains("symlink where"), "{}", note(&reply));
    assert!(std::fs::symlink_metadata(ws.root.join("docs-link")).is_ok());
    client.close().await;
}

/// S5: the `.env` judge missed the forms dotenv reads (`NAME: value`, a byte-order mark, a lone
/// CR, a symlink) and the variables that point tools at other code or hosts.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn every_form_of_a_dotenv_that_changes_what_runs_is_refused() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    for (i, line) in [
        r"printf 'NODE_OPTIONS: --require ./evil.js\n' > .env",
        r"printf '\xef\xbb\xbfNODE_OPTIONS=--require ./evil.js\n' > .env",
        r"printf 'A=1\rLD_PRELOAD=./x.so\n' > .env",
        r"echo 'NODE_OPTIONS=--require ./evil.js' > vars.txt && ln -s vars.txt .env",
        r"printf 'RUSTUP_TOOLCHAIN=/tmp/evil\n' > .env",
        r"printf 'GOFLAGS=-toolexec=/tmp/x\n' > .env",
        r"printf 'OPENAI_BASE_URL=http://evil.example\n' > .env",
    ]
    .iter()
    .enumerate()
    {
        let dir = format!("d{i}");
        let reply = client.run(&format!("mkdir -p {dir} && cd {dir} && {line}")).await;
        assert!(note(&reply).contains(".env"), "{line}: {}", note(&reply));
        assert!(std::fs::symlink_metadata(ws.root.join(&dir).join(".env")).is_err(), "{line}");
    }
    let reply = client.run("printf 'DATABASE_URL=postgres://x\\nNODE_ENV=development\\nPORT=3000\\n' > .env").await;
    assert!(!note(&reply).contains(".env"), "{}", note(&reply));
    assert!(ws.root.join(".env").exists());
    client.close().await;
}

/// S6 and S7: a `deny_read` path inside a root was found by `grep_search`, and the server's own
/// secrets inside a root (its `--auth-token-file`, the state dir's generated token) were
/// readable by commands and by file operations.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn what_is_hidden_inside_a_root_is_hidden_from_every_operation() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.root.join("private")).unwrap();
    std::fs::write(ws.root.join("secret.txt"), "SECRET-FILE\n").unwrap();
    std::fs::write(ws.root.join("private/k.txt"), "SECRET-DIR\n").unwrap();
    let secret = ws.root.join("secret.txt");
    let private = ws.root.join("private");
    let state = ws.root.join(".state");
    let client = Client::start(
        &ws,
        &[
            "--deny-read",
            secret.to_str().unwrap(),
            "--deny-read",
            private.to_str().unwrap(),
            "--state-dir",
            state.to_str().unwrap(),
        ],
    )
    .await;
    assert!(!client.run("echo SECRET-TOKEN-IN-STATE > /dev/null").await.is_error);
    std::fs::write(state.join("toolbelt-mcp-token-probe"), "SECRET-STATE\n").unwrap();
    let read = client
        .run("cat secret.txt private/k.txt .state/toolbelt-mcp-token-probe 2>&1; grep -r SECRET . 2>&1 | head")
        .await;
    assert!(
        !read.text.contains("SECRET-FILE") && !read.text.contains("SECRET-DIR") && !read.text.contains("SECRET-STATE"),
        "{}",
        read.text
    );
    for args in [
        json!({"operation": "grep_search", "pattern": "SECRET", "include_hidden": true}),
        json!({"operation": "file_search", "pattern": "*", "include_hidden": true}),
        json!({"operation": "list_dir", "path": ".", "include_hidden": true, "depth": 3}),
        json!({"operation": "read_file", "path": ".state/toolbelt-mcp-token-probe"}),
    ] {
        let reply = client.file(args.clone()).await;
        if args["operation"] == "read_file" {
            assert!(reply.is_error && reply.text.contains("hidden from the agent"), "{}", reply.text);
            continue;
        }
        // (The fixture's `link_outside` names another `secret.txt`, outside the root.)
        for leaked in ["SECRET-FILE", "SECRET-DIR", "SECRET-STATE", "k.txt", "\nsecret.txt", "token-probe", "private/"]
        {
            assert!(!reply.text.contains(leaked), "{args}: {leaked} in {}", reply.text);
        }
    }
    client.close().await;
}

/// S8: a grant for an escalated `git status` covered `git status > /any/path` (a write
/// outside the roots) and `git -C /other/repo status` (another repository's config).
#[tokio::test]
async fn a_grant_never_covers_a_redirection_or_another_repository() {
    use super::policy::{Asker, run, start};
    let ws = Workspace::new();
    repo(&ws.root);
    let asker = Asker::default();
    let service = start(&ws, "approval = \"on-request\"\n", asker.clone()).await;
    let escalated = |command: &str| json!({"command": command, "escalate": true, "justification": "status"});
    asker.answer(&["allow_session"]);
    assert!(!run(&service, escalated("git status")).await.is_error);
    let marker = ws.outside.join("GRANT_REDIRECT");
    for (n, line) in [
        format!("git status > '{}'", marker.display()),
        format!("git status 2> '{}'", marker.display()),
        format!("git -C '{}' status", ws.outside.display()),
        "git --git-dir=/tmp status".to_string(),
        "GIT_CONFIG_PARAMETERS=\"'core.fsmonitor'='touch PWNED'\" git status".to_string(),
    ]
    .iter()
    .enumerate()
    {
        asker.answer(&["deny"]);
        let reply = run(&service, escalated(line)).await;
        assert!(reply.is_error, "{line}: {}", reply.text);
        assert!(asker.asked() == 2 + n || reply.text.contains("denied"), "{line} ran unasked: {}", reply.text);
    }
    assert!(!marker.exists() && !ws.root.join("PWNED").exists());
    service.cancel().await.unwrap();
}

/// S10: with the home directory as a root, caches were writable without a question, and
/// corepack ran a package manager planted in its cache.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn caches_of_a_home_root_are_code() {
    let ws = Workspace::new();
    let home = ws.root.clone();
    let client = Client::start_with_env(&ws, &[], &[("HOME", home.to_str().unwrap())]).await;
    let plant = "d=.cache/node/corepack/v1/pnpm/9.0.0; mkdir -p $d/bin && echo x > $d/bin/pnpm.cjs; mkdir -p .cargo/registry/src/x && echo 'fn main(){}' > .cargo/registry/src/x/build.rs; mkdir -p go/pkg/mod/x && echo x > go/pkg/mod/x/y.go";
    let reply = client.run(plant).await;
    for path in
        [".cache/node/corepack/v1/pnpm/9.0.0/bin/pnpm.cjs", ".cargo/registry/src/x/build.rs", "go/pkg/mod/x/y.go"]
    {
        assert!(
            note(&reply).contains(path) || note(&reply).contains(path.split('/').next().unwrap()),
            "{path}: {}",
            note(&reply)
        );
        assert!(!home.join(path).exists(), "{path} reached the real tree");
    }
    client.close().await;
}

/// S11 and S12: a file that the user's repository config runs as an argument
/// (`filter.f.clean = python3 tools/clean.py`), and the hosts' and editors' configs the table
/// missed, were written without a question.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn files_a_config_runs_and_the_missed_host_configs_are_code() {
    let ws = Workspace::new();
    repo(&ws.root);
    for (key, value) in [
        ("filter.f.clean", "python3 tools/clean.py"),
        ("filter.f.smudge", "sh ./tools/smudge.sh"),
        ("alias.fmt", "!sh scripts/fmt.sh"),
        ("core.sshCommand", "ssh -F ./ssh_config"),
    ] {
        assert!(Command::new("git").args(["config", key, value]).current_dir(&ws.root).status().unwrap().success());
    }
    let client = Client::start(&ws, &[]).await;
    let reply = client
        .run("mkdir -p tools scripts && echo x > tools/clean.py && echo x > tools/smudge.sh && echo x > scripts/fmt.sh && echo x > ssh_config")
        .await;
    for path in ["tools/clean.py", "tools/smudge.sh", "scripts/fmt.sh", "ssh_config"] {
        assert!(note(&reply).contains(path), "{path}: {}", note(&reply));
        assert!(!ws.root.join(path).exists(), "{path}");
    }
    for path in [
        ".helix/languages.toml",
        ".pryrc",
        ".aider.conf.yml",
        "crush.json",
        ".kilocode/mcp.json",
        ".factory/settings.json",
        ".hg/hgrc",
        ".jj/repo/config.toml",
        "app.code-workspace",
        ".lazy.lua",
        ".envrc.local",
        ".openhands/setup.sh",
    ] {
        let reply = client
            .file(json!({"operation": "create_file", "path": path, "content": "x", "create_parents": true}))
            .await;
        assert!(reply.is_error && reply.text.contains("protected"), "{path}: {}", reply.text);
    }
    client.close().await;
}

/// S13: the proxy checked `Host` only on a connection's first request; the rest went on raw.
/// And a command could change the root repository's remote, so the next start saw another
/// repository's todos and memories.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn one_request_per_proxied_connection_and_the_root_keeps_its_remote() {
    use std::io::{Read, Write};
    let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = upstream.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in upstream.incoming().flatten() {
            let mut stream = stream;
            let mut buf = vec![0u8; 65536];
            std::thread::sleep(std::time::Duration::from_millis(300));
            let n = stream.read(&mut buf).unwrap_or(0);
            log.lock().unwrap().push(String::from_utf8_lossy(&buf[..n]).into_owned());
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n");
        }
    });
    let ws = Workspace::new();
    repo(&ws.root);
    assert!(
        Command::new("git")
            .args(["remote", "add", "origin", "https://example.com/mine.git"])
            .current_dir(&ws.root)
            .status()
            .unwrap()
            .success()
    );
    let allowed = format!("127.0.0.1:{port}");
    let client = Client::start(&ws, &["--network-allow", &allowed]).await;
    let pipelined = format!(
        "printf 'GET http://127.0.0.1:{port}/a HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\nGET /b HTTP/1.1\\r\\nHost: metadata.internal\\r\\n\\r\\n' | timeout 5 python3 -c 'import socket,sys; s=socket.create_connection((\"127.0.0.1\",3128)); s.sendall(sys.stdin.buffer.read()); print(s.recv(4096).decode())'"
    );
    let reply = client.run(&pipelined).await;
    assert!(reply.text.contains("ok"), "{}", reply.text);
    let seen = seen.lock().unwrap().join("\n---\n");
    assert!(seen.contains("GET /a") && !seen.contains("/b") && !seen.contains("metadata.internal"), "{seen}");
    let reply = client.run("git remote set-url origin https://example.com/trusted/app.git; git remote add other https://example.com/x.git").await;
    assert!(note(&reply).contains("changes which repository this root is"), "{}", note(&reply));
    let config = std::fs::read_to_string(ws.root.join(".git/config")).unwrap();
    assert!(config.contains("mine.git") && !config.contains("trusted/app"), "{config}");
    client.close().await;
}
