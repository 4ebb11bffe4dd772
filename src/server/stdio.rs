//! Serving one connection over stdin/stdout.

use std::sync::Arc;

use rmcp::ServiceExt;

use crate::config::Config;
use crate::server::Server;

/// Serves MCP on stdio until the client disconnects (stdin closes).
pub async fn serve(config: Arc<Config>) -> Result<(), String> {
    let service = Server::new(config)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|err| format!("the MCP handshake failed: {err}"))?;
    service.waiting().await.map_err(|err| format!("the server stopped with an error: {err}"))?;
    Ok(())
}
