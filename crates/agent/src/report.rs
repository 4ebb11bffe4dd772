//! What the agent shows while it works: progress lines on stderr (a live status line when
//! stderr is a terminal), and the transcript file (the whole conversation as JSON lines).

use std::fmt::Display;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Spinner frames of the live status line.
const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/// How long a call runs before a plain (non-terminal) stderr gets a "still running" line.
pub(crate) const STILL_RUNNING_EVERY: Duration = Duration::from_secs(15);

/// Progress on stderr.
pub(crate) struct Reporter {
    tty: bool,
    live: Mutex<bool>,
    /// A question is being asked on the terminal: the live line must not draw over it.
    asking: AtomicBool,
    /// Streamed model text ended mid-line: the next line starts a new one, and the live line
    /// waits.
    mid_line: AtomicBool,
    /// Model text was streamed since the last [`Reporter::take_streamed`].
    streamed: AtomicBool,
    /// Where lines go instead of stderr (a sub-agent's, to its caller's progress).
    sink: Option<LineSink>,
}

/// Takes a reporter's lines instead of stderr.
pub(crate) type LineSink = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

impl Reporter {
    /// A reporter on this process's stderr.
    pub(crate) fn new() -> Self {
        Self {
            tty: std::io::stderr().is_terminal(),
            live: Mutex::new(false),
            asking: AtomicBool::new(false),
            mid_line: AtomicBool::new(false),
            streamed: AtomicBool::new(false),
            sink: None,
        }
    }

    /// A reporter whose lines go to `sink` (never to stderr, which may be a protocol's).
    pub(crate) fn to_sink(sink: LineSink) -> Self {
        Self { tty: false, sink: Some(sink), ..Self::new() }
    }

    /// Stops (or resumes) drawing the live line while the user answers a question.
    pub(crate) fn set_asking(&self, asking: bool) {
        self.asking.store(asking, Ordering::Relaxed);
        if asking {
            self.clear_live();
        }
    }

    /// Whether stderr is a terminal (live status lines are drawn).
    pub(crate) fn is_tty(&self) -> bool {
        self.tty
    }

    /// Prints a line, replacing the live status line if one is shown.
    pub(crate) fn line(&self, text: impl Display) {
        if let Some(sink) = &self.sink {
            sink(&text.to_string());
            return;
        }
        let mut live = self.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut err = std::io::stderr().lock();
        if std::mem::take(&mut *live) {
            let _ = write!(err, "\r\x1b[2K");
        }
        if self.mid_line.swap(false, Ordering::Relaxed) {
            let _ = writeln!(err);
        }
        let _ = writeln!(err, "{text}");
    }

    /// Shows model text as it streams in (the live line gives way to it).
    pub(crate) fn stream_text(&self, text: &str) {
        if text.is_empty() || self.sink.is_some() {
            return;
        }
        let mut live = self.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut err = std::io::stderr().lock();
        if std::mem::take(&mut *live) {
            let _ = write!(err, "\r\x1b[2K");
        }
        let _ = write!(err, "{text}");
        let _ = err.flush();
        self.mid_line.store(!text.ends_with('\n'), Ordering::Relaxed);
        self.streamed.store(true, Ordering::Relaxed);
    }

    /// Whether model text was streamed since the last call (it need not be shown again).
    pub(crate) fn take_streamed(&self) -> bool {
        self.streamed.swap(false, Ordering::Relaxed)
    }

    /// Draws the live status line (terminals only): a spinner frame chosen by `elapsed`.
    pub(crate) fn live(&self, text: &str, elapsed: Duration) {
        if !self.tty || self.asking.load(Ordering::Relaxed) || self.mid_line.load(Ordering::Relaxed) {
            return;
        }
        let frame = FRAMES[(elapsed.as_millis() / 100) as usize % FRAMES.len()];
        let mut live = self.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{frame} {text} {:.1} s", elapsed.as_secs_f64());
        let _ = err.flush();
        *live = true;
    }

    /// Removes the live status line.
    pub(crate) fn clear_live(&self) {
        let mut live = self.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if std::mem::take(&mut *live) {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}

/// A ticker for work in progress: the live line on a terminal, else a line every
/// [`STILL_RUNNING_EVERY`].
pub(crate) struct Ticker {
    started: Instant,
    said: Duration,
}

impl Ticker {
    /// A ticker starting now.
    pub(crate) fn new() -> Self {
        Self { started: Instant::now(), said: Duration::ZERO }
    }

    /// How long since the start.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Shows that `what` is still running.
    pub(crate) fn tick(&mut self, reporter: &Reporter, what: &str) {
        let elapsed = self.elapsed();
        if reporter.is_tty() {
            reporter.live(what, elapsed);
        } else if elapsed >= self.said + STILL_RUNNING_EVERY {
            self.said = elapsed;
            reporter.line(format_args!("  … {what}: still running after {} s", elapsed.as_secs()));
        }
    }
}

/// The transcript: one JSON object per line, written as the run goes (a crash keeps what was
/// written).
pub(crate) struct Transcript {
    file: Option<std::fs::File>,
}

impl Transcript {
    /// A transcript written to `path` (created or truncated), or none.
    pub(crate) fn create(path: Option<&Path>) -> std::io::Result<Self> {
        let file = path.map(toolbelt_mcp_sandbox::fs::create_user_file).transpose()?;
        Ok(Self { file })
    }

    /// A new private transcript at `path` (mode 0600, never through a symlink or over a file
    /// that is there): a sub-agent's, in the server's state dir.
    pub(crate) fn create_private(path: &Path) -> std::io::Result<Self> {
        Ok(Self { file: Some(toolbelt_mcp_sandbox::fs::create_private_file(path)?) })
    }

    /// A transcript appended to `path` (a resumed run's own transcript); a last line cut off
    /// by a crash is ended first, so the next record starts a line of its own.
    pub(crate) fn append(path: &Path) -> std::io::Result<Self> {
        let ends_cut =
            toolbelt_mcp_sandbox::fs::read_user_file(path).is_ok_and(|b| b.last().is_some_and(|&c| c != b'\n'));
        let mut file = toolbelt_mcp_sandbox::fs::append_user_file(path)?;
        if ends_cut {
            file.write_all(b"\n")?;
        }
        Ok(Self { file: Some(file) })
    }

    /// Writes one event; a failing write is reported once and stops the transcript.
    pub(crate) fn write(&mut self, reporter: &Reporter, event: &Value) {
        let Some(file) = self.file.as_mut() else { return };
        let mut line = event.to_string();
        line.push('\n');
        if let Err(err) = file.write_all(line.as_bytes()) {
            reporter.line(format_args!("agent: cannot write the transcript ({err}); it stops here"));
            self.file = None;
        }
    }
}

/// `text` cut to `max` characters on one line, with `…` when cut.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// `n` with thousands separators (`12,345`).
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("a\n  b\tc", 10), "a b c");
        assert_eq!(one_line("abcdefgh", 3), "abc…");
        assert_eq!(one_line("ééé", 2), "éé…");
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
