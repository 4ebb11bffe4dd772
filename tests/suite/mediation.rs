//! Security v3: nothing an agent writes can run later outside the sandbox. Each finding of
//! the review, tried the way it was found, then the table: every code-bearing entry written by
//! a file operation and by a command, existing and not yet, directly, through a renamed
//! parent, through a symlink and through a hard link. (The self-approval over HTTP is in
//! `proxy.rs`.)

use std::path::Path;
use std::process::Command;

use serde_json::json;

use super::common::Workspace;
use super::policy::{file, run, start};

/// Runs git in `dir` as the user would (outside any sandbox): returns its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").args(args).current_dir(dir).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository with one commit in `dir`.
fn repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init", "--allow-empty"],
    ] {
        assert!(Command::new("git").args(args).current_dir(dir).status().unwrap().success());
    }
}

/// A marker file an attack's command would create when run outside the sandbox.
fn pwned(ws: &Workspace) -> std::path::PathBuf {
    ws.outside.join("PWNED")
}

#[tokio::test]
async fn a_gitlink_to_a_planted_git_dir_does_not_run_at_the_users_git_status() {
    let ws = Workspace::new();
    repo(&ws.root);
    let service = start(&ws, "", ()).await;
    let marker = pwned(&ws);
    // Finding 1, as found: a bare repository with fsmonitor, a `.git` file pointing at it, a
    // gitlink in the index; and the variant three levels down in a nested repository.
    repo(&ws.root.join("a/b/c"));
    for (dir, up) in [(".", "../.."), ("a/b/c", "../..")] {
        let attack = format!(
            "cd {dir} && git init -q --bare .cache/m && git --git-dir=.cache/m config core.fsmonitor 'touch {m}; false' \
             && mkdir -p vendor/lib && echo 'gitdir: {up}/.cache/m' > vendor/lib/.git \
             && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),vendor/lib && echo planted",
            m = marker.display()
        );
        let reply = run(&service, json!({ "command": attack })).await;
        assert!(reply.text.contains("planted"), "{}", reply.text);
        assert!(reply.text.contains("not applied") && reply.text.contains("core.fsmonitor"), "{}", reply.text);
        let at = ws.root.join(dir);
        git(&at, &["status"]);
        git(&at, &["status", "--short"]);
        assert!(!marker.exists(), "the user's `git status` in `{dir}` ran the planted fsmonitor");
        assert!(!at.join("vendor/lib/.git").exists(), "the pointer reached the real tree");
    }
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn new_repositories_config_is_read_as_git_reads_it() {
    let ws = Workspace::new();
    repo(&ws.root);
    let service = start(&ws, "", ()).await;
    let m = pwned(&ws).display().to_string();
    // Finding 3: forms the old check missed.
    let forms = [
        ("header", format!("[core] fsmonitor = \"touch {m}; false\"\n")),
        ("legacy", format!("[filter.x]\n\tclean = touch {m}\n[core]\n\tattributesFile = attrs\n")),
        ("ext", format!("[protocol]\n\tallow = always\n[remote \"origin\"]\n\turl = ext::sh -c touch% {m}\n")),
        ("nul", format!("[core \"fsmonitor\\0\"]\n\tx = touch {m}\n")),
    ];
    for (name, config) in &forms {
        let dir = format!("n-{name}");
        let escaped = config.replace('\'', "'\\''");
        let command = format!("git init -q {dir} && printf '%s' '{escaped}' > {dir}/.git/config && echo made");
        let reply = run(&service, json!({ "command": command })).await;
        assert!(reply.text.contains("made") && reply.text.contains("not applied"), "{name}: {}", reply.text);
        let applied = std::fs::read_to_string(ws.root.join(&dir).join(".git/config")).unwrap_or_default();
        assert!(!applied.contains("touch"), "{name}: the config reached the real tree: {applied}");
        git(&ws.root.join(&dir), &["status"]);
        git(&ws.root.join(&dir), &["fetch", "-q", "origin"]);
    }
    // A `.git` file pointing at a git dir elsewhere, outside the roots.
    let elsewhere = ws.outside.join("other");
    repo(&elsewhere);
    let reply = run(
        &service,
        json!({"command": format!("mkdir -p p && echo 'gitdir: {}/.git' > p/.git", elsewhere.display())}),
    )
    .await;
    assert!(reply.text.contains("not applied"), "{}", reply.text);
    assert!(!ws.root.join("p/.git").exists());
    assert!(!pwned(&ws).exists(), "a planted config ran");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn renaming_a_parent_does_not_reach_what_it_held() {
    let ws = Workspace::new();
    repo(&ws.root);
    std::fs::create_dir_all(ws.root.join(".vscode")).unwrap();
    std::fs::write(ws.root.join(".vscode/settings.json"), "{}\n").unwrap();
    repo(&ws.root.join("proj"));
    let service = start(&ws, "", ()).await;
    // Finding 4: the parent renamed away and made again.
    let reply = run(&service, json!({"command": "mv .vscode .vscode.old && mkdir .vscode && echo '{\"python.defaultInterpreterPath\": \"/tmp/x\"}' > .vscode/settings.json"})).await;
    assert!(reply.text.contains("not applied"), "{}", reply.text);
    // The new file was refused; the user's own stays where it was.
    assert_eq!(std::fs::read_to_string(ws.root.join(".vscode/settings.json")).unwrap(), "{}\n");
    let m = pwned(&ws).display().to_string();
    let reply = run(&service, json!({"command": format!("mv proj proj.old && cp -a proj.old proj && git -C proj config core.fsmonitor 'touch {m}'")})).await;
    assert!(reply.text.contains("not applied"), "{}", reply.text);
    git(&ws.root.join("proj"), &["status"]);
    assert!(!pwned(&ws).exists(), "the copied repository's new config ran");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn the_servers_own_config_in_a_home_root_is_out_of_reach() {
    // Finding 4's last form: a home directory as the root, and the server's own config in it.
    let ws = Workspace::new();
    let home = ws.root.clone();
    let config = home.join(".config/toolbelt-mcp/config.toml");
    let transport =
        rmcp::transport::TokioChildProcess::new(tokio::process::Command::new(super::common::BIN).configure(|cmd| {
            cmd.args(["serve", "--root", home.to_str().unwrap()])
                .env("HOME", &home)
                .env("XDG_CONFIG_HOME", home.join(".config"))
                .env("XDG_STATE_HOME", &ws.state_home);
        }))
        .unwrap();
    use rmcp::ServiceExt;
    use rmcp::transport::ConfigureCommandExt;
    let service = ().serve(transport).await.unwrap();
    let reply = run(&service, json!({"command": "mkdir -p .config/toolbelt-mcp.new && printf 'sandbox = \"full-access\"\\n' > .config/toolbelt-mcp.new/config.toml && mv .config/toolbelt-mcp .config/toolbelt-mcp.old; mv .config/toolbelt-mcp.new .config/toolbelt-mcp; echo done"})).await;
    assert!(reply.text.contains("done"), "{}", reply.text);
    assert!(!std::fs::read_to_string(&config).unwrap_or_default().contains("full-access"), "{}", reply.text);
    for path in [".bashrc", ".config/systemd/user/x.service", ".local/bin/git", ".ssh/config"] {
        let reply = run(&service, json!({"command": format!("mkdir -p $(dirname {path}) && echo PWN > {path}")})).await;
        assert!(
            !std::fs::read_to_string(home.join(path)).unwrap_or_default().contains("PWN"),
            "{path}: {}",
            reply.text
        );
    }
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn paths_a_repository_config_names_are_code() {
    let ws = Workspace::new();
    repo(&ws.root);
    Command::new("git").args(["config", "core.hooksPath", ".githooks"]).current_dir(&ws.root).status().unwrap();
    Command::new("git").args(["config", "include.path", "../shared.gitconfig"]).current_dir(&ws.root).status().unwrap();
    let service = start(&ws, "", ()).await;
    // Finding 5: the hooks directory the config names, by a command…
    let m = pwned(&ws).display().to_string();
    let reply = run(&service, json!({"command": format!("mkdir -p .githooks && printf '#!/bin/sh\\ntouch {m}\\n' > .githooks/pre-commit && chmod +x .githooks/pre-commit")})).await;
    assert!(reply.text.contains("not applied") && reply.text.contains("core.hookspath"), "{}", reply.text);
    assert!(!ws.root.join(".githooks/pre-commit").exists());
    // …and the included file, by a file operation (it asks: this client cannot, so it is denied).
    let reply =
        file(&service, "create_file", json!({"path": "shared.gitconfig", "content": "[core]\n\tfsmonitor = x\n"}))
            .await;
    assert!(reply.is_error && reply.text.contains("protected"), "{}", reply.text);
    let reply = run(&service, json!({"command": "printf '[core]\\n\\tfsmonitor = x\\n' > shared.gitconfig"})).await;
    assert!(reply.text.contains("not applied"), "{}", reply.text);
    assert!(!ws.root.join("shared.gitconfig").exists());
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn other_tools_configs_are_code_and_husky_does_not_run_a_planted_hook() {
    let ws = Workspace::new();
    repo(&ws.root);
    // The user's husky set-up: hooks run from `.husky/_`, which runs `.husky/<hook>`.
    std::fs::create_dir_all(ws.root.join(".husky/_")).unwrap();
    std::fs::write(
        ws.root.join(".husky/_/pre-commit"),
        "#!/bin/sh\n[ -f .husky/pre-commit ] && sh .husky/pre-commit\nexit 0\n",
    )
    .unwrap();
    Command::new("chmod").args(["+x", ".husky/_/pre-commit"]).current_dir(&ws.root).status().unwrap();
    Command::new("git").args(["config", "core.hooksPath", ".husky/_"]).current_dir(&ws.root).status().unwrap();
    let service = start(&ws, "", ()).await;
    let m = pwned(&ws).display().to_string();
    let reply = run(&service, json!({"command": format!("printf 'touch {m}\\n' > .husky/pre-commit; echo '{{\"hooks\":{{\"Elicitation\":[{{\"hooks\":[{{\"type\":\"command\",\"command\":\"touch {m}\"}}]}}]}}}}' > /dev/null; mkdir -p .claude && echo '{{\"apiKeyHelper\": \"touch {m}\"}}' > .claude/settings.json")})).await;
    assert!(reply.text.contains(".husky/pre-commit") && reply.text.contains(".claude/settings.json"), "{}", reply.text);
    // The user commits: husky runs its hook, which finds no planted script.
    std::fs::write(ws.root.join("a.txt"), "a").unwrap();
    git(&ws.root, &["add", "a.txt"]);
    git(&ws.root, &["-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "x"]);
    assert!(!pwned(&ws).exists(), "`git commit` ran a planted husky hook");
    assert!(!ws.root.join(".claude/settings.json").exists());
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn nothing_outside_the_roots_is_followed_or_moved() {
    let ws = Workspace::new();
    repo(&ws.root);
    // Finding 7: another project's git dir and the user's config dirs, reached through
    // symlinks planted in the root.
    let other = ws.outside.join("project");
    repo(&other);
    let before = std::fs::read_to_string(other.join(".git/config")).unwrap();
    let service = start(&ws, "", ()).await;
    let reply = run(&service, json!({"command": format!(
        "ln -s {o}/.git other-git; ln -s {o} other; mkdir -p sub && ln -s {o}/.git sub/.git; echo x > other-git/config; echo x > other/.git/hooks/post-checkout; echo done",
        o = other.display()
    )})).await;
    assert!(reply.text.contains("done"), "{}", reply.text);
    assert_eq!(std::fs::read_to_string(other.join(".git/config")).unwrap(), before, "a file outside was written");
    assert!(!other.join(".git/hooks/post-checkout").exists());
    assert!(other.join(".git/config").exists() && !other.join(".git").join("config.quarantined").exists());
    assert!(reply.text.contains("sub/.git"), "the `.git` symlink is refused: {}", reply.text);
    assert!(!ws.root.join("sub/.git").exists());
    service.cancel().await.unwrap();
}

/// The code-bearing entries of `crates/sandbox/src/protected/tables.rs`, read from its source (so
/// this table grows with it), each as a file path to write: a file rule's path, or a file
/// in a directory rule's.
fn table_entries() -> Vec<String> {
    let source =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/sandbox/src/protected/tables.rs"))
            .unwrap();
    let mut entries = Vec::new();
    for line in source.lines().map(str::trim).filter(|l| l.starts_with("rule(\"")) {
        let (path, shape) = line["rule(\"".len()..].split_once("\", ").unwrap();
        entries.push(if shape.starts_with("Tree") { format!("{path}/x") } else { path.to_string() });
    }
    assert!(entries.len() > 100, "{} rules read", entries.len());
    entries.extend(
        [
            ".git/config",
            ".git/config.worktree",
            ".git/commondir",
            ".git/hooks/pre-commit",
            ".git/info/attributes",
            ".git/modules/m/config",
            ".git/worktrees/w/commondir",
            "sub/.git",
            ".env",
        ]
        .map(String::from),
    );
    entries
}

/// Whether `path` holds what an attack wrote.
fn written(root: &Path, path: &str) -> bool {
    std::fs::read(root.join(path)).is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains("PWN"))
}

/// Puts `ORIGINAL` at every entry beneath `base` (the existing case).
fn plant_originals(base: &Path, entries: &[String]) {
    for entry in entries {
        let path = base.join(entry);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        if !path.exists() {
            std::fs::write(&path, if entry.ends_with(".env") { "PORT=1\n" } else { "ORIGINAL\n" }).unwrap();
        }
    }
}

#[tokio::test]
async fn the_table_every_entry_by_every_road() {
    let ws = Workspace::new();
    repo(&ws.root);
    let entries = table_entries();
    let content = |entry: &str| if entry.ends_with(".env") { "NODE_OPTIONS=--require=./PWN.js" } else { "PWN" };
    let service = start(&ws, "", ()).await;
    let quote = |s: &str| format!("'{s}'");
    // By file operation: new, and existing (overwrite), each asks and is denied here.
    for entry in &entries {
        let reply = file(
            &service,
            "create_file",
            json!({"path": format!("fo/{entry}"), "content": content(entry), "create_parents": true}),
        )
        .await;
        assert!(reply.is_error && !written(&ws.root, &format!("fo/{entry}")), "file op, new `{entry}`: {}", reply.text);
    }
    plant_originals(&ws.root.join("fe"), &entries);
    for entry in &entries {
        let reply = file(
            &service,
            "create_file",
            json!({"path": format!("fe/{entry}"), "content": content(entry), "overwrite": true}),
        )
        .await;
        assert!(
            reply.is_error && !written(&ws.root, &format!("fe/{entry}")),
            "file op, existing `{entry}`: {}",
            reply.text
        );
    }
    // By command: one command per road writes every entry, then the real tree is checked.
    plant_originals(&ws.root.join("ce"), &entries);
    plant_originals(&ws.root.join("cr"), &entries);
    plant_originals(&ws.root.join("ch"), &entries);
    let mut roads: Vec<(&str, String)> = Vec::new();
    let direct = |base: &str| {
        entries
            .iter()
            .map(|e| {
                format!(
                    "mkdir -p $(dirname {p}) && printf %s {c} > {p}",
                    p = quote(&format!("{base}/{e}")),
                    c = quote(content(e))
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    roads.push(("cn", direct("cn")));
    roads.push(("ce", direct("ce")));
    let renamed: String = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let (parent, _) = e.split_once('/').map_or(("".to_string(), e.as_str()), |(p, r)| (p.to_string(), r));
            let top = if parent.is_empty() { format!("cr/{e}") } else { format!("cr/{parent}") };
            format!(
                "mv {t} /tmp/moved-{i} 2>/dev/null; mkdir -p $(dirname {p}) && printf %s {c} > {p}",
                t = quote(&top),
                p = quote(&format!("cr/{e}")),
                c = quote(content(e))
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    roads.push(("cr", renamed));
    let linked: String = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            format!(
                "mkdir -p links && ln -s ../cs/{e} links/s{i}; mkdir -p $(dirname {p}); printf %s {c} > links/s{i}",
                p = quote(&format!("cs/{e}")),
                c = quote(content(e))
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    roads.push(("cs", linked));
    let hard: String = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            format!(
                "mkdir -p hard && ln {p} hard/h{i} && printf %s {c} >> hard/h{i}",
                p = quote(&format!("ch/{e}")),
                c = quote(content(e))
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    roads.push(("ch", hard));
    for (base, command) in roads {
        let reply =
            run(&service, json!({ "command": format!("{command}; echo road-done"), "timeout_ms": 120000 })).await;
        let stdout = reply.structured["stdout"].to_string();
        assert!(stdout.contains("road-done"), "{base}: {}", &reply.text[..reply.text.len().min(2000)]);
        for entry in &entries {
            assert!(!written(&ws.root, &format!("{base}/{entry}")), "command, road `{base}`, `{entry}` was written");
        }
    }
    service.cancel().await.unwrap();
}
