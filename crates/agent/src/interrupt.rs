//! Ctrl-C and SIGTERM for the agent: each Ctrl-C is one event, so the loop decides what it
//! means (cancel the running tool call, or stop); SIGTERM stops at once.

use tokio::sync::mpsc;

/// A signal the loop acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// Ctrl-C (SIGINT).
    Interrupt,
    /// SIGTERM or SIGHUP.
    Terminate,
}

/// The signals received and not yet acted on.
pub(crate) struct Interrupts {
    received: mpsc::UnboundedReceiver<Signal>,
}

impl Interrupts {
    /// Starts listening (replacing the default of dying on these signals).
    pub(crate) fn listen() -> std::io::Result<Self> {
        let (sender, received) = mpsc::unbounded_channel();
        #[cfg(unix)]
        let (mut interrupt, mut terminate, mut hangup) = {
            use tokio::signal::unix::{SignalKind, signal};
            (signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?, signal(SignalKind::hangup())?)
        };
        // Windows: Ctrl-C interrupts; Ctrl-Break and the console closing terminate.
        #[cfg(windows)]
        let (mut interrupt, mut terminate, mut hangup) = {
            use tokio::signal::windows;
            (windows::ctrl_c()?, windows::ctrl_break()?, windows::ctrl_close()?)
        };
        tokio::spawn(async move {
            loop {
                let signal = tokio::select! {
                    Some(()) = interrupt.recv() => Signal::Interrupt,
                    Some(()) = terminate.recv() => Signal::Terminate,
                    Some(()) = hangup.recv() => Signal::Terminate,
                    else => return,
                };
                if sender.send(signal).is_err() {
                    return;
                }
            }
        });
        Ok(Self { received })
    }

    /// A stop when `cancel` is cancelled (a sub-agent's caller cancelled), and no signal
    /// handling: the process's signals are not the sub-agent's.
    pub(crate) fn on_cancel(cancel: tokio_util::sync::CancellationToken) -> Self {
        let (sender, received) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            tokio::select! {
                () = cancel.cancelled() => {
                    let _ = sender.send(Signal::Terminate);
                }
                () = sender.closed() => {}
            }
        });
        Self { received }
    }

    /// The next signal (pending forever once the listener is gone).
    pub(crate) async fn next(&mut self) -> Signal {
        match self.received.recv().await {
            Some(signal) => signal,
            None => std::future::pending().await,
        }
    }
}
