//! The log subscriber: stderr, filtered by `RUST_LOG` (else [`DEFAULT_LOG_FILTER`]), as text
//! or as one JSON object per line (`log.format`).
//!
//! Lines are formatted on the thread that logs them and written by a thread of their own
//! (`tracing-appender`), in batches through a buffer flushed whenever the queue is empty.
//! Writing each request's line to stderr on the request's thread, under stderr's lock, was a
//! sixth of an agent read's CPU (docs/ARCHITECTURE.md, "The hot read path"). A full queue
//! makes the logging thread wait rather than drop lines.

use std::io::IsTerminal as _;

use tracing::warn;
use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// The log filter used when `RUST_LOG` is unset: sqlx would otherwise log every query.
pub const DEFAULT_LOG_FILTER: &str = "info,sqlx=warn,sea_orm=warn,sea_orm_migration=info";

/// Keeps the thread that writes the log. Dropping it writes out what is still queued and
/// stops the thread, so hold it until the program ends.
#[must_use = "dropping the guard stops the log writer: keep it until the program ends"]
pub struct LogGuard(Option<WorkerGuard>);

impl std::fmt::Debug for LogGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LogGuard").field(&self.0.is_some()).finish()
    }
}

/// Installs the stderr log subscriber as text lines: [`init_tracing_as`] with
/// [`LogFormat::Text`].
pub fn init_tracing() -> LogGuard {
    init_tracing_as(LogFormat::Text)
}

/// Installs the stderr log subscriber: filter from `RUST_LOG`, else [`DEFAULT_LOG_FILTER`].
/// Does nothing when a subscriber is already installed. Keep the [`LogGuard`] until the
/// program ends: dropping it flushes the log.
///
/// - [`LogFormat::Text`]: human-readable lines, coloured only on a terminal.
/// - [`LogFormat::Json`]: one JSON object per line, e.g. for a request:
///   `{"timestamp":"…","level":"INFO","message":"request completed","target":"voiceplane_http",
///   "span":{"method":"GET","path":"/api/agents/agent_…","request_id":"…","operation":"agent_view",
///   "status":200,"latency_ms":1.9,"name":"request"},"spans":[…]}`. `span` is the innermost
///   span, `spans` every open one from the outermost (so a request's fields are there even
///   inside a nested span). Fields are what the code logs: paths without query strings, never
///   headers or bodies.
pub fn init_tracing_as(format: LogFormat) -> LogGuard {
    let (filter, bad_rust_log) = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => match EnvFilter::try_new(&spec) {
            Ok(filter) => (filter, None),
            Err(e) => (EnvFilter::new(DEFAULT_LOG_FILTER), Some(e.to_string())),
        },
        _ => (EnvFilter::new(DEFAULT_LOG_FILTER), None),
    };
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(false)
        .thread_name("voiceplane-log")
        .finish(std::io::BufWriter::new(std::io::stderr()));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    let installed = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(true)
            .try_init(),
    }
    .is_ok();
    if let (true, Some(e)) = (installed, bad_rust_log) {
        warn!("RUST_LOG is invalid ({e}); using `{DEFAULT_LOG_FILTER}`");
    }
    LogGuard(installed.then_some(guard))
}
