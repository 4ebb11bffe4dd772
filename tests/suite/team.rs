//! The README's team setup runs as written: its replica command twice (two clones of one
//! repository, one with an `ssh` remote and one with `https`, each with a state dir of its
//! own, as on two machines) on one PostgreSQL database, behind `deploy/nginx.conf`, with only
//! addresses and paths put in. Through the proxy a client keeps a terminal session and
//! writes a plan and a memory; each replica, asked directly, has them. Runs as root (nginx's
//! master creates its temp dirs under `/var/lib/nginx`); without nginx it says it skipped,
//! and in CI (`CI=true`) that fails instead.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::json;

use super::common::{BIN, Workspace, loopback_http};
use super::deploy::{Deployed, connect, free_port, healthy};

const TOKEN: &str = "team-test-token-0123456789abcdef";

fn repo_file(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// The text of `from` with each `(what, with)` put in, every `what` required to be there (so
/// a recipe that changes fails here rather than running something else).
fn put_in(from: &str, swaps: &[(&str, String)]) -> String {
    swaps.iter().fold(from.to_string(), |text, (what, with)| {
        assert!(text.contains(what), "`{what}` is no longer in the recipe:\n{from}");
        text.replace(what, with)
    })
}

/// The shell block after the README's `team-replica` marker.
fn readme_block() -> String {
    let readme = repo_file("README.md");
    let marker = readme.find("<!-- team-replica:").expect("the README's team block is marked");
    let block = &readme[marker..];
    let start = block.find("```sh\n").unwrap() + "```sh\n".len();
    block[start..start + block[start..].find("```").unwrap()].to_string()
}

/// The block's lines that start with `program` (after `VAR=value` prefixes), continuations
/// joined, split into words.
fn command_of(block: &str, program: &str) -> Vec<String> {
    let joined = block.replace("\\\n", " ");
    let line = joined
        .lines()
        .find(|l| l.split_whitespace().find(|w| !w.contains('=')) == Some(program))
        .unwrap_or_else(|| panic!("no `{program}` command in the README's team block"));
    let words = shlex::split(line).unwrap();
    words.into_iter().skip_while(|w| w != program).collect()
}

/// `command` started with no input or output, as a service would be.
fn spawn_quiet(command: &mut Command) -> Child {
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()
}

/// A clone of the team's repository at `path` whose `origin` is `remote`.
fn clone_at(path: &Path, remote: &str) {
    std::fs::create_dir_all(path).unwrap();
    std::fs::write(path.join("README.md"), "# team project\n").unwrap();
    for args in [&["init", "-q"][..], &["remote", "add", "origin", remote]] {
        let out = Command::new("git").args(args).current_dir(path).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

fn nginx() -> Option<PathBuf> {
    let found =
        ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"].iter().map(PathBuf::from).find(|p| p.exists());
    if found.is_none() {
        assert!(std::env::var_os("CI").is_none(), "nginx is required in CI (Debian's `nginx` package)");
        let _ = writeln!(std::io::stderr(), "skipped: no nginx (Debian's `nginx` package)");
    }
    found
}

#[tokio::test]
async fn two_replicas_behind_the_readmes_nginx_share_a_plan_and_keep_each_client_on_one() {
    if !rustix::process::geteuid().is_root() {
        let _ = writeln!(std::io::stderr(), "skipped: nginx's master process runs as root");
        return;
    }
    let Some(nginx) = nginx() else { return };
    let Some(pg) = super::pg::server() else { return };
    let url = pg.database().await;
    // Where the tests' workspaces go (not a temp dir: commands get a private one).
    let ws = Workspace::new();
    let base = ws.root.parent().unwrap();
    let token = base.join("token");
    std::fs::write(&token, TOKEN).unwrap();
    // A token file is the user's alone, or the server refuses it.
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();

    let block = readme_block();
    let replica = command_of(&block, "toolbelt-mcp").join(" ");
    let remotes = ["git@github.com:team/project.git", "https://github.com/team/project"];
    let ports = [free_port(), free_port()];
    let mut replicas = Vec::new();
    for (n, (remote, port)) in remotes.iter().zip(ports).enumerate() {
        let machine = base.join(format!("machine{n}"));
        let root = machine.join("project");
        clone_at(&root, remote);
        let argv = put_in(
            &replica,
            &[
                ("0.0.0.0:8765", format!("127.0.0.1:{port}")),
                ("/srv/project", root.display().to_string()),
                ("/etc/toolbelt-mcp/token", token.display().to_string()),
                ("mcp.team.example", "localhost".to_string()),
                ("postgres://toolbelt@db.internal:5432/toolbelt", url.clone()),
            ],
        );
        let child = spawn_quiet(
            Command::new(BIN)
                .args(argv.split(' ').skip(1))
                .env("XDG_STATE_HOME", machine.join("state"))
                .env("XDG_CONFIG_HOME", machine.join("config")),
        );
        let mut replica = Deployed { child, port };
        healthy(&mut replica).await;
        replicas.push(replica);
    }

    // The proxy: the README's nginx command with the recipe, addresses put in.
    let nginx_argv = command_of(&block, "nginx");
    assert_eq!(nginx_argv, ["nginx", "-c", "deploy/nginx.conf"], "the README starts nginx on the recipe");
    let proxy_port = free_port();
    let conf = put_in(
        &repo_file("deploy/nginx.conf"),
        &[
            ("server 10.0.0.11:8765;", format!("server 127.0.0.1:{};", ports[0])),
            ("server 10.0.0.12:8765;", format!("server 127.0.0.1:{};", ports[1])),
            ("listen 127.0.0.1:8080;", format!("listen 127.0.0.1:{proxy_port};")),
            ("pid /run/nginx-toolbelt.pid;", format!("pid {};", base.join("nginx.pid").display())),
        ],
    );
    let conf_path = base.join("nginx.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let child =
        spawn_quiet(Command::new(&nginx).arg("-p").arg(base).arg("-c").arg(&conf_path).args(["-g", "daemon off;"]));
    let mut proxy = Deployed { child, port: proxy_port };
    healthy(&mut proxy).await;

    // Through the proxy: a terminal session lives on one replica, and the client's next
    // requests reach it; a plan and a memory go to the shared database.
    let client = connect(proxy_port, TOKEN).await;
    let pty = client.term("start_session", json!({})).await;
    assert!(!pty.is_error, "{}", pty.text);
    let id = pty.structured["session_id"].as_str().unwrap().to_string();
    for n in 0..5 {
        let typed =
            client.term("send_input", json!({"session_id": id, "input": format!("echo turn-$((40 + {n}))\n")})).await;
        assert!(!typed.is_error && typed.text.contains(&format!("turn-{}", 40 + n)), "{}", typed.text);
    }
    let added = client.todo("add", json!({"todos": [{"title": "ship the team server"}]})).await;
    assert!(!added.is_error, "{}", added.text);
    let stored = client.memory("store", json!({"content": "the proxy keeps each client on one replica"})).await;
    assert!(!stored.is_error, "{}", stored.text);
    client.close().await;

    // Each replica, asked directly, has the plan and the memory: one workspace, the
    // repository's, whichever remote form its clone has.
    for port in ports {
        let direct = connect(port, TOKEN).await;
        let plan = direct.todo("read", json!({})).await;
        assert!(plan.text.contains("ship the team server"), "replica on {port}: {}", plan.text);
        let found = direct.memory("search", json!({"query": "replica"})).await;
        assert_eq!(found.structured["total"], 1, "replica on {port}: {}", found.text);
        direct.close().await;
    }

    // Metrics are per process: each replica serves them, the proxy does not.
    let http = loopback_http();
    let through = http.get(format!("http://127.0.0.1:{proxy_port}/metrics")).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(through.status(), 404);
    let mut calls = 0.0;
    for port in ports {
        let metrics = http.get(format!("http://127.0.0.1:{port}/metrics")).bearer_auth(TOKEN).send().await.unwrap();
        assert!(metrics.status().is_success());
        let text = metrics.text().await.unwrap();
        calls += text
            .lines()
            .filter(|l| l.starts_with("toolbelt_tool_calls_total{") && l.contains("operation=\"send_input\""))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>();
    }
    assert_eq!(calls, 5.0, "the session's five inputs were served, by the replica that holds it");
    drop(proxy);
    drop(replicas);
}
