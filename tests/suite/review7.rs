//! What the fourteenth adversarial review of security v3 found (the parts fixed so far): a
//! branch's remote re-pointed at a repository the agent made, and a git dir of any name whose
//! `core.worktree` is another directory (the root).

use super::common::{Client, Workspace, git};

/// P2: `branch.main.remote = ./e.git` (a bare repository the agent made in the root) made the
/// user's plain `git pull` take the agent's commit. A branch's remote names a remote the
/// repository had; an existing remote's fetch refspecs stay.
#[tokio::test]
async fn a_branch_pulls_from_a_remote_the_repository_had() {
    let ws = Workspace::new();
    git(&ws.root, &["init", "-q", "-b", "main"]);
    std::fs::write(ws.root.join("a"), "a\n").unwrap();
    git(&ws.root, &["add", "a"]);
    git(&ws.root, &["commit", "-qm", "init"]);
    git(&ws.root, &["remote", "add", "origin", "https://example.com/x.git"]);
    let client = Client::start(&ws, &[]).await;
    for line in [
        "git init -q --bare e.git && git config branch.main.remote ./e.git",
        "git config remote.pushDefault ./e.git",
        "git config --replace-all remote.origin.fetch '+refs/heads/x:refs/remotes/origin/main'",
    ] {
        let reply = client.run(line).await;
        assert!(reply.text.contains("not applied"), "{line}: {}", reply.text);
    }
    let config = git(&ws.root, &["config", "--list", "--local"]);
    assert!(!config.contains("e.git") && !config.contains("refs/heads/x"), "{config}");
    let ok = client.run("git config branch.main.remote origin").await;
    assert!(!ok.text.contains("not applied"), "{}", ok.text);
    client.close().await;
}

/// P3: a git dir not named `.git` (`vend.git`, reached through `vd/.git`) with `core.worktree`
/// at the root: its HEAD checked the agent's `bashrc` out over the root's. A worktree must be
/// the repository's own (its `.git` points back).
#[tokio::test]
async fn a_git_dirs_worktree_is_its_own() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let reply = client
        .run("git init -q --bare vend.git && git --git-dir=vend.git config core.bare false && git --git-dir=vend.git config core.worktree .. && mkdir -p vd && echo 'gitdir: ../vend.git' > vd/.git")
        .await;
    assert!(reply.text.contains("not this repository's worktree"), "{}", reply.text);
    // A submodule's layout passes: its worktree's `.git` points back.
    let sub = client
        .run("git init -q --bare .modules-x/sm && mkdir -p sm && echo 'gitdir: ../.modules-x/sm' > sm/.git && git --git-dir=.modules-x/sm config core.bare false && git --git-dir=.modules-x/sm config core.worktree ../../sm")
        .await;
    assert!(!sub.text.contains("not this repository's worktree"), "{}", sub.text);
    client.close().await;
}

/// P1: the index's cached tree for `.githooks` replaced by one holding the agent's hook: the
/// user's next `git commit` recorded it (git trusts a valid cached tree over the entries), with
/// `git status` clean. An index whose cached trees are not what its entries make is refused.
#[tokio::test]
async fn the_index_cached_trees_are_what_its_entries_make() {
    let ws = Workspace::new();
    git(&ws.root, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(ws.root.join(".githooks")).unwrap();
    std::fs::write(ws.root.join(".githooks/pre-commit"), "#!/bin/sh\n").unwrap();
    git(&ws.root, &["add", "-A"]);
    git(&ws.root, &["commit", "-qm", "init"]);
    git(&ws.root, &["config", "core.hooksPath", ".githooks"]);
    let before = std::fs::read(ws.root.join(".git/index")).unwrap();
    let client = Client::start(&ws, &[]).await;
    let forge = r#"b=$(printf '#!/bin/sh\ntouch PWNED\n' | git hash-object -w --stdin) && t=$(printf '100755 blob %s\tpre-commit\n' $b | git mktree) && python3 - $t <<'PY'
import sys, hashlib
t = bytes.fromhex(sys.argv[1]); d = open('.git/index', 'rb').read()
i = d.index(b'TREE'); n = d.index(b'.githooks\0', i); j = d.index(b'\n', n) + 1
d = d[:j] + t + d[j + 20:]; d = d[:-20]; d += hashlib.sha1(d).digest()
open('.git/index', 'wb').write(d)
PY"#;
    let reply = client.run(forge).await;
    assert!(reply.text.contains("cached trees"), "{}", reply.text);
    assert_eq!(std::fs::read(ws.root.join(".git/index")).unwrap(), before, "the forged index was applied");
    client.close().await;
}
