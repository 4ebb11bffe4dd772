//! `toolbelt-mcp agent` end to end: the real binary drives its own `serve` child through MCP
//! while a scripted provider (`llm.rs`) replays `fixtures/llm/` in both wire formats.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use super::common::{BIN, Workspace, wait_gone};
use super::llm::{KEY, ScriptedLlm, Wire};

/// How a run ended.
pub(super) struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A workspace with a wrong answer and a check that wants the right one.
pub(super) fn project() -> Workspace {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("answer.txt"), "answer = 41\n").unwrap();
    std::fs::write(
        ws.root.join("check.sh"),
        "grep -q 'answer = 42' answer.txt && echo PASS || { echo FAIL; exit 1; }\n",
    )
    .unwrap();
    ws
}

/// The arguments of `toolbelt-mcp agent` on `ws` against `llm`.
fn agent_args(ws: &Workspace, llm: &ScriptedLlm, task: &str, extra: &[&str]) -> Vec<String> {
    let root = ws.root.to_str().unwrap();
    let fixed = ["agent", "--root", root, "--provider", llm.wire.provider(), "--base-url", &llm.base_url];
    let mut args: Vec<String> =
        fixed.iter().chain(&["--model", "scripted", "-p", task]).map(|s| s.to_string()).collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Its environment: test homes and the key; no settings from the machine.
fn agent_env(ws: &Workspace, llm: &ScriptedLlm) -> Vec<(String, String)> {
    vec![
        ("XDG_CONFIG_HOME".into(), ws.config_home.display().to_string()),
        ("XDG_STATE_HOME".into(), ws.state_home.display().to_string()),
        (llm.wire.key_env().into(), KEY.into()),
    ]
}

/// Variables the agent must not inherit.
const UNSET: [&str; 6] =
    ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "TOOLBELT_ROOT", "TOOLBELT_STATE_DIR", "TOOLBELT_APPROVAL", "RUST_LOG"];

/// `toolbelt-mcp agent` on `ws` against `llm`, headless (stdin is not a terminal).
pub(super) fn agent(ws: &Workspace, llm: &ScriptedLlm, task: &str, extra: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(BIN);
    for name in UNSET {
        cmd.env_remove(name);
    }
    cmd.args(agent_args(ws, llm, task, extra))
        .envs(agent_env(ws, llm))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// Runs `task` on a fresh [`project`] against the fixture `name` in `wire` format, and checks
/// the exit code and that the provider played the whole script as expected.
async fn scripted(name: &str, wire: Wire, task: &str, extra: &[&str], code: i32) -> (Workspace, ScriptedLlm, Ran) {
    let ws = project();
    let llm = ScriptedLlm::start(name, wire).await;
    let ran = run(&ws, &llm, task, extra).await;
    assert_eq!(ran.code, code, "{wire:?} {name}: {}", ran.stderr);
    llm.assert_played();
    (ws, llm, ran)
}

/// Runs the agent to its end, then checks that no process it started is left.
pub(super) async fn run(ws: &Workspace, llm: &ScriptedLlm, task: &str, extra: &[&str]) -> Ran {
    run_with_env(ws, llm, task, extra, &[]).await
}

/// [`run`] with more variables in the agent's environment.
pub(super) async fn run_with_env(
    ws: &Workspace,
    llm: &ScriptedLlm,
    task: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Ran {
    let mut command = agent(ws, llm, task, extra);
    command.envs(env.iter().copied());
    let ran = finish(command).await;
    assert!(leftovers(&ws.root).is_empty(), "processes left on {}: {:?}", ws.root.display(), leftovers(&ws.root));
    ran
}

pub(super) async fn finish(mut command: tokio::process::Command) -> Ran {
    let child = command.spawn().unwrap();
    let output = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
        .await
        .expect("the agent hangs")
        .unwrap();
    Ran {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Processes whose command line names `root` (the `serve` child gets `--root ROOT`).
pub(super) fn leftovers(root: &Path) -> Vec<u32> {
    let needle = root.to_str().unwrap().as_bytes();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if cmdline.windows(needle.len()).any(|w| w == needle) && !super::common::gone(pid) {
            found.push(pid);
        }
    }
    found
}

#[tokio::test]
async fn reads_greps_edits_and_runs_a_check_in_both_wire_formats() {
    for wire in Wire::BOTH {
        let (ws, llm, ran) = scripted("fix_answer", wire, "make `sh check.sh` pass", &[], 0).await;
        assert_eq!(ran.stdout, "Fixed answer.txt (41 → 42); `sh check.sh` prints PASS.\n");
        assert_eq!(std::fs::read_to_string(ws.root.join("answer.txt")).unwrap(), "answer = 42\n");
        assert!(ran.stderr.contains("running 2 read-only calls at once"), "{}", ran.stderr);
        assert!(ran.stderr.contains("▸ terminal_operations run_command"), "{}", ran.stderr);
        assert!(
            ran.stderr.contains("agent: completed · 4 turns · 4 tool calls · 400 in / 80 out tokens"),
            "{}",
            ran.stderr
        );
        // The system prompt and the tools reached the provider in its own format.
        let first = &llm.requests()[0];
        let (system, tools) = match wire {
            Wire::Anthropic => (&first["system"][0]["text"], &first["tools"]),
            Wire::OpenAi => (&first["messages"][0]["content"], &first["tools"]),
        };
        assert!(system.as_str().unwrap().contains(ws.root.to_str().unwrap()));
        assert_eq!(tools.as_array().unwrap().len(), 4, "{tools}");
        // Streamed by default (the scripted provider answered in server-sent events, deltas
        // split mid-text and mid-arguments); the same run with `--no-stream` is asked whole.
        assert_eq!(first["stream"], true);
        let (_, plain, _) = scripted("fix_answer", wire, "make `sh check.sh` pass", &["--no-stream"], 0).await;
        assert!(plain.requests().iter().all(|r| r.get("stream").is_none()), "{wire:?}");
    }
}

#[tokio::test]
async fn a_stream_that_breaks_off_is_asked_again() {
    for wire in Wire::BOTH {
        let (_, _, ran) = scripted("stream_retry", wire, "say hello", &[], 0).await;
        assert_eq!(ran.stdout, "Hello.\n");
        assert!(ran.stderr.contains("the stream reported: Overloaded; retry 1 of 5"), "{wire:?}: {}", ran.stderr);
    }
}

#[tokio::test]
async fn agents_md_goes_into_the_system_prompt() {
    let ws = project();
    std::fs::write(ws.root.join("AGENTS.md"), "Always run `sh check.sh` before finishing.\n").unwrap();
    let llm = ScriptedLlm::start("retry", Wire::OpenAi).await;
    let ran = run(&ws, &llm, "say hello", &[]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let system = llm.requests()[0]["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(system.ends_with("Always run `sh check.sh` before finishing."), "{system}");
}

/// A server that refuses `max_tokens` and names `max_completion_tokens` (OpenAI's reasoning
/// models) is asked again with it, and every later request of the run uses it.
#[tokio::test]
async fn an_openai_model_that_wants_max_completion_tokens_gets_it() {
    let (_ws, llm, ran) =
        scripted("completion_tokens", Wire::OpenAi, "read the answer", &["--max-output-tokens", "99"], 0).await;
    assert_eq!(ran.stdout, "The answer is 41.\n");
    let limits: Vec<(Option<u64>, Option<u64>)> =
        llm.requests().iter().map(|r| (r["max_tokens"].as_u64(), r["max_completion_tokens"].as_u64())).collect();
    assert_eq!(limits, [(Some(99), None), (None, Some(99)), (None, Some(99))]);
}

#[tokio::test]
async fn a_tool_error_is_fed_back_and_the_model_recovers() {
    for wire in Wire::BOTH {
        let (_ws, llm, ran) = scripted("recover", wire, "read the answer", &["--json"], 0).await;
        let second = &llm.requests()[1];
        match wire {
            Wire::Anthropic => assert_eq!(second["messages"][2]["content"][0]["is_error"], true, "{second}"),
            Wire::OpenAi => {
                assert!(second["messages"][3]["content"].as_str().unwrap().starts_with("Error: "), "{second}")
            }
        }
        let summary: Value = serde_json::from_str(&ran.stdout).unwrap();
        let outcomes: Vec<&str> =
            summary["tool_calls"].as_array().unwrap().iter().map(|c| c["outcome"].as_str().unwrap()).collect();
        assert_eq!(outcomes, ["error", "ok"]);
    }
}

#[tokio::test]
async fn a_headless_run_declines_approvals_and_exits_3() {
    let (ws, _llm, ran) = scripted("denied", Wire::Anthropic, "write a note", &["--approval", "on-write"], 3).await;
    assert!(!ws.root.join("note.txt").exists());
    assert!(ran.stderr.contains("→ declined (headless; pass --yes to accept"), "{}", ran.stderr);
    assert!(ran.stderr.contains("1 question(s) from the server were declined"), "{}", ran.stderr);
    assert_eq!(ran.stdout, "I was not allowed to write note.txt.\n");

    // With --yes the same call is accepted.
    let llm = ScriptedLlm::start("fix_answer", Wire::Anthropic).await;
    let ran = run(&ws, &llm, "make `sh check.sh` pass", &["--approval", "on-write", "--yes", "--json"]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(ran.stderr.contains("→ accepted (--yes)"), "{}", ran.stderr);
    let summary: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(summary["denied"], 0);
}

#[tokio::test]
async fn max_turns_stops_with_exit_2() {
    let (_ws, _llm, ran) = scripted("max_turns", Wire::OpenAi, "look around", &["--max-turns", "2", "--json"], 2).await;
    let summary: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(summary["stop_reason"], "max_turns");
    assert_eq!(summary["turns"], 2);
    assert!(ran.stderr.contains("raise `--max-turns`"), "{}", ran.stderr);
}

#[tokio::test]
async fn a_token_budget_stops_with_exit_2() {
    let ws = project();
    let llm = ScriptedLlm::start("max_turns", Wire::Anthropic).await;
    // Each scripted turn uses 120 tokens: the budget is spent after the first.
    let ran = run(&ws, &llm, "look around", &["--max-tokens-total", "100", "--json"]).await;
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    let summary: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!((summary["stop_reason"].as_str(), summary["turns"].as_u64()), (Some("token_budget"), Some(1)));
}

#[tokio::test]
async fn a_429_is_retried_after_retry_after() {
    let (_ws, _llm, ran) = scripted("retry", Wire::Anthropic, "say hello", &[], 0).await;
    assert_eq!(ran.stdout, "Hello.\n");
    assert!(ran.stderr.contains("HTTP 429 slow down; retry 1 of 5 in 0.0 s"), "{}", ran.stderr);
}

#[tokio::test]
async fn a_401_is_a_clear_error_with_exit_1() {
    for wire in Wire::BOTH {
        let (_ws, _llm, ran) = scripted("unauthorized", wire, "say hello", &[], 1).await;
        assert_eq!(ran.stdout, "");
        let expected =
            format!("refused the API key (HTTP 401): invalid x-api-key; check the key in `{}`", wire.key_env());
        assert!(ran.stderr.contains(&expected), "{}", ran.stderr);
    }
}

#[tokio::test]
async fn malformed_tool_arguments_are_fed_back_and_the_loop_goes_on() {
    for wire in Wire::BOTH {
        let (_ws, _llm, ran) = scripted("malformed", wire, "read the answer", &["--json"], 0).await;
        let summary: Value = serde_json::from_str(&ran.stdout).unwrap();
        assert_eq!(summary["tool_calls"][0]["outcome"], "rejected");
        assert_eq!(summary["final_answer"], "The answer is 41.");
    }
}

#[tokio::test]
async fn the_todo_list_is_a_reminder_before_each_turn() {
    let (_ws, llm, _ran) = scripted("todo_reminder", Wire::OpenAi, "plan the work", &[], 0).await;
    // The reminder is sent with the request, not kept in the conversation.
    assert!(!llm.requests()[0].to_string().contains("<reminder>"));
}

#[tokio::test]
async fn json_summary_and_transcript_hold_the_whole_run() {
    let ws = project();
    let llm = ScriptedLlm::start("fix_answer", Wire::OpenAi).await;
    let transcript = ws.state_home.with_file_name("run.jsonl");
    let ran =
        run(&ws, &llm, "make `sh check.sh` pass", &["--json", "--transcript", transcript.to_str().unwrap()]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let summary: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(summary["final_answer"], "Fixed answer.txt (41 → 42); `sh check.sh` prints PASS.");
    assert_eq!((summary["stop_reason"].as_str(), summary["exit_code"].as_u64()), (Some("completed"), Some(0)));
    assert_eq!((summary["turns"].as_u64(), summary["denied"].as_u64()), (Some(4), Some(0)));
    assert_eq!(summary["tokens"], serde_json::json!({"input": 400, "output": 80}));
    assert!(summary["duration_ms"].as_u64().unwrap() > 0);
    let calls = summary["tool_calls"].as_array().unwrap();
    let named: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|c| (c["tool"].as_str().unwrap(), c["operation"].as_str().unwrap(), c["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        named,
        [
            ("file_operations", "read_file", "ok"),
            ("file_operations", "grep_search", "ok"),
            ("file_operations", "replace_string", "ok"),
            ("terminal_operations", "run_command", "ok")
        ]
    );
    assert_eq!(calls[3]["turn"], 3);

    let lines: Vec<Value> =
        std::fs::read_to_string(&transcript).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<String> = lines
        .iter()
        .map(|l| {
            format!(
                "{}{}",
                l["type"].as_str().unwrap(),
                l["role"].as_str().map(|r| format!(":{r}")).unwrap_or_default()
            )
        })
        .collect();
    let mut expected = vec!["start".to_string(), "message:user".into()];
    for _ in 0..3 {
        expected.extend(["message:assistant".to_string(), "message:user".into()]);
    }
    expected.extend(["message:assistant".to_string(), "end".into()]);
    assert_eq!(kinds, expected);
    assert!(lines[0]["system"].as_str().unwrap().contains("coding agent"));
    assert_eq!(lines[2]["content"][1]["type"], "tool_call");
    assert_eq!(lines[3]["content"][0]["type"], "tool_result");
    assert!(lines[7]["content"][0]["content"][0]["text"].as_str().unwrap().contains("PASS"));
    assert_eq!(lines.last().unwrap()["summary"], summary);
}

#[tokio::test]
async fn ctrl_c_cancels_the_call_then_stops_the_agent_leaving_no_process() {
    let ws = project();
    let llm = ScriptedLlm::start("interrupt", Wire::Anthropic).await;
    let mut child = agent(&ws, &llm, "wait a while", &["--json"]).spawn().unwrap();
    let agent_pid = child.id().unwrap();
    // The command the script runs (`fixtures/llm/interrupt.json`).
    let sleeper = super::common::process_with_args(&["sleep", "60.0131"], 30).await;
    let interrupt = || {
        let pid = rustix::process::Pid::from_raw(agent_pid as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    };
    interrupt();
    // The first Ctrl-C cancels the call: the command ends and the model hears of it.
    assert!(wait_gone(sleeper, 10).await, "the cancelled command is still running");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while llm.requests().len() < 2 {
        assert!(std::time::Instant::now() < deadline, "the model was not told of the cancel");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The second, while the model thinks, stops the agent.
    interrupt();
    let status =
        tokio::time::timeout(Duration::from_secs(20), child.wait()).await.expect("the agent did not stop").unwrap();
    assert_eq!(status.code(), Some(3));
    let mut stdout = String::new();
    tokio::io::AsyncReadExt::read_to_string(child.stdout.as_mut().unwrap(), &mut stdout).await.unwrap();
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["stop_reason"], "interrupted");
    assert_eq!(summary["tool_calls"][0]["outcome"], "cancelled");
    llm.assert_played();
    assert!(leftovers(&ws.root).is_empty(), "processes left: {:?}", leftovers(&ws.root));
}

#[tokio::test]
async fn server_cmd_runs_against_another_layout_using_only_its_listed_tools() {
    let ws = project();
    let llm = ScriptedLlm::start("granular", Wire::Anthropic).await;
    let server = format!("{BIN} serve --root '{}' --tool-layout granular", ws.root.display());
    let ran = run(&ws, &llm, "read the answer", &["--server-cmd", &server]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    llm.assert_played();
    let tools: Vec<String> = llm.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(tools.len() > 20 && tools.contains(&"read_file".to_string()), "{tools:?}");
    assert!(!tools.contains(&"file_operations".to_string()));
    // Granular read tools are read-only by their annotations: they run together.
    assert!(ran.stderr.contains("running 2 read-only calls at once"), "{}", ran.stderr);
}

#[tokio::test]
async fn allow_and_deny_tools_filter_what_the_model_sees_and_may_call() {
    let ws = project();
    let llm = ScriptedLlm::start("filtered", Wire::OpenAi).await;
    let deny = "terminal_operations,file_operations.replace_string";
    let ran = run(&ws, &llm, "fix the answer", &["--deny-tools", deny, "--json"]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    llm.assert_played();
    assert_eq!(std::fs::read_to_string(ws.root.join("answer.txt")).unwrap(), "answer = 41\n");
    let tools = llm.requests()[0]["tools"].as_array().unwrap().clone();
    let names: Vec<&str> = tools.iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["file_operations", "todo_operations", "memory_operations"]);
    let operations = &tools[0]["function"]["parameters"]["properties"]["operation"]["enum"];
    assert!(!operations.as_array().unwrap().contains(&Value::from("replace_string")), "{operations}");
    let summary: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(summary["tool_calls"][0]["outcome"], "rejected");
    assert_eq!(summary["tool_calls"][1]["outcome"], "rejected");

    // `--allow-tools` keeps only what it names.
    let llm = ScriptedLlm::start("retry", Wire::OpenAi).await;
    let ran = run(&ws, &llm, "say hello", &["--allow-tools", "file_operations.read_file,todo_operations"]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let tools = llm.requests()[1]["tools"].as_array().unwrap().clone();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["function"]["parameters"]["properties"]["operation"]["enum"], serde_json::json!(["read_file"]));
}

#[tokio::test]
async fn server_url_drives_a_running_http_server_and_shows_its_progress() {
    let ws = project();
    let server = super::http::HttpServer::start(&ws, &[], &[]).await;
    let llm = ScriptedLlm::start("progress", Wire::Anthropic).await;
    let ran = finish(agent(&ws, &llm, "run the slow check", &["--server-url", &server.url()])).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    llm.assert_played();
    assert_eq!(ran.stdout, "The slow check is done.\n");
    assert!(ran.stderr.contains("progress 1") && ran.stderr.contains("running for 1 s"), "{}", ran.stderr);
}

/// The agent on a real terminal (stdin and stderr on a PTY; stdout piped).
struct OnPty {
    child: tokio::process::Child,
    reader: pty_process::OwnedReadPty,
    writer: pty_process::OwnedWritePty,
    screen: String,
}

impl OnPty {
    fn start(ws: &Workspace, llm: &ScriptedLlm, task: &str, extra: &[&str]) -> Self {
        let (pty, pts) = pty_process::open().unwrap();
        pty.resize(pty_process::Size::new(40, 200)).unwrap();
        let mut command = pty_process::Command::new(BIN);
        for name in UNSET {
            command = command.env_remove(name);
        }
        let command = command
            .args(agent_args(ws, llm, task, extra))
            .envs(agent_env(ws, llm))
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let child = command.spawn(pts).unwrap();
        let (reader, writer) = pty.into_split();
        Self { child, reader, writer, screen: String::new() }
    }

    /// Reads the terminal until `needle` shows.
    async fn until(&mut self, needle: &str) {
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 4096];
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !self.screen.contains(needle) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let read = tokio::time::timeout(left, self.reader.read(&mut buf)).await;
            let n = read.unwrap_or_else(|_| panic!("no {needle:?} in {}", self.screen)).unwrap();
            self.screen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    }

    async fn type_line(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        self.writer.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }

    async fn exit(&mut self) -> (Option<i32>, String) {
        use tokio::io::AsyncReadExt;
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await;
        let status =
            status.unwrap_or_else(|_| panic!("the agent hangs; its terminal shows:\n{}", self.screen)).unwrap();
        let mut stdout = String::new();
        self.child.stdout.take().unwrap().read_to_string(&mut stdout).await.unwrap();
        (status.code(), stdout)
    }
}

#[tokio::test]
async fn on_a_terminal_the_user_answers_the_approval() {
    let ws = project();
    let llm = ScriptedLlm::start("asked", Wire::OpenAi).await;
    let mut agent = OnPty::start(&ws, &llm, "write a note", &["--approval", "on-write"]);
    agent.until("(empty: decline) > ").await;
    assert!(agent.screen.contains("[1] allow_once  [2] allow_session  [3] deny"), "{}", agent.screen);
    agent.type_line("1").await;
    agent.until("note").await;
    agent.type_line("").await;
    // stderr is the terminal: the reply is streamed there as it comes.
    agent.until("Wrote note.txt.").await;
    let (code, stdout) = agent.exit().await;
    assert_eq!(code, Some(0), "{}", agent.screen);
    assert_eq!(stdout, "Wrote note.txt.\n");
    assert_eq!(std::fs::read_to_string(ws.root.join("note.txt")).unwrap(), "hello\n");
    llm.assert_played();
}

#[tokio::test]
async fn ctrl_c_during_a_question_cancels_it_and_stdin_goes_to_the_next_one() {
    use tokio::io::AsyncWriteExt;
    let ws = project();
    let llm = ScriptedLlm::start("question_cancelled", Wire::Anthropic).await;
    let mut agent = OnPty::start(&ws, &llm, "write two notes", &["--approval", "on-write"]);
    agent.until("(empty: decline) > ").await;
    agent.writer.write_all(b"\x03").await.unwrap();
    agent.until("Ctrl-C: cancelled the running call").await;
    // The second question gets the line typed now; a reader left on the cancelled one would
    // take it instead, and the agent would wait for ever.
    agent.screen.clear();
    agent.until("(empty: decline) > ").await;
    agent.type_line("1").await;
    agent.until("note").await;
    agent.type_line("").await;
    let (code, stdout) = agent.exit().await;
    assert_eq!(code, Some(3), "the cancelled question counts as declined: {}", agent.screen);
    assert_eq!(stdout, "Wrote note2.txt only.\n");
    assert!(!ws.root.join("note.txt").exists());
    assert_eq!(std::fs::read_to_string(ws.root.join("note2.txt")).unwrap(), "second\n");
    llm.assert_played();
}

#[tokio::test]
async fn sigterm_during_a_question_on_the_terminal_stops_at_once() {
    let ws = project();
    let llm = ScriptedLlm::start("asked", Wire::Anthropic).await;
    let mut agent = OnPty::start(&ws, &llm, "write a note", &["--approval", "on-write"]);
    agent.until("(empty: decline) > ").await;
    let pid = rustix::process::Pid::from_raw(agent.child.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    // The question still waits for a line on stdin: the agent must not wait for it.
    let (code, _) = agent.exit().await;
    assert_eq!(code, Some(3), "{}", agent.screen);
    assert!(!ws.root.join("note.txt").exists());
    assert!(leftovers(&ws.root).is_empty(), "processes left: {:?}", leftovers(&ws.root));
}

#[tokio::test]
async fn a_server_that_dies_mid_run_stops_the_agent_with_exit_1() {
    let (_ws, _llm, ran) =
        scripted("server_dies", Wire::Anthropic, "end the server", &["--sandbox", "full-access", "--json"], 1).await;
    let summary: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(summary["stop_reason"], "error");
    assert!(summary["error"].as_str().unwrap().contains("went away during the run"), "{summary}");
    assert_eq!(summary["tool_calls"][0]["outcome"], "error");
}
