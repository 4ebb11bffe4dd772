//! What the fifth adversarial review of security v3 found, each tried the way it was found:
//! grants beyond the roots that covered a whole home directory, moves and places the file
//! operations did not judge, symlinks and settings in `.git`, values bash evaluates again, a
//! shared state dir, and an escalated terminal typed into unasked.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use serde_json::json;

use super::common::{BIN, Client, Workspace};
use super::policy::{Asker, file, start};
use super::review::repo;

/// F11, F10: one "allow for this session" for an escalated write beside the home directory's
/// files covered every file there (`.bashrc`, the state dir, the audit log), and one for a
/// read covered `~/.ssh`. A write grant beyond the roots covers its path alone; a read grant
/// never a shallow directory; secrets and the server's own state are refused, never asked.
#[tokio::test]
async fn grants_beyond_the_roots_cover_the_path_not_its_neighbours() {
    let ws = Workspace::new();
    // Beyond the roots, only the user's home and the temp dirs are grantable places.
    let area = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let outside = area.path().canonicalize().unwrap();
    let secrets = outside.join("secrets");
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::write(secrets.join("id_rsa"), "KEY").unwrap();
    let asker = Asker::default();
    let config = format!("approval = \"on-request\"\ndeny_read = [\"{}\"]\n", secrets.display());
    let service = start(&ws, &config, asker.clone()).await;
    let escalated = |path: &std::path::Path, content: &str| json!({"path": path.to_str().unwrap(), "content": content, "escalate": true, "justification": "notes"});
    asker.answer(&["allow_session"]);
    let notes = outside.join("notes.txt");
    let made = file(&service, "create_file", escalated(&notes, "hi")).await;
    assert!(!made.is_error, "{}", made.text);
    asker.answer(&["deny"]);
    let beside = outside.join("other.txt");
    assert!(file(&service, "create_file", escalated(&beside, "x")).await.is_error);
    assert_eq!(asker.asked(), 2, "a write beside the granted file is asked");
    assert!(!beside.exists());
    // The same file again is covered.
    let again = json!({"path": notes.to_str().unwrap(), "content": "again", "overwrite": true, "escalate": true, "justification": "notes"});
    assert!(!file(&service, "create_file", again).await.is_error);
    assert_eq!(asker.asked(), 2);
    // A secret and the server's own state: refused, not asked.
    let key = secrets.join("id_rsa");
    let read =
        file(&service, "read_file", json!({"path": key.to_str().unwrap(), "escalate": true, "justification": "x"}))
            .await;
    assert!(read.is_error && read.text.contains("hidden"), "{}", read.text);
    let state = ws.state_home.join("toolbelt-mcp/planted");
    assert!(file(&service, "create_file", escalated(&state, "x")).await.is_error);
    assert_eq!(asker.asked(), 2, "neither the secret nor the state dir was asked about");
    assert!(!state.exists());
    // Beyond the user's own files (the test's scratch tree, when it lies outside the home and
    // the temp dirs, as in a checkout under `/work`), a write is asked every time.
    let home = std::path::PathBuf::from(std::env::var_os("HOME").unwrap());
    if ws.outside.starts_with(&home) || ws.outside.starts_with(std::env::temp_dir()) {
        service.cancel().await.unwrap();
        return;
    }
    asker.answer(&["allow_session"]);
    let system = ws.outside.join("system.conf");
    assert!(!file(&service, "create_file", escalated(&system, "a")).await.is_error);
    asker.answer(&["deny"]);
    let again = json!({"path": system.to_str().unwrap(), "content": "b", "overwrite": true, "escalate": true, "justification": "x"});
    assert!(file(&service, "create_file", again).await.is_error);
    assert_eq!(asker.asked(), 4, "no grant covers a write beyond the user's files");
    service.cancel().await.unwrap();
}

/// F1, F8, F12: renaming a directory to `.cargo` planted `.cargo/config.toml`; a file
/// operation wrote into a directory on `PATH`; deleting `.git/HEAD` made the root's repository
/// another. Each needs the user's approval (this client cannot ask: each is refused).
#[tokio::test]
async fn moves_path_dirs_and_git_internals_need_approval() {
    let ws = Workspace::new();
    repo(&ws.root);
    std::fs::create_dir_all(ws.root.join("c3")).unwrap();
    std::fs::write(ws.root.join("c3/config.toml"), "[build]\nrustc-wrapper = \"./w.sh\"\n").unwrap();
    std::fs::create_dir_all(ws.root.join("tools")).unwrap();
    let path = format!("{}:{}", ws.root.join("tools").display(), std::env::var("PATH").unwrap());
    let client = Client::start_with_env(&ws, &[], &[("PATH", &path)]).await;
    let moved = client.file(json!({"operation": "rename_file", "path": "c3", "destination": ".cargo"})).await;
    assert!(moved.is_error, "{}", moved.text);
    assert!(ws.root.join("c3/config.toml").exists() && !ws.root.join(".cargo").exists());
    let planted = client.file(json!({"operation": "create_file", "path": "tools/git", "content": "#!/bin/sh\n"})).await;
    assert!(planted.is_error && planted.text.contains("protected"), "{}", planted.text);
    assert!(!ws.root.join("tools/git").exists());
    let head = client.file(json!({"operation": "delete_file", "path": ".git/HEAD"})).await;
    assert!(head.is_error, "{}", head.text);
    assert!(ws.root.join(".git/HEAD").exists());
    client.close().await;
}

/// F7, F3, F2: a command's symlink `.git/COMMIT_EDITMSG` (the user's next commit writes through
/// it), `core.sharedRepository = 0777` (other users then write what git makes), and a `.env`
/// whose `RANDOM` bash evaluates as arithmetic (running its subscript's command). Each is
/// refused when the command's writes are folded.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn git_links_shared_repositories_and_evaluated_values_are_refused() {
    let ws = Workspace::new();
    repo(&ws.root);
    let client = Client::start(&ws, &[]).await;
    let marker = ws.outside.join("PWNED");
    let line = format!(
        "ln -sf ../README.md .git/COMMIT_EDITMSG; git config core.sharedRepository 0777; printf 'RANDOM=%sa[%s(touch {})]%s\\n' \"'\" '$' \"'\" > .env",
        marker.display()
    );
    let reply = client.term("run_command", json!({"command": line})).await;
    assert!(reply.text.contains("COMMIT_EDITMSG"), "{}", reply.text);
    let editmsg = std::fs::symlink_metadata(ws.root.join(".git/COMMIT_EDITMSG"));
    assert!(editmsg.is_ok_and(|meta| !meta.file_type().is_symlink()), "the link reached the repository");
    let config = std::fs::read_to_string(ws.root.join(".git/config")).unwrap();
    assert!(!config.to_lowercase().contains("sharedrepository"), "{config}");
    let dotenv = std::fs::read_to_string(ws.root.join(".env")).unwrap_or_default();
    assert!(!dotenv.contains("RANDOM"), "the `.env` reached the root: {dotenv}");
    assert!(reply.text.contains("RANDOM"), "{}", reply.text);
    client.close().await;
}

/// F4: the session's output dir, kept visible to its commands, was bound writable when the
/// state dir lay under `/tmp`: a command forged what `read_output` returns. It is read-only.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_command_cannot_write_the_output_dir() {
    let ws = Workspace::new();
    let state = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let state_dir = state.path().join("state");
    let client = Client::start(&ws, &["--state-dir", state_dir.to_str().unwrap()]).await;
    let probe = "d=$(tr '\\0' '\\n' < /proc/1/cmdline | grep -o '/[^\"]*/output/[0-9-]*' | head -1); \
                 echo \"dir=$d\"; touch \"$d/forged\" 2>/dev/null && echo WROTE; true";
    let reply = client.term("run_command", json!({"command": probe})).await;
    assert!(reply.text.contains("/output/"), "the probe did not find the dir: {}", reply.text);
    assert!(!reply.text.contains("WROTE"), "{}", reply.text);
    client.close().await;
}

/// F6: an escalated `start_session` of a pager became an unsandboxed shell through
/// `send_input "!cmd"`, never asked. Input to an escalated session is its own escalation.
#[tokio::test]
async fn input_to_an_escalated_session_is_asked() {
    let ws = Workspace::new();
    let asker = Asker::default();
    let service = start(&ws, "approval = \"on-request\"\n", asker.clone()).await;
    asker.answer(&["allow_once"]);
    let started = super::policy::call(
        &service,
        "terminal_operations",
        json!({"operation": "start_session", "shell": "sh", "escalate": true, "justification": "a shell"}),
    )
    .await;
    assert!(!started.is_error, "{}", started.text);
    let id = started.structured["session_id"].as_str().unwrap().to_string();
    let marker = ws.outside.join("PWNED_input");
    let typed = format!("touch {}\n", marker.display());
    let plain = json!({"operation": "send_input", "session_id": id, "input": typed});
    let refused = super::policy::call(&service, "terminal_operations", plain).await;
    assert!(refused.is_error && refused.text.contains("outside the sandbox"), "{}", refused.text);
    asker.answer(&["deny"]);
    let escalated =
        json!({"operation": "send_input", "session_id": id, "input": typed, "escalate": true, "justification": "x"});
    assert!(super::policy::call(&service, "terminal_operations", escalated).await.is_error);
    assert_eq!(asker.asked(), 2, "the escalated input was asked");
    assert!(asker.messages()[1].contains("touch"), "{}", asker.messages()[1]);
    assert!(!marker.exists());
    service.cancel().await.unwrap();
}

/// F5: a state dir another user may write (here: anyone), and a token file anyone may read,
/// were used as they were: another user planted the token and drove the server. The server
/// refuses to start on them.
#[test]
fn a_shared_state_dir_or_token_file_is_refused() {
    let ws = Workspace::new();
    let shared = ws.outside.join("shared-state");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let token = ws.outside.join("token");
    std::fs::write(&token, "0123456789abcdef0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let root = ws.root.to_str().unwrap();
    for (args, expected) in [
        (vec!["--state-dir", shared.to_str().unwrap()], "writable by other users"),
        (vec!["--auth-token-file", token.to_str().unwrap()], "readable by every user"),
    ] {
        let mut child = Command::new(BIN)
            .args(["serve", "--http", "127.0.0.1:0", "--root", root])
            .args(&args)
            .env("XDG_CONFIG_HOME", &ws.config_home)
            .env("XDG_STATE_HOME", &ws.state_home)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let running = child.try_wait().unwrap().is_none();
        if running {
            child.kill().unwrap();
        }
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!running && !output.status.success(), "{args:?} served: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// F9: the question about a write to a protected file (`.envrc`, `.git/config`, a hook) named
/// the path only; the content is what will run. It is shown whole.
#[tokio::test]
async fn a_protected_write_shows_what_it_would_write() {
    let ws = Workspace::new();
    let asker = Asker::default();
    let service = start(&ws, "approval = \"on-request\"\n", asker.clone()).await;
    asker.answer(&["deny"]);
    let envrc = json!({"path": ".envrc", "content": "touch /tmp/MARKER-envrc\n"});
    assert!(file(&service, "create_file", envrc).await.is_error);
    assert_eq!(asker.asked(), 1);
    assert!(asker.messages()[0].contains("touch /tmp/MARKER-envrc"), "{}", asker.messages()[0]);
    let long = json!({"path": ".envrc", "content": "#".repeat(5000)});
    let refused = file(&service, "create_file", long).await;
    assert!(refused.is_error && refused.text.contains("more than the"), "{}", refused.text);
    assert_eq!(asker.asked(), 1, "too long to show whole: refused, not asked");
    assert!(!ws.root.join(".envrc").exists());
    service.cancel().await.unwrap();
}

/// Sixth review, N1: a path beyond the roots was resolved again after the answer, so a symlink
/// swapped while the user read the question (`dl` → the templates, then → `~/.ssh`) sent the
/// approved write elsewhere. The call uses what the question named.
#[tokio::test]
async fn an_approved_path_is_the_one_the_question_named() {
    let ws = Workspace::new();
    let area = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let area = area.path().canonicalize().unwrap();
    let (shown, other) = (area.join("tmpl"), area.join("other"));
    std::fs::create_dir_all(&shown).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(shown.join("id"), "PLACEHOLDER").unwrap();
    std::fs::write(other.join("id"), "SECRET").unwrap();
    let link = ws.root.join("dl");
    std::os::unix::fs::symlink(&shown, &link).unwrap();
    let asker = Asker::default();
    let service = start(&ws, "approval = \"on-request\"\n", asker.clone()).await;
    let swap = |link: std::path::PathBuf, to: std::path::PathBuf| {
        move || {
            std::fs::remove_file(&link).unwrap();
            std::os::unix::fs::symlink(&to, &link).unwrap();
        }
    };
    asker.answer(&["allow_once"]);
    asker.meanwhile(swap(link.clone(), other.clone()));
    let write = json!({"path": "dl/planted", "content": "x", "escalate": true, "justification": "a template"});
    let written = file(&service, "create_file", write).await;
    assert!(!written.is_error, "{}", written.text);
    assert!(asker.messages()[0].contains(&shown.display().to_string()), "{}", asker.messages()[0]);
    assert!(
        shown.join("planted").exists() && !other.join("planted").exists(),
        "the write went where the link pointed after the answer"
    );
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&shown, &link).unwrap();
    asker.answer(&["allow_once"]);
    asker.meanwhile(swap(link.clone(), other.clone()));
    let read =
        file(&service, "read_file", json!({"path": "dl/id", "escalate": true, "justification": "a template"})).await;
    assert!(read.text.contains("PLACEHOLDER") && !read.text.contains("SECRET"), "{}", read.text);
    service.cancel().await.unwrap();
}

/// Sixth review, N2, N7, N9: a symlink planted before its directory became a git dir (git then
/// wrote the user's commit message through it); `git init` and `git remote add` in a root with
/// no repository (its remote names whose memories the root sees); `MAKEFILES` in a `.env`.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn late_git_dirs_new_root_remotes_and_makefiles_are_refused() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    // In the temp dir: a link beyond the user's own files is refused by itself.
    let scratch = tempfile::tempdir().unwrap();
    let target = scratch.path().join("rc");
    let planted = client
        .term("run_command", json!({"command": format!("mkdir gd && ln -s {} gd/COMMIT_EDITMSG", target.display())}))
        .await;
    assert!(!planted.is_error, "{}", planted.text);
    let line = "cd gd && mkdir -p objects refs/heads && echo 'ref: refs/heads/main' > HEAD";
    let made = client.term("run_command", json!({"command": line})).await;
    assert!(made.text.contains("HEAD"), "{}", made.text);
    assert!(!ws.root.join("gd/HEAD").exists(), "the directory became a git dir with the link in it");
    let line = "git init -q && git remote add origin https://example.com/victim/app.git; printf 'MAKEFILES=/tmp/evil.mk\\n' > app.env";
    let reply = client.term("run_command", json!({"command": line})).await;
    let config = std::fs::read_to_string(ws.root.join(".git/config")).unwrap_or_default();
    assert!(!config.contains("victim"), "{config}\n{}", reply.text);
    assert!(!ws.root.join("app.env").exists(), "{}", reply.text);
    client.close().await;
}

/// Sixth review, N3, N5: a `PATH` entry spelled with `..` or through a symlink was not seen as
/// one; a config file another user may write was trusted.
#[tokio::test]
async fn path_entries_by_any_spelling_and_a_shared_config() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.root.join("bin2")).unwrap();
    std::fs::create_dir_all(ws.root.join("t3")).unwrap();
    let link = ws.outside.join("l3");
    std::os::unix::fs::symlink(ws.root.join("t3"), &link).unwrap();
    let path = format!("{}/x/../bin2:{}:{}", ws.root.display(), link.display(), std::env::var("PATH").unwrap());
    let client = Client::start_with_env(&ws, &[], &[("PATH", &path)]).await;
    for planted in ["bin2/git", "t3/git"] {
        let reply = client.file(json!({"operation": "create_file", "path": planted, "content": "#!/bin/sh\n"})).await;
        assert!(reply.is_error, "{planted}: {}", reply.text);
    }
    client.close().await;
    let config = ws.outside.join("shared.toml");
    std::fs::write(&config, "sandbox = \"full-access\"\n").unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = Command::new(BIN)
        .args(["doctor", "--config", config.to_str().unwrap(), "--root", ws.root.to_str().unwrap()])
        .env("XDG_CONFIG_HOME", &ws.config_home)
        .env("XDG_STATE_HOME", &ws.state_home)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("writable by other users"), "{stderr}");
}

/// Sixth review, N6: a command wrote escape sequences to another program's terminal (the
/// host's, where it draws its questions). Commands have a devpts of their own.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_command_sees_no_other_terminal() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let session = client.term("start_session", json!({})).await;
    assert!(!session.is_error, "{}", session.text);
    let reply = client.term("run_command", json!({"command": "ls /dev/pts"})).await;
    let names: Vec<&str> =
        reply.text.lines().filter(|l| l.chars().all(|c| c.is_ascii_digit()) && !l.is_empty()).collect();
    assert!(names.is_empty(), "terminals of other programs are visible: {}", reply.text);
    client.close().await;
}

/// Seventh review, R1: `undo` with `force` put a deleted tree back into a directory that had
/// become a git dir meanwhile (its `config` and hooks then ran). A deleted directory is never
/// merged into what stands there again.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn undo_never_merges_a_tree_into_what_stands_there() {
    let ws = Workspace::new();
    repo(&ws.root);
    let client = Client::start(&ws, &[]).await;
    let made = client
        .term(
            "run_command",
            json!({"command": "mkdir -p k/hooks && echo x > k/hooks/pre-commit && echo '[core]' > k/config"}),
        )
        .await;
    assert!(!made.is_error, "{}", made.text);
    let deleted = client.file(json!({"operation": "delete_file", "path": "k", "recursive": true})).await;
    assert!(!deleted.is_error, "{}", deleted.text);
    let init = client.term("run_command", json!({"command": "git init -q --bare k"})).await;
    assert!(!init.is_error, "{}", init.text);
    let undone = client.file(json!({"operation": "undo", "force": true})).await;
    assert!(undone.is_error, "{}", undone.text);
    assert!(!ws.root.join("k/hooks/pre-commit").exists());
    client.close().await;
}

/// Seventh review, R2, R3, R4, R6: a dotfiles repository (`~/.bashrc` links into the root), a
/// template dir the user's git config names, a patch that moves a file onto `.envrc`, and a
/// `PATH` entry written with `~`.
#[tokio::test]
async fn dotfiles_templates_patch_moves_and_tilde_path_entries() {
    let ws = Workspace::new();
    let home = ws.outside.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(ws.root.join("dot")).unwrap();
    std::fs::write(ws.root.join("dot/bashrc"), "# rc\n").unwrap();
    std::os::unix::fs::symlink(ws.root.join("dot/bashrc"), home.join(".bashrc")).unwrap();
    std::fs::write(home.join(".gitconfig"), format!("[init]\n\ttemplateDir = {}/tmpl\n", ws.root.display())).unwrap();
    std::os::unix::fs::symlink(&ws.root, home.join("proj")).unwrap();
    let path = format!("~/proj/t6:{}", std::env::var("PATH").unwrap());
    let client = Client::start_with_env(&ws, &[], &[("HOME", home.to_str().unwrap()), ("PATH", &path)]).await;
    for (planted, content) in
        [("dot/bashrc", "touch /tmp/x\n"), ("tmpl/hooks/post-checkout", "#!/bin/sh\n"), ("t6/git", "#!/bin/sh\n")]
    {
        let reply = client
            .file(json!({"operation": "create_file", "path": planted, "content": content, "overwrite": true}))
            .await;
        assert!(reply.is_error, "{planted}: {}", reply.text);
    }
    std::fs::write(ws.root.join("a.txt"), "echo hi\n").unwrap();
    let patch =
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: .envrc\n@@\n-echo hi\n+echo hello\n*** End Patch\n";
    let moved = client.file(json!({"operation": "apply_patch", "patch": patch})).await;
    assert!(moved.is_error && moved.text.contains("create_file"), "{}", moved.text);
    assert!(!ws.root.join(".envrc").exists());
    client.close().await;
}
