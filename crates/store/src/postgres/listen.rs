//! Changes other servers made, heard through `LISTEN`: a connection of its own (not pooled),
//! reconnected after a pause when it drops, whose notifications become the store's change
//! notices, so a subscriber on one machine hears of a change made on another at once.

use std::time::Duration;

use futures::StreamExt;
use tokio::sync::broadcast;
use tokio_postgres::{AsyncMessage, NoTls};

use crate::Changed;

/// The notification channel.
pub(super) const CHANNEL: &str = "toolbelt_changes";
/// The pause before listening again after the connection dropped or could not be made.
const RETRY: Duration = Duration::from_secs(2);

/// A change as sent: the sender's mark, the workspace key and the URI, tab-separated (neither
/// a key nor a URI holds a tab: names are checked, paths rarely do and then only mismatch).
pub(super) fn payload(origin: &str, changed: &Changed) -> String {
    format!("{origin}\t{}\t{}", changed.workspace, changed.uri)
}

fn parse(payload: &str) -> Option<(&str, Changed)> {
    let mut fields = payload.splitn(3, '\t');
    let (origin, workspace, uri) = (fields.next()?, fields.next()?, fields.next()?);
    Some((origin, Changed { workspace: workspace.to_string(), uri: uri.to_string() }))
}

/// Listens until `alive` says the store is gone, forwarding other origins' changes.
pub(super) fn spawn(
    config: tokio_postgres::Config,
    origin: String,
    changes: broadcast::Sender<Changed>,
    alive: impl Fn() -> bool + Send + Sync + 'static,
) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    runtime.spawn(async move {
        while alive() {
            if let Err(err) = listen(&config, &origin, &changes, &alive).await {
                tracing::debug!(%err, "not hearing other servers' changes for now");
            }
            tokio::time::sleep(RETRY).await;
        }
    });
}

async fn listen(
    config: &tokio_postgres::Config,
    origin: &str,
    changes: &broadcast::Sender<Changed>,
    alive: &impl Fn() -> bool,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(NoTls).await?;
    let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(note)) => {
                    if tx.send(note.payload().to_string()).is_err() {
                        return Ok(());
                    }
                }
                Ok(_) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    });
    client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
    let mut check = tokio::time::interval(RETRY);
    loop {
        tokio::select! {
            payload = rx.recv() => {
                let Some(payload) = payload else { break };
                if let Some((from, changed)) = parse(&payload) && from != origin {
                    // No receiver is fine: nobody subscribed.
                    let _ = changes.send(changed);
                }
            }
            _ = check.tick() => if !alive() { break },
        }
    }
    drop(client);
    driver.await.unwrap_or(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip() {
        let changed = Changed { workspace: "github.com/acme/tool".into(), uri: "todo://default".into() };
        let text = payload("42-7", &changed);
        assert_eq!(parse(&text), Some(("42-7", changed)));
        assert_eq!(parse("no tabs"), None);
    }
}
