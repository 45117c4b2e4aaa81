//! What voiceplane asks of a telephony provider beyond checking credentials, as a trait the
//! `clients` crate implements over HTTP (and the tests over a fake).

use async_trait::async_trait;

use super::TelephonyCredentials;

/// Where a connected number's calls and reports go: voiceplane's provider webhooks under its
/// `public_url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumberWebhooks {
    /// Twilio's `VoiceUrl`: `{public_url}/telephony/twilio/{integration_id}/voice`.
    pub twilio_voice_url: String,
    /// Twilio's `StatusCallback`: `{public_url}/telephony/twilio/{integration_id}/status`.
    pub twilio_status_url: String,
    /// The Call Control application's `webhook_event_url`:
    /// `{public_url}/telephony/telnyx/{integration_id}/events`.
    pub telnyx_events_url: String,
}

/// The addresses of voiceplane's provider webhooks, which the HTTP adapter serves and so
/// knows (`voiceplane_http::Api::telephony_webhooks`).
pub trait WebhookUrls: Send + Sync + 'static {
    /// Where the numbers of the integration `integration_id` send their calls and reports.
    fn number_webhooks(&self, integration_id: &str) -> NumberWebhooks;
}

/// Why a provider request did not do what was asked. The texts name the provider and what
/// happened, never a credential or the provider's body, and may be shown to the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GatewayError {
    /// The provider does not have the thing asked for (the number is not on the account).
    NotFound(String),
    /// The provider refused the request (a 4xx): its error code and message.
    Rejected {
        /// The provider's error code (`21211`, `10015`, …), or the HTTP status.
        code: String,
        /// The provider's message, shortened.
        message: String,
    },
    /// The provider could not be asked: unreachable, no answer in time, 429 or a 5xx.
    Unavailable(String),
}

/// A telephony provider's API, for the integrations' credentials.
#[async_trait]
pub trait TelephonyGateway: Send + Sync + 'static {
    /// The provider's id of the number `e164` (`+14155550123`) on the account: exactly that
    /// number, never a partial match.
    async fn find_number(
        &self,
        credentials: &TelephonyCredentials,
        e164: &str,
    ) -> Result<String, GatewayError>;

    /// Points the number `number_id` (as [`Self::find_number`] found it) at `webhooks`:
    /// Twilio's voice and status URLs; for Telnyx the number's `connection_id` and that Call
    /// Control application's event URL. Doing it twice does no harm.
    async fn connect_number(
        &self,
        credentials: &TelephonyCredentials,
        number_id: &str,
        webhooks: &NumberWebhooks,
    ) -> Result<(), GatewayError>;
}
