//! The providers' HTTP client: JSON POSTs over reqwest and rustls, with timeouts, retries on
//! 408/409/429/5xx with exponential backoff that honours `retry-after`, and errors that show
//! the provider's own message.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;

use super::Settings;

/// Retries after the first attempt.
const RETRIES: u32 = 5;
/// The first backoff; it doubles per retry.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest single wait, whatever `retry-after` says.
const LONGEST_WAIT: Duration = Duration::from_secs(60);
/// How much of a provider's error body a message shows.
const MESSAGE_CHARS: usize = 600;

/// What went wrong talking to the provider.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProviderError {
    /// The key was refused.
    #[error(
        "{provider} refused the API key (HTTP {status}): {message}; check the key in `{key_env}` (or name another variable with `--api-key-env`)"
    )]
    Unauthorized {
        /// The provider's label.
        provider: String,
        /// 401 or 403.
        status: u16,
        /// The provider's message.
        message: String,
        /// The variable the key came from.
        key_env: String,
    },
    /// The request was refused as invalid.
    #[error(
        "{provider} rejected the request (HTTP {status}): {message}; check `--model`, `--base-url` and `--provider`"
    )]
    Rejected {
        /// The provider's label.
        provider: String,
        /// The status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// Retries ran out.
    #[error("{provider} still failed after {attempts} attempts (last: {last}); try again later")]
    GaveUp {
        /// The provider's label.
        provider: String,
        /// Attempts made.
        attempts: u32,
        /// The last failure.
        last: String,
    },
    /// Nothing answers at the URL.
    #[error(
        "cannot reach {provider} at `{url}`: {detail}; check `--base-url`, that the server is running, and its TLS certificate"
    )]
    Unreachable {
        /// The provider's label.
        provider: String,
        /// The endpoint.
        url: String,
        /// Why.
        detail: String,
    },
    /// The answer was not what the wire format promises.
    #[error(
        "{provider} answered with something that is not a reply of this API ({detail}); check `--provider` and `--base-url`"
    )]
    Malformed {
        /// The provider's label.
        provider: String,
        /// What was wrong.
        detail: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot set up the HTTP client: {0}")]
    Setup(String),
    /// The MCP client asked to sample did not answer with a message.
    #[error("the client did not sample a message: {0}")]
    Sampling(String),
}

/// The most bytes one reply may take, streamed or not: a provider that goes on sending past it
/// is answered as broken rather than held in memory without end. (A streamed reply of 64k
/// output tokens, one event each, is about 10 MiB.)
#[cfg(not(test))]
const MAX_REPLY_BYTES: usize = 32 << 20;
/// The same, small enough for the tests to reach quickly.
#[cfg(test)]
const MAX_REPLY_BYTES: usize = 1 << 20;

/// Called with a line to show when a request is retried.
pub(crate) type Notify = Arc<dyn Fn(String) + Send + Sync>;

/// A JSON-over-HTTP client for one provider.
pub(crate) struct Client {
    http: reqwest::Client,
    label: String,
    key_env: String,
    notify: Option<Notify>,
}

impl Client {
    /// A client with the settings' timeout, speaking TLS through rustls.
    pub(crate) fn new(settings: &Settings) -> Result<Self, ProviderError> {
        // `agent::main` installed rustls' provider; installing again is a harmless no-op.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .timeout(settings.timeout)
            .user_agent(concat!("toolbelt-mcp/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ProviderError::Setup(e.to_string()))?;
        let label = format!("{} ({})", settings.kind.name(), settings.model);
        Ok(Self { http, label, key_env: settings.key_env.clone(), notify: None })
    }

    /// Shows retries through `notify`.
    pub(crate) fn with_notify(mut self, notify: Notify) -> Self {
        self.notify = Some(notify);
        self
    }

    /// The provider's label, e.g. `anthropic (claude-…)`.
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// POSTs `body` to `url` with `headers`, retrying what is worth retrying, and returns the
    /// JSON answer.
    pub(crate) async fn post(&self, url: &str, headers: HeaderMap, body: &Value) -> Result<Value, ProviderError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let failure = match self.send(url, &headers, body).await {
                Ok(mut response) => {
                    let mut body = Vec::new();
                    while let Some(chunk) = response.chunk().await.map_err(|e| self.malformed(e.to_string()))? {
                        if body.len() + chunk.len() > MAX_REPLY_BYTES {
                            return Err(self.malformed(too_long()));
                        }
                        body.extend_from_slice(&chunk);
                    }
                    return serde_json::from_slice(&body).map_err(|e| self.malformed(format!("not JSON: {e}")));
                }
                Err(Step::Retry(failure)) => failure,
                Err(Step::Fatal(err)) => return Err(err),
            };
            self.back_off(attempt, failure).await?;
        }
    }

    /// POSTs `body` to `url` with `headers` and feeds the server-sent events of the answer to
    /// `sink` until it says the reply is complete. A stream that breaks, or an error event,
    /// is retried from the start (the sink is reset) like a failed request.
    pub(crate) async fn post_stream(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &Value,
        sink: &mut dyn Sink,
    ) -> Result<(), ProviderError> {
        use eventsource_stream::Eventsource;
        use futures::StreamExt;
        let mut attempt = 0;
        loop {
            attempt += 1;
            sink.reset();
            let failure = match self.send(url, &headers, body).await {
                Ok(response) => {
                    // The bytes are counted before they are held, and cut into lines before
                    // the parser sees them (`sse_lines.rs`): one event that never ends would
                    // otherwise be held whole, and parsed again for every chunk.
                    let over = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
                    let bytes =
                        super::sse_lines::lines(Box::pin(response.bytes_stream()), MAX_REPLY_BYTES, over.clone());
                    let mut events = std::pin::pin!(bytes.eventsource());
                    let mut ended = None;
                    while let Some(event) = events.next().await {
                        let event = match event {
                            Ok(event) => event,
                            Err(err) => {
                                ended = Some(Failure { what: format!("the stream broke ({err})"), wait: None });
                                break;
                            }
                        };
                        match sink.event(&event.event, &event.data) {
                            Ok(false) => {}
                            Ok(true) => return Ok(()),
                            Err(Interrupted::Retry(what)) => {
                                ended = Some(Failure { what, wait: None });
                                break;
                            }
                            Err(Interrupted::Malformed(detail)) => return Err(self.malformed(detail)),
                        }
                    }
                    if over.load(std::sync::atomic::Ordering::Relaxed) {
                        return Err(self.malformed(too_long()));
                    }
                    match ended {
                        Some(failure) => failure,
                        None if sink.finished() => return Ok(()),
                        None => Failure { what: "the stream ended before the reply did".into(), wait: None },
                    }
                }
                Err(Step::Retry(failure)) => failure,
                Err(Step::Fatal(err)) => return Err(err),
            };
            self.back_off(attempt, failure).await?;
        }
    }

    /// One attempt: the response when it succeeded, else whether it is worth another.
    async fn send(&self, url: &str, headers: &HeaderMap, body: &Value) -> Result<reqwest::Response, Step> {
        match self.http.post(url).headers(headers.clone()).json(body).send().await {
            Ok(response) if response.status().is_success() => Ok(response),
            Ok(response) => {
                let status = response.status();
                let wait = retry_after(response.headers());
                let message = error_message(&response.text().await.unwrap_or_default());
                if !retried(status) {
                    return Err(Step::Fatal(self.refused(status, message)));
                }
                Err(Step::Retry(Failure { what: format!("HTTP {} {message}", status.as_u16()), wait }))
            }
            Err(err) if err.is_connect() => {
                let detail = causes(&err);
                Err(Step::Fatal(ProviderError::Unreachable { provider: self.label.clone(), url: url.into(), detail }))
            }
            Err(err) if err.is_timeout() => {
                Err(Step::Retry(Failure { what: "the request timed out".into(), wait: None }))
            }
            Err(err) => Err(Step::Retry(Failure { what: format!("the connection failed ({err})"), wait: None })),
        }
    }

    /// Waits before attempt `attempt + 1` (saying so), or gives up after the last retry.
    async fn back_off(&self, attempt: u32, failure: Failure) -> Result<(), ProviderError> {
        if attempt > RETRIES {
            return Err(ProviderError::GaveUp { provider: self.label.clone(), attempts: attempt, last: failure.what });
        }
        let wait = failure.wait.unwrap_or(FIRST_BACKOFF * 2u32.pow(attempt - 1)).min(LONGEST_WAIT);
        if let Some(notify) = &self.notify {
            notify(format!(
                "{}: {}; retry {attempt} of {RETRIES} in {:.1} s",
                self.label,
                failure.what,
                wait.as_secs_f64()
            ));
        }
        tokio::time::sleep(wait).await;
        Ok(())
    }

    fn refused(&self, status: StatusCode, message: String) -> ProviderError {
        let provider = self.label.clone();
        match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => ProviderError::Unauthorized {
                provider,
                status: status.as_u16(),
                message,
                key_env: self.key_env.clone(),
            },
            _ => ProviderError::Rejected { provider, status: status.as_u16(), message },
        }
    }

    /// An answer that does not fit the wire format.
    pub(crate) fn malformed(&self, detail: String) -> ProviderError {
        ProviderError::Malformed { provider: self.label.clone(), detail }
    }
}

/// A failed attempt worth retrying.
struct Failure {
    what: String,
    wait: Option<Duration>,
}

/// How an attempt failed.
enum Step {
    /// Worth another attempt.
    Retry(Failure),
    /// Not.
    Fatal(ProviderError),
}

/// Why a stream stopped before its reply was complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Interrupted {
    /// The provider reported an error worth another attempt (overloaded, rate limited).
    Retry(String),
    /// What came is not this API's stream.
    Malformed(String),
}

/// What assembles a streamed reply from its events.
pub(crate) trait Sink: Send {
    /// Forgets what a failed attempt delivered.
    fn reset(&mut self);
    /// Takes one event (`kind` is the SSE `event:` field, empty when absent); `true` once the
    /// reply is complete.
    fn event(&mut self, kind: &str, data: &str) -> Result<bool, Interrupted>;
    /// Whether what came makes a whole reply when the stream ends without its last event.
    fn finished(&self) -> bool;
}

/// The causes of an error (`a: b: c`), which for connection failures hold the reason
/// (refused, DNS, certificate); the error itself only repeats the URL.
fn causes(err: &dyn std::error::Error) -> String {
    let Some(first) = err.source() else { return err.to_string() };
    let mut text = first.to_string();
    let mut source = first.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text = format!("{text}: {said}");
        }
        source = cause.source();
    }
    text
}

/// Whether a status is worth another attempt: timeouts, conflicts, rate limits, overload and
/// server errors.
fn retried(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 409 | 429) || status.is_server_error()
}

/// The wait a `retry-after-ms` or `retry-after` (seconds) header asks for.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok().filter(|n| n.is_finite() && *n >= 0.0)
    };
    number("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| number("retry-after").map(Duration::from_secs_f64))
}

/// The provider's message in an error body (`error.message`, `message`, or the text itself).
fn error_message(body: &str) -> String {
    let parsed = serde_json::from_str::<Value>(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message").or_else(|| v.get("message")).or_else(|| v.get("error")).and_then(Value::as_str)
    });
    let text = message.unwrap_or(body).trim();
    let text = if text.is_empty() { "(no message)" } else { text };
    match text.char_indices().nth(MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Why a reply past [`MAX_REPLY_BYTES`] was refused.
fn too_long() -> String {
    format!("the reply went past {} MiB, more than any turn needs", MAX_REPLY_BYTES >> 20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn provider_messages_are_found_in_both_formats() {
        let anthropic = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        assert_eq!(error_message(anthropic), "invalid x-api-key");
        let openai = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#;
        assert_eq!(error_message(openai), "Incorrect API key provided");
        assert_eq!(error_message(r#"{"error":"model not found"}"#), "model not found");
        assert_eq!(error_message("  Bad Gateway \n"), "Bad Gateway");
        assert_eq!(error_message(""), "(no message)");
        assert!(error_message(&"x".repeat(2000)).ends_with('…'));
    }

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        headers.clear();
        headers.insert("retry-after", "Wed, 21 Oct 2026 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }

    /// A provider on loopback that answers every request with `head` and then `chunk` over and
    /// over until the client hangs up.
    async fn endless(head: &'static str, chunk: Vec<u8>) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let chunk = chunk.clone();
                tokio::spawn(async move {
                    let mut request = [0u8; 4096];
                    let _ = socket.read(&mut request).await;
                    if socket.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    while socket.write_all(&chunk).await.is_ok() {}
                });
            }
        });
        url
    }

    #[tokio::test]
    async fn a_reply_that_never_ends_is_refused_past_its_cap() {
        let settings = Settings {
            kind: super::super::Kind::Openai,
            model: "m".into(),
            base_url: String::new(),
            api_key: None,
            key_env: "K".into(),
            timeout: Duration::from_secs(60),
            stream: true,
        };
        let client = Client::new(&settings).unwrap();
        let delta =
            format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {"content": "x".repeat(60_000)}}]}));
        let url = endless("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n", delta.into_bytes()).await;
        let mut sink = super::super::stream::OpenAi::new(None);
        let err = client.post_stream(&url, HeaderMap::new(), &json!({}), &mut sink).await.unwrap_err();
        assert!(err.to_string().contains("went past 1 MiB"), "{err}");
        // One event that never ends is counted as it comes, too.
        let url = endless("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: ", vec![b'x'; 65_536]).await;
        let mut sink = super::super::stream::OpenAi::new(None);
        let err = client.post_stream(&url, HeaderMap::new(), &json!({}), &mut sink).await.unwrap_err();
        assert!(err.to_string().contains("went past 1 MiB"), "{err}");
        let url = endless("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n", vec![b' '; 65_536]).await;
        let err = client.post(&url, HeaderMap::new(), &json!({})).await.unwrap_err();
        assert!(err.to_string().contains("went past 1 MiB"), "{err}");
    }

    #[test]
    fn only_transient_statuses_are_retried() {
        for code in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(retried(StatusCode::from_u16(code).unwrap()), "{code}");
        }
        for code in [400, 401, 403, 404, 422] {
            assert!(!retried(StatusCode::from_u16(code).unwrap()), "{code}");
        }
    }
}
