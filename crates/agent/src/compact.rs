//! Fitting the next request into the context window (`context.rs` estimates, `summary.rs`
//! writes the summary request): old tool results become stubs, then the older turns are
//! summarised by the model in a request without tools, and a request that still would not fit
//! is never sent.

use serde_json::json;

use super::context::{Compaction, cut_last, elide, keep_from};
use super::provider::{Block, Message, Request, Role};
use super::report::thousands;
use super::summary;
use super::turns::{Agent, Run, Stop};

/// The share of the window the summary request's transcript may fill.
const SUMMARY_SHARE: f64 = 0.5;

impl Agent<'_> {
    /// Compacts `messages` when the request they make (with `reminder`) passes the threshold;
    /// an error stop when it cannot be made to fit the window, or the user interrupts.
    pub(super) async fn fit(
        &mut self,
        messages: &mut Vec<Message>,
        reminder: Option<&str>,
        turn: u32,
        run: &mut Run,
    ) -> Result<(), Stop> {
        let before = self.context.estimate(messages, reminder);
        if before <= self.context.threshold() {
            return Ok(());
        }
        let keep = keep_from(messages);
        let (mut elided, mut elided_bytes) = elide(messages, keep);
        let (mut summarised_messages, mut summary_bytes, mut cut_bytes) = (0, 0, 0);
        if self.context.estimate(messages, reminder) > self.context.low_water() && keep > 1 {
            let text = self.summarise(&messages[..keep], reminder, turn, run).await?;
            let replacement = summary::replacement(self.task, self.instruction, &text, &self.context.files);
            summary_bytes = text.len();
            summarised_messages = keep;
            messages.splice(..keep, [replacement]);
        }
        if self.context.estimate(messages, reminder) > self.context.threshold() {
            // The recent turns alone are too big: only the newest results stay, cut to fit
            // within the threshold (leaving room for the model's answer).
            let last = messages.len().saturating_sub(1);
            let (more, more_bytes) = elide(messages, last);
            (elided, elided_bytes) = (elided + more, elided_bytes + more_bytes);
            let over = self.context.estimate(messages, reminder).saturating_sub(self.context.threshold());
            if over > 0 {
                cut_bytes = cut_last(messages, self.context.bytes_for(over));
            }
        }
        let after = self.context.estimate(messages, reminder);
        let compaction =
            Compaction { turn, before, after, elided, elided_bytes, summarised_messages, summary_bytes, cut_bytes };
        self.reporter.line(format_args!(
            "agent: context ~{} of {} tokens: {}{}{} → ~{} tokens",
            thousands(before),
            thousands(self.context.window),
            format_args!("{elided} old tool result(s) ({}) became stubs", bytes(elided_bytes)),
            if summarised_messages > 0 {
                format!(", {summarised_messages} earlier messages became a summary of {}", bytes(summary_bytes))
            } else {
                String::new()
            },
            if cut_bytes > 0 { format!(", the newest results lost {}", bytes(cut_bytes)) } else { String::new() },
            thousands(after)
        ));
        self.transcript.write(
            self.reporter,
            &json!({"type": "compaction", "turn": turn, "compaction": compaction, "messages": messages}),
        );
        self.context.compactions.push(compaction);
        if after > self.context.window {
            return Err(Stop::Error(format!(
                "the next request needs about {} tokens even after compaction, more than the context window of {}; \
                 pass a larger `--context-window` if the model has one, or ask for smaller results",
                thousands(after),
                thousands(self.context.window)
            )));
        }
        Ok(())
    }

    /// The model's summary of `old`, asked without tools; when that request fails, a note
    /// that the turns were dropped (the task and files touched are kept either way).
    async fn summarise(
        &mut self,
        old: &[Message],
        todo: Option<&str>,
        turn: u32,
        run: &mut Run,
    ) -> Result<String, Stop> {
        let budget = self.context.bytes_for((self.context.window as f64 * SUMMARY_SHARE) as u64);
        let text = summary::request_text(self.task, self.instruction, old, &self.context.files, todo, budget);
        let asked = [Message { role: Role::User, content: vec![Block::text(text)] }];
        let request = Request {
            system: summary::SYSTEM,
            messages: &asked,
            tools: &[],
            reminder: None,
            max_output_tokens: Some(summary::MAX_TOKENS),
            show_text: false,
        };
        self.reporter.line(format_args!("agent: summarising {} earlier messages to fit the context", old.len()));
        match Self::ask(self.provider, self.reporter, self.interrupts, request, turn).await {
            Some(Ok(reply)) => {
                run.usage.input += reply.usage.input;
                run.usage.output += reply.usage.output;
                let texts: Vec<&str> = reply
                    .content
                    .iter()
                    .filter_map(|b| if let Block::Text { text } = b { Some(text.as_str()) } else { None })
                    .collect();
                Ok(texts.join("\n"))
            }
            Some(Err(err)) => {
                self.reporter.line(format_args!("agent: the summary request failed ({err}); dropping those turns"));
                Ok(format!("(No summary: the request for one failed. {} earlier messages were dropped.)", old.len()))
            }
            None => Err(Stop::Interrupted),
        }
    }
}

/// `n` bytes for a progress line.
fn bytes(n: usize) -> String {
    if n >= 10 * 1024 { format!("{} KB", thousands((n / 1024) as u64)) } else { format!("{n} bytes") }
}
