//! The binary's HTTP stack: the layers the server puts around [`Api`](voiceplane_http::Api), from tower-http, the
//! way any Rust server adds them. They live here, not in the adapter, so that an application
//! mounting `Api` chooses its own (`http/README.md`, "What to add in your own stack").
//!
//! From the outside in:
//!
//! 1. security headers, set when the response has none of its own:
//!    `X-Content-Type-Options: nosniff`, `X-Frame-Options: DENY`, `Referrer-Policy:
//!    no-referrer`, and `Content-Security-Policy: default-src 'none'; frame-ancestors 'none'`
//!    on everything but audio;
//! 2. compression: gzip or br, as the client's `Accept-Encoding` prefers, of JSON and text
//!    bodies of at least [`MIN_COMPRESSED_BYTES`]; never of audio, of a body that already has a
//!    `Content-Encoding`, or of a range (`206`, `Content-Range`), which keep their exact
//!    `Content-Length`;
//! 3. CORS, only when `http.cors_allowed_origins` is set: a preflight (`OPTIONS` with `Origin`
//!    and `Access-Control-Request-Method`) is answered here with 204 and never reaches the
//!    adapter; other requests get `Access-Control-Allow-Origin` when their origin is allowed.
//!
//! The first two are one stage, [`Finishing`], which reads the response's headers once for
//! both.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::header::{self, HeaderName};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use tower_http::compression::Compression;
use tower_http::compression::predicate::Predicate;
use tower_http::cors::{AllowOrigin, Cors, CorsLayer};
use tower_layer::Layer as _;
use tower_service::Service;
use voiceplane_http::{BoxError, ResponseBody};

use crate::config::{ConfigError, CorsOrigins, HttpSettings};

/// The body of the stack's responses: the adapter's, compressed or passed through (boxed
/// either way, so that a response moves through the layers as a few words: tower-http's
/// compression body is 5.8 KB with its encoders inline, and every layer's future moved it).
pub type StackBody = ResponseBody;

/// Smallest body compressed. Below about one TCP segment compression saves no round trip and
/// still costs CPU (and gzip adds ~20 bytes of framing).
pub const MIN_COMPRESSED_BYTES: u64 = 1024;

/// How long a browser may cache a preflight answer. Chromium caps it at 2 hours.
pub const CORS_MAX_AGE: Duration = Duration::from_secs(7200);

/// The methods a cross-origin caller may use: every method of the API.
pub const CORS_ALLOWED_METHODS: [Method; 7] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::OPTIONS,
];

/// The request headers a cross-origin caller may send: credentials, the organization,
/// bodies, idempotency, conditional requests and its own request id.
pub const CORS_ALLOWED_HEADERS: [&str; 8] = [
    "x-api-key",
    "x-organization-id",
    "authorization",
    "content-type",
    "idempotency-key",
    "if-match",
    "if-none-match",
    "x-request-id",
];

/// The response headers a cross-origin caller's script may read, beyond the CORS-safelisted
/// ones.
pub const CORS_EXPOSED_HEADERS: [&str; 10] = [
    "x-request-id",
    "etag",
    "location",
    "retry-after",
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "idempotent-replayed",
    "content-disposition",
    "allow",
];

/// The Content-Security-Policy of every response but audio: an API answer loads nothing and
/// is framed by no one.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; frame-ancestors 'none'";

/// `inner` (the [`Api`](voiceplane_http::Api), possibly behind the binary's own `/metrics`) wrapped in the binary's
/// layers (see the module documentation), with CORS as `http.cors_allowed_origins` says.
/// Generic over the request body, as [`Api`](voiceplane_http::Api) is.
pub fn layered<S, B>(
    inner: S,
    http: &HttpSettings,
) -> Result<
    impl Service<Request<B>, Response = Response<StackBody>, Error = Infallible, Future: Send + 'static>
    + Clone
    + Send
    + 'static,
    ConfigError,
>
where
    S: Service<Request<B>, Response = Response<ResponseBody>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + Unpin + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let cors = match http.cors_origins()? {
        Some(origins) => CorsStage::On(cors_layer(origins).layer(inner)),
        None => CorsStage::Off(inner),
    };
    Ok(Finishing { inner: cors })
}

/// Finishes every response: sets the security headers (module documentation, 1.) it lacks
/// and compresses it when it should be (2.). One stage rather than a layer for each (four of
/// tower-http's `SetResponseHeader` and a compression layer were each a service and a future
/// around every request), reading the response's headers once for both: each lookup by name
/// hashes the name, and there were nine.
#[derive(Clone)]
pub struct Finishing<S> {
    inner: S,
}

impl<S, B> Service<Request<B>> for Finishing<S>
where
    S: Service<Request<B>, Response = Response<ResponseBody>, Error = Infallible>,
    S::Future: Unpin,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = FinishingFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        // Kept only when sent: an empty Vec does not allocate.
        let accept = req
            .headers()
            .get_all(header::ACCEPT_ENCODING)
            .iter()
            .cloned()
            .collect();
        FinishingFuture {
            inner: self.inner.call(req),
            accept,
        }
    }
}

/// The future of [`Finishing`].
pub struct FinishingFuture<F> {
    inner: F,
    /// The request's `Accept-Encoding` values.
    accept: Vec<HeaderValue>,
}

impl<F> Future for FinishingFuture<F>
where
    F: Future<Output = Result<Response<ResponseBody>, Infallible>> + Unpin,
{
    type Output = Result<Response<ResponseBody>, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Poll::Ready(Ok(mut response)) = Pin::new(&mut self.inner).poll(cx) else {
            return Poll::Pending;
        };
        let seen = Seen::of(response.headers());
        secure_as(&mut response, &seen);
        if !seen.compress(&response) {
            return Poll::Ready(Ok(response));
        }
        let accept = std::mem::take(&mut self.accept);
        Poll::Ready(Ok(compress(response, accept, cx)))
    }
}

/// The security headers, in the order of [`Seen::set`], each with whether audio gets it: not
/// the policy, since a browser tab opening a recording URL builds a media document around it,
/// whose own loads the policy would govern.
const SECURITY_HEADERS: [(HeaderName, &str, bool); 4] = [
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff", true),
    (header::X_FRAME_OPTIONS, "DENY", true),
    (header::REFERRER_POLICY, "no-referrer", true),
    (
        header::CONTENT_SECURITY_POLICY,
        CONTENT_SECURITY_POLICY,
        false,
    ),
];

/// What finishing a response depends on, read in one pass over its headers (the first value
/// of each, as `HeaderMap::get` would give).
#[derive(Debug, Default)]
struct Seen {
    /// Which of [`SECURITY_HEADERS`] the response sets itself.
    set: [bool; 4],
    content_type: ContentType,
    /// The declared `Content-Length`, when it is a number.
    length: Option<u64>,
    /// A `Content-Encoding` or `Content-Range`: tower-http passes such a body as it is (and
    /// so does [`Finishing`]).
    encoded: bool,
}

/// What a response's `Content-Type` says to finishing it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ContentType {
    /// None sent, or one that is neither of the others.
    #[default]
    Other,
    /// `audio/*`: no Content-Security-Policy, no compression.
    Audio,
    /// JSON (`application/json`, `…+json`) or text (`text/*` but event streams).
    Compressible,
}

impl Seen {
    fn of(headers: &http::HeaderMap) -> Self {
        let mut seen = Self::default();
        let mut typed = false;
        let mut sized = false;
        for (name, value) in headers {
            // Compared as names: each of these is a standard one, which compares as a number,
            // where a match on the name's text compared bytes (about 30 a header).
            if *name == header::CONTENT_TYPE {
                if !std::mem::replace(&mut typed, true) {
                    seen.content_type = ContentType::of(value);
                }
            } else if *name == header::CONTENT_LENGTH {
                if !std::mem::replace(&mut sized, true) {
                    seen.length = value.to_str().ok().and_then(|v| v.parse().ok());
                }
            } else if *name == header::CONTENT_ENCODING || *name == header::CONTENT_RANGE {
                seen.encoded = true;
            } else if let Some(at) = SECURITY_HEADERS.iter().position(|(n, ..)| n == name) {
                seen.set[at] = true;
            }
        }
        seen
    }

    /// Whether [`JsonOrText`] compresses `response`, whose headers these are.
    fn compressible<B: http_body::Body>(&self, response: &Response<B>) -> bool {
        if response.status() == StatusCode::PARTIAL_CONTENT
            || self.content_type != ContentType::Compressible
        {
            return false;
        }
        // A HEAD answer declares the GET's length with an empty body: the header first.
        self.length
            .or_else(|| response.body().size_hint().exact())
            .is_none_or(|n| n >= MIN_COMPRESSED_BYTES)
    }

    /// Whether [`Finishing`] hands `response` to the compression.
    fn compress<B: http_body::Body>(&self, response: &Response<B>) -> bool {
        !self.encoded && self.compressible(response)
    }
}

impl ContentType {
    fn of(value: &HeaderValue) -> Self {
        // What the adapter sets on every JSON answer, compared as it is: the parse below
        // (a UTF-8 check, a split, a trim and three comparisons) was 220 instructions of
        // every request.
        if value.as_bytes() == b"application/json" {
            return Self::Compressible;
        }
        // Audio by its first bytes, whatever bytes its parameters hold.
        if starts_with_ignore_case(value.as_bytes(), b"audio/") {
            return Self::Audio;
        }
        // The media type without parameters; a media type has no leading space.
        let Ok(value) = value.to_str() else {
            return Self::Other;
        };
        let t = value.split(';').next().unwrap_or_default().trim();
        if t.eq_ignore_ascii_case("application/json")
            || (starts_with_ignore_case(t.as_bytes(), b"application/")
                && ends_with_ignore_case(t, "+json"))
            || (starts_with_ignore_case(t.as_bytes(), b"text/")
                && !t.eq_ignore_ascii_case("text/event-stream"))
        {
            Self::Compressible
        } else {
            Self::Other
        }
    }
}

/// Sets each security header `response` lacks.
#[cfg(test)]
fn secure<B>(response: &mut Response<B>) {
    let seen = Seen::of(response.headers());
    secure_as(response, &seen);
}

/// Sets each security header `response` lacks, as `seen` found them.
fn secure_as<B>(response: &mut Response<B>, seen: &Seen) {
    let headers = response.headers_mut();
    let audio = seen.content_type == ContentType::Audio;
    for ((name, value, on_audio), set) in SECURITY_HEADERS.into_iter().zip(seen.set) {
        if !set && (on_audio || !audio) {
            headers.insert(name, HeaderValue::from_static(value));
        }
    }
}

/// Over bytes, so that a header value is checked without a UTF-8 check.
fn starts_with_ignore_case(s: &[u8], prefix: &[u8]) -> bool {
    s.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

fn ends_with_ignore_case(s: &str, suffix: &str) -> bool {
    s.len() >= suffix.len()
        && s.get(s.len() - suffix.len()..)
            .is_some_and(|tail| tail.eq_ignore_ascii_case(suffix))
}

/// The CORS rules for `origins`. Credentials are allowed only to listed origins: browsers
/// refuse them with `*`.
fn cors_layer(origins: CorsOrigins) -> CorsLayer {
    let names = |list: &[&'static str]| -> Vec<HeaderName> {
        list.iter().map(|n| HeaderName::from_static(n)).collect()
    };
    let layer = CorsLayer::new()
        .allow_methods(CORS_ALLOWED_METHODS.to_vec())
        .allow_headers(names(&CORS_ALLOWED_HEADERS))
        .expose_headers(names(&CORS_EXPOSED_HEADERS))
        .max_age(CORS_MAX_AGE);
    match origins {
        CorsOrigins::Any => layer.allow_origin(AllowOrigin::any()),
        CorsOrigins::List(list) => layer
            // Validated by `HttpSettings::cors_origins`: visible ASCII, so every one converts.
            .allow_origin(AllowOrigin::list(
                list.iter().filter_map(|o| HeaderValue::from_str(o).ok()),
            ))
            .allow_credentials(true),
    }
}

/// Compresses JSON (`application/json`, `…+json`) and text (`text/*` but event streams)
/// bodies of at least [`MIN_COMPRESSED_BYTES`] (or of unknown size); never a `206`. (The
/// compression layer itself already skips bodies with `Content-Encoding` or `Content-Range`.)
#[derive(Debug, Clone, Copy)]
struct JsonOrText;

impl Predicate for JsonOrText {
    fn should_compress<B>(&self, response: &Response<B>) -> bool
    where
        B: http_body::Body,
    {
        Seen::of(response.headers()).compressible(response)
    }
}

/// `response` compressed as `accept` (the request's `Accept-Encoding`) prefers, by
/// tower-http's `Compression` (which negotiates the encoding, sets `Content-Encoding` and
/// `Vary`) around a service that answers it, its body boxed so that the stack's stays
/// [`ResponseBody`]. Only what [`JsonOrText`] compresses gets here: the others pass untouched.
fn compress(
    response: Response<ResponseBody>,
    accept: Vec<HeaderValue>,
    cx: &mut Context<'_>,
) -> Response<ResponseBody> {
    let mut request = Request::new(());
    for value in accept {
        request.headers_mut().append(header::ACCEPT_ENCODING, value);
    }
    let mut compressed = Compression::new(Answer(Some(response)))
        .compress_when(JsonOrText)
        .call(request);
    // `Answer` is ready at once, and so is the compression's future around it.
    match Pin::new(&mut compressed).poll(cx) {
        Poll::Ready(Ok(response)) => {
            response.map(|body| body.map_err(BoxError::from).boxed_unsync())
        }
        Poll::Ready(Err(never)) => match never {},
        Poll::Pending => {
            tracing::error!("the compression of a complete response did not finish at once");
            let mut response = Response::new(ResponseBody::default());
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            response
        }
    }
}

/// A service answering one response it already has: what [`Compress`] hands tower-http.
struct Answer(Option<Response<ResponseBody>>);

impl Service<Request<()>> for Answer {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Response<ResponseBody>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<()>) -> Self::Future {
        std::future::ready(Ok(self.0.take().unwrap_or_default()))
    }
}

/// CORS when configured. tower-http's `Cors` answers every `OPTIONS` itself with 200; here
/// only real preflights reach it, and get 204 (no body), while any other `OPTIONS` gets the
/// adapter's own answer (405 with `Allow`).
#[derive(Clone)]
// The stack is moved and cloned by value (per connection, and per request where a server
// clones its service): a copy is cheaper than boxing (an allocation each).
#[allow(clippy::large_enum_variant)]
enum CorsStage<S> {
    Off(S),
    On(Cors<S>),
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The future of [`CorsStage`]: the inner service's as it is when CORS is off (it is boxed
/// already), boxed when on.
enum CorsFuture<F, T> {
    Off(F),
    On(BoxFuture<T>),
}

impl<F, T> Future for CorsFuture<F, T>
where
    F: Future<Output = T> + Unpin,
{
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match self.get_mut() {
            Self::Off(inner) => Pin::new(inner).poll(cx),
            Self::On(inner) => inner.as_mut().poll(cx),
        }
    }
}

impl<S, B, RB> Service<Request<B>> for CorsStage<S>
where
    S: Service<Request<B>, Response = Response<RB>>,
    S::Future: Send + Unpin + 'static,
    S::Error: 'static,
    RB: Default + Send + 'static,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = CorsFuture<S::Future, Result<Response<RB>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        match self {
            Self::Off(inner) => inner.poll_ready(cx),
            Self::On(cors) => cors.poll_ready(cx),
        }
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        match self {
            Self::Off(inner) => CorsFuture::Off(inner.call(req)),
            Self::On(cors) if is_preflight(&req) => {
                let answer = cors.call(req);
                CorsFuture::On(Box::pin(async move {
                    let mut response = answer.await?;
                    if response.status() == StatusCode::OK {
                        *response.status_mut() = StatusCode::NO_CONTENT;
                    }
                    Ok(response)
                }))
            }
            Self::On(cors) if req.method() == Method::OPTIONS => {
                CorsFuture::On(Box::pin(cors.get_mut().call(req)))
            }
            Self::On(cors) => CorsFuture::On(Box::pin(cors.call(req))),
        }
    }
}

/// A CORS preflight: `OPTIONS` with `Origin` and `Access-Control-Request-Method`.
fn is_preflight<B>(req: &Request<B>) -> bool {
    req.method() == Method::OPTIONS
        && req.headers().contains_key(header::ORIGIN)
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
}

#[cfg(test)]
#[path = "stack_tests.rs"]
mod tests;
