//! What the seventh adversarial review of security v3 left, each tried the way it was found:
//! symlinks a command made that lead out of the roots into the user's configuration (written
//! through later by `git format-patch`), variables of the user's environment that place
//! configuration in a root, `.env` values that name files whatever the name, interpreters'
//! startup files, and a shared state dir given to a stdio server.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

#[cfg(target_os = "linux")]
use serde_json::json;

#[cfg(target_os = "linux")]
use super::common::Client;
use super::common::{BIN, Workspace};

/// R5: `ln -s ~/.bashrc 0001-Fix-typo.patch` was applied; the user's `git format-patch -1`
/// then wrote the mail, with a line the agent chose, into `~/.bashrc`. A link a command makes
/// that leads into what is code-bearing (out of the roots or into a git dir) is refused; one to
/// a program (a venv's interpreter) or to plain data passes.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_command_cannot_link_into_what_is_code_bearing() {
    let ws = Workspace::new();
    let home = ws.outside.join("home");
    std::fs::create_dir_all(home.join(".config/fish")).unwrap();
    std::fs::write(home.join(".bashrc"), "# rc\n").unwrap();
    let python = home.join(".local/share/uv/python/bin/python3.12");
    std::fs::create_dir_all(python.parent().unwrap()).unwrap();
    std::fs::write(&python, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(ws.root.join(".git/hooks")).unwrap();
    std::fs::write(ws.root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let client = Client::start_with_env(&ws, &[], &[("HOME", home.to_str().unwrap())]).await;
    let bashrc = home.join(".bashrc");
    let fish = home.join(".config/fish/config.fish");
    for (link, target) in [
        ("0001-Fix-typo.patch", bashrc.to_str().unwrap()),
        ("out.txt", fish.to_str().unwrap()),
        ("hook.patch", ".git/hooks/pre-commit"),
    ] {
        let reply = client.run(&format!("ln -s '{target}' '{link}'")).await;
        assert!(
            reply.text.contains("a symlink a program you run later writes through"),
            "{link} -> {target}: {}",
            reply.text
        );
        assert!(std::fs::symlink_metadata(ws.root.join(link)).is_err(), "{link} was applied");
    }
    let reply = client.run(&format!("mkdir -p .venv/bin && ln -s '{}' .venv/bin/python", python.display())).await;
    assert!(!reply.text.contains("not applied"), "{}", reply.text);
    assert!(std::fs::symlink_metadata(ws.root.join(".venv/bin/python")).is_ok());
    // Plain data in the temp dir (beyond the user's own files, a root server could write
    // anything: that is refused).
    let notes = std::env::temp_dir().join("notes.md");
    let reply = client.run(&format!("ln -s '{}' notes-link.md", notes.display())).await;
    assert!(!reply.text.contains("not applied"), "{}", reply.text);
    assert!(std::fs::symlink_metadata(ws.root.join("notes-link.md")).is_ok(), "{}", reply.text);
    assert_eq!(std::fs::read_to_string(&bashrc).unwrap(), "# rc\n");
    client.close().await;
}

/// R7: with the user's `XDG_CONFIG_HOME`, `GIT_CONFIG_GLOBAL`, `CARGO_HOME`, `BASH_ENV` or
/// `NODE_OPTIONS` naming a place in a root, what lies there was written unasked (git's global
/// config, fish's, cargo's, a file every bash runs, a module every node loads). Each variable
/// named like configuration protects what it names, by a file operation and by a command;
/// one naming the root itself (`CLAUDE_PROJECT_DIR`) protects nothing.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn variables_that_place_configuration_in_a_root_protect_it() {
    let ws = Workspace::new();
    let root = ws.root.display().to_string();
    let env = [
        ("XDG_DATA_HOME", format!("{root}/xd")),
        ("GIT_CONFIG_GLOBAL", format!("{root}/gcg")),
        ("CARGO_HOME", format!("{root}/ch")),
        ("BASH_ENV", format!("{root}/benv.sh")),
        ("NODE_OPTIONS", format!("--require {root}/hook.js")),
        ("CLAUDE_PROJECT_DIR", root.clone()),
        ("CARGO_TARGET_DIR", format!("{root}/target")),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let client = Client::start_with_env(&ws, &[], &env).await;
    for planted in ["xd/applications/x.desktop", "gcg", "ch/config.toml", "benv.sh", "hook.js"] {
        let reply = client.file(json!({"operation": "create_file", "path": planted, "content": "x\n"})).await;
        assert!(reply.is_error && reply.text.contains("protected"), "{planted}: {}", reply.text);
        let reply = client.run(&format!("mkdir -p \"$(dirname {planted})\" && echo x > {planted}")).await;
        assert!(reply.text.contains("your environment's"), "{planted}: {}", reply.text);
        assert!(!ws.root.join(planted).exists(), "{planted} was written");
    }
    // The root itself and build output stay writable.
    let made =
        client.file(json!({"operation": "create_file", "path": "src/app.rs", "content": "fn main() {}\n"})).await;
    assert!(!made.is_error, "{}", made.text);
    let built = client.run("mkdir -p target/debug && echo bin > target/debug/app").await;
    assert!(!built.text.contains("not applied"), "{}", built.text);
    assert!(ws.root.join("target/debug/app").exists());
    client.close().await;
}

/// R7: a `.env` setting `VK_ICD_FILENAMES`, `M4` or `PYENV_ROOT` to a file the agent wrote
/// passed (the names were on no list). A value that names a file or directory is refused
/// whatever the name; URLs and plain settings pass. `.octaverc` (run by Octave at start in
/// the directory) was not protected.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn dotenv_paths_whatever_the_name_and_startup_files() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    for line in ["VK_ICD_FILENAMES=./icd.json", "M4=./m4", "PYENV_ROOT=~/.pyenv", "ZSH_CUSTOM=/tmp/zc"] {
        let reply = client.run(&format!("printf '%s\\n' '{line}' > dev.env")).await;
        assert!(reply.text.contains("not applied") && reply.text.contains("dev.env"), "{line}: {}", reply.text);
        assert!(!ws.root.join("dev.env").exists(), "{line} reached the tree: {}", reply.text);
    }
    let reply = client.run("printf 'DATABASE_URL=postgres://u@h:5432/db\\nPORT=3000\\n' > dev.env").await;
    assert!(!reply.text.contains("not applied"), "{}", reply.text);
    assert!(ws.root.join("dev.env").exists());
    let reply =
        client.file(json!({"operation": "create_file", "path": "sub/.octaverc", "content": "system('id');\n"})).await;
    assert!(reply.is_error, "{}", reply.text);
    let reply = client.run("mkdir -p sub && echo \"system('id');\" > sub/.octaverc").await;
    assert!(reply.text.contains("not applied"), "{}", reply.text);
    assert!(!ws.root.join("sub/.octaverc").exists());
    client.close().await;
}

/// R7: a stdio server given a state dir under a directory anyone may write answered its calls
/// with "internal error … this is a bug"; it refuses to start, saying what to do.
#[test]
fn a_stdio_server_refuses_a_shared_state_dir() {
    let ws = Workspace::new();
    let shared = ws.outside.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let state = shared.join("state");
    let output = Command::new(BIN)
        .args(["serve", "--root", ws.root.to_str().unwrap(), "--state-dir", state.to_str().unwrap()])
        .env("XDG_CONFIG_HOME", &ws.config_home)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains("writable by other users"), "{stderr}");
    assert!(stderr.contains("--state-dir"), "{stderr}");
    assert!(!state.exists(), "nothing was made there");
}

/// Eighth review, F1–F4: a link's `..` was folded before the symlinks it follows
/// (`d -> x/y`, then `d/../../../home/.vim/plugin/x.vim`); a link through a directory made
/// later (`u2`, then `u2 -> $HOME`); `rename_file` of a directory moving a relative link one
/// level up; a link to another root's hook passed as "an existing program".
#[cfg(target_os = "linux")]
#[tokio::test]
async fn links_are_judged_where_the_kernel_takes_them() {
    let ws = Workspace::new();
    let home = ws.outside.join("home");
    std::fs::create_dir_all(home.join(".vim/plugin")).unwrap();
    let other = ws.outside.join("ws2");
    std::fs::create_dir_all(other.join(".git/hooks")).unwrap();
    std::fs::write(other.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let hook = other.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(ws.root.join("x/y")).unwrap();
    let env = [("HOME", home.to_str().unwrap())];
    let roots = ["--root", other.to_str().unwrap()];
    let client = Client::start_with_env(&ws, &roots, &env).await;
    // The root is `<base>/ws`, the home `<base>/outside/home`.
    for (line, link) in [
        (
            "ln -s x/y d && ln -s d/../../../outside/home/.vim/plugin/fix.vim 0001-Fix.patch".to_string(),
            "0001-Fix.patch",
        ),
        ("ln -s u2/.vim/plugin/later.vim 0002-Later.patch".to_string(), "0002-Later.patch"),
        (format!("ln -s '{}' 0003-Hook.patch", hook.display()), "0003-Hook.patch"),
        (format!("ln -s '{}' u3", home.display()), "u3"),
    ] {
        let reply = client.run(&line).await;
        assert!(reply.text.contains("not applied") && reply.text.contains(link), "{line}: {}", reply.text);
        assert!(std::fs::symlink_metadata(ws.root.join(link)).is_err(), "{link} was applied: {}", reply.text);
        if link == "0001-Fix.patch" {
            assert!(reply.text.contains("after a name"), "{}", reply.text);
        }
    }
    // A directory holding a link that is harmless where it is, moved so that it is not.
    std::fs::create_dir_all(ws.root.join("p/q/r/a")).unwrap();
    let target = "../../outside/home/.vim/plugin/moved.vim";
    std::os::unix::fs::symlink(target, ws.root.join("p/q/r/a/0004.patch")).unwrap();
    let moved = client.file(json!({"operation": "rename_file", "path": "p/q/r/a", "destination": "a"})).await;
    assert!(moved.is_error && moved.text.contains("protected path"), "{}", moved.text);
    assert!(ws.root.join("p/q/r/a/0004.patch").symlink_metadata().is_ok());
    client.close().await;
}

/// Eighth review, F5, F6, F8: spellings of the environment the splitter missed (`||/x %s`,
/// `$HOME/x`, `-I/x`, `@/x`), `.env` values `~+` and `${PWD}`, `GNUMAKEFLAGS`, and startup
/// files' other names (`_vimrc`, `irb.rc`).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn environment_spellings_dotenv_variables_and_other_names() {
    let ws = Workspace::new();
    let root = ws.root.display().to_string();
    let env = [
        ("LESSOPEN", format!("||{root}/lesspipe.sh %s")),
        ("BASH_ENV", "$WS_PLACE/benv.sh".to_string()),
        ("WS_PLACE", root.clone()),
        ("PERL5OPT", format!("-I{root}/perl")),
        ("LUA_INIT", format!("@{root}/init.lua")),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let client = Client::start_with_env(&ws, &[], &env).await;
    for planted in ["lesspipe.sh", "benv.sh", "perl/evil.pm", "init.lua", "_vimrc", "irb.rc"] {
        let reply = client.file(json!({"operation": "create_file", "path": planted, "content": "x\n"})).await;
        assert!(reply.is_error, "{planted}: {}", reply.text);
        assert!(!ws.root.join(planted).exists(), "{planted} was written");
    }
    for line in ["PROJECT_ROOT=~+", "WHERE=${PWD}", "GNUMAKEFLAGS=--eval=x"] {
        let reply = client.run(&format!("printf '%s\\n' '{line}' > dev.env")).await;
        assert!(reply.text.contains("not applied"), "{line}: {}", reply.text);
        assert!(!ws.root.join("dev.env").exists(), "{line} reached the tree");
    }
    client.close().await;
}

/// Ninth review, G1: a link judged when made, then a link it passes through re-pointed by a
/// second command (`0001.patch -> d/x/../../<home>/…` while `d/x -> p/q`, then
/// `ln -sfn . d/x`). A `..` after a name is refused at once, and a re-pointed link is judged
/// by what its new target holds.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_link_cannot_be_re_pointed_from_under_another() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let made = client.run("mkdir -p d p/q && ln -s ../p/q d/x").await;
    assert!(!made.text.contains("not applied"), "{}", made.text);
    let reply = client.run("ln -s d/x/../../../outside/home/.vim/plugin/fix.vim 0001-Fix.patch").await;
    assert!(reply.text.contains("after a name"), "{}", reply.text);
    assert!(std::fs::symlink_metadata(ws.root.join("0001-Fix.patch")).is_err());
    let reply = client.run("ln -s d/x/hook 0002-Hook.patch && ln -sfn ../.git/hooks d/x").await;
    assert!(reply.text.contains("not applied") && reply.text.contains("d/x"), "{}", reply.text);
    assert_eq!(std::fs::read_link(ws.root.join("d/x")).unwrap(), std::path::Path::new("../p/q"));
    client.close().await;
}

/// Tenth review, K1, K2: a link deleted by one command and made again by the next counted as
/// fresh, so `notes/cur -> ..` (the root) passed and an older `0001.patch -> notes/cur/bashrc`
/// led to the dotfiles `~/.bashrc` links to; a re-pointed link passed when its new target
/// reached the protected place through a link inside it. A link to a directory above it, or to
/// one holding a place protected where it lies, is refused whenever it is made.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_link_to_a_directory_above_it_or_holding_a_protected_place_is_refused() {
    let ws = Workspace::new();
    let home = ws.outside.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(ws.root.join("dot")).unwrap();
    std::fs::write(ws.root.join("dot/bashrc"), "# rc\n").unwrap();
    std::os::unix::fs::symlink(ws.root.join("dot/bashrc"), home.join(".bashrc")).unwrap();
    let client = Client::start_with_env(&ws, &[], &[("HOME", home.to_str().unwrap())]).await;
    let made = client.run("mkdir -p notes/v1 && ln -s v1 notes/cur && ln -s notes/cur/bashrc 0001-Notes.patch").await;
    assert!(!made.text.contains("not applied"), "{}", made.text);
    assert!(!client.run("rm notes/cur").await.text.contains("not applied"));
    for (line, link) in
        [("ln -s .. notes/cur", "notes/cur"), ("ln -s ../dot notes/cur", "notes/cur"), ("ln -s . here", "here")]
    {
        let reply = client.run(line).await;
        assert!(reply.text.contains("not applied"), "{line}: {}", reply.text);
        assert!(std::fs::symlink_metadata(ws.root.join(link)).is_err(), "{line} was applied");
    }
    assert_eq!(std::fs::read_to_string(ws.root.join("dot/bashrc")).unwrap(), "# rc\n");
    client.close().await;
}
