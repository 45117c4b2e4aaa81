//! `GET /metrics`: the process's metrics in the Prometheus text format, answered in front of
//! the API (it is not an API operation: no credential, not in the OpenAPI document).
//!
//! The library crates record through the `metrics` facade (the names are in
//! [`voiceplane_http::metrics`] and [`voiceplane_core::metrics`]); the binary installs the
//! Prometheus recorder of `metrics-exporter-prometheus` once per process and renders it on
//! each scrape. What only the database knows is read at scrape time, so that it is never
//! stale: the connection pool's state and the job queue's depth by kind (one grouped query).
//! With `metrics.enabled = false` no recorder is installed and `/metrics` is the API's 404.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use voiceplane_core::time::Timestamp;
use voiceplane_http::ResponseBody;
use voiceplane_storage::SeaRepository;

/// The path served.
pub const PATH: &str = "/metrics";

/// Gauge: the database pool's connections by `state`: `in_use` or `idle`.
pub const DB_POOL_CONNECTIONS: &str = "voiceplane_db_pool_connections";
/// Gauge: the most connections the database pool opens.
pub const DB_POOL_MAX_CONNECTIONS: &str = "voiceplane_db_pool_max_connections";
/// Gauge: stored jobs by `kind` and `state`: `due` (queued and due: the backlog),
/// `scheduled` (queued for later), `running` or `failed`. The whole database's queue: every
/// instance reports the same numbers.
pub const JOBS: &str = "voiceplane_jobs";

/// The content type of the Prometheus text format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How often histograms are folded and idle data dropped when nobody scrapes.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The process's Prometheus recorder: installed on first use, then shared by every server in
/// the process (a recorder is process-global). `None` when another recorder was installed
/// first, e.g. by an embedder.
fn recorder() -> Option<PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let installed = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full(voiceplane_http::metrics::REQUEST_DURATION_SECONDS.to_owned()),
                    voiceplane_http::metrics::LATENCY_BUCKETS,
                )
                .and_then(PrometheusBuilder::install_recorder);
            match installed {
                Ok(handle) => {
                    describe();
                    Some(handle)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot install the metrics recorder; GET /metrics is off");
                    None
                }
            }
        })
        .clone()
}

/// The `# HELP` lines.
fn describe() {
    use voiceplane_core::metrics as core;
    use voiceplane_http::metrics as http;
    metrics::describe_counter!(
        http::REQUESTS_TOTAL,
        "Requests answered, by operation id (unmatched: no route) and status code."
    );
    metrics::describe_histogram!(
        http::REQUEST_DURATION_SECONDS,
        metrics::Unit::Seconds,
        "Time from a request's arrival to its response's head, by operation id."
    );
    metrics::describe_gauge!(
        DB_POOL_CONNECTIONS,
        "Open database connections, in use or idle."
    );
    metrics::describe_gauge!(
        DB_POOL_MAX_CONNECTIONS,
        "The most connections the database pool opens."
    );
    metrics::describe_gauge!(
        JOBS,
        "Durable jobs in the database by kind and state (due, scheduled, running, failed)."
    );
    metrics::describe_counter!(
        core::JOB_RUNS_TOTAL,
        "Job runs of this instance that ended, by kind and outcome (succeeded, retried, failed)."
    );
    metrics::describe_counter!(
        core::WEBHOOK_DELIVERY_ATTEMPTS_TOTAL,
        "Webhook delivery attempts by outcome (succeeded, retrying, failed)."
    );
}

/// Registers, at 0, the series that would otherwise appear only at their first event, so
/// that `/metrics` lists every documented series from start-up (Prometheus cannot tell a
/// series not yet created from one that is not reported): the job and webhook counters for
/// each kind and outcome, and the request counter and histogram of unmatched requests. The
/// request series of an operation appear with its first request: a status for each of them
/// would be a guess. The gauges are read at every scrape.
fn export_zeros(job_kinds: &[String]) {
    use voiceplane_http::metrics as http;
    voiceplane_core::metrics::export_job_counters(job_kinds);
    metrics::counter!(http::REQUESTS_TOTAL, "operation" => http::UNMATCHED, "status" => "404")
        .increment(0);
    // A histogram is listed once registered, with empty buckets.
    let _ = metrics::histogram!(http::REQUEST_DURATION_SECONDS, "operation" => http::UNMATCHED);
}

/// The metrics endpoint's state: the recorder, and the repository sampled at scrape time.
pub struct Metrics {
    handle: PrometheusHandle,
    repo: SeaRepository,
    /// Job kinds reported so far: a kind whose jobs are all gone is reported as 0, not left
    /// at its last value.
    kinds: Mutex<BTreeSet<String>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Installs the process's recorder (once) and returns the endpoint over `repo`, with
    /// every documented series exported from now on (at 0 until its first event) for a job
    /// runner of `job_kinds`; `None` when the recorder cannot be installed (the reason is
    /// logged).
    pub fn install(repo: SeaRepository, job_kinds: &[String]) -> Option<Arc<Self>> {
        let handle = recorder()?;
        export_zeros(job_kinds);
        Some(Arc::new(Self {
            handle,
            repo,
            // Reported from the first scrape, at 0 while they have no jobs.
            kinds: Mutex::new(job_kinds.iter().cloned().collect()),
        }))
    }

    /// The metrics as the Prometheus text format, with the database-side gauges read now.
    pub async fn render(&self) -> String {
        self.sample_pool();
        self.sample_jobs().await;
        self.handle.render()
    }

    fn sample_pool(&self) {
        let pool = self.repo.pool_status();
        metrics::gauge!(DB_POOL_CONNECTIONS, "state" => "in_use").set(f64::from(pool.in_use()));
        metrics::gauge!(DB_POOL_CONNECTIONS, "state" => "idle").set(f64::from(pool.idle));
        metrics::gauge!(DB_POOL_MAX_CONNECTIONS).set(f64::from(pool.max));
    }

    async fn sample_jobs(&self) {
        let counts = match self.repo.job_counts(Timestamp::now()).await {
            Ok(counts) => counts,
            Err(e) => {
                // The gauges keep their last values; the pool gauges and the request counters
                // tell the rest of the story.
                tracing::warn!(error = %e, "cannot read the job queue for /metrics");
                return;
            }
        };
        let mut kinds = self.kinds.lock().unwrap_or_else(|p| p.into_inner());
        let gone: Vec<String> = kinds
            .iter()
            .filter(|kind| !counts.iter().any(|c| &c.kind == *kind))
            .cloned()
            .collect();
        for kind in gone {
            set_jobs(&voiceplane_storage::JobCounts {
                kind,
                ..Default::default()
            });
        }
        for c in &counts {
            kinds.insert(c.kind.clone());
            set_jobs(c);
        }
    }

    /// Runs the recorder's upkeep every few seconds, so that histogram samples do not pile
    /// up between scrapes; spawn it and abort it when serving ends.
    pub async fn upkeep(self: Arc<Self>) {
        let mut every = tokio::time::interval(UPKEEP_EVERY);
        loop {
            every.tick().await;
            self.handle.run_upkeep();
        }
    }
}

fn set_jobs(c: &voiceplane_storage::JobCounts) {
    for (state, n) in [
        ("due", c.due),
        ("scheduled", c.scheduled),
        ("running", c.running),
        ("failed", c.failed),
    ] {
        // Counts are far below 2^53, where f64 stops being exact.
        #[allow(clippy::cast_precision_loss)]
        let n = n as f64;
        metrics::gauge!(JOBS, "kind" => c.kind.clone(), "state" => state).set(n);
    }
}

/// A tower service that answers `GET /metrics` (and `HEAD`) itself and passes every other
/// request to `inner`. Without [`Metrics`] everything goes to `inner`.
#[derive(Debug, Clone)]
pub struct WithMetrics<S> {
    inner: S,
    metrics: Option<Arc<Metrics>>,
}

impl<S> WithMetrics<S> {
    /// `inner` with `metrics` in front of it.
    pub fn new(inner: S, metrics: Option<Arc<Metrics>>) -> Self {
        Self { inner, metrics }
    }
}

impl<S, B> tower_service::Service<Request<B>> for WithMetrics<S>
where
    S: tower_service::Service<Request<B>, Response = Response<ResponseBody>, Error = Infallible>,
    S::Future: Send + Unpin + 'static,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = MetricsFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        match &self.metrics {
            Some(metrics) if req.uri().path() == PATH => {
                let metrics = metrics.clone();
                let method = req.method().clone();
                MetricsFuture::Metrics(Box::pin(async move { Ok(answer(&metrics, &method).await) }))
            }
            _ => MetricsFuture::Inner(self.inner.call(req)),
        }
    }
}

/// The future of [`WithMetrics`]: the inner service's, as it is, for every request but
/// `GET /metrics`.
pub enum MetricsFuture<F> {
    /// `GET /metrics`.
    Metrics(Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, Infallible>> + Send>>),
    /// Any other request.
    Inner(F),
}

impl<F> Future for MetricsFuture<F>
where
    F: Future<Output = Result<Response<ResponseBody>, Infallible>> + Unpin,
{
    type Output = Result<Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Self::Metrics(answer) => answer.as_mut().poll(cx),
            Self::Inner(inner) => Pin::new(inner).poll(cx),
        }
    }
}

async fn answer(metrics: &Metrics, method: &Method) -> Response<ResponseBody> {
    let (status, content_type, body) = match *method {
        Method::GET | Method::HEAD => {
            let text = metrics.render().await;
            let body = if method == Method::HEAD {
                String::new()
            } else {
                text
            };
            (StatusCode::OK, CONTENT_TYPE, body)
        }
        _ => (
            StatusCode::METHOD_NOT_ALLOWED,
            "application/json",
            serde_json::json!({"detail": format!("{method} is not allowed on {PATH}; use GET")})
                .to_string(),
        ),
    };
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if status == StatusCode::METHOD_NOT_ALLOWED {
        headers.insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    }
    response
}
