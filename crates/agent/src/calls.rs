//! The tool calls of one turn: checked (malformed arguments, calls not offered), grouped
//! (consecutive read-only calls run together, any other call alone), run through MCP with a
//! live status line, and cancelled by Ctrl-C.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::time::Instant;

use futures::future::join_all;
use serde_json::{Map, Value};

use super::client::Outcome;
use super::interrupt::Signal;
use super::provider::Block;
use super::report::{Ticker, one_line};
use super::turns::{Agent, CallRecord, tick_period};

/// A tool call the model asked for, ready to run or already answered.
struct Call {
    id: String,
    name: String,
    arguments: Map<String, Value>,
    record: CallRecord,
    /// Set when the call is answered without reaching the server.
    answered: Option<Outcome>,
    /// Its server (index) and the tool's name there.
    route: Option<(usize, String)>,
    read_only: bool,
}

impl Agent<'_> {
    /// Runs the calls of one turn; returns their results, and whether the run must stop.
    pub(super) async fn run_calls(
        &mut self,
        turn: u32,
        asked: Vec<Block>,
        records: &mut Vec<CallRecord>,
    ) -> (Vec<Block>, bool) {
        let mut calls: Vec<Call> = asked.into_iter().filter_map(|block| self.prepare(turn, block)).collect();
        let mut ended = None;
        for batch in batches(&calls.iter().map(|c| c.read_only).collect::<Vec<_>>()) {
            match ended {
                Some(signal) => {
                    for call in calls[batch].iter_mut().filter(|c| c.answered.is_none()) {
                        cancel(call, not_run(signal));
                    }
                }
                None => ended = self.run_batch(&mut calls[batch]).await,
            }
        }
        let mut results = Vec::new();
        for call in calls {
            let outcome = call.answered.unwrap_or_else(|| Outcome::error("the call did not run"));
            let status = if outcome.is_error { "error" } else { "ok" };
            let status = if call.record.outcome == "pending" { status } else { call.record.outcome };
            let first =
                outcome.text().lines().find(|l| !l.trim().is_empty()).map(|l| one_line(l, 100)).unwrap_or_default();
            self.reporter.line(format_args!(
                "  ▸ {} {} → {status} · {} ms · {first}",
                call.record.tool, call.record.arguments, call.record.ms
            ));
            records.push(CallRecord { outcome: status, ..call.record });
            results.push(Block::ToolResult { id: call.id, content: outcome.content, is_error: outcome.is_error });
        }
        (results, ended == Some(Signal::Terminate))
    }

    /// Checks a call before it runs: malformed arguments and calls not offered are answered
    /// here with what to send instead.
    fn prepare(&self, turn: u32, block: Block) -> Option<Call> {
        let Block::ToolCall { id, name, arguments, malformed } = block else { return None };
        let object = arguments.as_object().cloned().unwrap_or_default();
        let operation = object.get("operation").and_then(Value::as_str).map(str::to_string);
        let shown: Map<String, Value> =
            object.iter().filter(|(k, _)| k.as_str() != "operation").map(|(k, v)| (k.clone(), v.clone())).collect();
        let summary = match (&operation, &malformed) {
            (_, Some(_)) => one_line(arguments.as_str().unwrap_or_default(), 80),
            (Some(op), None) => format!("{op} {}", one_line(&Value::Object(shown).to_string(), 80)),
            (None, None) => one_line(&Value::Object(shown).to_string(), 80),
        };
        let record = CallRecord { turn, tool: name.clone(), operation, arguments: summary, outcome: "pending", ms: 0 };
        let mut call = Call { id, name, arguments: object, record, answered: None, route: None, read_only: false };
        let refusal = match malformed {
            Some(why) => Some(format!(
                "{why}; nothing ran. Send the call again with a JSON object matching the inputSchema of `{}`",
                call.name
            )),
            None => self.tools.check(&call.name, &call.arguments).err(),
        };
        match refusal {
            Some(text) => {
                call.answered = Some(Outcome::error(text));
                call.record.outcome = "rejected";
            }
            None => {
                call.read_only = self.tools.is_read_only(&call.name, &call.arguments);
                call.route = self.tools.route(&call.name).map(|(server, tool)| (server, tool.to_string()));
            }
        }
        Some(call)
    }

    /// Runs calls together; returns the signal that cancelled them, if one did (the model
    /// hears so; on SIGTERM the run stops).
    async fn run_batch(&mut self, calls: &mut [Call]) -> Option<Signal> {
        let pending: Vec<usize> = (0..calls.len()).filter(|&i| calls[i].answered.is_none()).collect();
        if pending.is_empty() {
            return None;
        }
        let denied_before = self.denied.load(Ordering::Relaxed);
        let label = match pending.as_slice() {
            [one] => format!("{} {}", calls[*one].record.tool, calls[*one].record.arguments),
            many => format!("{} read-only calls at once", many.len()),
        };
        if pending.len() > 1 {
            self.reporter.line(format_args!("  running {label}"));
        }
        let servers = self.servers;
        let mut work = Box::pin(join_all(pending.iter().map(|&i| {
            let (route, arguments) = (calls[i].route.clone(), calls[i].arguments.clone());
            async move {
                let started = Instant::now();
                let outcome = match route {
                    Some((server, tool)) => servers.call(server, &tool, arguments).await,
                    None => Outcome::error("the call has no server to go to"),
                };
                (outcome, started.elapsed())
            }
        })));
        let mut ticker = Ticker::new();
        let mut tick = tokio::time::interval(tick_period(self.reporter));
        let signal = loop {
            tokio::select! {
                done = &mut work => {
                    self.reporter.clear_live();
                    let denials = self.denied.load(Ordering::Relaxed) > denied_before;
                    for (&i, (outcome, took)) in pending.iter().zip(done) {
                        calls[i].record.ms = took.as_millis() as u64;
                        if denials && outcome.is_error {
                            calls[i].record.outcome = "denied";
                        }
                        calls[i].answered = Some(outcome);
                    }
                    return None;
                }
                signal = self.interrupts.next() => break signal,
                _ = tick.tick() => ticker.tick(self.reporter, &label),
            }
        };
        // Dropping `work` sends `notifications/cancelled` for each call still running; a
        // question one of them asked on the terminal is declined and stops reading stdin.
        drop(work);
        self.cancel_question.now();
        let elapsed = ticker.elapsed().as_millis() as u64;
        let why = match signal {
            Signal::Interrupt => {
                self.reporter.line("agent: Ctrl-C: cancelled the running call; press Ctrl-C again to stop the agent");
                "cancelled by the user (Ctrl-C) before it finished; its effects may be partial"
            }
            Signal::Terminate => "cancelled: the agent was terminated",
        };
        for &i in &pending {
            calls[i].record.ms = elapsed;
            cancel(&mut calls[i], why);
        }
        Some(signal)
    }
}

/// Why the calls after a cancelled one did not run.
fn not_run(signal: Signal) -> &'static str {
    match signal {
        Signal::Interrupt => "not run: the user pressed Ctrl-C during an earlier call of this turn",
        Signal::Terminate => "not run: the agent was terminated",
    }
}

fn cancel(call: &mut Call, why: &str) {
    call.answered = Some(Outcome::error(why));
    call.record.outcome = "cancelled";
}

/// The batches calls run in: each run of consecutive read-only calls together, any other
/// call alone, in order.
fn batches(read_only: &[bool]) -> Vec<Range<usize>> {
    let mut batches = Vec::new();
    let mut start = 0;
    while start < read_only.len() {
        let mut end = start + 1;
        if read_only[start] {
            while end < read_only.len() && read_only[end] {
                end += 1;
            }
        }
        batches.push(start..end);
        start = end;
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_run_together_and_writes_alone_in_order() {
        assert_eq!(batches(&[]), Vec::<Range<usize>>::new());
        assert_eq!(batches(&[true, true]), vec![Range { start: 0, end: 2 }]);
        assert_eq!(batches(&[true, false, false, true, true, false]), [0..1, 1..2, 2..3, 3..5, 5..6]);
    }
}
