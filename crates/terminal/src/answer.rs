//! Waiting for a program's answer to typed input (`send_input`), by an adaptive quiet window:
//! long while only the echo of the input has arrived or a command the shell started is still in
//! the foreground, short once the program answered and the terminal is its own again.

use std::time::Duration;

use crate::session::TermSession;
use crate::text;

/// The first quiet window once the program answered: it doubles each time more output arrives
/// within it, up to the caller's longest one.
const FIRST_QUIET: Duration = Duration::from_millis(2);

/// How much of the output after the input is looked at to tell an echo from an answer.
const ECHO_BYTES: usize = 4096;

/// Whether `output` (terminal text since the input was typed, escapes stripped) holds an
/// answer to `typed`, not just its echo (or part of it). Typed text is matched by its last
/// line: the answer is whatever non-blank text follows its first occurrence. Without text (a
/// key or Enter alone), any non-blank output is the answer.
pub fn answered(output: &str, typed: &str) -> bool {
    let line = typed.lines().last().unwrap_or_default().trim();
    if line.is_empty() {
        return !output.trim().is_empty();
    }
    match output.find(line) {
        Some(at) => !output[at + line.len()..].trim().is_empty(),
        // The echo may still be arriving (`l` of `ls`), or be off (a password prompt).
        None => !line.starts_with(output.trim()),
    }
}

impl TermSession {
    /// Waits after input was typed (the output log held `since` bytes before it; `typed` is the
    /// text, empty for keys alone) until the program answered and its output has been quiet for an
    /// adaptive window, or the session ended, or `wait` passed. The window is `quiet` while only
    /// the echo arrived (the program is working) and while a job the shell started holds the
    /// terminal; once answered, it starts at 2 ms and doubles as output keeps flowing, up to
    /// `quiet`. The first output may take all of `wait`.
    pub async fn wait_for_answer(&self, since: u64, typed: &str, wait: Duration, quiet: Duration) {
        let deadline = tokio::time::Instant::now() + wait;
        self.wait_for_output(since, wait).await;
        let mut output = self.out.subscribe();
        let (mut has_answered, mut window) = (false, FIRST_QUIET);
        while self.is_running() && !self.out.is_closed() && tokio::time::Instant::now() < deadline {
            if !has_answered {
                let chunk = self.out.read(since, ECHO_BYTES);
                has_answered = answered(&text::to_text(&chunk.bytes).0, typed);
            }
            let hold = if !has_answered || self.foreground_job() { quiet } else { window };
            let settle = (tokio::time::Instant::now() + hold).min(deadline);
            tokio::select! {
                changed = output.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    if has_answered {
                        window = (window * 2).min(quiet);
                    }
                }
                _ = tokio::time::sleep_until(settle) => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_echo_is_not_an_answer_and_what_follows_it_is() {
        assert!(!answered("", "x"), "nothing yet");
        assert!(!answered("x\n", "x"), "cat's echo");
        assert!(answered("x\nx\n", "x"), "cat's answer repeats the input");
        assert!(!answered("l", "ls"), "half an echo");
        assert!(!answered("$ ls\n", "ls"), "bash redrew its prompt with the echo");
        assert!(answered("ls\nCargo.toml  src\n$ ", "ls"));
        assert!(answered("1+1\n2\n>>> ", "1+1"), "python");
        assert!(answered("Password: ", "hunter2"), "no echo: the prompt is the answer");
        assert!(!answered("b\n", "a\nb"), "several lines: the last one's echo");
        assert!(answered("a\na\nb\nb\n", "a\nb"));
    }

    #[test]
    fn keys_alone_are_answered_by_any_text() {
        assert!(!answered("\n", ""), "the echo of Enter");
        assert!(answered("\n$ ", ""), "a new prompt");
        assert!(answered("^C\n", "  "));
    }
}
