//! Benchmark (not a test) of what a request's log costs it, in-process: the `request` span
//! `Api::handle` opens (method, path, request id and operation, then status and latency
//! recorded at once), entered, and its `request completed` event, written to a sink. Side by
//! side in one run, alternating rounds:
//!
//! - the subscriber the binary installs, `voiceplane_bin::log_subscriber` (text and JSON),
//!   with the `Targets` filter it builds from `RUST_LOG`;
//! - the same lines through tracing-subscriber's registry: `voiceplane_bin::log_layer` behind
//!   that filter, as an application that composes its own layers has them;
//! - tracing-subscriber's own formatters configured as the binary had them before (plain
//!   `Full` text; JSON with the event flattened, the current span and the span list) behind an
//!   `EnvFilter`, the reference;
//! - no subscriber at all: what the macros cost when nothing listens.
//!
//! The writer (a sink) is the same for all; the binary's own hands each line to its log thread.
//!
//! ```sh
//! cargo bench --bench request_log
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::{EnvFilter, Layer as _, Registry};
use voiceplane_bin::config::LogFormat;
use voiceplane_bin::{DEFAULT_LOG_FILTER, log_layer, log_subscriber};

const REQUESTS: u32 = 200_000;
const ROUNDS: usize = 5;

/// What `Api::handle` logs for one request.
fn request(n: u32) {
    let span = tracing::info_span!(
        "request",
        method = %http::Method::GET,
        path = %"/api/agents/agent_01JD8Q6ZP0Y3N5W2XK4T7R9B1C",
        request_id = %"4f1c2a9be07d3c55",
        operation = Some("agent_view"),
        status = tracing::field::Empty,
        latency_ms = tracing::field::Empty,
    );
    let _entered = span.enter();
    let fields = span.metadata().unwrap().fields();
    let (status, latency) = (
        fields.field("status").unwrap(),
        fields.field("latency_ms").unwrap(),
    );
    let latency_ms = f64::from(n % 1000) / 997.0;
    span.record_all(&fields.value_set(&[
        (&status, Some(&200u16 as &dyn tracing::Value)),
        (&latency, Some(&latency_ms as &dyn tracing::Value)),
    ]));
    tracing::info!("request completed");
}

/// Nanoseconds per request with `subscriber` as the default.
fn per_request(subscriber: Option<impl tracing::Subscriber + Send + Sync + 'static>) -> f64 {
    let run = || {
        let start = Instant::now();
        for n in 0..REQUESTS {
            request(n);
        }
        start.elapsed().as_nanos() as f64 / f64::from(REQUESTS)
    };
    match subscriber {
        Some(subscriber) => tracing::subscriber::with_default(subscriber, run),
        None => run(),
    }
}

/// One way of logging, run for a round: nanoseconds per request.
type Variant = Box<dyn Fn() -> f64>;

fn env_filter() -> EnvFilter {
    EnvFilter::new(DEFAULT_LOG_FILTER)
}

fn targets() -> tracing_subscriber::filter::Targets {
    DEFAULT_LOG_FILTER.parse().unwrap()
}

fn main() {
    let sink = std::io::sink;
    let variants: [(&str, Variant); 7] = [
        ("no subscriber", Box::new(|| per_request(None::<Registry>))),
        (
            "tracing-subscriber text + EnvFilter (before)",
            Box::new(move || {
                let layer = tracing_subscriber::fmt::layer()
                    .with_writer(sink)
                    .with_ansi(false);
                per_request(Some(
                    tracing_subscriber::registry()
                        .with(env_filter())
                        .with(layer),
                ))
            }),
        ),
        (
            "voiceplane text + Targets",
            Box::new(move || {
                per_request(Some(
                    tracing_subscriber::registry()
                        .with(targets().boxed())
                        .with(log_layer(LogFormat::Text, false, sink)),
                ))
            }),
        ),
        (
            "voiceplane_bin::log_subscriber text",
            Box::new(move || per_request(Some(log_subscriber(LogFormat::Text, targets(), sink)))),
        ),
        (
            "tracing-subscriber JSON + EnvFilter (before)",
            Box::new(move || {
                let layer = tracing_subscriber::fmt::layer()
                    .with_writer(sink)
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_span_list(true);
                per_request(Some(
                    tracing_subscriber::registry()
                        .with(env_filter())
                        .with(layer),
                ))
            }),
        ),
        (
            "voiceplane JSON + Targets",
            Box::new(move || {
                per_request(Some(
                    tracing_subscriber::registry()
                        .with(targets().boxed())
                        .with(log_layer(LogFormat::Json, false, sink)),
                ))
            }),
        ),
        (
            "voiceplane_bin::log_subscriber JSON",
            Box::new(move || per_request(Some(log_subscriber(LogFormat::Json, targets(), sink)))),
        ),
    ];
    let mut samples = vec![Vec::new(); variants.len()];
    for _ in 0..ROUNDS {
        for (i, (_, run)) in variants.iter().enumerate() {
            samples[i].push(run());
        }
    }
    println!("{REQUESTS} requests per round, median of {ROUNDS} alternating rounds");
    println!("{:<46} {:>12}", "log of one request", "ns/request");
    for ((label, _), mut s) in variants.iter().zip(samples) {
        s.sort_by(f64::total_cmp);
        println!("{label:<46} {:>12.0}", s[s.len() / 2]);
    }
}
