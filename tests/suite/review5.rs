//! What the eleventh adversarial review of security v3 found, each tried the way it was found:
//! a symlink through `/proc/self/cwd` (judged against the server's cwd, followed from the
//! user's), server variables whose `%` pattern has brackets, escapes or quotes, protected
//! content carried in git's objects (a commit, the index, a stash) that the user's own git
//! writes back, and replace refs.

use super::common::{Client, Workspace, git};

/// A root that is a dotfiles repository: the home's `.bashrc` is a link to its `bashrc`.
fn dotfiles(ws: &Workspace) -> std::path::PathBuf {
    let home = ws.outside.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(ws.root.join("bashrc"), "# rc\n").unwrap();
    std::os::unix::fs::symlink(ws.root.join("bashrc"), home.join(".bashrc")).unwrap();
    git(&ws.root, &["init", "-q"]);
    git(&ws.root, &["add", "-A"]);
    git(&ws.root, &["commit", "-qm", "init"]);
    home
}

/// L1: `ln -s /proc/self/cwd/bashrc 0001-Update-notes.patch` was judged as the server's cwd
/// (a temp dir) and applied; the user's `git format-patch -1` in the root then wrote the mail
/// into the dotfiles `bashrc`. A link through `/proc` (or `/dev/fd`, which leads there) means
/// something different to each process that follows it: refused.
#[tokio::test]
async fn a_link_through_proc_self_is_refused() {
    let ws = Workspace::new();
    let home = dotfiles(&ws);
    let client = Client::start_with_env(&ws, &[], &[("HOME", home.to_str().unwrap())]).await;
    for (line, link) in [
        ("ln -s /proc/self/cwd/bashrc 0001-Update-notes.patch", "0001-Update-notes.patch"),
        ("ln -s /proc/thread-self/cwd/bashrc 0002-x.patch", "0002-x.patch"),
        ("ln -s /dev/fd/3/bashrc 0003-x.patch", "0003-x.patch"),
    ] {
        let reply = client.run(line).await;
        assert!(reply.text.contains("cannot be known"), "{line}: {}", reply.text);
        assert!(std::fs::symlink_metadata(ws.root.join(link)).is_err(), "{line} was applied");
    }
    client.close().await;
}

/// L4: `git replace EVIL GOOD` made the user's `git log -p` show GOOD's diff under EVIL's id
/// while `git push` sent EVIL. A replace ref, loose or packed, is refused.
#[tokio::test]
async fn a_replace_ref_is_refused() {
    let ws = Workspace::new();
    git(&ws.root, &["init", "-q"]);
    std::fs::write(ws.root.join("build.sh"), "echo building\n").unwrap();
    git(&ws.root, &["add", "-A"]);
    git(&ws.root, &["commit", "-qm", "init"]);
    let client = Client::start(&ws, &[]).await;
    let ident = "-c user.name=d -c user.email=d@x -c commit.gpgsign=false";
    let made = client
        .run(&format!(
            "git {ident} commit -q --allow-empty -m good && good=$(git rev-parse HEAD) && git reset -q --soft HEAD~1 && echo 'touch PWNED' >> build.sh && git {ident} commit -qam good && git replace $(git rev-parse HEAD) $good"
        ))
        .await;
    assert!(made.text.contains("a replace ref"), "{}", made.text);
    assert!(git(&ws.root, &["for-each-ref", "refs/replace"]).is_empty());
    let packed = client
        .run(&format!(
            "git {ident} commit -q --allow-empty -m other && git replace HEAD HEAD~1 && git pack-refs --all && ls .git/refs/replace | wc -l"
        ))
        .await;
    assert!(packed.text.contains("a replace ref"), "{}", packed.text);
    assert!(git(&ws.root, &["for-each-ref", "refs/replace"]).is_empty());
    client.close().await;
}

/// L2: `BASH_ENV='${HOME%/[f]h}/ws/w5/t'` named `ws/w5/t` (bash strips `/fh` with the bracket
/// expression) but the judge did not match brackets, escapes or partial quotes: a command wrote
/// the file and the user's `bash -c true` ran it. Patterns are read as bash reads them.
#[tokio::test]
async fn a_variables_pattern_is_read_as_bash_reads_it() {
    let ws = Workspace::new();
    let base = ws.root.parent().unwrap();
    let home = base.join("fh");
    std::fs::create_dir_all(&home).unwrap();
    let spellings = [
        ("BASH_ENV", "${HOME%/[f]h}/ws/w1/t"),
        ("ENV", "${HOME%\\/fh}/ws/w2/t"),
        ("PYTHONSTARTUP", "${HOME%\"${NOPE}\"/fh}/ws/w3/t"),
        ("RUBYOPT", "-r${HOME%/\"f\"h}/ws/w4/t"),
        ("NODE_OPTIONS", "--require ${HOME%/f\\h}/ws/w5/t"),
    ];
    let mut env = vec![("HOME", home.to_str().unwrap())];
    env.extend(spellings.iter().copied());
    let client = Client::start_with_env(&ws, &[], &env).await;
    for n in 1..=5 {
        let reply = client.run(&format!("mkdir -p w{n} && echo 'touch PWNED' > w{n}/t")).await;
        assert!(reply.text.contains("not applied"), "w{n}: {}", reply.text);
        assert!(!ws.root.join(format!("w{n}/t")).exists(), "w{n}/t was written");
    }
    client.close().await;
}

/// L3: a command committed (or stashed, or staged) a new `bashrc` in a dotfiles root and put
/// the file itself back; the fold applied the commit, and the user's `git stash`, `git
/// checkout -- .` or `git stash pop` wrote the agent's version, which the next shell ran. What
/// a repository newly offers the user's git to write is judged like a write of that path.
#[tokio::test]
async fn a_commit_stash_or_index_cannot_carry_protected_content() {
    let ws = Workspace::new();
    let home = dotfiles(&ws);
    std::fs::write(ws.root.join("notes.md"), "notes\n").unwrap();
    git(&ws.root, &["add", "-A"]);
    git(&ws.root, &["commit", "-qm", "notes"]);
    let head = git(&ws.root, &["rev-parse", "HEAD"]);
    let client = Client::start_with_env(&ws, &[], &[("HOME", home.to_str().unwrap())]).await;
    let ident = "-c user.name=d -c user.email=d@x -c commit.gpgsign=false";
    let attacks = [
        // Commit, then restore the worktree file.
        format!(
            "cp bashrc /tmp/o && echo 'touch PWNED' >> bashrc && git add bashrc && git {ident} commit -qm tidy && cp /tmp/o bashrc"
        ),
        // A stash only: the worktree is clean again.
        format!("echo 'touch PWNED' >> bashrc && git {ident} stash -q"),
        // Staged only.
        "cp bashrc /tmp/o && echo 'touch PWNED' >> bashrc && git add bashrc && cp /tmp/o bashrc".to_string(),
        // A branch the user may check out.
        format!(
            "git checkout -q -b feature && echo 'touch PWNED' >> bashrc && git {ident} commit -qam x && git checkout -q - 2>/dev/null; git checkout -q main 2>/dev/null || git checkout -q master"
        ),
        // A symlink into the user's configuration, committed and gone from the worktree.
        format!(
            "ln -s {}/.bashrc 0001-x.patch && git add 0001-x.patch && git {ident} commit -qm x && rm 0001-x.patch",
            home.display()
        ),
        // A `.env` that sets what runs, committed and gone.
        format!(
            "printf 'NODE_OPTIONS=--require ./evil.js\\n' > .env && git add .env && git {ident} commit -qm x && rm .env"
        ),
    ];
    for line in &attacks {
        let reply = client.run(line).await;
        assert!(reply.text.contains("your own git would write it there later"), "{line}: {}", reply.text);
        assert_eq!(git(&ws.root, &["rev-parse", "HEAD"]), head, "{line}: the commit was applied");
        assert!(git(&ws.root, &["stash", "list"]).is_empty(), "{line}: the stash was applied");
        assert!(git(&ws.root, &["diff", "--cached", "--name-only"]).is_empty(), "{line}: the index was applied");
        assert!(!git(&ws.root, &["branch"]).contains("feature"), "{line}: the branch was applied");
        // What the user does to throw the agent's edits away writes nothing of the agent's.
        git(&ws.root, &["checkout", "--", "."]);
        assert_eq!(std::fs::read_to_string(ws.root.join("bashrc")).unwrap(), "# rc\n", "{line}");
    }
    // Ordinary work is untouched: a commit of other files, a stash of them.
    let reply = client
        .run(&format!(
            "echo more >> notes.md && git {ident} commit -qam more && echo wip >> notes.md && git {ident} stash -q"
        ))
        .await;
    assert!(!reply.text.contains("not applied"), "{}", reply.text);
    assert_ne!(git(&ws.root, &["rev-parse", "HEAD"]), head);
    assert!(!git(&ws.root, &["stash", "list"]).is_empty());
    client.close().await;
}

/// M1, M4 (the twelfth review): files of git's own state name commits the user's git checks
/// out later: `ORIG_HEAD` (`git reset --hard ORIG_HEAD`), a merge's autostash (`git merge
/// --abort`), a rebase's `orig-head` (`git rebase --abort`), `BISECT_START` (`git bisect
/// reset`), a reflog line (`git checkout -`). Each commit such a file newly names is judged as
/// a checkout; an operation's state is refused whole.
#[tokio::test]
async fn git_state_files_cannot_name_protected_content() {
    let ws = Workspace::new();
    let home = dotfiles(&ws);
    let head = git(&ws.root, &["rev-parse", "HEAD"]);
    let client = Client::start_with_env(&ws, &[], &[("HOME", home.to_str().unwrap())]).await;
    // An unreferenced commit whose `bashrc` runs the agent's line.
    let evil = "b=$(printf '# rc\\ntouch PWNED\\n' | git hash-object -w --stdin) && t=$(printf '100644 blob %s\\tbashrc\\n' $b | git mktree) && E=$(git -c user.name=d -c user.email=d@x commit-tree $t -p HEAD -m tidy)";
    let states = [
        ("echo $E > .git/ORIG_HEAD", ".git/ORIG_HEAD"),
        (
            "S=$(git -c user.name=d -c user.email=d@x commit-tree $t -p HEAD -m wip) && echo $S > .git/MERGE_AUTOSTASH && git rev-parse HEAD > .git/MERGE_HEAD && echo m > .git/MERGE_MSG && : > .git/MERGE_MODE",
            ".git/MERGE_HEAD",
        ),
        (
            "mkdir -p .git/rebase-merge && echo $E > .git/rebase-merge/orig-head && echo refs/heads/main > .git/rebase-merge/head-name && git rev-parse HEAD > .git/rebase-merge/onto && : > .git/rebase-merge/interactive && : > .git/rebase-merge/git-rebase-todo",
            ".git/rebase-merge/head-name",
        ),
        ("echo $E > .git/BISECT_START && : > .git/BISECT_LOG", ".git/BISECT_LOG"),
        (
            "printf '%s %s d <d@x> 1795826000 +0000\\tcheckout: moving from %s to main\\n' $E $(git rev-parse HEAD) $E >> .git/logs/HEAD",
            ".git/logs/HEAD",
        ),
    ];
    for (state, whole) in states {
        let reply = client.run(&format!("{evil} && {state}")).await;
        assert!(
            reply.text.contains("names a commit that holds") || reply.text.contains("an operation in progress"),
            "{state}: {}",
            reply.text
        );
        let logs = std::fs::read_to_string(ws.root.join(".git/logs/HEAD")).unwrap_or_default();
        for file in [".git/ORIG_HEAD", ".git/MERGE_AUTOSTASH", ".git/rebase-merge", ".git/BISECT_START"] {
            assert!(!ws.root.join(file).exists(), "{state}: {file} was applied");
        }
        assert!(!ws.root.join(whole).exists() || whole == ".git/logs/HEAD", "{state}: {whole} was applied");
        assert!(!logs.contains("moving from") || !logs.contains("tidy"), "{state}");
        assert_eq!(git(&ws.root, &["rev-parse", "HEAD"]), head);
    }
    // `git checkout -` goes where it went before, not to the agent's commit.
    assert!(!std::fs::read_to_string(ws.root.join(".git/logs/HEAD")).unwrap_or_default().contains("to main"));
    client.close().await;
}

/// M2: `rebase-merge/strategy` (or `strategy` in `sequencer/opts`) names `git-merge-<x>`, a
/// program `--continue` runs. Only git's own strategies pass.
#[tokio::test]
async fn a_foreign_merge_strategy_is_refused() {
    let ws = Workspace::new();
    git(&ws.root, &["init", "-q"]);
    git(&ws.root, &["add", "-A"]);
    git(&ws.root, &["commit", "-qm", "init"]);
    let client = Client::start(&ws, &[]).await;
    for (line, file) in [
        ("mkdir -p .git/rebase-merge && echo x/evil > .git/rebase-merge/strategy", ".git/rebase-merge/strategy"),
        (
            "mkdir -p .git/sequencer && printf '[options]\\n\\tstrategy = y/run\\n' > .git/sequencer/opts",
            ".git/sequencer/opts",
        ),
    ] {
        let reply = client.run(line).await;
        assert!(reply.text.contains("merge strategy"), "{line}: {}", reply.text);
        assert!(!ws.root.join(file).exists(), "{line}: applied");
    }
    let ok =
        client.run("mkdir -p .git/sequencer && printf '[options]\\n\\tstrategy = ort\\n' > .git/sequencer/opts").await;
    assert!(!ok.text.contains("merge strategy"), "{}", ok.text);
    client.close().await;
}

/// M3: a linked worktree shares its repository's config, so a relative `core.hooksPath`
/// names a hooks dir in it too: a command's write there, and a file operation's, are judged.
#[tokio::test]
async fn a_linked_worktrees_hooks_path_is_protected() {
    let ws = Workspace::new();
    git(&ws.root, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(ws.root.join(".githooks")).unwrap();
    std::fs::write(ws.root.join(".githooks/pre-commit"), "#!/bin/sh\n").unwrap();
    git(&ws.root, &["add", "-A"]);
    git(&ws.root, &["commit", "-qm", "init"]);
    git(&ws.root, &["config", "core.hooksPath", ".githooks"]);
    let client = Client::start(&ws, &[]).await;
    let reply = client
        .run("git worktree add -q -b feat wt2 && mkdir -p wt2/.githooks && printf '#!/bin/sh\\ntouch PWNED\\n' > wt2/.githooks/pre-commit && chmod +x wt2/.githooks/pre-commit")
        .await;
    assert!(reply.text.contains("not applied") && reply.text.contains("core.hookspath"), "{}", reply.text);
    let hook = std::fs::read_to_string(ws.root.join("wt2/.githooks/pre-commit")).unwrap_or_default();
    assert!(!hook.contains("PWNED"), "the hook was applied");
    // Made by the user, the worktree's hooks dir is judged for file operations too.
    let _ = std::fs::remove_dir_all(ws.root.join("wt2"));
    git(&ws.root, &["worktree", "prune"]);
    git(&ws.root, &["worktree", "add", "-q", "-b", "feat2", "wt3"]);
    let made = client
        .file(serde_json::json!({"operation": "create_file", "path": "wt3/.githooks/post-commit", "content": "#!/bin/sh\n"}))
        .await;
    assert!(made.is_error || made.text.contains("asked") || made.text.contains("hooksPath"), "{}", made.text);
    assert!(!ws.root.join("wt3/.githooks/post-commit").exists());
    client.close().await;
}
