//! The log subscriber: stderr, filtered by `RUST_LOG` (else [`DEFAULT_LOG_FILTER`]), as text
//! or as one JSON object per line (`log.format`).
//!
//! For levels by target (the default) the binary installs its own subscriber
//! ([`log_subscriber`], `logging/subscriber.rs`); a filter on spans or fields, or a terminal's
//! colours, get tracing-subscriber's registry with [`log_layer`]. The lines are the same.
//!
//! Lines are formatted on the thread that logs them and written by a thread of their own
//! (`logging/writer.rs`), every line pending written at once. Writing each request's line to
//! stderr on the request's thread, under stderr's lock, was a sixth of an agent read's CPU
//! (docs/ARCHITECTURE.md, "The hot read path"). Lines waiting beyond a bound make the logging
//! thread wait rather than drop them.

use std::io::IsTerminal as _;

use tracing::warn;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer, Registry, fmt};

use crate::config::LogFormat;

mod lines;
mod subscriber;
mod writer;
use lines::{JsonFields, JsonLine, TextFields, TextLine};
use subscriber::Lines;

/// The log filter used when `RUST_LOG` is unset: sqlx would otherwise log every query.
pub const DEFAULT_LOG_FILTER: &str = "info,sqlx=warn,sea_orm=warn,sea_orm_migration=info";

/// Keeps the thread that writes the log. Dropping it writes out what is still queued and
/// stops the thread, so hold it until the program ends.
#[must_use = "dropping the guard stops the log writer: keep it until the program ends"]
pub struct LogGuard(Option<writer::WriterGuard>);

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
    let (filter, bad_rust_log) = filter_of(std::env::var("RUST_LOG").ok().as_deref());
    let (writer, guard) = match writer::spawn("voiceplane-log", std::io::stderr()) {
        Ok(spawned) => spawned,
        Err(e) => {
            eprintln!("the log's writer thread cannot be started ({e}); nothing will be logged");
            return LogGuard(None);
        }
    };
    let colours = format == LogFormat::Text && std::io::stderr().is_terminal();
    let installed = match filter {
        Filter::Targets(targets) if !colours => {
            tracing::subscriber::set_global_default(log_subscriber(format, targets, writer)).is_ok()
        }
        filter => tracing_subscriber::registry()
            .with(filter.boxed())
            .with(log_layer(format, colours, writer))
            .try_init()
            .is_ok(),
    };
    if let (true, Some(e)) = (installed, bad_rust_log) {
        warn!("RUST_LOG is invalid ({e}); using `{DEFAULT_LOG_FILTER}`");
    }
    LogGuard(installed.then_some(guard))
}

/// The layer that writes the log's lines in `format` to `writer`, for a program that builds
/// its own subscriber (beside an OpenTelemetry layer, say) rather than calling
/// [`init_tracing_as`]. Text lines are coloured when `colours` is set (tracing-subscriber's
/// own lines then); JSON lines never are.
pub fn log_layer<S, W>(
    format: LogFormat,
    colours: bool,
    writer: W,
) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    match format {
        LogFormat::Text if colours => fmt::layer().with_writer(writer).with_ansi(true).boxed(),
        LogFormat::Text => fmt::layer()
            .with_writer(writer)
            .with_ansi(false)
            .fmt_fields(TextFields)
            .event_format(TextLine)
            .boxed(),
        LogFormat::Json => fmt::layer()
            .with_writer(writer)
            .with_ansi(false)
            .fmt_fields(JsonFields)
            .event_format(JsonLine)
            .boxed(),
    }
}

/// The subscriber [`init_tracing_as`] installs for a `RUST_LOG` of levels by target: the
/// lines of [`log_layer`] (without colours) for what `filter` enables, written to `writer`,
/// without tracing-subscriber's registry under them. For a program that wants the binary's
/// log somewhere else than stderr; one that composes layers needs [`log_layer`] instead.
pub fn log_subscriber<W>(
    format: LogFormat,
    filter: Targets,
    writer: W,
) -> impl tracing::Subscriber + Send + Sync + 'static
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    Lines::new(format, filter, writer)
}

/// The filter `RUST_LOG` asks for (else [`DEFAULT_LOG_FILTER`]), and why it was refused.
///
/// Levels by target (`info,sqlx=warn`) are a [`Targets`] filter, decided once per call site,
/// which the binary's own subscriber applies; only a spec that filters on spans or fields
/// (`[request{path=/x}]=debug`) needs an [`EnvFilter`], which looks up every span it enters
/// in a map behind a lock, over tracing-subscriber's registry.
fn filter_of(spec: Option<&str>) -> (Filter, Option<String>) {
    match spec.map(str::trim).filter(|spec| !spec.is_empty()) {
        Some(spec) => match parsed(spec) {
            Ok(filter) => (filter, None),
            Err(e) => (default_filter(), Some(e)),
        },
        None => (default_filter(), None),
    }
}

enum Filter {
    Targets(Targets),
    Env(Box<EnvFilter>),
}

impl Filter {
    fn boxed(self) -> Box<dyn Layer<Registry> + Send + Sync> {
        match self {
            Filter::Targets(targets) => targets.boxed(),
            Filter::Env(env) => (*env).boxed(),
        }
    }
}

fn parsed(spec: &str) -> Result<Filter, String> {
    match spec.parse::<Targets>() {
        Ok(targets) => Ok(Filter::Targets(targets)),
        Err(_) => EnvFilter::try_new(spec)
            .map(|env| Filter::Env(Box::new(env)))
            .map_err(|e| e.to_string()),
    }
}

fn default_filter() -> Filter {
    parsed(DEFAULT_LOG_FILTER)
        .unwrap_or_else(|_| Filter::Env(Box::new(EnvFilter::new(DEFAULT_LOG_FILTER))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_by_target_need_no_env_filter_and_span_filters_get_one() {
        assert!(matches!(default_filter(), Filter::Targets(_)));
        assert!(matches!(
            parsed("info,voiceplane_http=warn"),
            Ok(Filter::Targets(_))
        ));
        assert!(matches!(
            parsed("warn,[request{path=/healthz}]=off"),
            Ok(Filter::Env(_))
        ));
        let (_, refused) = filter_of(Some("info,sqlx=loud"));
        assert!(refused.is_some());
        assert!(filter_of(Some("  ")).1.is_none());
    }
}
