//! What the fifteenth adversarial review of security v3 found: a gitlink above a hooks
//! directory (or at a code-bearing name) whose submodule commit the user's checkout wrote
//! there, and an existing remote's push URL and refspecs (and `push.default`) changed.

use super::common::{Client, Workspace, git};

/// A repository with one commit, `core.hooksPath = scripts/githooks` and a remote.
fn repo(ws: &Workspace) {
    git(&ws.root, &["init", "-q", "-b", "main"]);
    std::fs::write(ws.root.join("README"), "r\n").unwrap();
    git(&ws.root, &["add", "README"]);
    git(&ws.root, &["commit", "-qm", "init"]);
    git(&ws.root, &["config", "core.hooksPath", "scripts/githooks"]);
    git(&ws.root, &["remote", "add", "origin", "https://example.com/x.git"]);
}

/// Runs git as the user would, whatever it says (a refused branch makes it fail).
fn user_git(dir: &std::path::Path, args: &[&str]) {
    let _ = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
}

/// Q1: a commit on `feature` holding a gitlink at `scripts` (above the configured hooks
/// directory), whose commit a planted `.git/modules/scripts` holds, with `submodule.recurse`
/// on: the user's `git checkout feature` wrote the agent's hook, their next commit ran it. The
/// same at `.claude` wrote a `settings.json`. A gitlink is judged as the checkout of its
/// commit; one whose commit no git dir here holds is refused.
#[tokio::test]
async fn a_gitlink_is_judged_as_the_checkout_of_its_commit() {
    let ws = Workspace::new();
    repo(&ws);
    let marker = ws.outside.join("PWNED-gitlink");
    let client = Client::start(&ws, &[]).await;
    for (path, file, content) in [
        ("scripts", "githooks/pre-commit", format!("#!/bin/sh\\ntouch {}\\n", marker.display())),
        (".claude", "settings.json", format!("{{\"hooks\":{{\"x\":\"touch {}\"}}}}\\n", marker.display())),
    ] {
        let attack = format!(
            "set -e; rm -rf /tmp/e; git init -q /tmp/e; mkdir -p /tmp/e/$(dirname {file}); printf '{content}' > /tmp/e/{file}; \
             chmod +x /tmp/e/{file}; git -C /tmp/e add -A; git -C /tmp/e -c user.name=a -c user.email=a@a commit -qm e; \
             git clone -q --bare /tmp/e .git/modules/{path}; git --git-dir=.git/modules/{path} config core.bare false; \
             git --git-dir=.git/modules/{path} config core.worktree ../../../{path}; \
             git checkout -q -b f-{path}; git update-index --add --cacheinfo 160000,$(git -C /tmp/e rev-parse HEAD),{path}; \
             git -c user.name=a -c user.email=a@a commit -qm sub; git checkout -q main; \
             git config submodule.recurse true; git config submodule.{path}.active true; echo planted"
        );
        let reply = client.run(&attack).await;
        assert!(reply.text.contains("planted"), "{path}: {}", reply.text);
        assert!(
            reply.text.contains("not applied") && reply.text.contains("a submodule whose commit holds"),
            "{path}: {}",
            reply.text
        );
        user_git(&ws.root, &["checkout", "-q", &format!("f-{path}")]);
        user_git(&ws.root, &["commit", "-q", "--allow-empty", "-m", "user"]);
        user_git(&ws.root, &["checkout", "-q", "main"]);
        assert!(!marker.exists(), "{path}: the user's commit ran the agent's hook");
        assert!(!ws.root.join(path).join(file).exists(), "{path}: the user's checkout wrote the submodule's file");
    }
    // A gitlink whose commit no git dir here holds cannot be judged.
    let unknown = client
        .run("git update-index --add --cacheinfo 160000,1111111111111111111111111111111111111111,vendor/x && echo staged")
        .await;
    assert!(unknown.text.contains("no git dir here holds"), "{}", unknown.text);
    // One whose commit is readable and holds nothing code-bearing passes.
    let fine = client
        .run("rm -rf /tmp/ok && git init -q /tmp/ok && echo x > /tmp/ok/lib.c && git -C /tmp/ok add -A && git -C /tmp/ok -c user.name=a -c user.email=a@a commit -qm ok && git clone -q --bare /tmp/ok .git/modules/lib && git update-index --add --cacheinfo 160000,$(git -C /tmp/ok rev-parse HEAD),lib")
        .await;
    assert!(!fine.text.contains("not applied"), "{}", fine.text);
    assert!(git(&ws.root, &["ls-files", "-s", "lib"]).starts_with("160000 "), "the harmless gitlink was not applied");
    client.close().await;
}

/// Q2, Q3: `remote.origin.pushurl` at a repository the agent made (the user's push went there,
/// not to their remote), a push refspec `:refs/heads/release` (the user's plain push deleted
/// that branch) and `push.default = matching`: an existing remote's URLs and push refspecs,
/// and the push default, stay as the user set them.
#[tokio::test]
async fn where_and_what_a_plain_push_sends_stays() {
    let ws = Workspace::new();
    repo(&ws);
    let client = Client::start(&ws, &[]).await;
    for line in [
        "git init -q --bare e.git && git config remote.origin.pushurl ./e.git",
        "git config remote.origin.pushurl https://example.net/elsewhere.git",
        "git config --add remote.origin.push :refs/heads/release",
        "git config push.default matching",
    ] {
        let reply = client.run(line).await;
        assert!(
            reply.text.contains("not applied") && reply.text.contains("change it yourself"),
            "{line}: {}",
            reply.text
        );
    }
    let config = git(&ws.root, &["config", "--list", "--local"]);
    assert!(!config.contains("pushurl") && !config.contains("release") && !config.contains("matching"), "{config}");
    // A branch's upstream on the remote it had still passes.
    let ok = client.run("git config branch.main.remote origin && git config branch.main.merge refs/heads/main").await;
    assert!(!ok.text.contains("not applied"), "{}", ok.text);
    client.close().await;
}

/// R1 (round 16): a git dir not named `.git` (`vend.git`) took a loose object that is not what
/// its name says; the user's git read the lie from there (the judge of a gitlink read the
/// honest copy elsewhere). Every object store a command writes is checked, whatever the
/// directory holding it is called, and one shaped like a store before it is a git dir too.
#[tokio::test]
async fn objects_in_a_git_dir_of_any_name_are_what_their_names_say() {
    let ws = Workspace::new();
    repo(&ws);
    let client = Client::start(&ws, &[]).await;
    let id = "cc".repeat(19);
    for dir in ["vend.git", "later"] {
        let init = if dir == "vend.git" { "git init -q --bare vend.git && " } else { "" };
        let reply = client
            .run(&format!(
                "{init}mkdir -p {dir}/objects/ab && printf 'not an object' > {dir}/objects/ab/{id} && echo wrote"
            ))
            .await;
        assert!(reply.text.contains("wrote") && reply.text.contains("not what its name says"), "{dir}: {}", reply.text);
        assert!(!ws.root.join(dir).join("objects/ab").join(&id).exists(), "{dir}");
    }
    // A real object in such a store passes.
    let ok = client.run("git init -q --bare ok.git && echo hi | git --git-dir=ok.git hash-object -w --stdin").await;
    assert!(!ok.text.contains("not applied"), "{}", ok.text);
    client.close().await;
}
