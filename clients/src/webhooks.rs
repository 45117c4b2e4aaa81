//! [`HttpWebhookSender`], the HTTP [`WebhookSender`]: one Standard Webhooks `POST` per attempt,
//! with a total time limit, no redirects, at most [`MAX_RESPONSE_BYTES`] of the answer read,
//! and, unless private targets are allowed, a connection only to public addresses.
//!
//! Deliveries go to URLs chosen by API users, so the sender connects through the guarded
//! builder of [`crate::guarded`] (no redirects, no proxy, addresses checked after resolution).

use std::net::IpAddr;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use reqwest::Url;
use reqwest::header::CONTENT_TYPE;
use voiceplane_core::webhooks::{
    DELIVERY_TIMEOUT, DeliveryOutcome, DeliveryRequest, MAX_RESPONSE_BYTES, TargetPolicy,
    WebhookSender, excerpt,
};

use crate::BuildError;
use crate::guarded::{allowed_literal, guarded, read_prefix, transport_sentence};

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
        allowed_literal(self.settings.policy, &url).map_err(|e| e.to_string())?;
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
        let (body, _) = read_prefix(&mut response, MAX_RESPONSE_BYTES).await;
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

    /// The sentence for a request that got no response.
    fn transport(&self, err: reqwest::Error) -> String {
        transport_sentence(
            err,
            "the endpoint",
            self.settings.timeout,
            "webhook delivery",
        )
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
