//! # voiceplane-http
//!
//! A minimal hyper 1.x adapter for the voiceplane [`Service`]: routing, header, query and body
//! parsing, authentication, the error → status mapping and the response envelopes. It holds
//! no business logic; every endpoint is a call to one `Service` operation.
//!
//! [`Api`] is the whole adapter. Use it as
//!
//! - a plain async function: [`Api::handle`] takes any `http::Request<B>` whose body
//!   implements [`http_body::Body`] and always returns a response;
//! - a [`tower_service::Service`] with `Error = Infallible`, which any tower-based server
//!   mounts (axum: `Router::nest_service("/voice", api)`; paths are matched on
//!   `req.uri().path()`, so a prefix must be stripped before the request reaches `Api`, which
//!   axum's `nest_service` does);
//! - a standalone server: [`serve()`] runs an HTTP/1.1 and HTTP/2 (h2c) accept loop on a
//!   listener with graceful shutdown; [`serve_service`] does the same for the adapter wrapped
//!   in tower layers.
//!
//! The contract every response follows (statuses, envelopes, headers) is written down in the
//! crate's `README.md`. In short: success bodies are `{"success": true, "data": …}` (lists add
//! `pagination`), errors are `{"detail": "…"}` with the status chosen by [`status_for`],
//! request bodies are limited to [`HttpConfig::max_body_bytes`], and every response carries an
//! `X-Request-Id` ([`REQUEST_ID_HEADER`]): the caller's own, or a generated one.
//!
//! The adapter protects whatever serves it: a POST with an `Idempotency-Key`
//! ([`IDEMPOTENCY_KEY`]) is answered once and replayed to its retries, from the database, on
//! every instance; [`Api::with_rate_limits`] adds per-credential rate limits and a per-IP limit
//! of failed authentications, kept in this process.
//!
//! ```no_run
//! use std::sync::Arc;
//! use voiceplane_http::{Api, HttpConfig};
//!
//! # async fn demo(repo: Arc<dyn voiceplane_core::repo::Repository>) -> std::io::Result<()> {
//! let service = Arc::new(voiceplane_core::Service::new(repo));
//! let api = Api::new(service).with_config(HttpConfig {
//!     max_body_bytes: 256 * 1024,
//!     ..HttpConfig::default()
//! });
//!
//! // Standalone: serve until Ctrl-C, then drain in-flight requests.
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! voiceplane_http::serve(listener, api.clone(), async {
//!     let _ = tokio::signal::ctrl_c().await;
//! })
//! .await?;
//!
//! // Or as one function from request to response, e.g. inside your own hyper service:
//! let request = http::Request::get("/healthz")
//!     .body(http_body_util::Empty::<bytes::Bytes>::new())
//!     .unwrap_or_default();
//! let response = api.handle(request).await;
//! assert_eq!(response.status(), http::StatusCode::OK);
//! # Ok(()) }
//! ```
//!
//! Mounting under a prefix in an existing axum application (axum is not a dependency of this
//! crate; the example is not compiled here):
//!
//! ```text
//! let app = axum::Router::new()
//!     .route("/", axum::routing::get(|| async { "my app" }))
//!     .nest_service("/voice", voiceplane_http::Api::new(service));
//! // GET /voice/api/agents/agent_… reaches Api as GET /api/agents/agent_…
//! ```
//!
//! The library logs through `tracing` (one span per request, see [`Api::handle`]) and never
//! installs a subscriber.

mod api;
mod audio;
mod body;
mod caller;
mod conditional;
pub mod console;
mod credentials;
mod endpoint;
mod error;
pub mod metrics;
mod multipart;
pub mod openapi;
pub mod operation;
pub mod ops;
mod protect;
mod query;
mod recycle;
mod represent;
mod response;
mod serve;
mod stream;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use http::{HeaderName, HeaderValue, Request, Response, header};
use voiceplane_core::Service;

pub use api::{
    Api, DEFAULT_CSV_READ_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_UPLOAD_BYTES, HttpConfig,
    MAX_REQUEST_ID_LEN, REQUEST_ID_HEADER,
};
pub use console::{Console, ConsoleFuture, WithConsole};
pub use error::status_for;
pub use protect::idempotency::{
    IDEMPOTENCY_KEY, IDEMPOTENT_REPLAYED, MAX_KEY_LEN as MAX_IDEMPOTENCY_KEY_LEN,
    MAX_STORED_BODY_BYTES,
};
pub use protect::ratelimit::{
    DEFAULT_AUTH_FAILURES_PER_MINUTE, DEFAULT_BURST, DEFAULT_PER_SECOND, IpNetwork,
    RATELIMIT_LIMIT, RATELIMIT_REMAINING, RATELIMIT_RESET, RateLimits,
};
pub use response::{BoxError, ResponseBody};
pub use serve::{HEADER_READ_TIMEOUT, SHUTDOWN_GRACE, serve, serve_service};

use crate::error::ApiError;
use crate::ops::RouteError;

/// The OpenAPI 3.1 document of the API, built on first use (`GET /api/openapi.json` serves
/// it; `voiceplane openapi` prints it).
pub fn openapi_document() -> &'static serde_json::Value {
    openapi::document(ops::AREAS)
}

impl Api {
    /// The API over `service`, with the default [`HttpConfig`].
    pub fn new(service: Arc<Service>) -> Self {
        Self(Arc::new(api::Shared {
            service,
            config: HttpConfig::default(),
            limits: None,
            openapi: openapi_document,
            metrics: Arc::new(metrics::RequestMetrics::new()),
            representations: Arc::new(represent::Representations::new()),
            media: None,
        }))
    }

    /// Answers one request. Never fails: every error becomes a `{"detail": …}` response.
    ///
    /// Every response carries [`REQUEST_ID_HEADER`] (`X-Request-Id`): the caller's value when
    /// it is acceptable, else a generated one.
    ///
    /// The request runs in a `request` span with the fields `method`, `path` (never the query
    /// string or headers), `request_id`, `operation` (the operation's id, e.g. `agent_view`,
    /// once the route is resolved), `status` and `latency_ms`; at the end one `request
    /// completed` event is emitted at INFO, or at WARN for a 5xx, and the request is counted
    /// in the [`metrics`] of the adapter.
    ///
    /// The span opens and the route is resolved when this is called; the future owns what it
    /// needs (it does not borrow the API), so it can be spawned.
    pub fn handle<B>(
        &self,
        req: Request<B>,
    ) -> impl Future<Output = Response<ResponseBody>> + Send + 'static
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        self.handling(req)
    }

    /// [`Api::handle`]'s future, by name, so that [`Api::call`](tower_service::Service::call)
    /// returns it as it is rather than in a box of its own.
    fn handling<B>(&self, req: Request<B>) -> Handling
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        let start = Instant::now();
        let (request_id, has_body) = read_head(req.headers());
        let resolved = ops::resolve(req.method(), req.uri().path());
        // The operation is known before the span opens, and the span's last two fields are
        // recorded together: each record makes the log subscriber format the span's fields.
        let span = tracing::info_span!(
            "request",
            method = %req.method(),
            path = %req.uri().path(),
            // Visible ASCII by construction, so `to_str` cannot fail.
            request_id = %request_id.to_str().unwrap_or("-"),
            operation = resolved.as_ref().ok().map(|(op, _)| op.id),
            status = tracing::field::Empty,
            latency_ms = tracing::field::Empty,
        );
        let finish = Finish {
            start,
            operation: resolved
                .as_ref()
                .map_or(metrics::UNMATCHED, |(op, _)| op.id),
            is_api: is_api_path(req.uri().path()),
            has_body,
            is_head: req.method() == http::Method::HEAD,
        };
        let api = self.clone();
        Handling {
            // Boxed: its state (every stage down to the handler's call) is kilobytes, which
            // each future above would otherwise copy as it first polls the one below. Made
            // here, it holds the request once; an `async` body around it held it again.
            // The API comes back with the answer, for its metrics: one clone per request. So
            // does the request's id, which the route's stages borrow (the audit context takes
            // it from there; in the request's extensions it cost an insert and a boxed value).
            inner: {
                // Allocated before the future is made, so that the future is made in it.
                // `Box::pin(future)` made it on the stack and copied it whole into the box: a
                // route's future is 2.8 KB, most of it the state of stages not begun, and the
                // copy was about 170 instructions of every request. Now only the fields it
                // starts with (320 bytes) are written. (A helper taking a closure cost one
                // more copy of the request.)
                let routed = route(req, resolved);
                let slot = Box::new_uninit();
                let future = Box::write(slot, async move {
                    let answered = match routed {
                        Ok((op, captures, parts, body)) => {
                            protect::run(&api, op, captures, parts, body, &request_id).await
                        }
                        Err(refused) => Err(refused),
                    };
                    (answered, api, request_id)
                });
                Box::into_pin(future)
            },
            span,
            finish,
        }
    }
}

/// A request with its operation: what `protect::run` takes.
type Routable = (
    &'static operation::Operation,
    operation::Captures,
    http::request::Parts,
    body::RequestBody,
);

/// What runs `req` as `resolved` says: its operation with the request's parts and body, or
/// the refusal of a request no route or method takes. Not a stage of its own in the route's
/// future: each `async` stage kept the request once more and copied it down to the next.
fn route<B>(
    req: Request<B>,
    resolved: Result<(&'static operation::Operation, operation::Captures), RouteError>,
) -> Result<Routable, ApiError>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    match resolved {
        Ok((op, captures)) => {
            let (parts, body) = req.into_parts();
            Ok((op, captures, parts, body::boxed(body)))
        }
        Err(RouteError::NotFound) => Err(ApiError::no_route(req.method(), req.uri().path())),
        Err(RouteError::MethodNotAllowed { allow }) => Err(ApiError::method_not_allowed(
            req.method(),
            req.uri().path(),
            &allow,
        )),
    }
}

/// The future of [`Api::handle`]: the request's route, run inside its span, entered at every
/// poll as tracing's `Instrumented` does; once answered, still inside the span, the answer's
/// own headers, the outcome recorded in the span, the metrics and the request's line.
///
/// Hand-written rather than an `async` body in an instrumented span: the span is recorded
/// in directly, where the body found it again with `Span::current()` and cloned it, and
/// `Instrumented` entered its span once more to drop a future already done (together about
/// 800 instructions); and the request is moved once, into the route's box.
struct Handling {
    inner: Pin<Box<dyn Future<Output = Routed> + Send>>,
    span: tracing::Span,
    finish: Finish,
}

/// A route's answer, with the API it ran on and the request's id.
type Routed = (Result<Response<ResponseBody>, ApiError>, Api, HeaderValue);

/// What finishing an answer needs from its request.
struct Finish {
    start: Instant,
    operation: &'static str,
    is_api: bool,
    has_body: bool,
    is_head: bool,
}

impl Future for Handling {
    type Output = Response<ResponseBody>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let _entered = this.span.enter();
        let Poll::Ready((answered, api, request_id)) = this.inner.as_mut().poll(cx) else {
            return Poll::Pending;
        };
        let response = answered.unwrap_or_else(ApiError::into_response);
        // Polled again, the route's future panics, as any `async` body does once done.
        Poll::Ready(this.finish.answer(&this.span, &api, request_id, response))
    }
}

impl Finish {
    fn answer(
        &self,
        span: &tracing::Span,
        api: &Api,
        request_id: HeaderValue,
        mut response: Response<ResponseBody>,
    ) -> Response<ResponseBody> {
        if self.is_head {
            response = response::without_body(response);
        }
        if self.has_body && response.status().is_client_error() {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        if self.is_api {
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        }
        response.headers_mut().insert(REQUEST_ID, request_id);
        response.headers_mut().insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        let status = response.status();
        let latency = self.start.elapsed();
        record_outcome(span, status, latency);
        api.metrics.record(self.operation, status, latency);
        // The message as a `&str` value rather than format arguments: a subscriber writes
        // it as it is, where arguments go through `core::fmt` (67 instructions here).
        if status.is_server_error() {
            tracing::warn!(message = "request completed");
        } else {
            tracing::info!(message = "request completed");
        }
        response
    }
}

/// `latency` in milliseconds to the microsecond, as a log line shows it: `0.198`, where
/// `as_secs_f64() * 1000.0` gave `0.19838399999999998` (digits no clock measures, and that
/// many more for the log to write).
fn milliseconds(latency: std::time::Duration) -> f64 {
    // Below 2^53 µs (285 years) the count is exact as an f64, and dividing by a power of ten
    // gives the closest f64 to the decimal: what it prints back.
    let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
    micros as f64 / 1000.0
}

/// Records the request span's `status` and `latency_ms` in one call.
fn record_outcome(span: &tracing::Span, status: http::StatusCode, latency: std::time::Duration) {
    /// The two fields of the request span's callsite, found by name once rather than at
    /// every request (a search comparing the names before them, about 100 instructions).
    static OUTCOME: std::sync::OnceLock<Option<[tracing::field::Field; 2]>> =
        std::sync::OnceLock::new();
    let Some(meta) = span.metadata() else {
        return;
    };
    let fields = meta.fields();
    let find = || Some([fields.field("status")?, fields.field("latency_ms")?]);
    let found;
    let [status_field, latency_field] = match OUTCOME.get_or_init(find) {
        // The span is always `Api::handle`'s, from one callsite; another would be looked up.
        Some(kept) if kept[0].callsite() == meta.callsite() => kept,
        _ => match find() {
            Some(fields) => {
                found = fields;
                &found
            }
            None => return,
        },
    };
    let status = status.as_u16();
    let latency_ms = milliseconds(latency);
    span.record_all(&fields.value_set(&[
        (status_field, Some(&status as &dyn tracing::Value)),
        (latency_field, Some(&latency_ms as &dyn tracing::Value)),
    ]));
}

/// [`REQUEST_ID_HEADER`] as a name, checked once: a `&str` is parsed and hashed as a header
/// name at every lookup and insert.
const REQUEST_ID: HeaderName = HeaderName::from_static(REQUEST_ID_HEADER);

fn is_api_path(path: &str) -> bool {
    path == "/api" || path.starts_with("/api/")
}

/// What `Api::handle` reads of a request's headers, in one pass (a lookup of each of the
/// three names hashed it, about 260 instructions of every request):
///
/// - the request's id: the caller's `X-Request-Id` when it sent exactly one value of 1 to
///   [`MAX_REQUEST_ID_LEN`] visible ASCII characters, else 16 random lowercase hex digits;
/// - whether it has a body (`Transfer-Encoding`, or a first `Content-Length` other than `0`):
///   a refused request may leave its body unread, and the client must then not reuse the
///   connection for its next request (it would race the server closing it).
fn read_head(headers: &http::HeaderMap) -> (HeaderValue, bool) {
    let mut sent = credentials::Found::default();
    let mut has_body = false;
    let mut sized = false;
    for (name, value) in headers {
        if *name == REQUEST_ID {
            sent.add(value);
        } else if *name == header::TRANSFER_ENCODING {
            has_body = true;
        } else if *name == header::CONTENT_LENGTH && !std::mem::replace(&mut sized, true) {
            has_body |= value.as_bytes() != b"0";
        }
    }
    let request_id = match sent.single() {
        Some(Some(value)) if is_acceptable_request_id(value.as_bytes()) => value.clone(),
        _ => generate_request_id(),
    };
    (request_id, has_body)
}

fn is_acceptable_request_id(id: &[u8]) -> bool {
    (1..=MAX_REQUEST_ID_LEN).contains(&id.len()) && id.iter().all(|b| b.is_ascii_graphic())
}

fn generate_request_id() -> HeaderValue {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let n = rand::random::<u64>();
    let mut id = [0u8; 16];
    for (i, digit) in id.iter_mut().enumerate() {
        *digit = HEX[((n >> (60 - 4 * i)) & 0xf) as usize];
    }
    // Owned by its bytes rather than copied into a `Vec`: the request clones the value (for
    // its extensions), and cloning a copied one allocates to share it. Hex digits are always
    // a valid header value.
    HeaderValue::from_maybe_shared(bytes::Bytes::from_owner(id))
        .unwrap_or(HeaderValue::from_static("0000000000000000"))
}

impl<B> tower_service::Service<Request<B>> for Api
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Answered;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        Answered(self.handling(req))
    }
}

/// The future of [`Api`] as a [`tower_service::Service`]: [`Api::handle`]'s, never failing.
pub struct Answered(Handling);

impl Future for Answered {
    type Output = Result<Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.get_mut().0).poll(cx).map(Ok)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    fn head(pairs: &[(&str, &str)]) -> (String, bool) {
        let mut headers = http::HeaderMap::new();
        for (name, value) in pairs {
            headers.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                http::HeaderValue::from_str(value).unwrap(),
            );
        }
        let (id, has_body) = super::read_head(&headers);
        (id.to_str().unwrap().to_owned(), has_body)
    }

    #[test]
    fn the_head_gives_the_request_id_and_whether_a_body_follows() {
        let sent = [("host", "x"), ("x-request-id", "abc-1"), ("accept", "*/*")];
        assert_eq!(head(&sent), ("abc-1".to_owned(), false));
        for refused in [
            &[("x-request-id", "a"), ("x-request-id", "b")][..],
            &[("x-request-id", "has space")],
            &[],
        ] {
            let (id, _) = head(refused);
            assert!(
                id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()),
                "{refused:?}: {id}"
            );
        }
        assert!(head(&[("transfer-encoding", "chunked")]).1);
        assert!(head(&[("content-length", "5")]).1);
        assert!(!head(&[("content-length", "0")]).1);
        // The first Content-Length counts, as `HeaderMap::get` gives it.
        assert!(!head(&[("content-length", "0"), ("content-length", "5")]).1);
        assert!(head(&[("content-length", "5"), ("content-length", "0")]).1);
    }

    #[test]
    fn latencies_are_milliseconds_to_the_microsecond() {
        let shown = |latency| format!("{:?}", super::milliseconds(latency));
        assert_eq!(shown(Duration::from_nanos(198_384)), "0.198");
        assert_eq!(shown(Duration::from_nanos(198_384_123)), "198.384");
        assert_eq!(shown(Duration::from_micros(1)), "0.001");
        assert_eq!(shown(Duration::from_nanos(999)), "0.0");
        assert_eq!(shown(Duration::from_secs(2)), "2000.0");
    }
}
