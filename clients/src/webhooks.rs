//! [`HttpWebhookSender`], the HTTP [`WebhookSender`]: one Standard Webhooks `POST` per attempt,
//! with a total time limit, no redirects, at most [`MAX_RESPONSE_BYTES`] of the answer read,
//! and, unless private targets are allowed, a connection only to public addresses.
//!
//! Deliveries go to URLs chosen by API users, so the sender must not become a way into the
//! network it runs in. An IP-literal URL is judged before sending; a hostname is resolved by
//! this sender's own resolver, which refuses the whole answer when any address in it is not
//! public, so the connection can only be made to addresses that were checked, however the
//! name resolved when the endpoint was created (DNS rebinding). No proxy is used, since a proxy
//! would resolve the name itself, out of our sight.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::CONTENT_TYPE;
use reqwest::{Url, redirect};
use voiceplane_core::webhooks::{
    DELIVERY_TIMEOUT, DeliveryOutcome, DeliveryRequest, MAX_RESPONSE_BYTES, PrivateAddress,
    TargetPolicy, WebhookSender, excerpt,
};

use crate::{BuildError, install_crypto_provider, without_url};

/// Settings of an [`HttpWebhookSender`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookSenderSettings {
    /// Longest an attempt may take, from sending to the end of the response. Default 10 s.
    pub timeout: Duration,
    /// Which addresses deliveries may reach. Default: public addresses only.
    pub policy: TargetPolicy,
}

impl Default for WebhookSenderSettings {
    fn default() -> Self {
        Self {
            timeout: DELIVERY_TIMEOUT,
            policy: TargetPolicy::default(),
        }
    }
}

/// Delivers webhooks over HTTP with its own connection pool (never shared with the upstream
/// clients, whose pool follows no such target policy); cheap to clone.
#[derive(Debug, Clone)]
pub struct HttpWebhookSender {
    client: reqwest::Client,
    settings: WebhookSenderSettings,
}

impl HttpWebhookSender {
    /// Builds the sender's pool (installing the ring crypto provider first).
    pub fn new(settings: WebhookSenderSettings) -> Result<Self, BuildError> {
        let client = guarded(settings.policy)
            .timeout(settings.timeout)
            .user_agent(concat!("voiceplane-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| BuildError::new(format!("cannot build the webhook client: {e}")))?;
        Ok(Self { client, settings })
    }

    /// The settings the sender was built with.
    pub fn settings(&self) -> WebhookSenderSettings {
        self.settings
    }

    /// The URL to post to, if it is one and, for an IP literal, the policy allows it.
    fn target(&self, url: &str) -> Result<Url, String> {
        let url = Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .ok_or("the endpoint's URL is not an absolute http:// or https:// URL")?;
        allowed_literal(self.settings.policy, &url)?;
        Ok(url)
    }

    async fn attempt(&self, url: Url, request: &DeliveryRequest) -> DeliveryOutcome {
        let sent = self
            .client
            .post(url)
            .header("webhook-id", &request.msg_id)
            .header("webhook-timestamp", request.timestamp.to_string())
            .header("webhook-signature", &request.signature)
            .header(CONTENT_TYPE, "application/json")
            .body(request.body.clone())
            .send()
            .await;
        let mut response = match sent {
            Ok(response) => response,
            Err(err) => return failed(None, self.transport(err)),
        };
        let status = response.status();
        let code = status.as_u16();
        // The status decides the outcome; a body that stops arriving only shortens the excerpt.
        let body = read_prefix(&mut response, MAX_RESPONSE_BYTES).await;
        let error = if status.is_success() {
            None
        } else if status.is_redirection() {
            Some(format!(
                "the endpoint redirected ({code}); redirects are not followed"
            ))
        } else {
            Some(format!("the endpoint answered {code}"))
        };
        DeliveryOutcome {
            status_code: Some(code),
            succeeded: error.is_none(),
            error,
            response_excerpt: excerpt(&body),
            duration: Duration::ZERO,
        }
    }

    /// The sentence for a request that got no response. The URL stays out of the log, since
    /// it may carry the receiver's own token.
    fn transport(&self, err: reqwest::Error) -> String {
        let sentence = if let Some(refused) = find::<PrivateAddress>(&err) {
            refused.to_string()
        } else if find::<Unresolved>(&err).is_some() {
            "the endpoint's host name could not be resolved".to_owned()
        } else if err.is_timeout() {
            format!(
                "the endpoint did not answer within {}",
                short(self.settings.timeout)
            )
        } else if err.is_connect() {
            "could not connect to the endpoint".to_owned()
        } else {
            "the request to the endpoint failed".to_owned()
        };
        tracing::warn!(error = %without_url(err), "webhook delivery failed: {sentence}");
        sentence
    }
}

#[async_trait]
impl WebhookSender for HttpWebhookSender {
    async fn deliver(&self, request: &DeliveryRequest) -> DeliveryOutcome {
        let started = Instant::now();
        let mut outcome = match self.target(&request.url) {
            Ok(url) => self.attempt(url, request).await,
            Err(sentence) => failed(None, sentence),
        };
        outcome.duration = started.elapsed();
        outcome
    }
}

fn failed(status_code: Option<u16>, error: String) -> DeliveryOutcome {
    DeliveryOutcome {
        status_code,
        succeeded: false,
        error: Some(error),
        response_excerpt: None,
        duration: Duration::ZERO,
    }
}

/// The first `limit` bytes of the body (fewer if it ends or fails first); the rest is never
/// read, so a receiver cannot make us download more.
async fn read_prefix(response: &mut reqwest::Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = limit - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() == limit {
            break;
        }
    }
    body
}

/// `10 s`, `300 ms`.
fn short(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// The first error of type `E` in `err`'s chain of causes.
fn find<E: std::error::Error + 'static>(err: &reqwest::Error) -> Option<&E> {
    let mut source = std::error::Error::source(err);
    while let Some(e) = source {
        if let Some(found) = e.downcast_ref::<E>() {
            return Some(found);
        }
        source = e.source();
    }
    None
}

/// A client builder for URLs chosen by API users: no redirects, no proxy (a proxy would
/// resolve names out of our sight), and unless `policy` allows private targets, a resolver
/// that refuses names of private addresses. IP literals never reach the resolver: check them
/// with [`allowed_literal`].
pub(crate) fn guarded(policy: TargetPolicy) -> reqwest::ClientBuilder {
    install_crypto_provider();
    let builder = reqwest::Client::builder()
        .redirect(redirect::Policy::none())
        .no_proxy();
    if policy.allow_private {
        builder
    } else {
        builder.dns_resolver(PublicOnly(policy))
    }
}

/// Refuses `url` when its host is an IP address `policy` does not allow.
pub(crate) fn allowed_literal(policy: TargetPolicy, url: &Url) -> Result<(), String> {
    let literal = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        _ => None,
    };
    match literal {
        Some(ip) => policy.check_addr(ip).map_err(|e| e.to_string()),
        None => Ok(()),
    }
}

/// Resolves names with the system resolver and refuses any answer holding an address the
/// policy does not allow: refusing only the bad addresses would still let a name that mixes
/// public and private answers probe the private ones.
struct PublicOnly(TargetPolicy);

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.0;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(Unresolved)?
                .collect();
            for addr in &addrs {
                policy.check_addr(addr.ip())?;
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The system resolver (`getaddrinfo`, on tokio's blocking threads), for the check of an
/// endpoint's URL when it is created or changed
/// ([`Service::with_resolver`](voiceplane_core::service::Service::with_resolver), which
/// bounds each lookup with its timeout).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait]
impl voiceplane_core::webhooks::Resolver for SystemResolver {
    async fn resolve(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        // `getaddrinfo` wants a port; what a name resolves to does not depend on it.
        Ok(tokio::net::lookup_host((host, 0))
            .await?
            .map(|addr| addr.ip())
            .collect())
    }
}

/// A name the system resolver could not resolve.
#[derive(Debug)]
struct Unresolved(std::io::Error);

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot resolve the host name: {}", self.0)
    }
}

impl std::error::Error for Unresolved {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_short() {
        assert_eq!(short(Duration::from_secs(10)), "10 s");
        assert_eq!(short(Duration::from_millis(300)), "300 ms");
        assert_eq!(short(Duration::from_millis(1500)), "1500 ms");
    }
}
