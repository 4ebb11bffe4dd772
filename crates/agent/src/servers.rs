//! The MCP servers of a run: the first one (`serve`, `--server-url` or `--server-cmd`), whose
//! tools keep their names, and the `--mcp-config` ones, whose tools the model calls as
//! `<server>__<tool>`. They are started together; one that fails to start or goes away later
//! is reported and the run goes on without it (unless `--require-servers`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::join_all;
use serde_json::{Map, Value, json};

use super::client::{Connection, Outcome, Target};
use super::handler::Handler;
use super::mcp_config::Declared;
use super::report::Reporter;

/// How long an `--mcp-config` server may take to start and list its tools (an `npx -y`
/// server may download first).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Why the servers could not be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OpenError {
    /// The first server did not start (a setup error).
    First(String),
    /// A server `--require-servers` needs did not start.
    Required(String),
}

/// One server of the run.
pub(crate) struct Server {
    /// Its name: the `--mcp-config` key, or the first server's own name.
    pub name: String,
    /// Whether it is the first server (its tools keep their names).
    pub first: bool,
    connection: Option<Connection>,
    /// Why it did not start, when it did not.
    failed: Option<String>,
    /// Set once it was seen gone (and reported).
    gone: AtomicBool,
}

impl Server {
    /// Its tools as listed, when it started.
    pub(crate) fn tools(&self) -> &[rmcp::model::Tool] {
        self.connection.as_ref().map_or(&[], |c| c.tools.as_slice())
    }

    /// What the summary says of it.
    fn summary(&self) -> Value {
        let status = match (&self.connection, self.gone.load(Ordering::Relaxed)) {
            (None, _) => "failed",
            (Some(_), true) => "gone",
            (Some(_), false) => "running",
        };
        json!({
            "name": self.name,
            "server": self.connection.as_ref().map(|c| c.server.clone()),
            "tools": self.tools().len(),
            "status": status,
            "error": self.failed,
        })
    }
}

/// Every server of the run, the first one first.
pub(crate) struct Servers {
    /// The servers, in order: the first server (unless `--no-toolbelt`), then the
    /// `--mcp-config` ones in their files' order.
    pub list: Vec<Server>,
}

impl Servers {
    /// Starts `first` and the `declared` servers together. The first one failing is an error;
    /// a declared one failing is reported (and an error when `require` is set). Results of
    /// declared servers are cut to `budget` bytes of text.
    pub(crate) async fn open(
        first: Option<&Target>,
        declared: &[Declared],
        handler: &Handler,
        budget: usize,
        require: bool,
        reporter: &Reporter,
    ) -> Result<Self, OpenError> {
        let first_started = async {
            match first {
                Some(target) => Some(Connection::open(target, handler.for_server(None), None).await),
                None => None,
            }
        };
        let others = join_all(declared.iter().map(|server| async move {
            let target = match &server.transport {
                Ok(transport) => Target::from(transport.clone()),
                Err(reason) => return Err(format!("its `--mcp-config` entry cannot be used: {reason}")),
            };
            let opened = Connection::open(&target, handler.for_server(Some(&server.name)), Some(budget));
            match tokio::time::timeout(START_TIMEOUT, opened).await {
                Ok(opened) => opened,
                Err(_) => Err(format!("it did not answer within {} s", START_TIMEOUT.as_secs())),
            }
        }));
        let (first_started, others) = tokio::join!(first_started, others);
        let mut list = Vec::new();
        let mut problems = Vec::new();
        match first_started {
            Some(Ok(connection)) => list.push(Server {
                name: connection.server.split(' ').next().unwrap_or("toolbelt-mcp").to_string(),
                first: true,
                connection: Some(connection),
                failed: None,
                gone: AtomicBool::new(false),
            }),
            Some(Err(message)) => problems.push(OpenError::First(message)),
            None => {}
        }
        for (server, opened) in declared.iter().zip(others) {
            let (connection, failed) = match opened {
                Ok(connection) => (Some(connection), None),
                Err(reason) => {
                    reporter.line(format_args!(
                        "agent: MCP server `{}` did not start: {reason}; {}",
                        server.name,
                        if require {
                            "stopping (`--require-servers`)"
                        } else {
                            "going on without it (`--require-servers` stops the run instead)"
                        }
                    ));
                    problems.extend(require.then(|| {
                        OpenError::Required(format!("the MCP server `{}` did not start: {reason}", server.name))
                    }));
                    (None, Some(reason))
                }
            };
            list.push(Server {
                name: server.name.clone(),
                first: false,
                connection,
                failed,
                gone: AtomicBool::new(false),
            });
        }
        let servers = Self { list };
        if let Some(problem) = problems.into_iter().next() {
            servers.close().await;
            return Err(problem);
        }
        Ok(servers)
    }

    /// The one server of a `delegate` sub-agent: this process's, over `stream`.
    pub(crate) async fn in_process(stream: tokio::io::DuplexStream, handler: &Handler) -> Result<Self, String> {
        let connection = Connection::open_stream(stream, handler.for_server(None)).await?;
        let server = Server {
            name: "toolbelt-mcp".into(),
            first: true,
            connection: Some(connection),
            failed: None,
            gone: AtomicBool::new(false),
        };
        Ok(Self { list: vec![server] })
    }

    /// Calls `tool` on the server at `index`.
    pub(crate) async fn call(&self, index: usize, tool: &str, arguments: Map<String, Value>) -> Outcome {
        let Some(server) = self.list.get(index) else { return Outcome::error("the call has no server to go to") };
        match &server.connection {
            Some(connection) if !connection.is_gone() => connection.call(tool, arguments).await,
            _ => Outcome::error(format!(
                "the MCP server `{}` is not running, so `{tool}` cannot be called; use the other tools",
                server.name
            )),
        }
    }

    /// The servers that went away since the last look, by index.
    pub(crate) fn newly_gone(&self) -> Vec<usize> {
        let gone = |s: &Server| s.connection.as_ref().is_some_and(Connection::is_gone);
        (0..self.list.len())
            .filter(|&i| gone(&self.list[i]) && !self.list[i].gone.swap(true, Ordering::Relaxed))
            .collect()
    }

    /// Whether any server is still running.
    pub(crate) fn any_running(&self) -> bool {
        self.list.iter().any(|s| s.connection.as_ref().is_some_and(|c| !c.is_gone()))
    }

    /// The first server's todo lists as a reminder (see [`Connection::todo_reminder`]).
    pub(crate) async fn todo_reminder(&self) -> Option<String> {
        let first = self.list.first().filter(|s| s.first)?.connection.as_ref()?;
        if first.is_gone() { None } else { first.todo_reminder().await }
    }

    /// The running servers for the status line, e.g. `toolbelt-mcp 0.1.0 + memory`.
    pub(crate) fn label(&self) -> String {
        let names: Vec<String> = self
            .list
            .iter()
            .filter(|s| s.connection.is_some())
            .map(|s| {
                if s.first {
                    s.connection.as_ref().map_or_else(String::new, |c| c.server.clone())
                } else {
                    s.name.clone()
                }
            })
            .collect();
        if names.is_empty() { "no server".into() } else { names.join(" + ") }
    }

    /// Each server: name, version, tools, status (`running`, `failed`, `gone`) and error.
    pub(crate) fn summary(&self) -> Value {
        Value::Array(self.list.iter().map(Server::summary).collect())
    }

    /// Closes every connection (children: stdin closed, waited for, then killed).
    pub(crate) async fn close(self) {
        join_all(self.list.into_iter().filter_map(|s| s.connection).map(Connection::close)).await;
    }
}
