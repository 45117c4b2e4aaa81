//! Calls that happen (DESIGN §18): the provider webhooks that bring calls in and report on
//! them (`inbound`, `status`), the dial that places them (`dial`), and what a caller or the
//! voice runtime does with a live call (`control`: hang up, read the session).
//!
//! A provider webhook carries no API key: the provider's signature over what it sent is the
//! credential, checked here with the integration's own secret (Twilio's auth token, Telnyx's
//! public key). Every refusal is the same 403 sentence, so that a caller learns nothing about
//! which part failed (the integration, its provider, or the signature).

use std::sync::Arc;
use std::time::Duration;

use super::{By, Service};
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{Agent, Call, EventType, Integration, PhoneNumber};
use crate::telephony::gateway::{TelephonyGateway, WebhookUrls};
use crate::telephony::{TelephonyCredentials, TelephonyProvider, signature};

mod compliance;
mod control;
mod dial;
mod inbound;
mod reconcile;
mod runtime;
mod status;

pub(in crate::service) use compliance::{Schedule, Window, callee_zones};
pub use control::CallSession;
pub use dial::CALL_DIAL;
pub(super) use dial::DialCall;
pub(in crate::service) use dial::{DialPlan, outbound_integration, variables};
pub(super) use inbound::TelnyxCommand;
pub use inbound::{TELNYX_ANSWER, TELNYX_REJECT};
pub use reconcile::CALLS_RECONCILE;
pub(super) use reconcile::ReconcileCalls;
pub use runtime::{RuntimeCall, RuntimeEnd};

/// How outbound calls are placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DialSettings {
    /// How long an outbound call may ring, in seconds (`telephony.ring_timeout_secs`).
    pub ring_timeout_secs: u32,
    /// How many times a dial is sent when the provider certainly created nothing (it could
    /// not be reached, or answered 429, or 503 and shows no call of the dial)
    /// (`telephony.dial_attempts`).
    pub attempts: u32,
    /// The pause before the second attempt; doubled before each further one.
    pub retry_delay: Duration,
    /// How long after a dial of unclear outcome was sent the provider is asked for the call it
    /// may have made (`telephony.reconcile_secs`).
    pub reconcile: Duration,
    /// How often the provider is asked meanwhile, and how often calls that outlived their
    /// reports are looked for.
    pub check_every: Duration,
    /// A dial not sent within this of its request is never sent (`dial_expired`)
    /// (`telephony.dial_deadline_secs`).
    pub dial_deadline: Duration,
    /// The longest a call runs (`runtime.max_call_secs`): one reported `in_progress` for a
    /// minute longer is asked about.
    pub max_call: Duration,
}

impl Default for DialSettings {
    fn default() -> Self {
        Self {
            ring_timeout_secs: 30,
            attempts: 3,
            retry_delay: Duration::from_millis(500),
            reconcile: Duration::from_secs(300),
            check_every: Duration::from_secs(15),
            dial_deadline: Duration::from_secs(60),
            max_call: Duration::from_secs(1800),
        }
    }
}

/// A form-encoded Twilio webhook as it arrived: what its signature covers.
#[derive(Debug, Clone, Default)]
pub struct TwilioWebhook {
    /// The path and query the request was made to, as this server received it.
    pub path_and_query: String,
    /// `X-Twilio-Signature`.
    pub signature: Option<String>,
    /// The form's fields, in order.
    pub params: Vec<(String, String)>,
}

impl TwilioWebhook {
    /// The first value of the form field `name`, when not empty.
    fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }
}

/// A Telnyx webhook as it arrived: its raw body and the headers that sign it.
#[derive(Debug, Clone, Default)]
pub struct TelnyxWebhook {
    /// `telnyx-signature-ed25519`.
    pub signature: Option<String>,
    /// `telnyx-timestamp`.
    pub timestamp: Option<String>,
    /// The body, exactly as sent.
    pub body: Vec<u8>,
}

/// What routes a provider's webhook: the integration it names, with its sealed credentials,
/// and its organization's runtime URL (for agents without their own).
#[derive(Debug)]
pub(super) struct Route {
    pub(super) integration: Integration,
    sealed: String,
    pub(super) runtime_stream_url: Option<String>,
}

/// A provider's webhook, authenticated: the route of the integration it reached, and the
/// agents' change version the route was trusted at, which the request's other cached reads
/// (number, agent) use rather than reading it again.
pub(super) struct Verified {
    pub(super) route: Arc<Route>,
    pub(super) version: i64,
}

/// The one answer to a webhook that fails authentication.
fn refused() -> Error {
    Error::Forbidden("the request is not signed by this integration's provider".to_owned())
}

/// A Telnyx integration can place and receive calls only with its `connection_id` and
/// `public_key`: 422 naming the first one missing.
pub(super) fn ready_for_calls(
    integration_id: &str,
    credentials: &TelephonyCredentials,
) -> Result<()> {
    if let TelephonyCredentials::Telnyx {
        public_key,
        connection_id,
        ..
    } = credentials
    {
        for (field, value, why) in [
            (
                "connection_id",
                connection_id,
                "the Call Control application its calls go through",
            ),
            ("public_key", public_key, "the key that signs its webhooks"),
        ] {
            if value.is_none() {
                return Err(Error::unprocessable(format!(
                    "integration {integration_id} has no credentials.{field} ({why}); add it \
                     with PATCH /api/integrations/{integration_id}"
                )));
            }
        }
    }
    Ok(())
}

impl Service {
    /// The providers' API and this server's webhook addresses; 503 without them.
    pub(super) fn telephony_gateway(&self) -> Result<(&dyn TelephonyGateway, &dyn WebhookUrls)> {
        self.gateway
            .as_ref()
            .map(|(gateway, urls)| (gateway.as_ref(), urls.as_ref()))
            .ok_or_else(|| {
                Error::Unavailable("telephony is not configured on this server".to_owned())
            })
    }

    /// Places and changes calls only with these settings.
    pub fn with_dial_settings(mut self, settings: DialSettings) -> Self {
        self.dialing = settings;
        self
    }

    /// The route of the integration a webhook names, with its credentials, when it is one of
    /// `provider`; otherwise the 403 of every refusal. From this instance's cache while no
    /// agent, number, integration or organization runtime URL has changed anywhere since it
    /// was read (migration m0025).
    async fn webhook_integration(
        &self,
        integration_id: &str,
        provider: TelephonyProvider,
    ) -> Result<(Verified, TelephonyCredentials)> {
        if !IdKind::Integration.matches(integration_id) {
            return Err(refused());
        }
        let version = self.repo.change_versions().await?.agents;
        let route = self
            .routes
            .get_or_read(integration_id, version, || self.read_route(integration_id))
            .await?
            .ok_or_else(refused)?;
        if route.integration.provider != provider.as_str() {
            return Err(refused());
        }
        let credentials = self.open_credentials(integration_id, &route.sealed)?;
        Ok((Verified { route, version }, credentials))
    }

    async fn read_route(&self, integration_id: &str) -> Result<Option<Route>> {
        let Some((integration, sealed)) = self.repo.integration_route(integration_id).await? else {
            return Ok(None);
        };
        let runtime_stream_url = self
            .repo
            .organization_settings(&integration.organization_id)
            .await?
            .and_then(|s| s.runtime_stream_url);
        Ok(Some(Route {
            integration,
            sealed,
            runtime_stream_url,
        }))
    }

    /// The Twilio integration `integration_id`, when `hook` carries its signature over this
    /// server's public URL of the request and the form.
    async fn verified_twilio(
        &self,
        integration_id: &str,
        hook: &TwilioWebhook,
    ) -> Result<Verified> {
        let (_, urls) = self.telephony_gateway()?;
        let (verified, credentials) = self
            .webhook_integration(integration_id, TelephonyProvider::Twilio)
            .await?;
        let (Some(token), Some(sig)) = (credentials.webhook_key(), hook.signature.as_deref())
        else {
            return Err(refused());
        };
        let url = urls.public_url_of(&hook.path_and_query);
        if !signature::twilio_valid(token, &url, &hook.params, sig) {
            return Err(refused());
        }
        Ok(verified)
    }

    /// The Telnyx integration `integration_id`, when `hook` carries its public key's
    /// signature over the timestamp and body, sent within the last five minutes.
    async fn verified_telnyx(
        &self,
        integration_id: &str,
        hook: &TelnyxWebhook,
    ) -> Result<Verified> {
        let (verified, credentials) = self
            .webhook_integration(integration_id, TelephonyProvider::Telnyx)
            .await?;
        let (Some(key), Some(sig), Some(at)) = (
            credentials.webhook_key(),
            hook.signature.as_deref(),
            hook.timestamp.as_deref(),
        ) else {
            return Err(refused());
        };
        let now = self.now().as_micros() / 1_000_000;
        if !signature::telnyx_valid(key, at, &hook.body, sig, now) {
            return Err(refused());
        }
        Ok(verified)
    }

    /// The organization's number `e164`, from this instance's cache while no number or agent
    /// has changed anywhere since the agents' change `version` (read earlier in the request).
    async fn number_cached(
        &self,
        org: &str,
        e164: &str,
        version: i64,
    ) -> Result<Option<Arc<PhoneNumber>>> {
        self.numbers
            .get_or_read(&format!("{org} {e164}"), version, || {
                self.repo.phone_number_find(org, e164)
            })
            .await
    }

    /// Where `agent`'s calls stream their media: its own runtime URL, else the
    /// organization's; `None` when neither is set.
    async fn runtime_url(&self, agent: &Agent) -> Result<Option<String>> {
        if let Some(url) = &agent.runtime_stream_url {
            return Ok(Some(url.clone()));
        }
        Ok(self
            .repo
            .organization_settings(&agent.organization_id)
            .await?
            .and_then(|s| s.runtime_stream_url))
    }

    /// Applies `change` to `call` as the system (a provider's report, the dial job): the
    /// call's row locked, `call.updated` recorded when what the API shows changed, and the job
    /// runners woken for its deliveries. `None` when the call is gone.
    async fn change_call(
        &self,
        call: &Call,
        change: impl FnOnce(&mut Call) -> Result<()> + Send + 'static,
    ) -> Result<Option<Call>> {
        let stamp = self.event_stamp(EventType::CallUpdated, By::System);
        self.after_write(
            self.repo
                .call_update(
                    &call.organization_id,
                    &call.call_sid,
                    Box::new(change),
                    &stamp,
                )
                .await,
        )
    }

    /// The integration behind the number `call` went through, and its credentials.
    async fn call_credentials(&self, call: &Call) -> Result<(String, TelephonyCredentials)> {
        let gone = || {
            Error::Conflict(format!(
                "call {} can no longer be reached: its phone number or integration was removed",
                call.call_sid
            ))
        };
        let number_id = call.phone_number_id.as_deref().ok_or_else(gone)?;
        let number = self
            .repo
            .phone_number_get(&call.organization_id, number_id)
            .await?
            .ok_or_else(gone)?;
        let integration_id = number.integration_id.ok_or_else(gone)?;
        let (_, sealed) = self
            .repo
            .integration_get_sealed(&call.organization_id, &integration_id)
            .await?
            .ok_or_else(gone)?;
        let credentials = self.open_credentials(&integration_id, &sealed)?;
        Ok((integration_id, credentials))
    }
}

/// `{runtime_stream_url}/{call_sid}`.
fn stream_url(runtime: &str, call_sid: &str) -> String {
    format!("{}/{call_sid}", runtime.trim_end_matches('/'))
}

/// Where a call's media goes, and the token the stream presents there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MediaTarget {
    pub(super) url: String,
    /// The built-in runtime's token for the call; `None` for an external runtime.
    pub(super) token: Option<String>,
}

impl Service {
    /// Where the call `call_sid` of `provider` streams its media: the external runtime
    /// `external` names (the agent's URL, else the organization's), else the built-in
    /// runtime's endpoint with the call's token when this server runs one; `None` when
    /// neither (the call is refused).
    pub(super) fn media_target(
        &self,
        external: Option<&str>,
        provider: TelephonyProvider,
        call_sid: &str,
    ) -> Option<MediaTarget> {
        if let Some(runtime) = external {
            return Some(MediaTarget {
                url: stream_url(runtime, call_sid),
                token: None,
            });
        }
        let settings = self.runtime.as_ref().filter(|r| r.enabled)?;
        let (_, urls) = self.gateway.as_ref()?;
        let endpoint = match provider {
            TelephonyProvider::Twilio => crate::runtime::MediaEndpoint::Twilio,
            TelephonyProvider::Telnyx => crate::runtime::MediaEndpoint::Telnyx,
        };
        Some(MediaTarget {
            url: urls.media_stream_url(endpoint, call_sid),
            token: Some(settings.token(call_sid)),
        })
    }
}
