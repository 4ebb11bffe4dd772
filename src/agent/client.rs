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
pub enum Target {
    /// A program started as a child speaking MCP on stdio: this binary's `serve`, or
    /// `--server-cmd`.
    Spawn {
        /// The program.
        program: std::path::PathBuf,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A streamable HTTP endpoint, with an optional bearer token.
    Url {
        /// The endpoint, e.g. `http://127.0.0.1:8765/mcp`.
        url: String,
        /// The bearer token (`TOOLBELT_AUTH_TOKEN`).
        token: Option<String>,
    },
}

/// A tool call's answer, mapped for the model.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Text and images.
    pub content: Vec<Block>,
    /// Whether the call failed.
    pub is_error: bool,
}

impl Outcome {
    /// A failed call saying `text`.
    pub fn error(text: impl Into<String>) -> Self {
        Self { content: vec![Block::text(text)], is_error: true }
    }

    /// The text of the answer, joined.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|b| if let Block::Text { text } = b { Some(text.as_str()) } else { None })
            .collect();
        texts.join("\n")
    }
}

/// A live connection to the server.
pub struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// The server's tools, as listed.
    pub tools: Vec<rmcp::model::Tool>,
    /// The server's name and version, e.g. `toolbelt-mcp 0.1.0`.
    pub server: String,
}

impl Connection {
    /// Connects to `target` and lists its tools.
    pub async fn open(target: &Target, handler: Handler) -> Result<Self, String> {
        let service = match target {
            Target::Spawn { program, args } => {
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
                let (transport, _) = TokioChildProcess::builder(command)
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|e| format!("cannot start the MCP server `{}`: {e}", program.display()))?;
                handler.serve(transport).await
            }
            Target::Url { url, token } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = token {
                    config = config.auth_header(token.clone());
                }
                handler.serve(StreamableHttpClientTransport::from_config(config)).await
            }
        }
        .map_err(|e| format!("the MCP server did not complete the handshake: {e}"))?;
        let tools = service.list_all_tools().await.map_err(|e| format!("cannot list the server's tools: {e}"))?;
        let server = service
            .peer_info()
            .and_then(|info| info.server_info.as_ref().map(|id| format!("{} {}", id.name, id.version)))
            .unwrap_or_else(|| "(unnamed server)".into());
        Ok(Self { service, tools, server })
    }

    /// Calls `name` with `arguments`. Dropping the future cancels the call on the server
    /// (`notifications/cancelled`).
    pub async fn call(&self, name: &str, arguments: Map<String, Value>) -> Outcome {
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
                Outcome { content, is_error: result.is_error.unwrap_or(false) }
            }
            Err(err) => Outcome::error(format!("the MCP call failed: {err}")),
        }
    }

    /// The todo lists the server offers as `todo://` resources, as markdown, when one has
    /// items; `None` when there is none (or the server has no such resources).
    pub async fn todo_reminder(&self) -> Option<String> {
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
    pub fn is_gone(&self) -> bool {
        self.service.peer().is_transport_closed()
    }

    /// Closes the connection: the child's stdin is closed and it is waited for (then sent
    /// SIGTERM, then killed, if it lingers).
    pub async fn close(self) {
        let _ = self.service.cancel().await;
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
