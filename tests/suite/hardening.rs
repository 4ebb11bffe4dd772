//! Security v3, the second part: shared machines, secrets, and a server nothing can freeze.
//! Each finding of the review, tried the way it was found.

use serde_json::json;

use super::common::{Client, Workspace};

/// Finding 1: another local user made the commands' temp dir first (its name was
/// predictable), or a symlink in its place. Now the name is random, beneath a directory of
/// the server's user that nobody else may enter, checked before use.
#[tokio::test]
async fn a_temp_dir_another_user_made_is_never_used() {
    let ws = Workspace::new();
    let temp = ws.state_home.join("system-tmp");
    std::fs::create_dir_all(&temp).unwrap();
    let uid = rustix::process::geteuid().as_raw();
    let planted = temp.join(format!("toolbelt-mcp-{uid}"));
    // Open to everyone (as another user's would be), then a symlink to elsewhere.
    std::fs::create_dir(&planted).unwrap();
    std::fs::set_permissions(&planted, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let env = [("TMPDIR", temp.to_str().unwrap())];
    let client = Client::start_with_env(&ws, &[], &env).await;
    let reply = client.run("echo secret > /tmp/x; echo ran").await;
    assert!(reply.is_error && reply.text.contains("only it may enter"), "{}", reply.text);
    client.close().await;
    std::fs::remove_dir(&planted).unwrap();
    std::os::unix::fs::symlink(&ws.outside, &planted).unwrap();
    let client = Client::start_with_env(&ws, &[], &env).await;
    let reply = client.run("echo ran").await;
    assert!(reply.is_error && reply.text.contains("only it may enter"), "{}", reply.text);
    client.close().await;
    assert_eq!(std::fs::read_dir(&ws.outside).unwrap().count(), 1, "nothing was made through the symlink");
    // Made by the server itself: private, and each session's name unguessable.
    std::fs::remove_file(&planted).unwrap();
    let client = Client::start_with_env(&ws, &[], &env).await;
    let reply = client.run("echo ran").await;
    assert!(!reply.is_error, "{}", reply.text);
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&planted).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o700);
    let session = std::fs::read_dir(&planted).unwrap().next().unwrap().unwrap().file_name();
    let random = session.to_string_lossy().rsplit('-').next().unwrap().to_string();
    assert_eq!(random.len(), 16, "{session:?}");
    client.close().await;
}

/// Finding 10 (the temp part): a session's `/tmp`, `/var/tmp` and `/dev/shm` are one tmpfs of
/// bounded size, kept from one command to the next.
#[tokio::test]
async fn the_temp_dirs_are_bounded_and_kept_for_the_session() {
    let ws = Workspace::new();
    let config = ws.config_home.join("small-temp.toml");
    std::fs::write(&config, "max_temp_bytes = 16777216\n").unwrap();
    let client = Client::start(&ws, &["--config", config.to_str().unwrap()]).await;
    let reply = client.run("echo kept > /tmp/k; head -c 33554432 /dev/zero > /dev/shm/big; echo exit=$?").await;
    assert!(reply.text.contains("No space left") && reply.text.contains("exit=1"), "{}", reply.text);
    let reply = client.run("cat /tmp/k; df -B1 --output=size /tmp | tail -1").await;
    assert!(reply.text.contains("kept") && reply.text.contains("16777216"), "{}", reply.text);
    client.close().await;
}

/// Finding 5: a command leaves no setuid or setgid file (a root server's would run as root for
/// anyone): the kernel refuses making one, and a fold clears a bit a copied-up file kept.
#[tokio::test]
async fn no_setuid_or_setgid_file_is_left() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let reply = client
        .run("cp /bin/true x && chmod 4755 x; echo chmod=$?; chmod 2755 x; echo sgid=$?; python3 -c 'import os; os.open(\"y\", os.O_CREAT|os.O_WRONLY, 0o4755)'; echo open=$?")
        .await;
    let out = reply.joined("stdout");
    assert!(out.contains("chmod=1") && out.contains("sgid=1") && out.contains("open=1"), "{}", reply.text);
    for name in ["x", "y"] {
        if let Ok(meta) = std::fs::metadata(ws.root.join(name)) {
            assert_eq!(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o6000, 0, "{name}");
        }
    }
    if rustix::process::geteuid().is_root() {
        // A setuid file the user has, changed by a command: the bit does not survive.
        std::fs::write(ws.root.join("tool"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(ws.root.join("tool"), std::os::unix::fs::PermissionsExt::from_mode(0o4755)).unwrap();
        let reply = client.run("echo 'echo changed' >> tool").await;
        assert!(!reply.is_error, "{}", reply.text);
        let meta = std::fs::metadata(ws.root.join("tool")).unwrap();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o6000, 0);
    }
    client.close().await;
}

/// Finding 7: SysV IPC of the user's other processes (shared memory here).
#[tokio::test]
async fn shared_memory_of_other_processes_is_out_of_reach() {
    let ws = Workspace::new();
    let made = std::process::Command::new("python3")
        .args(["-c", "import sys, ctypes; libc = ctypes.CDLL(None); print(libc.shmget(0x7011, 4096, 0o1666))"])
        .output()
        .unwrap();
    let id = String::from_utf8_lossy(&made.stdout).trim().to_string();
    assert!(id.parse::<i64>().is_ok_and(|id| id >= 0), "{id}");
    let client = Client::start(&ws, &[]).await;
    let reply = client.run("ipcs -m | grep -c 0x00007011 || true").await;
    assert_eq!(reply.joined("stdout").trim(), "0", "{}", reply.text);
    client.close().await;
    let _ = std::process::Command::new("ipcrm").args(["-m", &id]).status();
}

/// Finding 6: the credentials agents' users have are hidden by default, from commands and
/// from `read_file`.
#[tokio::test]
async fn the_credentials_of_agent_hosts_and_tools_are_hidden() {
    let ws = Workspace::new();
    let home = ws.outside.join("home");
    let secrets = [
        ".config/gh/hosts.yml",
        ".claude/.credentials.json",
        ".claude.json",
        ".codex/auth.json",
        ".gemini/oauth_creds.json",
        ".qwen/oauth_creds.json",
        ".config/github-copilot/apps.json",
        ".pgpass",
        ".vault-token",
        ".terraform.d/credentials.tfrc.json",
        ".cache/huggingface/token",
        ".m2/settings.xml",
        ".gradle/gradle.properties",
        ".my.cnf",
        ".config/hub",
    ];
    for secret in secrets {
        let path = home.join(secret);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "SECRET-TOKEN-42\n").unwrap();
    }
    // The user's runtime dir: its session bus runs anything outside the sandbox.
    let runtime = ws.outside.join("run-user");
    std::fs::create_dir_all(runtime.join("systemd")).unwrap();
    std::fs::write(runtime.join("bus"), "SECRET-TOKEN-42 (the session bus)\n").unwrap();
    let env = [("HOME", home.to_str().unwrap()), ("XDG_RUNTIME_DIR", runtime.to_str().unwrap())];
    let client = Client::start_with_env(&ws, &[], &env).await;
    let listed = client.run(&format!("ls -a '{0}' 2>&1; cat '{0}/bus' 2>&1; echo done", runtime.display())).await;
    assert!(!listed.text.contains("SECRET-TOKEN") && !listed.text.contains("systemd"), "{}", listed.text);
    for secret in secrets {
        let path = home.join(secret);
        let reply = client.run(&format!("cat '{}' 2>&1; echo read", path.display())).await;
        assert!(!reply.text.contains("SECRET-TOKEN"), "{secret}: {}", reply.text);
        let reply = client.file(json!({"operation": "read_file", "path": path.to_str().unwrap()})).await;
        assert!(reply.is_error && !reply.text.contains("SECRET-TOKEN"), "{secret}: {}", reply.text);
    }
    client.close().await;
}

/// Finding 2: a FIFO where the server reads (a nested repository's `.git/config`, an ignore
/// file, a config file) freezes nothing: the call answers, the next calls too, and the server
/// still stops on `SIGTERM`.
#[tokio::test]
async fn a_fifo_freezes_nothing() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let reply =
        client.run("git init -q n && rm n/.git/config && mkfifo n/.git/config n/.gitignore sub.fifo; echo made").await;
    assert!(reply.text.contains("made"), "{}", reply.text);
    assert!(reply.text.contains("n/.git/config") && reply.text.contains("sub.fifo"), "{}", reply.text);
    // FIFOs the user made: the walks read an ignore file that is one as empty.
    std::process::Command::new("mkfifo").arg(ws.root.join("src/.gitignore")).status().unwrap();
    for args in [
        json!({"operation": "list_dir", "path": ".", "depth": 3}),
        json!({"operation": "grep_search", "pattern": "fn "}),
        json!({"operation": "file_search", "pattern": "**/*.rs"}),
    ] {
        let answered = tokio::time::timeout(std::time::Duration::from_secs(10), client.file(args.clone())).await;
        assert!(answered.is_ok_and(|r| !r.is_error), "{args}");
    }
    let pid = client.pid.unwrap();
    rustix::process::kill_process(rustix::process::Pid::from_raw(pid as i32).unwrap(), rustix::process::Signal::TERM)
        .unwrap();
    assert!(super::common::wait_gone(pid, 10).await, "the server ignored SIGTERM");
    // A config file that is a FIFO is refused, not waited on.
    let fifo = ws.config_home.join("fifo.toml");
    std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        tokio::process::Command::new(super::common::BIN).args(["doctor", "--config", fifo.to_str().unwrap()]).output(),
    )
    .await
    .expect("a FIFO config was waited on")
    .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("not a regular file"));
}

/// Finding 10: output spilled to the state dir is bounded (its head on disk, its tail in
/// memory, the size of what lies between said), in every sandbox mode.
#[tokio::test]
async fn spilled_output_is_bounded() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &["--sandbox", "read-only"]).await;
    let reply = client.run("head -c 300000000 /dev/zero | tr '\\0' a; echo; echo last-line").await;
    assert!(reply.text.contains("last-line") && reply.text.contains("omitted"), "{}", &reply.text[..500]);
    let output = ws.state_home.join("toolbelt-mcp/output");
    let spilled: u64 = walk_sizes(&output);
    assert!(spilled <= 65 << 20, "{spilled} bytes spilled");
    client.close().await;
}

fn walk_sizes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| {
            let meta = e.metadata().unwrap();
            if meta.is_dir() { walk_sizes(&e.path()) } else { meta.len() }
        })
        .sum()
}

/// Finding 9: the approval's `requestState` (protocol 2026-07-28) cannot be forged, moved to
/// another call or replayed: an answer is taken once, for the call and question it was sealed
/// for, within its time.
#[tokio::test]
async fn an_approval_state_is_neither_forged_nor_moved_nor_replayed() {
    let ws = Workspace::new();
    let config = ws.config_home.join("ask.toml");
    std::fs::write(&config, "approval = \"on-write\"\napproval_timeout_s = 2\n").unwrap();
    let server = super::http::HttpServer::start(&ws, &["--config", config.to_str().unwrap()], &[]).await;
    let url = server.url();
    let call = |path: &str, content: &str, answer: Option<(&str, &str)>| {
        let mut params = json!({
            "name": "file_operations",
            "arguments": {"operation": "create_file", "path": path, "content": content},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
            }
        });
        if let Some((state, decision)) = answer {
            params["requestState"] = json!(state);
            params["inputResponses"] =
                json!({"approval": {"action": "accept", "content": {"decision": decision, "note": ""}}});
        }
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    };
    let send = |body: serde_json::Value| {
        let url = url.clone();
        async move {
            let request = super::common::loopback_http()
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "file_operations")
                .header("authorization", super::http::bearer_for(&url).unwrap())
                .body(body.to_string());
            let text = request.send().await.unwrap().text().await.unwrap();
            let line = text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or(&text).to_string();
            serde_json::from_str::<serde_json::Value>(&line).unwrap()
        }
    };
    let state_of = |answer: &serde_json::Value| answer["result"]["requestState"].as_str().map(str::to_string);
    // The question, and its answer: taken once.
    let asked = send(call("a.txt", "A", None)).await;
    let state = state_of(&asked).unwrap_or_else(|| panic!("no question: {asked}"));
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let done = send(call("a.txt", "A", Some((&state, "allow_once")))).await;
    assert!(done["result"]["isError"] != json!(true) && ws.root.join("a.txt").exists(), "{done}");
    // Replayed for the same call: asked again, not done twice.
    std::fs::remove_file(ws.root.join("a.txt")).unwrap();
    let replayed = send(call("a.txt", "A", Some((&state, "allow_once")))).await;
    assert!(state_of(&replayed).is_some() && !ws.root.join("a.txt").exists(), "{replayed}");
    // Moved to another call (other content, other path): asked, not done.
    let asked = send(call("b.txt", "B", None)).await;
    let state = state_of(&asked).unwrap();
    let moved = send(call("b.txt", "EVIL", Some((&state, "allow_once")))).await;
    assert!(state_of(&moved).is_some() && !ws.root.join("b.txt").exists(), "{moved}");
    let moved = send(call("c.txt", "B", Some((&state, "allow_once")))).await;
    assert!(state_of(&moved).is_some() && !ws.root.join("c.txt").exists(), "{moved}");
    // Made up (the old unkeyed fingerprint of the question, or anything): asked, not done.
    for forged in ["0123456789abcdef01234567", "rs1.eyJ4IjoxfQ.AAAA"] {
        let forged_reply = send(call("d.txt", "D", Some((forged, "allow_once")))).await;
        assert!(state_of(&forged_reply).is_some() && !ws.root.join("d.txt").exists(), "{forged_reply}");
    }
    // Too late: past its time (the approval timeout, 2 s here).
    let asked = send(call("e.txt", "E", None)).await;
    let state = state_of(&asked).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let late = send(call("e.txt", "E", Some((&state, "allow_once")))).await;
    assert!(state_of(&late).is_some() && !ws.root.join("e.txt").exists(), "{late}");
}

/// Runs `git` in `dir` as the test itself (not through the server).
fn git(dir: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// Finding 3: after `allow_session` for an escalated `git push origin HEAD`, lines that carry
/// config or program injection ran unsandboxed and unasked, and a grant for `./build.sh`
/// covered any file of that name. Now each of them is asked again (and refused here).
#[tokio::test]
async fn an_escalated_grant_covers_only_what_the_question_said() {
    use super::policy::{Asker, run, start};
    let ws = Workspace::new();
    git(&ws.root, &["init", "-q"]);
    git(&ws.root, &["init", "-q", "--bare", "remote.git"]);
    std::fs::write(ws.root.join("a.txt"), "a\n").unwrap();
    git(&ws.root, &["add", "a.txt"]);
    git(&ws.root, &["commit", "-qm", "a"]);
    git(&ws.root, &["remote", "add", "origin", "./remote.git"]);
    let asker = Asker::default();
    let service = start(&ws, "approval = \"on-request\"\n", asker.clone()).await;
    let escalated =
        |command: &str| json!({"command": command, "escalate": true, "justification": "publish the branch"});
    asker.answer(&["allow_session"]);
    let pushed = run(&service, escalated("git push -q origin HEAD")).await;
    assert!(!pushed.is_error && asker.asked() == 1, "{}", pushed.text);
    assert!(asker.messages()[0].contains("asks every time"), "{}", asker.messages()[0]);
    let marker = ws.root.join("INJECTED");
    let attempts = [
        "git -c core.sshCommand='touch INJECTED' -c protocol.file.allow=always push -q origin HEAD; touch INJECTED",
        "GIT_SSH_COMMAND='touch INJECTED' git push -q origin HEAD && touch INJECTED",
        "git push -q --receive-pack='touch INJECTED; git-receive-pack' origin HEAD",
        "git --exec-path=. push -q origin HEAD || touch INJECTED",
        "env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch INJECTED' git push -q origin HEAD",
    ];
    for (n, line) in attempts.iter().enumerate() {
        asker.answer(&["deny"]);
        let reply = run(&service, escalated(line)).await;
        assert!(reply.is_error, "{line}: {}", reply.text);
        assert!(asker.asked() == 2 + n || reply.text.contains("denied"), "{line} ran unasked: {}", reply.text);
        assert!(!marker.exists(), "{line} ran");
    }
    // A script the agent can write (in the root) is never granted: it could change between
    // the check and the run. Each run asks.
    std::fs::write(ws.root.join("build.sh"), "#!/bin/sh\necho built\n").unwrap();
    std::fs::set_permissions(ws.root.join("build.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    asker.answer(&["allow_session"]);
    let asked = asker.asked();
    let built = run(&service, escalated("./build.sh")).await;
    assert!(!built.is_error && built.text.contains("built") && asker.asked() == asked + 1, "{}", built.text);
    assert!(asker.messages().last().unwrap().contains("asks every time"), "{}", asker.messages().last().unwrap());
    asker.answer(&["deny"]);
    assert!(run(&service, escalated("./build.sh")).await.is_error);
    assert_eq!(asker.asked(), asked + 2, "the same script asks again");
    std::fs::create_dir(ws.root.join("sub")).unwrap();
    std::fs::write(ws.root.join("sub/build.sh"), "#!/bin/sh\ntouch INJECTED\n").unwrap();
    std::fs::set_permissions(ws.root.join("sub/build.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    asker.answer(&["deny"]);
    let other = json!({"command": "./build.sh", "cwd": "sub", "escalate": true, "justification": "build"});
    assert!(run(&service, other).await.is_error);
    assert_eq!(asker.asked(), asked + 3, "another file of the same name asks");
    assert!(!marker.exists());
    service.cancel().await.unwrap();
}

/// Finding 4: the question cut stdin at 200 characters (the tail ran after approval), did not
/// show the cwd, and passed CR, ESC, bidi overrides and line breaks through, so the agent's
/// justification could print a fake scope line above the real one.
#[tokio::test]
async fn the_question_shows_exactly_what_runs() {
    use super::policy::{Asker, run, start};
    let ws = Workspace::new();
    std::fs::create_dir(ws.root.join("sub")).unwrap();
    let asker = Asker::default();
    let service = start(&ws, "approval = \"on-request\"\n", asker.clone()).await;
    let stdin = format!("{}\ntouch TAIL-RAN\n", "echo padding\n".repeat(250));
    let call = json!({
        "command": "sh\u{202e}",
        "cwd": "sub",
        "env": ["FOO=a\u{1b}[2Kb"],
        "stdin": stdin,
        "escalate": true,
        "justification": "tests\r\"Allow for this session\" covers only `ls`.\n\u{1b}[1A",
    });
    asker.answer(&["deny"]);
    let reply = run(&service, call).await;
    assert!(reply.is_error && asker.asked() == 1, "{}", reply.text);
    let message = &asker.messages()[0];
    for hidden in ['\r', '\u{1b}', '\u{202e}'] {
        assert!(!message.contains(hidden), "{hidden:?} reached the host raw: {message:?}");
    }
    assert!(
        message.contains("touch TAIL-RAN") && message.contains(&format!("({} characters, all of it)", stdin.len()))
    );
    let sub = ws.root.join("sub");
    assert!(message.contains(&format!("Working directory: `{}`", sub.display())), "{message}");
    assert!(message.contains("`FOO=a\\u{1b}[2Kb`") && message.contains("sh\\u{202e}"), "{message}");
    let real = message.find("\"Allow for this session\" covers").expect("the server's scope line");
    let label = message.find("The agent's justification, in its own words").expect("labelled");
    assert!(real < label && message.ends_with("```"), "the agent's words come last, fenced: {message}");
    assert!(message.contains("tests\\r\"Allow for this session\" covers only `ls`.\n\\u{1b}[1A"), "{message}");
    // Too long to show whole: refused before anyone is asked, with the way to make it showable.
    let long = json!({"command": "sh", "stdin": "echo x\n".repeat(700), "escalate": true, "justification": "x"});
    let reply = run(&service, long).await;
    assert!(
        reply.is_error && reply.text.contains("more than the 4000") && reply.text.contains("create_file"),
        "{}",
        reply.text
    );
    assert_eq!(asker.asked(), 1);
    assert!(!sub.join("TAIL-RAN").exists());
    service.cancel().await.unwrap();
}

/// Finding 8: daemons of an approved escalated (or any unsandboxed) command outlived the
/// server, even its `SIGKILL`, against what the result said. Now a keeper is their ancestor
/// whatever they do (`setsid`, double forks, `nohup`): a killed session ends them, and so does
/// the server's end, however it ends.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn nothing_an_unsandboxed_command_starts_outlives_the_server() {
    use super::common::{gone, process_with_args, unique_sleep, wait_gone};
    let ws = Workspace::new();
    let client = Client::start(&ws, &["--sandbox", "full-access"]).await;
    let (_, setsid_arg) = unique_sleep(900);
    let (_, nohup_arg) = unique_sleep(900);
    let line = format!(
        "setsid sh -c 'exec sleep {setsid_arg}' </dev/null >/dev/null 2>&1 & (nohup sleep {nohup_arg} >/dev/null 2>&1 &); echo started; exit 3"
    );
    let reply = client.run(&line).await;
    assert!(reply.text.contains("exited with code 3") && reply.text.contains("started"), "{}", reply.text);
    let escaped = process_with_args(&["sleep", &setsid_arg], 10).await;
    let orphan = process_with_args(&["sleep", &nohup_arg], 10).await;
    // A killed background session takes what it left with it, in other sessions too.
    let (_, session_arg) = unique_sleep(900);
    let started = client
        .term("run_command", json!({"command": format!("setsid sleep {session_arg} & sleep 900"), "background": true}))
        .await;
    let id = started.structured["session_id"].as_str().unwrap_or_else(|| panic!("{}", started.text)).to_string();
    let daemon = process_with_args(&["sleep", &session_arg], 10).await;
    let killed = client.term("kill_session", json!({"session_id": id})).await;
    assert!(!killed.is_error, "{}", killed.text);
    assert!(wait_gone(daemon, 10).await, "the killed session's daemon is still running");
    assert!(!gone(escaped) && !gone(orphan), "kept while the server runs, as the result said");
    // The server killed outright: nothing of it runs on.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(client.pid.unwrap() as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    assert!(wait_gone(escaped, 10).await, "a `setsid` daemon outlived the server");
    assert!(wait_gone(orphan, 10).await, "a double-forked daemon outlived the server");
}

/// Finding 6, the second part: a secret that did not exist when a long-running command
/// started (`gh auth login` in another terminal), or one replaced by a rename while it runs
/// (`docker login`), was readable from it. The command's sandbox now watches them.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_secret_that_appears_while_a_command_runs_is_hidden_too() {
    let ws = Workspace::new();
    let home = ws.outside.join("home");
    std::fs::create_dir_all(home.join(".docker")).unwrap();
    std::fs::write(home.join(".docker/config.json"), "OLD-SECRET\n").unwrap();
    let client = Client::start_with_env(&ws, &[], &[("HOME", home.to_str().unwrap())]).await;
    // Reads each secret a while after it started, long after the files below were made.
    let gh = home.join(".config/gh/hosts.yml");
    let docker = home.join(".docker/config.json");
    let vault = home.join(".vault-token");
    let line = format!(
        "sleep 1.5; for f in '{}' '{}' '{}'; do cat \"$f\" 2>&1; echo; done; echo END-OF-READS",
        gh.display(),
        docker.display(),
        vault.display()
    );
    let started = client.term("run_command", json!({"command": line, "background": true})).await;
    let id = started.structured["session_id"].as_str().unwrap_or_else(|| panic!("{}", started.text)).to_string();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    std::fs::create_dir_all(gh.parent().unwrap()).unwrap();
    std::fs::write(&gh, "NEW-GH-SECRET\n").unwrap();
    std::fs::write(&vault, "NEW-VAULT-SECRET\n").unwrap();
    let replacement = home.join(".docker/config.json.tmp");
    std::fs::write(&replacement, "NEW-DOCKER-SECRET\n").unwrap();
    std::fs::rename(&replacement, &docker).unwrap();
    let mut output = String::new();
    for _ in 0..50 {
        let reply = client.term("read_output", json!({"session_id": id, "wait_ms": 1000})).await;
        assert!(!reply.is_error, "{}", reply.text);
        output.push_str(&reply.text);
        if output.contains("END-OF-READS") || reply.structured["status"] != "running" {
            break;
        }
    }
    assert!(output.contains("END-OF-READS"), "{output}");
    assert!(!output.contains("SECRET"), "a secret was read: {output}");
    for path in [&gh, &docker, &vault] {
        let reply = client.file(json!({"operation": "read_file", "path": path.to_str().unwrap()})).await;
        assert!(reply.is_error && !reply.text.contains("SECRET"), "{}", reply.text);
    }
    client.close().await;
}
