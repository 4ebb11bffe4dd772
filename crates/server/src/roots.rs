//! A connection's roots: the configured ones, or the client's MCP roots when no root was
//! given and the client offers them (refreshed on `roots/list_changed`), or the working
//! directory a host names in a call's `_meta` (Codex, Goose) for clients that send no roots.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::service::Peer;
use tokio::sync::watch;

use crate::logging::Logger;
use toolbelt_mcp_sandbox::{Roots, fs};
use toolbelt_mcp_tools::Severity;

/// How long a call waits for the client's first `roots/list` answer.
const ROOTS_WAIT: Duration = Duration::from_secs(5);

/// The roots of one connection.
pub(crate) struct SessionRoots {
    current: RwLock<Arc<Roots>>,
    /// `false` while the client's roots are expected but not yet fetched.
    ready: watch::Sender<bool>,
    /// Why there is no workspace yet (the server's default was refused), until one is named.
    refused: RwLock<Option<String>>,
    /// Whether the client's MCP roots were adopted: a host's `_meta` directory then changes nothing.
    from_client: AtomicBool,
    /// The directory a host last named in `_meta`, as written: Codex names it on every call, and
    /// the same name is neither resolved nor warned about again.
    last_named: std::sync::Mutex<Option<String>>,
}

/// The `_meta` keys hosts name their working directory with: Codex's sandbox state
/// (`sandboxCwd`, a `file://` URI or a path) and Goose's `agent-working-dir`.
const CODEX_SANDBOX_STATE: &str = "codex/sandbox-state-meta";
const GOOSE_WORKING_DIR: &str = "agent-working-dir";

/// The working directory a call's `_meta` names, as the host wrote it.
pub(crate) fn host_working_dir(meta: &serde_json::Map<String, serde_json::Value>) -> Option<&str> {
    meta.get(CODEX_SANDBOX_STATE)
        .and_then(|state| state.get("sandboxCwd"))
        .or_else(|| meta.get(GOOSE_WORKING_DIR))
        .and_then(serde_json::Value::as_str)
}

impl SessionRoots {
    /// Starts with the configured roots, ready; `refused` says why there are none.
    pub(crate) fn new(roots: Roots, refused: Option<String>) -> Self {
        Self {
            current: RwLock::new(Arc::new(roots)),
            ready: watch::Sender::new(true),
            refused: RwLock::new(refused),
            from_client: AtomicBool::new(false),
            last_named: std::sync::Mutex::new(None),
        }
    }

    /// Why calls have no workspace, while none was named.
    pub(crate) fn refusal(&self) -> Option<String> {
        self.refused.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Adopts the directory a host named in a call's `_meta` (checked: existing, not `/`, the
    /// home or a system directory), unless the client's MCP roots are in use. Whether the roots
    /// changed.
    pub(crate) fn adopt_host_dir(&self, named: &str, home: Option<&std::path::Path>) -> bool {
        if self.from_client.load(Ordering::Acquire) {
            return false;
        }
        {
            let mut last = self.last_named.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.as_deref() == Some(named) {
                return false;
            }
            *last = Some(named.to_string());
        }
        let Some(dir) = toolbelt_mcp_core::config::workspace::host_dir(named, home) else {
            tracing::warn!(
                named,
                "ignoring the working directory the host named: not an existing directory that may be a workspace"
            );
            return false;
        };
        let mut current = self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if current.list() == [dir.clone()] {
            return false;
        }
        tracing::info!(root = %dir.display(), "using the working directory the host named in the call");
        *current = Arc::new(Roots::new(vec![dir]));
        *self.refused.write().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        true
    }

    /// Called at `initialize` when the client's roots will replace the default ones: calls
    /// wait (briefly) until they arrive.
    pub(crate) fn expect_client_roots(&self) {
        self.ready.send_replace(false);
    }

    /// Whether the client's roots are expected and not fetched yet.
    pub(crate) fn awaiting_client(&self) -> bool {
        !*self.ready.borrow()
    }

    /// The roots for a call, waiting up to five seconds for the client's first answer.
    pub(crate) async fn current(&self) -> Arc<Roots> {
        let mut ready = self.ready.subscribe();
        let _ = tokio::time::timeout(ROOTS_WAIT, ready.wait_for(|r| *r)).await;
        self.snapshot()
    }

    fn snapshot(&self) -> Arc<Roots> {
        match self.current.read() {
            Ok(roots) => roots.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Asks the client for its roots and adopts the ones that are existing local directories.
    #[allow(deprecated, reason = "roots are deprecated by SEP-2577 but still sent by current hosts")]
    pub(crate) async fn fetch(&self, peer: &Peer<RoleServer>, logger: &Logger, home: Option<&std::path::Path>) {
        let answer = tokio::time::timeout(ROOTS_WAIT, peer.list_roots()).await;
        match answer {
            Ok(Ok(result)) => {
                let mut dirs = Vec::new();
                for root in &result.roots {
                    match local_dir(&root.uri) {
                        // The client names it, but `/`, the home (or above), a system directory or
                        // one others may write is no more a workspace than when guessed.
                        Some(dir) => match toolbelt_mcp_core::config::workspace::refused(&dir, home) {
                            None => dirs.push(dir),
                            Some(what) => logger.log(
                                Severity::Warning,
                                format!("ignoring the client root `{}`: it is {what}, never a workspace unless given with `--root`", root.uri),
                            ),
                        },
                        None => logger.log(
                            Severity::Warning,
                            format!("ignoring the client root `{}`: it is not an existing local directory", root.uri),
                        ),
                    }
                }
                if dirs.is_empty() {
                    let message = format!(
                        "the client's roots hold no usable local directory; keeping {:?}",
                        self.snapshot().list()
                    );
                    tracing::warn!("{message}");
                    logger.log(Severity::Warning, message);
                } else {
                    tracing::info!(roots = ?dirs, "using the client's roots");
                    logger.log(Severity::Info, format!("using the client's roots: {dirs:?}"));
                    let mut current = self.current.write().unwrap_or_else(|poisoned| poisoned.into_inner());
                    *current = Arc::new(Roots::new(dirs));
                    self.from_client.store(true, Ordering::Release);
                    *self.refused.write().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
                }
            }
            Ok(Err(err)) => tracing::warn!("roots/list failed: {err}; keeping the configured roots"),
            Err(_) => tracing::warn!("roots/list got no answer in 5 s; keeping the configured roots"),
        }
        self.ready.send_replace(true);
    }
}

/// A `file://` URI's path, canonical, if it is an existing directory.
fn local_dir(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    let decoded = percent_encoding::percent_decode_str(path).decode_utf8().ok()?;
    let canonical = fs::canonicalize(std::path::Path::new(decoded.as_ref())).ok()?;
    if fs::is_dir(&canonical) {
        Some(canonical)
    } else {
        tracing::warn!(uri, "ignoring a client root that is not a directory");
        None
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("with space");
        std::fs::create_dir(&dir).unwrap();
        let uri = format!("file://{}", tmp.path().join("with%20space").display());
        assert_eq!(local_dir(&uri), Some(dir.canonicalize().unwrap()));
        assert_eq!(local_dir("https://example.com/x"), None);
        assert_eq!(local_dir("file:///definitely/not/here"), None);
    }
}
