//! The signals that stop a server: `SIGTERM`, `SIGINT` and `SIGHUP` on Unix; Ctrl-C,
//! Ctrl-Break and the console closing on Windows.

/// The stop signals, watched from creation on (replacing the default of dying on them).
#[cfg(unix)]
pub(crate) struct Signals([tokio::signal::unix::Signal; 3]);

#[cfg(unix)]
impl Signals {
    /// Starts watching.
    pub(crate) fn new() -> Result<Self, String> {
        use tokio::signal::unix::{SignalKind, signal};
        let watch = |kind: SignalKind, name: &str| signal(kind).map_err(|e| format!("cannot watch for {name}: {e}"));
        Ok(Self([
            watch(SignalKind::terminate(), "SIGTERM")?,
            watch(SignalKind::interrupt(), "SIGINT")?,
            watch(SignalKind::hangup(), "SIGHUP")?,
        ]))
    }

    /// The name of the next signal received.
    pub(crate) async fn next(&mut self) -> &'static str {
        let [terminate, interrupt, hangup] = &mut self.0;
        tokio::select! {
            _ = terminate.recv() => "SIGTERM",
            _ = interrupt.recv() => "SIGINT",
            _ = hangup.recv() => "SIGHUP",
        }
    }
}

/// The stop signals, watched from creation on (replacing the default of dying on them).
#[cfg(windows)]
pub(crate) struct Signals {
    ctrl_c: tokio::signal::windows::CtrlC,
    ctrl_break: tokio::signal::windows::CtrlBreak,
    ctrl_close: tokio::signal::windows::CtrlClose,
}

#[cfg(windows)]
impl Signals {
    /// Starts watching.
    pub(crate) fn new() -> Result<Self, String> {
        use tokio::signal::windows;
        let fail = |name: &str, e: std::io::Error| format!("cannot watch for {name}: {e}");
        Ok(Self {
            ctrl_c: windows::ctrl_c().map_err(|e| fail("Ctrl-C", e))?,
            ctrl_break: windows::ctrl_break().map_err(|e| fail("Ctrl-Break", e))?,
            ctrl_close: windows::ctrl_close().map_err(|e| fail("the console closing", e))?,
        })
    }

    /// The name of the next signal received.
    pub(crate) async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.ctrl_c.recv() => "Ctrl-C",
            _ = self.ctrl_break.recv() => "Ctrl-Break",
            _ = self.ctrl_close.recv() => "console close",
        }
    }
}
