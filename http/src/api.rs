//! The adapter's state: the service it calls, its settings and its rate limiters, shared by
//! every stage of a request.

use std::sync::Arc;
use std::time::Duration;

use http::HeaderValue;
use voiceplane_core::Service;

use crate::protect::ratelimit::{Limiters, RateLimits};

/// Default of [`HttpConfig::max_body_bytes`]: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// The header every response carries with the request's id: the caller's own `X-Request-Id`
/// when it sent one acceptable value (see [`MAX_REQUEST_ID_LEN`]), else a generated one.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The request's id as [`Api::handle`] chose it, in the extensions of an invitee's request,
/// so that the audit log can record it. An organization's caller is authenticated with the
/// id at hand, and other operations record nothing, so no other request pays for the insert.
#[derive(Debug, Clone)]
pub(crate) struct RequestId(pub(crate) HeaderValue);

/// Longest `X-Request-Id` echoed, in bytes. A caller's id is used only when it is one header
/// of 1 to this many visible ASCII characters (`!` to `~`); anything else is replaced by a
/// generated id of 16 lowercase hex digits.
pub const MAX_REQUEST_ID_LEN: usize = 128;

/// Settings of the adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpConfig {
    /// Largest JSON request body accepted, in bytes; larger ones get 413. Default 1 MiB.
    pub max_body_bytes: usize,
    /// Largest streamed upload (recordings, knowledge-base files), in bytes; larger ones get
    /// 413 and nothing is stored. Default 2 GiB.
    pub max_upload_bytes: u64,
    /// How long a CSV upload of recipients may take to arrive, from when its headers were
    /// read; a slower body gets 408 and nothing is added. Default 60 s.
    pub csv_read_timeout: Duration,
}

/// Default of [`HttpConfig::csv_read_timeout`]: 60 s, 10 MiB (the largest CSV) at about
/// 1.4 Mbit/s.
pub const DEFAULT_CSV_READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Default of [`HttpConfig::max_upload_bytes`]: 2 GiB.
pub const DEFAULT_MAX_UPLOAD_BYTES: u64 = 2 * 1024 * 1024 * 1024;

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_upload_bytes: DEFAULT_MAX_UPLOAD_BYTES,
            csv_read_timeout: DEFAULT_CSV_READ_TIMEOUT,
        }
    }
}

/// The voiceplane HTTP API: cheap to clone, usable as a function ([`Api::handle`](crate::Api::handle)), as a
/// [`tower_service::Service`], or served on a listener with [`serve()`](crate::serve()).
///
/// A clone is one reference count: the API is cloned for every request (for the request's
/// `'static` future; a server that clones its service per request, as hyper-util's
/// `TowerToHyperService` does, adds one more), and each count of the fields shared by
/// reference was a contended atomic on every core.
#[derive(Debug, Clone)]
pub struct Api(pub(crate) Arc<Shared>);

/// What every clone of an [`Api`] shares.
#[derive(Debug, Clone)]
pub struct Shared {
    pub(crate) service: Arc<Service>,
    pub(crate) config: HttpConfig,
    /// Rate limits, when [`Api::with_rate_limits`] set them.
    pub(crate) limits: Option<Arc<Limiters>>,
    /// Its OpenAPI document ([`crate::openapi_document`]).
    pub(crate) openapi: fn() -> &'static serde_json::Value,
    /// The request series' handles.
    pub(crate) metrics: Arc<crate::metrics::RequestMetrics>,
    /// Answers kept with their entity tags.
    pub(crate) representations: Arc<crate::represent::Representations>,
    /// Where `/runtime/{provider}/{call_sid}` streams go, when this server runs the built-in
    /// runtime.
    pub(crate) media: Option<Media>,
}

/// The runtime media streams go to.
#[derive(Clone)]
pub(crate) struct Media(pub(crate) Arc<dyn voiceplane_core::runtime::MediaStreams>);

impl std::fmt::Debug for Media {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Media")
    }
}

impl std::ops::Deref for Api {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl Api {
    /// The same API with rate limits (none by default): per credential, and on failed
    /// authentications per client IP. The limits live in this process, shared by the API's
    /// clones; see [`RateLimits`].
    ///
    /// The client IP is the connection's peer, which [`serve()`](crate::serve()) puts in each request's
    /// extensions as a [`std::net::SocketAddr`]; a server that mounts the API should do the
    /// same, or failed authentications go unlimited.
    pub fn with_rate_limits(mut self, limits: RateLimits) -> Self {
        Arc::make_mut(&mut self.0).limits = Some(Arc::new(Limiters::new(limits)));
        self
    }

    /// The same API with `config`.
    pub fn with_config(mut self, config: HttpConfig) -> Self {
        Arc::make_mut(&mut self.0).config = config;
        self
    }

    /// The same API handing the media streams of `/runtime/twilio/{call_sid}` and
    /// `/runtime/telnyx/{call_sid}` to `media` (the built-in voice runtime) once their
    /// WebSocket upgrade is done. The server must allow HTTP/1.1 upgrades (as
    /// [`serve()`](crate::serve()) does); without `media` those paths answer 503.
    pub fn with_media(mut self, media: Arc<dyn voiceplane_core::runtime::MediaStreams>) -> Self {
        Arc::make_mut(&mut self.0).media = Some(Media(media));
        self
    }

    /// The service the API calls.
    pub fn service(&self) -> &Arc<Service> {
        &self.service
    }

    /// The adapter's settings.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }
}
