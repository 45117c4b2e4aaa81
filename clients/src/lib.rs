//! # voiceplane-clients
//!
//! HTTP implementations of the upstream traits of `voiceplane-core`, each speaking its
//! provider's HTTP contract:
//!
//! - [`ProviderOne`], a [`VoiceProvider`](voiceplane_core::voice::VoiceProvider) (search);
//! - [`ProviderTwo`], a [`VoiceProvider`](voiceplane_core::voice::VoiceProvider) (search) and
//!   [`VoiceLibrary`](voiceplane_core::voice::VoiceLibrary) (shared library, add a shared
//!   voice);
//! - [`HttpTelephonyValidator`], the
//!   [`TelephonyValidator`](voiceplane_core::telephony::TelephonyValidator) of Twilio and
//!   Telnyx credentials;
//! - [`OpenAiEmbedder`], the [`Embedder`](voiceplane_core::knowledge::Embedder) of any
//!   OpenAI-compatible embeddings endpoint, in batches, with a timeout of its own;
//! - [`HttpJwksSource`], the [`JwksSource`](voiceplane_core::auth::JwksSource) of an identity
//!   provider's signing keys (`auth.jwks_url`);
//! - [`HttpChatCompletions`], the [`ChatCompletions`](voiceplane_core::analysis::ChatCompletions)
//!   of post-call analysis: any OpenAI-compatible chat-completions endpoint an agent names,
//!   through a pool that follows the webhook target policy;
//! - [`HttpWebhookSender`], the [`WebhookSender`](voiceplane_core::webhooks::WebhookSender)
//!   of webhook deliveries, with a pool of its own that connects only to addresses its target
//!   policy allows;
//! - the upstreams of the built-in voice runtime ([`runtime`]): [`DeepgramListener`] (live
//!   speech to text over a WebSocket), [`OpenAiChat`] (streamed chat completions with tools),
//!   [`ProviderOneSpeech`] and [`ProviderTwoSpeech`] (streamed speech), and
//!   [`GuardedHttpTools`] (an organization's HTTP tools, under the webhook target policy).
//!
//! Every other implementation holds a clone of one [`HttpClient`]: a single `reqwest`
//! connection pool per process with a connect timeout, a request timeout, a cap on response
//! sizes and no redirects (a redirect could carry our API key to another host).
//!
//! Failures become [`voiceplane_core::Error`]s whose sentence names the provider and never
//! contains the upstream body or a key: timeouts, refused connections, 5xx, unexpected statuses
//! and malformed JSON are `Upstream` (502); 401/403 is `Upstream` "… rejected the configured
//! API key"; 400/422 is `InvalidInput` (400) from the voice providers, `Upstream` from the
//! embeddings provider (whose inputs are ours, not the caller's); a voice provider without a
//! key is `Unavailable` (503).
//!
//! TLS is rustls with the *ring* provider (the one sqlx already uses), installed as the
//! process default by [`install_crypto_provider`], which [`HttpClient::new`] calls.
//!
//! ```no_run
//! # fn demo() -> Result<(), voiceplane_clients::BuildError> {
//! use voiceplane_clients::{HttpClient, HttpSettings, ProviderTwo, ProviderTwoSettings};
//! let http = HttpClient::new(HttpSettings::default())?;
//! let provider_two = ProviderTwo::new(
//!     http.clone(),
//!     ProviderTwoSettings {
//!         base_url: "https://api.elevenlabs.io".into(),
//!         api_key: Some("…".into()),
//!     },
//! )?;
//! # let _ = provider_two; Ok(()) }
//! ```

mod analysis;
mod embeddings;
mod guarded;
mod jwks;
mod provider_one;
mod provider_two;
pub mod runtime;
mod telephony;
mod webhooks;

use std::fmt;
use std::time::Duration;

use reqwest::{StatusCode, Url};
use serde::de::DeserializeOwned;
use voiceplane_core::Error;

pub use analysis::{AnalysisSettings, HttpChatCompletions};
pub use embeddings::{EmbeddingsSettings, OpenAiEmbedder};
pub use jwks::{HttpJwksSource, JWKS_MAX_BYTES, JWKS_TIMEOUT};
pub use provider_one::{ProviderOne, ProviderOneSettings};
pub use provider_two::{ProviderTwo, ProviderTwoSettings};
pub use runtime::{
    DeepgramListener, GuardedHttpTools, OpenAiChat, ProviderOneSpeech, ProviderTwoSpeech,
    RuntimeClientSettings,
};
pub use telephony::{HttpTelephonyValidator, TelephonySettings};
pub use webhooks::{HttpWebhookSender, SystemResolver, WebhookSenderSettings};

/// Installs rustls' *ring* crypto provider as the process default, once. Every
/// `reqwest::Client` in this workspace needs it (reqwest is built without a provider of its
/// own so that the tree has a single crypto stack); calling it again does nothing.
pub fn install_crypto_provider() {
    // Err means a provider is already installed, which is all we need.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Timeouts and limits of the shared [`HttpClient`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpSettings {
    /// Longest wait for a TCP (and TLS) connection. Default 5 s.
    pub connect_timeout: Duration,
    /// Longest wait for a whole request, from sending to the last byte of the response.
    /// Default 15 s.
    pub request_timeout: Duration,
    /// Largest response body read from an upstream; more is a 502. Default 4 MiB.
    pub max_response_bytes: usize,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(15),
            max_response_bytes: 4 * 1024 * 1024,
        }
    }
}

/// Why a client could not be built: a bad base URL or key (naming the configuration key,
/// never its value) or a TLS set-up failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError(String);

impl BuildError {
    fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BuildError {}

/// The process's one HTTP connection pool with its settings; cheap to clone.
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    settings: HttpSettings,
}

impl HttpClient {
    /// Builds the pool (installing the ring crypto provider first).
    pub fn new(settings: HttpSettings) -> Result<Self, BuildError> {
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .timeout(settings.request_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("voiceplane/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| BuildError::new(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self { client, settings })
    }

    /// The settings the pool was built with.
    pub fn settings(&self) -> HttpSettings {
        self.settings
    }
}

/// `base_url` parsed as an absolute http(s) URL; errors name `key`.
fn base_url(key: &str, base_url: &str) -> Result<Url, BuildError> {
    let url = Url::parse(base_url.trim())
        .map_err(|_| BuildError::new(format!("{key}: is not an absolute URL")))?;
    if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
        return Err(BuildError::new(format!(
            "{key}: is not an http:// or https:// URL"
        )));
    }
    Ok(url)
}

/// `base` with `segments` appended to its path (each percent-encoded) and no query.
fn endpoint(base: &Url, segments: &[&str]) -> Url {
    let mut url = base.clone();
    url.set_query(None);
    url.set_fragment(None);
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().extend(segments);
    }
    url
}

/// `…/v1/{segments}` under an OpenAI-compatible `base`, whether or not `base` already ends in
/// `/v1` (servers document their root both ways): never `…/v1/v1/…`.
fn openai_endpoint(base: &Url, segments: &[&str]) -> Url {
    let ends_in_v1 = base
        .path_segments()
        .and_then(|mut s| s.rfind(|s| !s.is_empty()))
        .is_some_and(|last| last.eq_ignore_ascii_case("v1"));
    let mut path = Vec::with_capacity(segments.len() + 1);
    if !ends_in_v1 {
        path.push("v1");
    }
    path.extend_from_slice(segments);
    endpoint(base, &path)
}

/// A duration as a caller reads it: "10 seconds", "1.5 seconds", "200 ms".
fn human(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        let s = d.as_secs();
        format!("{s} second{}", if s == 1 { "" } else { "s" })
    } else {
        format!("{:.1} seconds", d.as_secs_f64())
    }
}

/// One upstream operation: who is called and what for. Turns transport failures and
/// statuses into the caller-safe [`Error`]s of this crate.
#[derive(Debug, Clone, Copy)]
struct Call {
    /// `provider_one`, `provider_two`.
    provider: &'static str,
    /// What we asked for, as a noun phrase: "the voice search".
    what: &'static str,
    /// The sentence of a 400/422, after "{provider} rejected …" (a 400 to our caller);
    /// `None` when such an answer means our request or configuration is wrong rather than the
    /// caller's input (a 502 naming [`Call::check`]).
    invalid: Option<&'static str>,
    /// The error for an upstream 404, when it means "no such thing" rather than a wrong URL.
    not_found: Option<&'static str>,
    /// The configuration to check when the upstream does not know the endpoint (404) or,
    /// without `invalid`, refuses the request (400/422): "providers.provider_one.base_url".
    check: &'static str,
    /// What a 401/403 says the upstream refused: "the configured API key".
    refused: &'static str,
}

/// [`Call::refused`] of the upstreams we call with an API key.
const API_KEY: &str = "the configured API key";

impl Call {
    /// A failure to send the request or read its response.
    fn transport(&self, err: reqwest::Error, timeout: Duration) -> Error {
        let detail = if err.is_timeout() {
            format!("{} did not answer within {}", self.provider, human(timeout))
        } else if err.is_connect() {
            format!("{} could not be reached", self.provider)
        } else {
            format!("the connection to {} failed", self.provider)
        };
        tracing::warn!(provider = self.provider, operation = self.what, error = %without_url(err), "{detail}");
        Error::Upstream(detail)
    }

    /// The error for a non-success `status`.
    fn status(&self, status: StatusCode) -> Error {
        let code = status.as_u16();
        tracing::warn!(
            provider = self.provider,
            operation = self.what,
            status = code,
            "upstream answered with an error status"
        );
        match code {
            401 | 403 => Error::Upstream(format!("{} rejected {}", self.provider, self.refused)),
            400 | 422 => match self.invalid {
                Some(invalid) => Error::InvalidInput(format!(
                    "{} rejected {invalid} (HTTP {code})",
                    self.provider
                )),
                None => Error::Upstream(format!(
                    "{} rejected {} (HTTP {code}); check {}",
                    self.provider, self.what, self.check
                )),
            },
            404 => match self.not_found {
                Some(sentence) => Error::NotFound(sentence.to_owned()),
                None => Error::Upstream(format!(
                    "{} answered {} with HTTP 404; check {}",
                    self.provider, self.what, self.check
                )),
            },
            429 => Error::Upstream(format!(
                "{} is rate limiting our requests (HTTP 429); try again later",
                self.provider
            )),
            500..=599 => Error::Upstream(format!(
                "{} failed to answer {} (HTTP {code})",
                self.provider, self.what
            )),
            _ => Error::Upstream(format!(
                "{} answered {} with an unexpected HTTP {code}",
                self.provider, self.what
            )),
        }
    }

    /// A 2xx whose body is not the JSON we expect.
    fn malformed(&self, reason: &dyn fmt::Display) -> Error {
        tracing::warn!(provider = self.provider, operation = self.what, error = %reason, "malformed upstream response");
        Error::Upstream(format!(
            "{} answered {} with a malformed response",
            self.provider, self.what
        ))
    }

    /// Sends `request` and decodes a 2xx JSON answer into `T`, within the limits of `http`.
    async fn json<T: DeserializeOwned>(
        &self,
        http: &HttpClient,
        request: reqwest::RequestBuilder,
    ) -> Result<T, Error> {
        let settings = http.settings;
        self.json_within(
            request,
            settings.request_timeout,
            settings.max_response_bytes,
        )
        .await
    }

    /// [`Call::json`] with a timeout of its own (which replaces the pool's for this request)
    /// and a cap of `max_bytes` on the answer.
    async fn json_within<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<T, Error> {
        let response = request
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| self.transport(e, timeout))?;
        let status = response.status();
        if !status.is_success() {
            return Err(self.status(status));
        }
        let body = read_limited(response, max_bytes)
            .await
            .map_err(|e| match e {
                ReadError::Transport(e) => self.transport(e, timeout),
                ReadError::TooLarge(limit) => {
                    self.malformed(&format_args!("response exceeds {limit} bytes"))
                }
            })?;
        serde_json::from_slice(&body).map_err(|e| self.malformed(&e))
    }
}

/// The error text of `err` and its causes, without the request URL (which may hold ids).
fn without_url(err: reqwest::Error) -> String {
    let err = err.without_url();
    let mut text = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

enum ReadError {
    Transport(reqwest::Error),
    TooLarge(usize),
}

/// The response body, at most `limit` bytes.
async fn read_limited(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, ReadError> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(ReadError::TooLarge(limit));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(ReadError::Transport)? {
        if body.len() + chunk.len() > limit {
            return Err(ReadError::TooLarge(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A string that is present and not blank.
fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|s| !s.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_keep_a_base_path() {
        let base = base_url("k", "http://127.0.0.1:9/prefix/").unwrap();
        assert_eq!(
            endpoint(&base, &["v1", "voices", "add", "a b", "c/d"]).as_str(),
            "http://127.0.0.1:9/prefix/v1/voices/add/a%20b/c%2Fd"
        );
        let base = base_url("k", "https://api.example").unwrap();
        assert_eq!(
            endpoint(&base, &["voices"]).as_str(),
            "https://api.example/voices"
        );
        assert!(base_url("providers.x.base_url", "ftp://x").is_err());
        assert_eq!(
            base_url("providers.x.base_url", "nope")
                .unwrap_err()
                .to_string(),
            "providers.x.base_url: is not an absolute URL"
        );
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human(Duration::from_millis(200)), "200 ms");
        assert_eq!(human(Duration::from_secs(1)), "1 second");
        assert_eq!(human(Duration::from_secs(15)), "15 seconds");
        assert_eq!(human(Duration::from_millis(1500)), "1.5 seconds");
    }
}
