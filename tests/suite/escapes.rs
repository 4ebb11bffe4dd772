//! The policy review's findings, each tried the way it was found (plain tool calls) and shown
//! closed: git internals and editor/shell files written by file operations or commands, the
//! environment and stdin of a command, grants wider than their question, spellings that dodge
//! forbidden rules, writing "read-only" commands, and the audit log. (The seventh, HTTP
//! without a token, is in `http.rs`.)

use serde_json::{Value, json};

use super::common::Workspace;
use super::policy::{Asker, file, run, start};

/// Makes the workspace a git repository.
fn git_init(ws: &Workspace) {
    let status = std::process::Command::new("git").args(["init", "-q"]).current_dir(&ws.root).status().unwrap();
    assert!(status.success());
}

/// Every entry of the protected-path table, as a file to write relative to a root (the
/// table's git dir entries, editor files, git user config, shell startup files of every
/// shell, shell config dirs).
const PROTECTED: &[&str] = &[
    ".git/config",
    ".git/config.worktree",
    ".git/commondir",
    ".git/hooks/pre-commit",
    ".git/info/attributes",
    ".git/modules/m/config",
    ".git/modules/m/hooks/post-checkout",
    ".git/worktrees/w/commondir",
    ".gitconfig",
    ".config/git/config",
    ".vscode/settings.json",
    ".vscode/tasks.json",
    ".vscode/launch.json",
    ".idea/workspace.xml",
    ".envrc",
    ".mise.toml",
    "mise.toml",
    ".mise.local.toml",
    "mise.local.toml",
    ".config/mise/config.toml",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".logout",
    ".xonshrc",
    ".inputrc",
    ".config/fish/config.fish",
    ".config/nushell/config.nu",
    ".config/xonsh/rc.xsh",
    ".config/powershell/profile.ps1",
    ".config/zsh/.zshrc",
];

/// Whether `path` holds what an attack wrote (`PWN`).
fn written(ws: &Workspace, path: &str) -> bool {
    std::fs::read_to_string(ws.root.join(path)).is_ok_and(|text| text.contains("PWN"))
}

#[tokio::test]
async fn every_protected_entry_is_refused_to_file_operations_and_commands() {
    let ws = Workspace::new();
    git_init(&ws);
    // The default policy; a client that cannot be asked (the fallback denies).
    let service = start(&ws, "", ()).await;
    for path in PROTECTED {
        let reply =
            file(&service, "create_file", json!({"path": path, "content": "PWN\n", "create_parents": true})).await;
        assert!(reply.is_error && reply.text.contains("is protected"), "{path}: {}", reply.text);
        assert!(!written(&ws, path), "{path} was written by a file operation");
    }
    for path in PROTECTED {
        let dir = std::path::Path::new(path).parent().unwrap().display().to_string();
        let mkdir = if dir.is_empty() { String::new() } else { format!("mkdir -p '{dir}' 2>/dev/null; ") };
        let reply = run(&service, json!({"command": format!("{mkdir}printf PWN > '{path}'")})).await;
        assert!(!written(&ws, path), "{path} was written by a command: {}", reply.text);
        // Written in the command's staged view, judged when it ended, not applied, and said.
        assert!(reply.text.contains("not applied"), "{path}: {}", reply.text);
        assert!(reply.structured["note"].as_str().unwrap().contains("escalate: true"), "{}", reply.structured);
    }
    // A sandboxed `git status` still works, and git itself still commits.
    let git = run(&service, json!({"command": "git add README.md && git -c user.name=t -c user.email=t@t commit -qm x && git status --short | head -1"})).await;
    assert!(!git.is_error, "{}", git.text);
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn the_commondir_attack_by_file_operations_alone_asks_first() {
    let ws = Workspace::new();
    git_init(&ws);
    let service = start(&ws, "", ()).await;
    // The staging of the attack is ordinary files…
    for dir in ["docs/evil/objects", "docs/evil/refs/heads"] {
        assert!(!file(&service, "create_directory", json!({"path": dir})).await.is_error);
    }
    let config = "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch PWNED; false\"\n";
    assert!(!file(&service, "create_file", json!({"path": "docs/evil/config", "content": config})).await.is_error);
    // …but the pointer that makes git use it is protected, and so is every other way there.
    for (path, content) in [
        (".git/commondir", "../docs/evil\n"),
        (".git/config.worktree", config),
        (".git/worktrees/w/commondir", "../../../docs/evil\n"),
        (".git/modules/m/hooks/post-checkout", "#!/bin/sh\ntouch PWNED\n"),
    ] {
        let reply =
            file(&service, "create_file", json!({"path": path, "content": content, "create_parents": true})).await;
        assert!(reply.is_error && reply.text.contains("protected"), "{path}: {}", reply.text);
        assert!(!ws.root.join(path).exists(), "{path}");
    }
    // The same by a sandboxed command: written in its staged view, never applied.
    let reply = run(&service, json!({"command": "printf ../docs/evil > .git/commondir"})).await;
    assert!(reply.text.contains(".git/commondir") && reply.text.contains("not applied"), "{}", reply.text);
    assert!(!ws.root.join(".git/commondir").exists());
    let status = std::process::Command::new("git").args(["status", "--short"]).current_dir(&ws.root).output().unwrap();
    assert!(status.status.success());
    assert!(!ws.root.join("PWNED").exists(), "the user's own `git status` ran the fsmonitor");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn a_background_command_cannot_plant_a_repository_or_a_late_commondir() {
    let ws = Workspace::new();
    git_init(&ws);
    let service = start(&ws, "", ()).await;
    let plant = "sleep 1; mkdir -p sub/.git/hooks; printf '[core]\\n\\tfsmonitor = touch PWNED\\n' > sub/.git/config; printf '#!/bin/sh\\n' > sub/.git/hooks/post-checkout; printf ../x > .git/commondir; sleep 30";
    let started = run(&service, json!({"command": plant, "background": true})).await;
    assert!(!started.is_error, "{}", started.text);
    tokio::time::sleep(std::time::Duration::from_millis(1600)).await;
    // The next call of any kind checks what running commands wrote.
    let next = file(&service, "list_dir", json!({"path": "."})).await;
    let note = next.structured["note"].as_str().unwrap_or_default().to_string();
    for path in ["sub/.git/config", "sub/.git/hooks/post-checkout", ".git/commondir"] {
        assert!(note.contains(path), "{path} not reported: {note}");
        assert!(!ws.root.join(path).exists(), "{path}");
    }
    assert!(ws.root.join("sub/.git").is_dir(), "the rest of the new repository stays");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn the_environment_and_stdin_of_a_command_are_decided_on() {
    let ws = Workspace::new();
    git_init(&ws);
    let service = start(&ws, "approval = \"on-write\"\nforbidden_commands = [[\"touch\"]]\n", ()).await;
    // `ls` is read-only; the environment and stdin it is given are not.
    let bash_env =
        run(&service, json!({"command": "ls", "env": ["BASH_ENV=/dev/stdin"], "stdin": "touch PWNED"})).await;
    assert!(bash_env.is_error && bash_env.text.contains("BASH_ENV"), "{}", bash_env.text);
    assert!(bash_env.text.contains("escalate"), "{}", bash_env.text);
    let git_config = run(
        &service,
        json!({"command": "git status", "env": ["GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=touch PWNED; false"]}),
    )
    .await;
    assert!(git_config.is_error && git_config.text.contains("GIT_CONFIG"), "{}", git_config.text);
    for dangerous in
        ["LD_PRELOAD=/x.so", "PROMPT_COMMAND=touch PWNED", "NODE_OPTIONS=--require ./x.js", "GIT_EXEC_PATH=/x"]
    {
        let reply = run(&service, json!({"command": "ls", "env": [dangerous]})).await;
        assert!(reply.is_error, "{dangerous}: {}", reply.text);
    }
    // stdin alone makes a command more than read-only: on-write asks (here: nobody to ask).
    let fed = run(&service, json!({"command": "cat", "stdin": "hello"})).await;
    assert!(fed.is_error && fed.text.contains("approval"), "{}", fed.text);
    assert!(!ws.root.join("PWNED").exists());
    let plain = run(&service, json!({"command": "ls", "env": ["LC_ALL=C"]})).await;
    assert!(plain.is_error, "an env entry makes it not read-only under on-write: {}", plain.text);
    service.cancel().await.unwrap();

    // Escalated with a justification, the user is asked (and here says yes).
    let asker = Asker::default();
    let service = start(&ws, "approval = \"on-write\"\n", asker.clone()).await;
    asker.answer(&["allow_once"]);
    let asked = run(
        &service,
        json!({"command": "echo ok", "env": ["BASH_ENV=/dev/null"], "escalate": true, "justification": "the user's build needs it"}),
    )
    .await;
    assert!(!asked.is_error && asker.asked() == 1, "{}", asked.text);
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn grants_cover_what_the_question_said_and_no_more() {
    let ws = Workspace::new();
    git_init(&ws);
    std::fs::write(ws.root.join(".profile"), "# profile\n").unwrap();
    let asker = Asker::default();
    let service = start(&ws, "approval = \"on-write\"\n", asker.clone()).await;
    asker.answer(&["allow_session"]);
    assert!(!file(&service, "create_file", json!({"path": "g.txt", "content": "x"})).await.is_error);
    assert_eq!(asker.asked(), 1);
    assert!(!file(&service, "create_file", json!({"path": "h.txt", "content": "x"})).await.is_error);
    assert_eq!(asker.asked(), 1, "the grant covers ordinary files");
    // Protected paths ask every time (answered no here).
    let attempts: &[(&str, Value)] = &[
        ("create_file", json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"})),
        ("create_file", json!({"path": ".git/config", "content": "[core]\n"})),
        ("create_file", json!({"path": ".bashrc", "content": "x"})),
        ("replace_string", json!({"path": ".profile", "old_string": "# profile", "new_string": "touch PWNED"})),
        ("delete_file", json!({"path": ".git/config"})),
    ];
    for (n, (operation, fields)) in attempts.iter().enumerate() {
        asker.answer(&["deny"]);
        let reply = file(&service, operation, fields.clone()).await;
        assert!(reply.is_error, "{operation} {fields}: {}", reply.text);
        assert_eq!(asker.asked(), 2 + n, "{operation} {fields} was not asked");
    }
    assert!(ws.root.join(".git/config").exists());
    // A move onto a protected path is refused, not asked: the question could not show what
    // would land there.
    let moved =
        file(&service, "rename_file", json!({"path": "g.txt", "destination": ".git/hooks/post-checkout"})).await;
    assert!(moved.is_error && moved.text.contains("create_file"), "{}", moved.text);
    assert_eq!(asker.asked(), 1 + attempts.len(), "the move was asked about");
    // A command grant is the program and its subcommand, and covers only lines made of it.
    asker.answer(&["allow_session"]);
    assert!(!run(&service, json!({"command": "git add g.txt"})).await.is_error);
    let asked = asker.asked();
    assert!(!run(&service, json!({"command": "git add -v h.txt"})).await.is_error);
    assert_eq!(asker.asked(), asked, "`git add` with other arguments is covered");
    asker.answer(&["deny"]);
    assert!(run(&service, json!({"command": "git add g.txt; touch PWNED"})).await.is_error);
    assert_eq!(asker.asked(), asked + 1, "a line with another command asks");
    asker.answer(&["deny"]);
    assert!(run(&service, json!({"command": "git commit -qm x"})).await.is_error);
    assert_eq!(asker.asked(), asked + 2, "another subcommand asks");
    assert!(!ws.root.join("PWNED").exists());
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn forbidden_rules_see_through_every_spelling() {
    let ws = Workspace::new();
    let config = "forbidden_commands = [[\"touch\"], [\"ls\", \"/\"]]\n";
    let service = start(&ws, config, ()).await;
    for line in [
        "touch PWNED",
        "\\touch PWNED",
        "$'\\x74ouch' PWNED",
        "x=touch; $x PWNED",
        "eval touch PWNED",
        "eval 'tou''ch PWNED'",
        "coproc touch PWNED",
        "env -S 'touch PWNED'",
        "{touch,PWNED}",
        "find . -maxdepth 0 -exec touch PWNED \\;",
        "echo PWNED | xargs touch",
        "printf 'touch PWNED' | bash",
        "bash -c 'touch PWNED'",
        "sh -c \"$(printf 'touch PWNED')\"",
        "command touch PWNED",
        "nice -n 1 touch PWNED",
        "t\\ouch PWNED",
        "ls //",
        "ls /.",
        "ls /./",
        "l\\s /",
    ] {
        let reply = run(&service, json!({"command": line})).await;
        assert!(reply.is_error, "`{line}` ran: {}", reply.text);
        assert!(reply.text.contains("forbidden") || reply.text.contains("approval"), "`{line}`: {}", reply.text);
        assert!(!ws.root.join("PWNED").exists(), "`{line}` created the marker");
    }
    assert!(!run(&service, json!({"command": "ls src"})).await.is_error, "other commands run");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn read_only_commands_that_write_are_not_read_only() {
    let ws = Workspace::new();
    git_init(&ws);
    let other = ws.outside.join("repo");
    std::fs::create_dir_all(&other).unwrap();
    // Under `on-write`, read-only commands run at once and others ask (nobody here: refused).
    let service = start(&ws, "approval = \"on-write\"\n", ()).await;
    assert!(!run(&service, json!({"command": "uniq README.md"})).await.is_error);
    assert!(!run(&service, json!({"command": "git status"})).await.is_error);
    for line in [
        "uniq README.md OUT".to_string(),
        "file -C -m OUT".to_string(),
        "sort -o OUT README.md".to_string(),
        format!("git -C {} status", other.display()),
        format!("git --git-dir={}/.git status", other.display()),
        "git --work-tree=/ status".to_string(),
        "git -c core.fsmonitor=true status".to_string(),
    ] {
        let reply = run(&service, json!({ "command": line })).await;
        assert!(reply.is_error && reply.text.contains("approval"), "`{line}`: {}", reply.text);
        assert!(!ws.root.join("OUT").exists() && !ws.root.join("OUT.mgc").exists(), "`{line}`");
    }
    service.cancel().await.unwrap();
}

/// The audit log of a workspace's servers.
fn audit_records(ws: &Workspace) -> Vec<Value> {
    let text = std::fs::read_to_string(ws.state_home.join("toolbelt-mcp/audit.jsonl")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[tokio::test]
async fn the_audit_log_is_out_of_reach_and_masks_secrets() {
    let ws = Workspace::new();
    let service = start(&ws, "", ()).await;
    let line = "true --password=hunter2 -H 'Authorization: Bearer abcdef123456' https://me:pa55word@example.com; GITHUB_TOKEN=ghp_0123 true";
    assert!(!run(&service, json!({"command": line})).await.is_error);
    let missing = file(&service, "read_file", json!({"path": "no/such/file.txt"})).await;
    assert!(missing.is_error);
    let unknown_op = super::policy::call(&service, "file_operations", json!({"operation": "steal_keys"})).await;
    assert!(unknown_op.is_error);
    let params = rmcp::model::CallToolRequestParams::new("no_such_tool").with_arguments(serde_json::Map::new());
    assert!(service.call_tool(params).await.is_err());
    // The log lies in the state dir: no file operation may touch it.
    let log = ws.state_home.join("toolbelt-mcp/audit.jsonl");
    let attempt = json!({"path": log.display().to_string(), "escalate": true, "justification": "clean up"});
    assert!(file(&service, "delete_file", attempt).await.is_error);
    service.cancel().await.unwrap();

    let records = audit_records(&ws);
    let text = serde_json::to_string(&records).unwrap();
    for secret in ["hunter2", "abcdef123456", "pa55word", "ghp_0123"] {
        assert!(!text.contains(secret), "`{secret}` logged: {text}");
    }
    assert!(text.contains("--password=***") && text.contains("GITHUB_TOKEN=***"), "{text}");
    let read = records.iter().find(|r| r["operation"] == "read_file").unwrap();
    assert_eq!(
        (&read["decision"], &read["decided_by"], &read["outcome"]),
        (&json!("allow"), &json!("policy"), &json!("error:NotFound")),
        "{read}"
    );
    let bad_op = records.iter().find(|r| r["operation"] == "steal_keys").unwrap();
    assert_eq!((&bad_op["decision"], &bad_op["outcome"]), (&json!("invalid"), &json!("error:BadOperation")));
    let bad_tool = records.iter().find(|r| r["tool"] == "no_such_tool").unwrap();
    assert_eq!(bad_tool["outcome"], "error:UnknownTool");
    assert!(log.exists());
}

#[tokio::test]
async fn an_audit_log_through_a_symlink_or_inside_a_root_is_refused_at_start() {
    let ws = Workspace::new();
    let rc = ws.outside.join("shellrc");
    std::fs::write(&rc, "# rc\n").unwrap();
    let link = ws.outside.join("audit.jsonl");
    std::os::unix::fs::symlink(&rc, &link).unwrap();
    for (log, says) in [(link.clone(), "symbolic link"), (ws.root.join("audit.jsonl"), "inside")] {
        let out = std::process::Command::new(super::common::BIN)
            .args(["serve", "--root", ws.root.to_str().unwrap(), "--audit-log", log.to_str().unwrap()])
            .env("XDG_CONFIG_HOME", &ws.config_home)
            .env("XDG_STATE_HOME", &ws.state_home)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{}: {stderr}", log.display());
    }
    assert_eq!(std::fs::read_to_string(&rc).unwrap(), "# rc\n");

    // A state dir inside the root is the server's own: the log there is read-only to commands.
    let state = ws.root.join(".state");
    let service = {
        let file = ws.config_home.join("state.toml");
        std::fs::write(&file, format!("state_dir = {:?}\n", state.display().to_string())).unwrap();
        let transport = rmcp::transport::TokioChildProcess::new(rmcp::transport::ConfigureCommandExt::configure(
            tokio::process::Command::new(super::common::BIN),
            |cmd| {
                cmd.args(["serve", "--root", ws.root.to_str().unwrap(), "--config", file.to_str().unwrap()])
                    .env("XDG_CONFIG_HOME", &ws.config_home);
            },
        ))
        .unwrap();
        rmcp::ServiceExt::serve((), transport).await.unwrap()
    };
    assert!(!run(&service, json!({"command": "echo first"})).await.is_error);
    // (Hidden, too: the state dir holds the generated HTTP token.)
    let emptied =
        run(&service, json!({"command": ": > .state/audit.jsonl; rm -f .state/audit.jsonl; ls -a .state"})).await;
    assert!(
        emptied.text.contains("Read-only file system") && !emptied.text.contains("audit.jsonl\n"),
        "{}",
        emptied.text
    );
    assert!(std::fs::metadata(state.join("audit.jsonl")).unwrap().len() > 0);
    service.cancel().await.unwrap();
}
