//! `list_dir`: tree order, depth, filters, counts, symlinks, limits.

use serde_json::{Value, json};

use super::common::{Client, Workspace, op};

fn paths(reply: &Value) -> Vec<String> {
    reply["entries"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn lists_one_level_with_kinds_sizes_counts_and_links() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let reply = client.ok(op("list_dir", json!({}))).await;
    assert_eq!(
        paths(&reply.structured),
        ["README.md", "dangling", "data", "données", "link_inside", "link_outside", "link_outside_dir", "src"]
    );
    let text = &reply.text;
    assert!(text.starts_with("`.`: 8 entries\n"), "{text}");
    assert!(text.contains("src/ (4 entries)\n"), "lib.rs, main.rs, nested, loop; generated.rs is git-ignored: {text}");
    assert!(text.contains("README.md ("), "{text}");
    assert!(text.contains("link_inside -> src/lib.rs (symlink inside the roots)"), "{text}");
    assert!(
        text.contains("link_outside -> ") && text.contains("(symlink leading outside the roots: unusable)"),
        "{text}"
    );
    assert!(text.contains("dangling -> does/not/exist (broken symlink)"), "{text}");
    let entries = reply.structured["entries"].as_array().unwrap();
    let src = entries.iter().find(|e| e["path"] == "src").unwrap();
    assert_eq!((src["kind"].as_str(), src["children"].as_u64()), (Some("dir"), Some(4)));
    let readme = entries.iter().find(|e| e["path"] == "README.md").unwrap();
    let size = std::fs::metadata(ws.root.join("README.md")).unwrap().len();
    assert_eq!((readme["kind"].as_str(), readme["size"].as_u64()), (Some("file"), Some(size)));
    let outside = entries.iter().find(|e| e["path"] == "link_outside_dir").unwrap();
    assert_eq!((outside["kind"].as_str(), outside["leads"].as_str()), (Some("symlink"), Some("outside")));
    client.close().await;
}

#[tokio::test]
async fn depth_filters_and_limits() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.root.join(".git/objects")).unwrap();
    std::fs::write(ws.root.join(".git/HEAD"), "ref: x").unwrap();
    let client = Client::start(&ws, &[]).await;
    let deep = client.ok(op("list_dir", json!({"path": "src", "depth": 3}))).await;
    assert_eq!(
        paths(&deep.structured),
        ["src/lib.rs", "src/loop", "src/main.rs", "src/nested", "src/nested/deep", "src/nested/deep/notes.txt"]
    );
    assert!(deep.text.contains("nested/ (1 entries)\n  deep/ (1 entries)\n    notes.txt ("), "{}", deep.text);
    let hidden = client.ok(op("list_dir", json!({"include_hidden": true}))).await;
    let names = paths(&hidden.structured);
    assert!(
        names.contains(&".env".to_string())
            && names.contains(&".hidden".to_string())
            && names.contains(&".gitignore".to_string())
    );
    assert!(!names.iter().any(|n| n == ".git"), "`.git` is never listed: {names:?}");
    let all = client.ok(op("list_dir", json!({"respect_gitignore": false}))).await;
    let names = paths(&all.structured);
    assert!(names.contains(&"ignored".to_string()) && names.contains(&"debug.log".to_string()), "{names:?}");
    let limited = client.ok(op("list_dir", json!({"depth": 3, "limit": 3}))).await;
    assert_eq!(limited.structured["entries"].as_array().unwrap().len(), 3);
    assert_eq!(limited.structured["truncated"], true);
    let total = limited.structured["total"].as_u64().unwrap();
    assert!(total > 10, "{total}");
    assert!(limited.text.contains(&format!("… {} more entries not shown", total - 3)), "{}", limited.text);
    let file = client.err(op("list_dir", json!({"path": "README.md"}))).await;
    assert!(file.contains("`README.md` is not a directory"), "{file}");
    client.close().await;
}

#[tokio::test]
async fn symlink_cycles_do_not_loop() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let reply = client.ok(op("list_dir", json!({"depth": 10}))).await;
    let names = paths(&reply.structured);
    assert!(names.contains(&"src/loop".to_string()));
    assert!(!names.iter().any(|n| n.starts_with("src/loop/")), "the cycle was followed: {names:?}");
    client.close().await;
}

/// The server keeps a project's ignore files parsed while they are as they were; one changed
/// later is read again, even when it keeps its size and modification time (its change time
/// moves): `.gitignore` in the listed directory and `.git/info/exclude` above it.
#[tokio::test]
async fn an_ignore_file_changed_after_it_was_kept_is_read_again() {
    use std::time::Duration;
    let ws = Workspace::new();
    let gitignore = ws.root.join("kept/.gitignore");
    let exclude = ws.root.join(".git/info/exclude");
    std::fs::create_dir_all(ws.root.join("kept")).unwrap();
    std::fs::create_dir_all(ws.root.join(".git/info")).unwrap();
    for name in ["a.g1", "a.g2", "b.x1", "b.x2"] {
        std::fs::write(ws.root.join("kept").join(name), name).unwrap();
    }
    std::fs::write(&gitignore, "*.g1\n").unwrap();
    std::fs::write(&exclude, "*.x1\n").unwrap();
    // Settled (unchanged for 2 s), so that the server keeps their rules.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let client = Client::start(&ws, &[]).await;
    for _ in 0..2 {
        let reply = client.ok(op("list_dir", json!({"path": "kept"}))).await;
        assert_eq!(paths(&reply.structured), ["kept/a.g2", "kept/b.x2"], "read, then kept");
    }
    let rewrite = |file: &std::path::Path, text: &str| {
        let modified = std::fs::metadata(file).unwrap().modified().unwrap();
        std::fs::write(file, text).unwrap();
        std::fs::File::options().write(true).open(file).unwrap().set_modified(modified).unwrap();
    };
    rewrite(&gitignore, "*.g2\n");
    rewrite(&exclude, "*.x2\n");
    let reply = client.ok(op("list_dir", json!({"path": "kept"}))).await;
    assert_eq!(paths(&reply.structured), ["kept/a.g1", "kept/b.x1"], "a kept rule outlived its file");
    client.close().await;
}

/// The global git excludes (`core.excludesFile`) are honoured, and a change to git's config is
/// seen by the next walk, even one that keeps the file's size and modification time: the
/// server keeps the lookup between walks only while the config files are as they were.
#[tokio::test]
async fn the_global_excludes_follow_a_change_of_git_config() {
    use std::time::{Duration, SystemTime};
    let ws = Workspace::new();
    let git = ws.config_home.join("gitx");
    std::fs::create_dir_all(&git).unwrap();
    std::fs::write(git.join("ex-one"), "*.first\n").unwrap();
    std::fs::write(git.join("ex-two"), "*.second\n").unwrap();
    std::fs::write(ws.root.join("a.first"), "1").unwrap();
    std::fs::write(ws.root.join("b.second"), "2").unwrap();
    let config = git.join("config");
    let name = |excludes: &str| format!("[core]\n\texcludesFile = {}\n", git.join(excludes).display());
    // Last modified a minute ago, so that the server keeps what it found.
    let old = SystemTime::now() - Duration::from_secs(60);
    let write = |text: String| {
        let file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(&config).unwrap();
        std::io::Write::write_all(&mut &file, text.as_bytes()).unwrap();
        file.set_modified(old).unwrap();
    };
    write(name("ex-one"));
    // Its change time cannot be set back: wait until it is settled too, so that the lookup is
    // kept and the second listing below comes from what was kept.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let config_env = config.display().to_string();
    let client = Client::start_with_env(&ws, &[], &[("GIT_CONFIG_GLOBAL", &config_env)]).await;
    let listed = |reply: &Value| {
        paths(reply).into_iter().filter(|p| p.starts_with("a.") || p.starts_with("b.")).collect::<Vec<_>>()
    };
    for _ in 0..2 {
        let reply = client.ok(op("list_dir", json!({}))).await;
        assert_eq!(listed(&reply.structured), ["b.second"], "ex-one applies, looked up or kept");
    }
    // The same size and modification time, another excludes file: only the change time differs.
    write(name("ex-two"));
    let reply = client.ok(op("list_dir", json!({}))).await;
    assert_eq!(listed(&reply.structured), ["a.first"], "the change was missed");
    let found = client.ok(op("file_search", json!({"pattern": "*.first"}))).await;
    assert!(found.text.contains("a.first"), "{}", found.text);
    // Gone: no global excludes.
    std::fs::remove_file(&config).unwrap();
    let reply = client.ok(op("list_dir", json!({}))).await;
    assert_eq!(listed(&reply.structured), ["a.first", "b.second"]);
    client.close().await;
}
