//! The agent's side of the MCP connection: it declares elicitation and answers the server's
//! questions (approvals) on the terminal, or by flag when headless, and shows the server's
//! progress notifications.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Map, Value};

use super::report::{Reporter, one_line};
use super::stdin::{self, Cancel};

/// How the server's questions are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answering {
    /// Asked on the terminal (stdin is a TTY).
    Terminal,
    /// Accepted without asking (`--yes`).
    Accept,
    /// Declined without asking (headless default).
    Decline,
}

/// The MCP client handler of the agent.
pub(crate) struct Handler {
    answering: Answering,
    reporter: Arc<Reporter>,
    denied: Arc<AtomicUsize>,
    /// Held while a question is asked: one at a time, whichever server asks.
    asking: Arc<tokio::sync::Mutex<()>>,
    /// Cancels the question asked on the terminal (Ctrl-C).
    cancel: Cancel,
    /// The `--mcp-config` server it answers, named in its questions and progress (`None`:
    /// the first server).
    server: Option<String>,
}

impl Handler {
    /// A handler answering as `answering`, counting denials in `denied`.
    pub(crate) fn new(answering: Answering, reporter: Arc<Reporter>, denied: Arc<AtomicUsize>) -> Self {
        let asking = Arc::new(tokio::sync::Mutex::new(()));
        Self { answering, reporter, denied, asking, cancel: Cancel::default(), server: None }
    }

    /// What cancels the question being asked on the terminal, for every server's handler.
    pub(crate) fn cancel(&self) -> Cancel {
        self.cancel.clone()
    }

    /// A handler for the `--mcp-config` server `name` (`None`: the first server), answering as
    /// this one does and asking in turn with it.
    pub(crate) fn for_server(&self, name: Option<&str>) -> Self {
        Self {
            answering: self.answering,
            reporter: self.reporter.clone(),
            denied: self.denied.clone(),
            asking: self.asking.clone(),
            cancel: self.cancel.clone(),
            server: name.map(str::to_string),
        }
    }

    /// `text` with the name of the server it comes from, when that is not the first one.
    fn labelled(&self, text: &str) -> String {
        match &self.server {
            Some(name) => format!("[{name}] {text}"),
            None => text.to_string(),
        }
    }

    async fn answer(&self, message: &str, schema: &Value) -> ElicitResult {
        // One question at a time, even when parallel calls (or several servers) ask at once.
        let _turn = self.asking.lock().await;
        let message = &self.labelled(message);
        let answer = match self.answering {
            Answering::Accept => {
                let content = auto_accept(schema);
                self.reporter.line(format_args!("  ? {} → accepted (--yes): {content}", one_line(message, 200)));
                Some(content)
            }
            Answering::Decline => {
                self.reporter.line(format_args!(
                    "  ? {} → declined (headless; pass --yes to accept, or --approval to change what asks)",
                    one_line(message, 200)
                ));
                None
            }
            Answering::Terminal => {
                self.reporter.set_asking(true);
                let (message, schema) = (message.to_string(), schema.clone());
                let cancelled = self.cancel.watch();
                let answer = tokio::task::spawn_blocking(move || {
                    ask_on_terminal(&message, &schema, &mut || stdin::line(&cancelled))
                })
                .await;
                self.reporter.set_asking(false);
                let answer = answer.ok().flatten();
                if answer.is_none() {
                    self.reporter.line("  (the question was declined)");
                }
                answer
            }
        };
        match answer {
            Some(content) => {
                if says_no(&content) {
                    self.denied.fetch_add(1, Ordering::Relaxed);
                }
                ElicitResult::new(ElicitationAction::Accept).with_content(content)
            }
            None => {
                self.denied.fetch_add(1, Ordering::Relaxed);
                ElicitResult::new(ElicitationAction::Decline)
            }
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_elicitation().build();
        ClientConfig::new(capabilities, Implementation::new("toolbelt-mcp-agent", env!("CARGO_PKG_VERSION")))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match request {
            ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
                let schema = serde_json::to_value(&requested_schema).unwrap_or(Value::Null);
                Ok(self.answer(&message, &schema).await)
            }
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                self.reporter.line(format_args!(
                    "  ? {} ({url}) → declined: the agent cannot open URLs",
                    one_line(&self.labelled(&message), 200)
                ));
                self.denied.fetch_add(1, Ordering::Relaxed);
                Ok(ElicitResult::new(ElicitationAction::Decline))
            }
            _ => Ok(ElicitResult::new(ElicitationAction::Decline)),
        }
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let amount = match params.total {
            Some(total) => format!("{}/{}", params.progress, total),
            None => params.progress.to_string(),
        };
        let message = params.message.as_deref().map(|m| format!(": {}", one_line(m, 120))).unwrap_or_default();
        let line = self.labelled(&format!("progress {amount}{message}"));
        self.reporter.line(format_args!("      {line}"));
    }
}

/// Whether an enum answer means no (`deny…`, `reject…`, `decline…`, `no`).
fn says_no(content: &Value) -> bool {
    let no = |s: &str| ["deny", "reject", "decline", "no"].iter().any(|w| s == *w || s.starts_with(&format!("{w}_")));
    content.as_object().is_some_and(|fields| fields.values().filter_map(Value::as_str).any(no))
}

/// The choices of an enum property (`enum`, or `oneOf` of `const`s).
fn choices(property: &Value) -> Vec<String> {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        return values.iter().filter_map(Value::as_str).map(str::to_string).collect();
    }
    let options = property.get("oneOf").or_else(|| property.get("anyOf")).and_then(Value::as_array);
    options.into_iter().flatten().filter_map(|o| o.get("const").and_then(Value::as_str)).map(str::to_string).collect()
}

/// An accepting answer to a form: defaults where given, the first allowing choice of an enum
/// (`allow…`, `approve…`, `accept…`, `yes`), `true` for booleans, the minimum for numbers and
/// empty text for required strings.
pub(crate) fn auto_accept(schema: &Value) -> Value {
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let mut answer = Map::new();
    for (name, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
        let options = choices(property);
        let value = if let Some(default) = property.get("default").filter(|_| options.is_empty()) {
            default.clone()
        } else if !options.is_empty() {
            let yes = |o: &&String| ["allow", "approve", "accept", "yes"].iter().any(|w| o.starts_with(w));
            Value::String(options.iter().find(yes).unwrap_or(&options[0]).clone())
        } else {
            match property.get("type").and_then(Value::as_str) {
                Some("boolean") => Value::Bool(true),
                Some("number" | "integer") => property.get("minimum").cloned().unwrap_or(Value::from(0)),
                _ if required.contains(&name.as_str()) => Value::String(String::new()),
                _ => continue,
            }
        };
        answer.insert(name.clone(), value);
    }
    Value::Object(answer)
}

/// Asks the form on the terminal, reading answers with `read_line`; `None` declines.
pub(crate) fn ask_on_terminal(
    message: &str,
    schema: &Value,
    read_line: &mut dyn FnMut() -> Option<String>,
) -> Option<Value> {
    // stderr is locked per write, never while waiting for the user: other threads report too.
    let say = |text: &str| {
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
    };
    say(&format!("\n? {message}\n"));
    let mut answer = Map::new();
    for (name, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
        let about = property
            .get("description")
            .and_then(Value::as_str)
            .map(|d| format!(" ({})", one_line(d, 160)))
            .unwrap_or_default();
        let options = choices(property);
        if !options.is_empty() {
            let listed: Vec<String> = options.iter().enumerate().map(|(n, o)| format!("[{}] {o}", n + 1)).collect();
            say(&format!("  {name}{about}\n  {}  (empty: decline) > ", listed.join("  ")));
            let line = read_line()?;
            let line = line.trim();
            let picked = line
                .parse::<usize>()
                .ok()
                .and_then(|n| options.get(n.wrapping_sub(1)))
                .or_else(|| options.iter().find(|o| *o == line));
            answer.insert(name.clone(), Value::String(picked?.clone()));
            continue;
        }
        say(&format!("  {name}{about} > "));
        let line = read_line()?;
        let line = line.trim();
        let value = match property.get("type").and_then(Value::as_str) {
            Some("boolean") => Value::Bool(matches!(line, "y" | "yes" | "true")),
            Some("number" | "integer") => line
                .parse::<f64>()
                .ok()
                .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
                .unwrap_or(Value::from(0)),
            _ => Value::String(line.to_string()),
        };
        answer.insert(name.clone(), value);
    }
    Some(Value::Object(answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn approval_form() -> Value {
        json!({
            "type": "object",
            "properties": {
                "decision": {"type": "string", "enum": ["allow_once", "allow_session", "deny"]},
                "note": {"type": "string", "description": "a note"}
            },
            "required": ["decision"]
        })
    }

    #[test]
    fn accepting_picks_the_first_allowing_choice() {
        assert_eq!(auto_accept(&approval_form()), json!({"decision": "allow_once"}));
        let other = json!({"properties": {
            "go": {"type": "boolean"},
            "pick": {"oneOf": [{"const": "no"}, {"const": "yes"}]},
            "n": {"type": "integer", "minimum": 3},
            "name": {"type": "string", "default": "x"}
        }});
        assert_eq!(auto_accept(&other), json!({"go": true, "n": 3, "name": "x", "pick": "yes"}));
    }

    #[test]
    fn the_terminal_form_takes_numbers_or_names_and_empty_declines() {
        let mut lines = vec!["2".to_string(), "be careful".to_string()].into_iter();
        let answer = ask_on_terminal("may I?", &approval_form(), &mut || lines.next());
        assert_eq!(answer, Some(json!({"decision": "allow_session", "note": "be careful"})));
        let mut lines = vec!["deny".to_string(), String::new()].into_iter();
        let answer = ask_on_terminal("may I?", &approval_form(), &mut || lines.next()).unwrap();
        assert!(says_no(&answer));
        let mut lines = vec![String::new()].into_iter();
        assert_eq!(ask_on_terminal("may I?", &approval_form(), &mut || lines.next()), None);
        assert_eq!(ask_on_terminal("may I?", &approval_form(), &mut || None), None);
    }
}
