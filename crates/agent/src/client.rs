//! The agent's MCP connection: a `toolbelt-mcp serve` child over stdio (the default), a
//! running streamable HTTP server (`--server-url`), or any other stdio server
//! (`--server-cmd`). Tool calls, the todo reminder and shutdown go through here.

use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, ContentBlock, ReadResourceRequestParams, ResourceContents};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};

use super::handler::Handler;
use super::provider::Block;

/// Where the MCP server is.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// A program started as a child speaking MCP on stdio: this binary's `serve`, or
    /// `--server-cmd`.
    Spawn {
        /// The program.
        program: std::path::PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it (an `--mcp-config` entry's `env`).
        env: Vec<(String, String)>,
        /// Its working directory (default: the agent's).
        cwd: Option<std::path::PathBuf>,
    },
    /// A streamable HTTP endpoint, with an optional bearer token.
    Url {
        /// The endpoint, e.g. `http://127.0.0.1:8765/mcp`.
        url: String,
        /// The bearer token (`TOOLBELT_AUTH_TOKEN`).
        token: Option<String>,
        /// More headers for every request (an `--mcp-config` entry's `headers`).
        headers: Vec<(String, String)>,
    },
}

/// A tool call's answer, mapped for the model.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// Text and images.
    pub content: Vec<Block>,
    /// Whether the call failed.
    pub is_error: bool,
}

impl Outcome {
    /// A failed call saying `text`.
    pub(crate) fn error(text: impl Into<String>) -> Self {
        Self { content: vec![Block::text(text)], is_error: true }
    }

    /// The text of the answer, joined.
    pub(crate) fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|b| if let Block::Text { text } = b { Some(text.as_str()) } else { None })
            .collect();
        texts.join("\n")
    }
}

/// A live connection to the server.
pub(crate) struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// The server's tools, as listed.
    pub tools: Vec<rmcp::model::Tool>,
    /// The server's name and version, e.g. `toolbelt-mcp 0.1.0`.
    pub server: String,
    /// Most bytes of text a result may bring the model, when the agent caps it (a server of
    /// `--mcp-config`: the toolbelt caps its own).
    budget: Option<usize>,
}

impl Connection {
    /// Connects to `target` and lists its tools; results are cut to `budget` bytes of text
    /// when given.
    pub(crate) async fn open(target: &Target, handler: Handler, budget: Option<usize>) -> Result<Self, String> {
        let service = match target {
            Target::Spawn { program, args, env, cwd } => {
                let mut command = tokio::process::Command::new(program);
                // Its own process group, so a Ctrl-C on the terminal reaches the agent only:
                // the agent decides what to cancel, then closes the server's stdin.
                command.args(args);
                #[cfg(unix)]
                command.process_group(0);
                // Windows: a process group of its own too (`CREATE_NEW_PROCESS_GROUP`), so
                // Ctrl-C reaches the agent only.
                #[cfg(windows)]
                command.creation_flags(0x0000_0200);
                // The server needs no provider key: none reaches it (or its commands).
                for (name, _) in std::env::vars_os() {
                    if name.to_str().is_some_and(is_provider_secret) {
                        command.env_remove(name);
                    }
                }
                // What its config entry sets, though, it gets.
                command.envs(env.iter().map(|(k, v)| (k, v)));
                if let Some(dir) = cwd {
                    command.current_dir(dir);
                }
                let (transport, _) = TokioChildProcess::builder(command)
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|e| format!("cannot start the MCP server `{}`: {e}", program.display()))?;
                handler.serve(transport).await
            }
            Target::Url { url, token, headers } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = token {
                    config = config.auth_header(token.clone());
                }
                if !headers.is_empty() {
                    config = config.custom_headers(header_map(headers)?);
                }
                handler.serve(StreamableHttpClientTransport::from_config(config)).await
            }
        }
        .map_err(|e| format!("the MCP server did not complete the handshake: {e}"))?;
        Self::listed(service, budget).await
    }

    /// Connects over `stream` to a server of this process (a `delegate` sub-agent's).
    pub(crate) async fn open_stream(stream: tokio::io::DuplexStream, handler: Handler) -> Result<Self, String> {
        let service = handler
            .serve(stream)
            .await
            .map_err(|e| format!("the in-process server did not complete the handshake: {e}"))?;
        Self::listed(service, None).await
    }

    /// The connection once its tools are listed.
    async fn listed(service: RunningService<RoleClient, Handler>, budget: Option<usize>) -> Result<Self, String> {
        let tools = service.list_all_tools().await.map_err(|e| format!("cannot list the server's tools: {e}"))?;
        let server = service
            .peer_info()
            .and_then(|info| info.server_info.as_ref().map(|id| format!("{} {}", id.name, id.version)))
            .unwrap_or_else(|| "(unnamed server)".into());
        Ok(Self { service, tools, server, budget })
    }

    /// Calls `name` with `arguments`. Dropping the future cancels the call on the server
    /// (`notifications/cancelled`).
    pub(crate) async fn call(&self, name: &str, arguments: Map<String, Value>) -> Outcome {
        let params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments);
        match self.service.call_tool(params).await {
            Ok(result) => {
                let mut content: Vec<Block> = result.content.iter().filter_map(block).collect();
                if content.is_empty() {
                    // Providers want something in a result: the structured result, or a note.
                    let text =
                        result.structured_content.as_ref().map_or_else(|| "(no output)".to_string(), Value::to_string);
                    content.push(Block::text(text));
                }
                if let Some(budget) = self.budget {
                    cap(&mut content, budget);
                }
                Outcome { content, is_error: result.is_error.unwrap_or(false) }
            }
            Err(err) => Outcome::error(format!("the MCP call failed: {err}")),
        }
    }

    /// The todo lists the server offers as `todo://` resources, as markdown, when one has
    /// items; `None` when there is none (or the server has no such resources).
    pub(crate) async fn todo_reminder(&self) -> Option<String> {
        let has_resources = self.service.peer_info().is_some_and(|info| info.capabilities.resources.is_some());
        if !has_resources {
            return None;
        }
        let listed = self.service.list_all_resources().await.ok()?;
        let mut shown = Vec::new();
        for resource in listed.iter().filter(|r| r.uri.starts_with("todo://")).take(4) {
            let Ok(read) = self.service.read_resource(ReadResourceRequestParams::new(resource.uri.clone())).await
            else {
                continue;
            };
            let texts = read.contents.iter().filter_map(|c| match c {
                ResourceContents::TextResourceContents { text, mime_type, .. } => Some((mime_type.as_deref(), text)),
                _ => None,
            });
            let (mut items, mut markdown) = (0, None);
            for (mime, text) in texts {
                match mime {
                    Some("application/json") => {
                        let json = serde_json::from_str::<Value>(text).unwrap_or_default();
                        items = json.get("todos").and_then(Value::as_array).map_or(0, Vec::len);
                    }
                    Some("text/markdown") => markdown = Some(text.clone()),
                    _ => {}
                }
            }
            if let Some(markdown) = markdown.filter(|_| items > 0) {
                shown.push(markdown);
            }
        }
        (!shown.is_empty()).then(|| shown.join("\n"))
    }

    /// Whether the server went away (its process exited, or the HTTP connection closed).
    pub(crate) fn is_gone(&self) -> bool {
        self.service.peer().is_transport_closed()
    }

    /// Closes the connection: the child's stdin is closed and it is waited for (then sent
    /// SIGTERM, then killed, if it lingers).
    pub(crate) async fn close(self) {
        let _ = self.service.cancel().await;
    }
}

/// `headers` as the HTTP transport takes them; a bad name or value is named.
fn header_map(
    headers: &[(String, String)],
) -> Result<std::collections::HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>, String> {
    headers
        .iter()
        .map(|(name, value)| {
            let parsed_name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
            let parsed_value = reqwest::header::HeaderValue::from_str(value)
                .map_err(|_| format!("the value of header `{name}` is not valid in HTTP"))?;
            Ok((parsed_name, parsed_value))
        })
        .collect()
}

/// Cuts the text of `content` to `budget` bytes in all (at a character boundary), saying how
/// much was left out.
fn cap(content: &mut [Block], budget: usize) {
    let mut left = budget;
    let mut cut = 0usize;
    for block in content.iter_mut() {
        let Block::Text { text } = block else { continue };
        if text.len() <= left {
            left -= text.len();
            continue;
        }
        let mut end = left;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        cut += text.len() - end;
        text.truncate(end);
        left = 0;
    }
    if cut > 0
        && let Some(Block::Text { text }) = content.iter_mut().rev().find(|b| matches!(b, Block::Text { .. }))
    {
        text.push_str(&format!(
            "\n[… {cut} more bytes left out: the agent passes at most {budget} bytes of a result to the model (`--output-budget`)]"
        ));
    }
}

/// An MCP content item as a block for the model.
fn block(content: &ContentBlock) -> Option<Block> {
    match content {
        ContentBlock::Text(text) => Some(Block::text(text.text.clone())),
        ContentBlock::Image(image) => Some(Block::Image { mime: image.mime_type.clone(), data: image.data.clone() }),
        ContentBlock::Resource(resource) => match &resource.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => Some(Block::text(format!("[{uri}]\n{text}"))),
            ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                Some(Block::text(format!("[{uri}: {} content not shown]", mime_type.as_deref().unwrap_or("binary"))))
            }
            _ => None,
        },
        ContentBlock::ResourceLink(link) => Some(Block::text(format!("[resource: {}]", link.uri))),
        ContentBlock::Audio(audio) => Some(Block::text(format!("[{} audio not shown]", audio.mime_type))),
        _ => None,
    }
}

/// Whether an environment variable holds an LLM provider's key (`ANTHROPIC_API_KEY`,
/// `OPENAI_API_KEY`, `…_API_KEY`, `…_AUTH_TOKEN` of a provider), which the agent keeps to
/// itself.
fn is_provider_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.ends_with("_API_KEY")
        || upper == "ANTHROPIC_AUTH_TOKEN"
        || upper.starts_with("OPENAI_") && upper.contains("KEY")
}
