//! Process-wide counters for operators, served as Prometheus text at `GET /metrics` by the HTTP
//! server (the OpenMetrics exposition format, via the Prometheus project's own client crate).
//! Every label value is a name from a closed set (a tool, an operation, an error kind, a
//! decision): never a path, an argument or a secret. Counting is a few atomic adds a call, so
//! it runs whatever the transport; only HTTP serves it.

use std::borrow::Cow;
use std::sync::LazyLock;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// The content type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The upper bounds of the call duration buckets, in seconds: a cached read (1 ms) to a long
/// build (2 min).
const DURATION_BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0, 120.0];

type CallLabels = [(&'static str, Cow<'static, str>); 3];
type OperationLabels = [(&'static str, &'static str); 2];
type DecisionLabels = [(&'static str, &'static str); 2];
type DurationFamily = Family<OperationLabels, Histogram, fn() -> Histogram>;

struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    durations: DurationFamily,
    result_bytes: Counter,
    approvals: Family<DecisionLabels, Counter>,
    sessions_open: Gauge<i64, AtomicI64>,
    commands_running: Gauge<i64, AtomicI64>,
    store_errors: Counter,
    log_lines_dropped: Gauge<i64, AtomicI64>,
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    let mut registry = Registry::default();
    let calls = Family::<CallLabels, Counter>::default();
    registry.register(
        "toolbelt_tool_calls",
        "Tool calls by tool, operation and outcome (`ok`, `exit_status` for a command that failed, else the error kind)",
        calls.clone(),
    );
    let durations: DurationFamily = Family::new_with_constructor(duration_histogram);
    registry.register_with_unit(
        "toolbelt_tool_call_duration",
        "How long tool calls took, approval questions included",
        Unit::Seconds,
        durations.clone(),
    );
    let result_bytes = Counter::default();
    registry.register(
        "toolbelt_result_bytes",
        "Bytes of tool results sent (their text view, as the audit log counts them)",
        result_bytes.clone(),
    );
    let approvals = Family::<DecisionLabels, Counter>::default();
    registry.register(
        "toolbelt_approvals",
        "The approval policy's decisions (`allow`, `deny`, `ask` for a question left pending) and who made them (`policy`, `grant`, `user`, `fallback`)",
        approvals.clone(),
    );
    let sessions_open = Gauge::default();
    registry.register("toolbelt_sessions_open", "MCP sessions open on this server", sessions_open.clone());
    let commands_running = Gauge::default();
    registry.register(
        "toolbelt_commands_running",
        "Commands running (foreground calls, background and PTY sessions)",
        commands_running.clone(),
    );
    let store_errors = Counter::default();
    registry.register(
        "toolbelt_store_errors",
        "Failures of the todo and memory store (not requests it refused)",
        store_errors.clone(),
    );
    let log_lines_dropped = Gauge::default();
    registry.register(
        "toolbelt_log_lines_dropped",
        "Log lines dropped because whoever reads the server's stderr stopped reading (the server never waits for it)",
        log_lines_dropped.clone(),
    );
    Metrics {
        registry,
        calls,
        durations,
        result_bytes,
        approvals,
        sessions_open,
        commands_running,
        store_errors,
        log_lines_dropped,
    }
});

/// Counts one finished tool call.
pub fn tool_call(tool: &'static str, operation: &'static str, outcome: String, took: Duration, bytes: usize) {
    let metrics = &*METRICS;
    let labels = [("tool", tool.into()), ("operation", operation.into()), ("outcome", outcome.into())];
    metrics.calls.get_or_create(&labels).inc();
    metrics.durations.get_or_create(&[("tool", tool), ("operation", operation)]).observe(took.as_secs_f64());
    metrics.result_bytes.inc_by(u64::try_from(bytes).unwrap_or(u64::MAX));
}

/// Counts one decision of the approval policy.
pub fn approval(decision: &'static str, by: &'static str) {
    METRICS.approvals.get_or_create(&[("decision", decision), ("by", by)]).inc();
}

/// Counts one failure of the store.
pub fn store_error() {
    METRICS.store_errors.inc();
}

/// Sets the number of open sessions (read when the metrics are rendered).
pub fn set_sessions_open(open: usize) {
    METRICS.sessions_open.set(i64::try_from(open).unwrap_or(i64::MAX));
}

/// Counts a command as running while it is held.
#[derive(Debug)]
pub struct RunningCommand(());

impl RunningCommand {
    /// A command started.
    pub fn start() -> Self {
        METRICS.commands_running.inc();
        Self(())
    }
}

impl Drop for RunningCommand {
    fn drop(&mut self) {
        METRICS.commands_running.dec();
    }
}

/// Where the count of dropped log lines is read from when scraped.
static DROPPED_LOGS: std::sync::OnceLock<tracing_appender::non_blocking::ErrorCounter> = std::sync::OnceLock::new();

/// Counts the log lines the log writer drops (read when scraped).
pub fn watch_dropped_logs(counter: tracing_appender::non_blocking::ErrorCounter) {
    let _ = DROPPED_LOGS.set(counter);
}

/// Every metric as Prometheus (OpenMetrics) text.
pub fn render() -> String {
    if let Some(dropped) = DROPPED_LOGS.get() {
        METRICS.log_lines_dropped.set(dropped.dropped_lines() as i64);
    }
    let mut text = String::new();
    // Writing to a `String` cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, &METRICS.registry);
    text
}

/// An error kind (a `ToolError` variant's name, `NotFound`) as a label value (`not_found`).
/// Anything but ASCII letters and digits is dropped, so a label is only ever such a word.
pub fn outcome_label(kind: &str) -> String {
    let mut label = String::with_capacity(kind.len() + 4);
    for c in kind.chars().filter(char::is_ascii_alphanumeric) {
        if c.is_ascii_uppercase() && !label.is_empty() {
            label.push('_');
        }
        label.push(c.to_ascii_lowercase());
    }
    label
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value_of(text: &str, prefix: &str) -> f64 {
        text.lines().find_map(|line| line.strip_prefix(prefix)?.trim().parse().ok()).unwrap_or(0.0)
    }

    #[test]
    fn calls_approvals_and_commands_are_counted_under_their_names() {
        let line = "toolbelt_tool_calls_total{tool=\"t\",operation=\"unit_test_op\",outcome=\"not_found\"} ";
        let before = value_of(&render(), line);
        tool_call("t", "unit_test_op", outcome_label("NotFound"), Duration::from_millis(3), 10);
        let text = render();
        assert_eq!(value_of(&text, line), before + 1.0, "{text}");
        assert!(
            text.contains(
                "toolbelt_tool_call_duration_seconds_bucket{le=\"0.005\",tool=\"t\",operation=\"unit_test_op\"}"
            ) || text.contains(
                "toolbelt_tool_call_duration_seconds_bucket{tool=\"t\",operation=\"unit_test_op\",le=\"0.005\"}"
            ),
            "{text}"
        );
        let running = value_of(&render(), "toolbelt_commands_running ");
        let command = RunningCommand::start();
        assert_eq!(value_of(&render(), "toolbelt_commands_running "), running + 1.0);
        drop(command);
        assert_eq!(value_of(&render(), "toolbelt_commands_running "), running);
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn kinds_become_snake_case_words() {
        assert_eq!(outcome_label("StaleHash"), "stale_hash");
        assert_eq!(outcome_label("IsADirectory"), "is_a_directory");
        assert_eq!(outcome_label("/etc/pass wd\""), "etcpasswd");
    }
}
