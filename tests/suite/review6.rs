//! What the thirteenth adversarial review of security v3 found, each tried the way it was
//! found: a linked worktree whose common dir is no repository, a directory made a worktree
//! over hooks planted in it, `core.worktree` moved, config that breaks the user's git, a
//! forged commit-graph and objects that are not what their names say, an operation's state
//! applied in part, and a directory above a hidden path renamed.

use serde_json::json;

use super::common::{Client, Workspace, git};

fn repo(ws: &Workspace) {
    git(&ws.root, &["init", "-q", "-b", "main"]);
    std::fs::write(ws.root.join("a"), "a\n").unwrap();
    git(&ws.root, &["add", "a"]);
    git(&ws.root, &["commit", "-qm", "init"]);
}

/// N3: `feat/.git` pointing at `.cache-x/worktrees/feat`, whose `commondir` names `.cache-x`
/// (config with `core.fsmonitor`, a hook, no `HEAD`): git takes that config and those hooks.
/// A `commondir` must name a repository.
#[tokio::test]
async fn a_worktrees_common_dir_must_be_a_repository() {
    let ws = Workspace::new();
    repo(&ws);
    let client = Client::start(&ws, &[]).await;
    let reply = client
        .run("set -e\nmkdir -p .cache-x/refs/heads .cache-x/hooks feat\ncp -r .git/objects .cache-x/\ngit rev-parse HEAD > .cache-x/refs/heads/main\nprintf '[core]\\n\\tfsmonitor = touch PWNED #\\n' > .cache-x/config\nG=$PWD/.cache-x/worktrees/feat; mkdir -p $G\necho $PWD/feat/.git > $G/gitdir; echo ../.. > $G/commondir; git rev-parse HEAD > $G/HEAD\necho \"gitdir: $G\" > feat/.git")
        .await;
    assert!(reply.text.contains("not applied"), "{}", reply.text);
    assert!(!ws.root.join("feat/.git").exists(), "the worktree pointer was applied");
    client.close().await;
}

/// N2, N1: a directory made a worktree while the `core.hooksPath` its repository names
/// (relative) already holds a hook there, or a file a link made earlier leads into.
#[tokio::test]
async fn a_directory_holding_hooks_does_not_become_a_worktree() {
    let ws = Workspace::new();
    repo(&ws);
    git(&ws.root, &["config", "core.hooksPath", ".githooks"]);
    let client = Client::start(&ws, &[]).await;
    let planted = client
        .run("mkdir -p d3/.githooks && printf '#!/bin/sh\\ntouch PWNED\\n' > d3/.githooks/post-checkout && chmod +x d3/.githooks/post-checkout && ln -s d3/.githooks/post-checkout 0001-Fix.patch")
        .await;
    assert!(!planted.text.contains("not applied"), "{}", planted.text);
    let reply = client
        .run("G=$PWD/.git/worktrees/d3; mkdir -p $G && echo $PWD/d3/.git > $G/gitdir && echo ../.. > $G/commondir && git rev-parse HEAD > $G/HEAD && echo \"gitdir: $G\" > d3/.git")
        .await;
    assert!(reply.text.contains("holds files already"), "{}", reply.text);
    assert!(!ws.root.join("d3/.git").exists(), "d3 became a worktree");
    client.close().await;
}

/// N4, L1: `core.worktree`, `core.bare` and the object format of an existing repository are
/// set when it is made; a nested repository whose worktree is the root is judged there.
#[tokio::test]
async fn what_a_repository_is_is_not_changed_by_a_command() {
    let ws = Workspace::new();
    repo(&ws);
    let home = ws.outside.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(ws.root.join("bashrc"), "# rc\n").unwrap();
    std::os::unix::fs::symlink(ws.root.join("bashrc"), home.join(".bashrc")).unwrap();
    let client = Client::start_with_env(&ws, &[], &[("HOME", home.to_str().unwrap())]).await;
    for key in ["core.worktree d4", "core.bare true", "extensions.objectFormat sha256"] {
        let reply = client.run(&format!("mkdir -p d4 && git config {key}")).await;
        assert!(reply.text.contains("of an existing repository changed"), "{key}: {}", reply.text);
    }
    assert!(
        git(&ws.root, &["config", "--list", "--local"])
            .lines()
            .all(|l| !l.starts_with("core.worktree") && l != "core.bare=true")
    );
    let nested = client
        .run("git init -q nr && cd nr && printf 'touch PWNED\\n' > bashrc && git add bashrc && git -c user.name=d -c user.email=d@x commit -qm v && rm bashrc && git config core.worktree ../..")
        .await;
    assert!(
        nested.text.contains("bashrc") && nested.text.contains("your own git would write it there later"),
        "{}",
        nested.text
    );
    assert!(!ws.root.join("nr/.git/refs/heads").read_dir().is_ok_and(|mut d| d.next().is_some()), "{}", nested.text);
    client.close().await;
}

/// N6: a forged `objects/info/commit-graph` gives a commit another root tree in the user's
/// git; a loose object whose content is not its name's does the same for any id. Derived
/// files are never taken from a command, and objects are checked against their names.
#[tokio::test]
async fn objects_are_what_their_names_say() {
    let ws = Workspace::new();
    repo(&ws);
    let client = Client::start(&ws, &[]).await;
    let graph = client
        .run(
            "echo b >> a && git -c user.name=d -c user.email=d@x commit -qam two && git commit-graph write --reachable",
        )
        .await;
    assert!(graph.text.contains("commit-graph") && graph.text.contains("derived"), "{}", graph.text);
    assert!(!ws.root.join(".git/objects/info/commit-graph").exists());
    // The commit itself (its objects, the branch) was applied.
    assert!(git(&ws.root, &["log", "--oneline"]).contains("two"));
    // A loose object rewritten to hold another object's content.
    let blob = git(&ws.root, &["hash-object", "-w", "a"]).trim().to_string();
    let path = format!(".git/objects/{}/{}", &blob[..2], &blob[2..]);
    let lie = client
        .run(&format!("other=$(printf 'touch PWNED\\n' | git hash-object -w --stdin) && chmod u+w {path} && cp .git/objects/${{other:0:2}}/${{other:2}} {path}"))
        .await;
    assert!(lie.text.contains("not what its name says"), "{}", lie.text);
    assert_eq!(git(&ws.root, &["cat-file", "-p", &blob]), "a\nb\n");
    client.close().await;
}

/// L2: a rebase's `strategy` refused, the rest of its state applied: the state is applied
/// whole or not at all.
#[tokio::test]
async fn an_operations_state_is_refused_whole() {
    let ws = Workspace::new();
    repo(&ws);
    let client = Client::start(&ws, &[]).await;
    let reply = client
        .run("R=.git/rebase-merge; mkdir -p $R && echo refs/heads/main > $R/head-name && git rev-parse HEAD > $R/onto && : > $R/interactive && echo x/evil > $R/strategy")
        .await;
    assert!(reply.text.contains("merge strategy"), "{}", reply.text);
    assert!(!ws.root.join(".git/rebase-merge").exists(), "{}", reply.text);
    client.close().await;
}

/// N5: renaming a directory above a `deny_read` path (or the HTTP token file) moved the secret
/// to a path nothing hid. A directory holding a hidden path is not moved or removed.
#[tokio::test]
async fn a_directory_above_a_hidden_path_stays_where_it_is() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.root.join("p/q")).unwrap();
    std::fs::write(ws.root.join("p/q/key.txt"), "NESTED-SECRET-789\n").unwrap();
    let hidden = ws.root.join("p/q/key.txt");
    let client = Client::start(&ws, &["--deny-read", hidden.to_str().unwrap()]).await;
    for args in [
        json!({"operation": "rename_file", "path": "p", "destination": "p2"}),
        json!({"operation": "rename_file", "path": "p/q", "destination": "q2"}),
        json!({"operation": "delete_file", "path": "p", "recursive": true}),
    ] {
        let reply = client.file(args.clone()).await;
        assert!(reply.is_error && reply.text.contains("hidden"), "{args}: {}", reply.text);
    }
    assert!(hidden.exists());
    let read = client.file(json!({"operation": "read_file", "path": "p2/q/key.txt"})).await;
    assert!(read.is_error && !read.text.contains("NESTED-SECRET"), "{}", read.text);
    client.close().await;
}
