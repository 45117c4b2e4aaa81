//! The upstreams of the built-in voice runtime (DESIGN §24), implementing the traits of
//! [`voiceplane_runtime::upstream`]:
//!
//! | client | trait | wire |
//! |---|---|---|
//! | [`DeepgramListener`] | `SpeechToText` | WebSocket `{base}/v1/listen?…`, `Authorization: Token` |
//! | [`OpenAiChat`] | `LanguageModel` | `POST {base}/v1/chat/completions`, server-sent events |
//! | [`ProviderOneSpeech`] | `TextToSpeech` | `POST {base}/tts/bytes`, raw audio streamed |
//! | [`ProviderTwoSpeech`] | `TextToSpeech` | `POST {base}/v1/text-to-speech/{voice}/stream`, raw audio streamed |
//! | [`GuardedHttpTools`] | `HttpTools` | the tool's method and URL |
//!
//! Each upstream is asked with the [`ProviderKey`] resolved for the call, so one client serves
//! every organization. A key's base URL may be an organization's integration, chosen by an API
//! user, so every connection follows a [`TargetPolicy`] as webhook deliveries do.
//!
//! Streams have no overall timeout (a reply or a sentence lasts as long as it lasts): a
//! connection must be made within `connect_timeout`, and each read (the first byte, then every
//! next one) must come within `read_timeout`. Errors name the provider and what failed, never
//! the key, the URL or the provider's body.

mod deepgram;
mod openai;
mod speech;
mod tools;

use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::header::HeaderValue;
use reqwest::{StatusCode, Url};
use voiceplane_core::webhooks::TargetPolicy;
use voiceplane_runtime::upstream::{ProviderKey, Streamed, UpstreamError};

use crate::guarded::{allowed_literal, find, guarded};
use crate::{BuildError, human, without_url};

pub use deepgram::DeepgramListener;
pub use openai::OpenAiChat;
pub use speech::{ProviderOneSpeech, ProviderTwoSpeech};
pub use tools::GuardedHttpTools;

/// Timeouts and the target policy of the runtime's streaming clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeClientSettings {
    /// Longest wait for a TCP (and TLS) connection, and for a WebSocket handshake. Default
    /// 5 s.
    pub connect_timeout: Duration,
    /// Longest wait for the first byte of an answer, and then between two reads of it: a
    /// stalled upstream fails the stream instead of holding the call. Default 10 s.
    pub read_timeout: Duration,
    /// Which addresses the upstreams' base URLs may have (the webhooks' policy: integrations
    /// are chosen by API users). Default: public addresses only.
    pub policy: TargetPolicy,
}

impl Default for RuntimeClientSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(10),
            policy: TargetPolicy::default(),
        }
    }
}

impl RuntimeClientSettings {
    fn check(&self) -> Result<(), BuildError> {
        if self.connect_timeout.is_zero() || self.read_timeout.is_zero() {
            return Err(BuildError::new(
                "runtime upstream timeouts must be more than zero",
            ));
        }
        Ok(())
    }
}

/// A pool for the streaming HTTP upstreams: guarded, no overall timeout.
fn streaming_client(
    settings: RuntimeClientSettings,
    agent: &str,
) -> Result<reqwest::Client, BuildError> {
    settings.check()?;
    guarded(settings.policy)
        .connect_timeout(settings.connect_timeout)
        .read_timeout(settings.read_timeout)
        .user_agent(format!("voiceplane-{agent}/{}", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| BuildError::new(format!("cannot build the {agent} client: {e}")))
}

/// The key's base URL, an absolute http(s) URL whose host, when an IP literal, the policy
/// allows.
fn http_base(key: &ProviderKey, policy: TargetPolicy) -> Result<Url, UpstreamError> {
    let url = Url::parse(key.base_url.trim())
        .ok()
        .filter(|u| {
            matches!(u.scheme(), "http" | "https") && !u.cannot_be_a_base() && u.host().is_some()
        })
        .ok_or_else(|| {
            UpstreamError(format!(
                "{}'s base URL is not an http:// or https:// URL",
                key.provider
            ))
        })?;
    allowed_literal(policy, &url).map_err(|_| private(&key.provider))?;
    Ok(url)
}

fn private(provider: &str) -> UpstreamError {
    UpstreamError(format!(
        "{provider}'s base URL points to a private address; private targets are not allowed"
    ))
}

/// `{scheme} {key}` as a header value kept out of debug output.
fn credential(key: &ProviderKey, scheme: &str) -> Result<HeaderValue, UpstreamError> {
    let value = if scheme.is_empty() {
        HeaderValue::from_str(key.api_key.trim())
    } else {
        HeaderValue::from_str(&format!("{scheme} {}", key.api_key.trim()))
    };
    let mut value = value.map_err(|_| {
        UpstreamError(format!(
            "{}'s API key holds characters not allowed in a header",
            key.provider
        ))
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// The error for a non-success `status` of `provider` answering `what` ("the speech
/// request"). The body is never read: it could echo our request or key.
fn status_error(provider: &str, what: &str, status: StatusCode) -> UpstreamError {
    let code = status.as_u16();
    tracing::warn!(
        provider,
        operation = what,
        status = code,
        "runtime upstream answered with an error status"
    );
    UpstreamError(match code {
        401 | 403 => format!("{provider} rejected the API key (HTTP {code})"),
        429 => format!("{provider} is rate limiting our requests (HTTP 429)"),
        400 | 404 | 422 => format!("{provider} rejected {what} (HTTP {code})"),
        _ => format!("{provider} answered {what} with HTTP {code}"),
    })
}

/// The error for a request to `provider` that failed in transport: unreachable, too slow, or
/// broken mid-answer.
fn transport_error(
    provider: &str,
    what: &str,
    err: reqwest::Error,
    settings: RuntimeClientSettings,
) -> UpstreamError {
    let sentence = if find::<voiceplane_core::webhooks::PrivateAddress>(&err).is_some() {
        private(provider).0
    } else if find::<crate::guarded::Unresolved>(&err).is_some() {
        format!("{provider}'s host name could not be resolved")
    } else if err.is_timeout() {
        format!(
            "{provider} sent nothing for {} during {what}",
            human(settings.read_timeout)
        )
    } else if err.is_connect() {
        format!("{provider} could not be reached")
    } else {
        format!("the connection to {provider} broke during {what}")
    };
    tracing::warn!(provider, operation = what, error = %without_url(err), "{sentence}");
    UpstreamError(sentence)
}

/// Sends `request` and checks its status: the response, whose body is still to be read.
async fn send(
    request: reqwest::RequestBuilder,
    provider: &str,
    what: &str,
    settings: RuntimeClientSettings,
) -> Result<reqwest::Response, UpstreamError> {
    let response = request
        .send()
        .await
        .map_err(|e| transport_error(provider, what, e, settings))?;
    let status = response.status();
    if !status.is_success() {
        return Err(status_error(provider, what, status));
    }
    Ok(response)
}

/// The body of `response` as it arrives; one error ends it.
fn body_stream(
    response: reqwest::Response,
    provider: String,
    what: &'static str,
    settings: RuntimeClientSettings,
) -> Streamed<Bytes> {
    Box::pin(
        response
            .bytes_stream()
            .scan(false, move |failed, chunk| {
                let item = match chunk {
                    _ if *failed => None,
                    Ok(bytes) => Some(Ok(bytes)),
                    Err(e) => {
                        *failed = true;
                        Some(Err(transport_error(&provider, what, e, settings)))
                    }
                };
                std::future::ready(item)
            })
            .filter(|item| std::future::ready(!matches!(item, Ok(b) if b.is_empty()))),
    )
}
