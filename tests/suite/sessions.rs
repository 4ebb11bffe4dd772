//! Background commands and PTY sessions: polling, interaction, screens, kill, and the
//! server's shutdown leaving no process behind.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::common::{Client, Workspace, gone, wait_gone};

/// Reads a session until `pred` holds on everything read so far (or 10 s pass).
async fn read_until(client: &Client, id: &str, pred: impl Fn(&str) -> bool) -> (String, Value) {
    let mut all = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let page = client.term("read_output", json!({"session_id": id, "wait_ms": 200})).await;
        assert!(!page.is_error, "{}", page.text);
        all.push_str(page.joined("output").as_str());
        if pred(&all) || Instant::now() > deadline {
            return (all, page.structured);
        }
    }
}

#[tokio::test]
async fn background_command_is_polled_to_completion_and_listed() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let started = client
        .term(
            "run_command",
            json!({"command": "for i in 1 2 3; do echo tick $i; sleep 0.2; done; echo oops >&2; exit 4", "background": true, "wait_ms": 0}),
        )
        .await;
    assert!(!started.is_error, "{}", started.text);
    let id = started.structured["session_id"].as_str().unwrap().to_string();
    assert_eq!(started.structured["status"], "running");
    // What the start reply already showed is not shown again by `read_output`.
    let shown = started.joined("stdout");
    let (rest, last) = read_until(&client, &id, |all| all.contains("oops")).await;
    let all = shown + &rest;
    assert!(all.contains("tick 1\ntick 2\ntick 3\n"), "{all:?}");
    let mut status = last;
    let deadline = Instant::now() + Duration::from_secs(5);
    while status["status"] == "running" && Instant::now() < deadline {
        status = client.term("read_output", json!({"session_id": id, "wait_ms": 100})).await.structured;
    }
    assert_eq!((status["status"].as_str(), status["exit_code"].as_i64()), (Some("exited"), Some(4)));
    let again = client.term("read_output", json!({"session_id": id, "since": 0})).await;
    assert!(again.joined("output").as_str().starts_with("tick 1\n"), "cursors re-read from 0");

    let listed = client.term("list_sessions", json!({})).await;
    let row = &listed.structured["sessions"][0];
    assert_eq!(
        (row["session_id"].as_str(), row["kind"].as_str(), row["cwd"].as_str()),
        (Some(id.as_str()), Some("command"), Some("."))
    );
    assert_eq!((row["status"].as_str(), row["exit_code"].as_i64()), (Some("exited"), Some(4)));

    let input = client.term("send_input", json!({"session_id": id, "input": "x"})).await;
    assert!(input.is_error && input.text.contains("start_session"), "{}", input.text);
    let screen = client.term("read_output", json!({"session_id": id, "screen": true})).await;
    assert!(screen.is_error && screen.text.contains("no terminal screen"), "{}", screen.text);
    let missing = client.term("read_output", json!({"session_id": "t999"})).await;
    assert!(missing.is_error && missing.text.contains(&format!("`{id}`")), "{}", missing.text);
    client.close().await;
}

#[tokio::test]
async fn pty_shell_keeps_state_across_inputs() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let started = client.term("start_session", json!({})).await;
    assert!(!started.is_error, "{}", started.text);
    let id = started.structured["session_id"].as_str().unwrap().to_string();
    let cd = client.term("send_input", json!({"session_id": id, "input": "cd src && export X=42"})).await;
    assert!(!cd.is_error, "{}", cd.text);
    let echo = client
        .term(
            "send_input",
            json!({"session_id": id, "input": "echo \"x=$X in $PWD\"; test -t 0 && stty size < /dev/tty"}),
        )
        .await;
    let out = echo.joined("output");
    assert!(out.contains(&format!("x=42 in {}", ws.root.join("src").display())), "{out:?}");
    // A real terminal, `/dev/tty` included (its name is not in the command's own devpts).
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().count() == 2 && l.split_whitespace().all(|w| w.parse::<u16>().is_ok())),
        "a real terminal: {out:?}"
    );
    assert!(!out.contains('\u{1b}'), "escape sequences are stripped");

    // A foreground program interrupted with ctrl-c, then the shell still answers.
    client.term("send_input", json!({"session_id": id, "input": "sleep 100", "wait_ms": 100})).await;
    let after = client
        .term("send_input", json!({"session_id": id, "keys": ["ctrl-c"], "input": "echo back", "press_enter": true}))
        .await;
    assert!(after.joined("output").as_str().contains("back"), "{}", after.text);
    let bad_key = client.term("send_input", json!({"session_id": id, "keys": ["hyper-x"]})).await;
    assert!(bad_key.is_error && bad_key.text.contains("ctrl-a"), "{}", bad_key.text);
    let nothing = client.term("send_input", json!({"session_id": id})).await;
    assert!(nothing.is_error && nothing.text.contains("read_output"), "{}", nothing.text);

    let exit = client.term("send_input", json!({"session_id": id, "keys": ["ctrl-d"]})).await;
    assert!(!exit.is_error, "{}", exit.text);
    let mut status = exit.structured;
    let deadline = Instant::now() + Duration::from_secs(5);
    while status["status"] == "running" && Instant::now() < deadline {
        status = client.term("read_output", json!({"session_id": id, "wait_ms": 100})).await.structured;
    }
    assert_eq!(status["status"], "exited");
    client.close().await;
}

/// `send_input` returns once the program answered and went quiet: through `cat` in a few
/// milliseconds (a fixed 50 ms quiet wait before), while a command the shell runs keeps it
/// waiting across gaps in its output, and a slow answer is not mistaken for the echo.
#[tokio::test]
async fn send_input_returns_when_the_answer_is_quiet() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let cat = client.term("start_session", json!({"shell": "cat"})).await;
    let id = cat.structured["session_id"].as_str().unwrap().to_string();
    let mut took = Vec::new();
    for round in 0..7 {
        let started = Instant::now();
        let typed = client.term("send_input", json!({"session_id": id, "input": format!("ping{round}")})).await;
        took.push(started.elapsed());
        let lines = typed.structured["output"].as_array().unwrap().clone();
        assert_eq!(lines, [json!(format!("ping{round}")), json!(format!("ping{round}"))], "echo and answer");
    }
    // A fixed 50 ms quiet wait would put every round above 50 ms; on a loaded machine some
    // rounds wait for the scheduler, so the fastest one is what shows the wait is gone.
    took.sort();
    assert!(took[0] < Duration::from_millis(30), "round trips through cat: {took:?}");

    let shell = client.term("start_session", json!({})).await;
    let sh = shell.structured["session_id"].as_str().unwrap().to_string();
    let gaps = client
        .term(
            "send_input",
            json!({"session_id": sh, "input": "echo one; sleep 0.03; echo two; sleep 0.03; echo three"}),
        )
        .await;
    let out = gaps.joined("output");
    assert!(out.contains("one\ntwo\nthree"), "a running command holds the wait: {out:?}");
    let slow = client.term("send_input", json!({"session_id": sh, "input": "sleep 0.02; echo slow-answer"})).await;
    assert!(slow.joined("output").contains("slow-answer"), "the echo alone is not the answer: {}", slow.text);
    client.close().await;
}

#[tokio::test]
async fn python_repl_and_a_full_screen_program() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let repl = client.term("start_session", json!({"shell": "python3 -q", "wait_ms": 3000})).await;
    assert!(!repl.is_error, "{}", repl.text);
    let id = repl.structured["session_id"].as_str().unwrap().to_string();
    client.term("send_input", json!({"session_id": id, "input": "x = 6 * 7"})).await;
    let shown = client.term("send_input", json!({"session_id": id, "input": "print(x, 'ok')"})).await;
    let shown = output_until(&client, &id, "42 ok", shown.joined("output")).await;
    assert!(shown.contains("42 ok"), "{shown}");

    let shell = client.term("start_session", json!({"cols": 80, "rows": 24})).await;
    let sh = shell.structured["session_id"].as_str().unwrap().to_string();
    client.term("send_input", json!({"session_id": sh, "input": "less data/big.txt", "wait_ms": 1000})).await;
    let screen = screen_until(&client, &sh, |text| text.starts_with("line 1 of the big file\n")).await;
    let text = screen.joined("output");
    assert!(text.starts_with("line 1 of the big file\nline 2 of the big file\n"), "{text:?}");
    assert!(text.lines().count() <= 24 && !text.contains("line 30 of"), "one 24-row screen: {text:?}");
    assert!(screen.text.contains("full-screen program"), "{}", screen.text);
    client.term("send_input", json!({"session_id": sh, "keys": ["pagedown"], "wait_ms": 300})).await;
    let paged = screen_until(&client, &sh, |text| text.contains("line 24 of the big file")).await;
    assert!(paged.joined("output").as_str().contains("line 24 of the big file"), "{}", paged.text);
    client.term("send_input", json!({"session_id": sh, "input": "q", "press_enter": false})).await;
    let back = client.term("send_input", json!({"session_id": sh, "input": "echo after-less"})).await;
    let back = output_until(&client, &sh, "after-less", back.joined("output")).await;
    assert!(back.contains("after-less"), "{back}");
    client.close().await;
}

/// `seen` and the session's output after it, read until it holds `needle` (at most 20 s: a
/// loaded machine may start a program late).
async fn output_until(client: &Client, id: &str, needle: &str, mut seen: String) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !seen.contains(needle) && Instant::now() < deadline {
        let more = client.term("read_output", json!({"session_id": id, "wait_ms": 500})).await;
        seen.push_str(&more.joined("output"));
        seen.push('\n');
    }
    seen
}

/// The session's screen once `ready` holds for its text (or after 20 s, as it is then).
async fn screen_until(client: &Client, id: &str, ready: impl Fn(&str) -> bool) -> super::common::Reply {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let screen = client.term("read_output", json!({"session_id": id, "screen": true, "wait_ms": 300})).await;
        if ready(&screen.joined("output")) || Instant::now() >= deadline {
            return screen;
        }
    }
}

#[tokio::test]
async fn kill_session_signals_the_group_and_remove_forgets_it() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let command = format!("echo {}; exec sleep 300", super::common::SELF_PID);
    let started = client.term("run_command", json!({"command": command, "background": true})).await;
    let id = started.structured["session_id"].as_str().unwrap().to_string();
    let pid = super::common::host_pid(started.joined("stdout").as_str());
    let bad = client.term("kill_session", json!({"session_id": id, "signal": "BOGUS"})).await;
    assert!(bad.is_error && bad.text.contains("`TERM`"), "{}", bad.text);
    let killed = client.term("kill_session", json!({"session_id": id})).await;
    assert!(!killed.is_error, "{}", killed.text);
    assert_eq!(
        (killed.structured["status"].as_str(), killed.structured["signal"].as_i64()),
        (Some("killed"), Some(15))
    );
    assert!(wait_gone(pid, 3).await);
    let listed = client.term("list_sessions", json!({})).await;
    assert_eq!(listed.structured["sessions"][0]["status"], "killed", "it stays listed");
    let again = client.term("kill_session", json!({"session_id": id, "remove": true})).await;
    assert!(again.text.contains("already") && again.structured["removed"] == true, "{}", again.text);
    let listed = client.term("list_sessions", json!({})).await;
    assert_eq!(listed.structured["sessions"], json!([]));
    client.close().await;
}

#[tokio::test]
async fn session_limit_is_enforced_with_a_clear_error() {
    let ws = Workspace::new();
    std::fs::write(ws.config_home.join("limits.toml"), "max_sessions = 2\n").unwrap();
    let config = ws.config_home.join("limits.toml");
    let client = Client::start(&ws, &["--config", config.to_str().unwrap()]).await;
    for _ in 0..2 {
        let ok = client.term("run_command", json!({"command": "sleep 300", "background": true, "wait_ms": 0})).await;
        assert!(!ok.is_error, "{}", ok.text);
    }
    let third = client.term("start_session", json!({})).await;
    assert!(
        third.is_error && third.text.contains("kill_session") && third.text.contains("max_sessions"),
        "{}",
        third.text
    );
    client.close().await;
}

#[tokio::test]
async fn server_exit_kills_every_child() {
    let ws = Workspace::new();
    for how in ["stdin closed", "SIGTERM"] {
        let client = Client::start(&ws, &[]).await;
        let command = format!("echo {}; exec sleep 300", super::common::SELF_PID);
        let bg = client.term("run_command", json!({"command": command, "background": true})).await;
        let bg_pid = super::common::host_pid(bg.joined("stdout").as_str());
        let pty = client.term("start_session", json!({})).await;
        let id = pty.structured["session_id"].as_str().unwrap().to_string();
        let input = format!("echo pid={}", super::common::SELF_PID);
        let shell = client.term("send_input", json!({"session_id": id, "input": input, "wait_ms": 500})).await;
        let out = shell.joined("output");
        let pty_pid = super::common::host_pid(out.split("pid=").last().unwrap().split_whitespace().next().unwrap());
        // What a foreground command leaves behind ends with it (its PID namespace does), even
        // out of its process group.
        let fg = client.run("(setsid sh -c 'sleep 1; touch fg-survivor' &) ; echo started").await;
        assert!(!fg.is_error && fg.text.contains("started"), "{}", fg.text);
        assert!(!gone(bg_pid) && !gone(pty_pid), "{how}: all running");
        match how {
            "SIGTERM" => {
                let server = client.pid.unwrap();
                rustix::process::kill_process(
                    rustix::process::Pid::from_raw(server as i32).unwrap(),
                    rustix::process::Signal::TERM,
                )
                .unwrap();
                assert!(wait_gone(server, 5).await, "the server exits on SIGTERM");
                drop(client);
            }
            _ => client.close().await,
        }
        for pid in [bg_pid, pty_pid] {
            assert!(wait_gone(pid, 5).await, "{how}: process {pid} outlived the server");
        }
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        assert!(!ws.root.join("fg-survivor").exists(), "{how}: a foreground command's job outlived it");
    }
}
