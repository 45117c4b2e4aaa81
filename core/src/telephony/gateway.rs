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

    /// Where Twilio reports on the outbound call `call_sid` it places for the integration
    /// `integration_id`: `{public_url}/telephony/twilio/{integration_id}/status/{call_sid}`.
    fn call_status_url(&self, integration_id: &str, call_sid: &str) -> String;

    /// The URL a provider called, as it signed it: `public_url` followed by the path (and
    /// query) of the request as this server received it.
    fn public_url_of(&self, path_and_query: &str) -> String;

    /// Where the built-in runtime takes the media stream of the call `call_sid`:
    /// `{public_url as ws(s)}/runtime/{provider}/{call_sid}`.
    fn media_stream_url(&self, endpoint: crate::runtime::MediaEndpoint, call_sid: &str) -> String;
}

/// An outbound call to place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DialRequest {
    /// voiceplane's id of the call: Twilio's stream parameter, Telnyx's `client_state` and
    /// `command_id` (which makes Telnyx deduplicate a repeated request).
    pub call_sid: String,
    /// The agent, a stream parameter.
    pub agent_id: String,
    /// Whom to call, E.164.
    pub to: String,
    /// The number to call from, E.164.
    pub from: String,
    /// Where the call's media goes: `{runtime_stream_url}/{call_sid}`, or the built-in
    /// runtime's endpoint.
    pub stream_url: String,
    /// The token the stream presents to the built-in runtime (Twilio's `token` stream
    /// parameter, in Telnyx's `client_state`); `None` for an external runtime.
    pub stream_token: Option<String>,
    /// Twilio's `StatusCallback` for this call.
    pub status_url: String,
    /// Telnyx's `webhook_url`: the integration's events URL.
    pub events_url: String,
    /// How long it may ring, in seconds.
    pub ring_timeout_secs: u32,
    /// Whether the provider should tell a person from a machine.
    pub machine_detection: bool,
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
    /// The provider certainly did nothing: it could not be reached (a refused connection, a
    /// name that did not resolve) or it answered 429.
    Unavailable(String),
    /// The provider answered 503. Its edge may still have passed the request on, so what it
    /// did is asked ([`TelephonyGateway::find_dialed`]) before anything is sent again.
    Overloaded(String),
    /// The request may or may not have done what it asked: any other 5xx (an edge can fail
    /// or time out while the origin creates the call), no answer in time, or a connection
    /// that broke after the request was sent. Sending it again might do it twice.
    Unknown(String),
}

impl GatewayError {
    /// The sentence, whatever the kind.
    pub fn sentence(&self) -> &str {
        match self {
            Self::NotFound(why)
            | Self::Unavailable(why)
            | Self::Overloaded(why)
            | Self::Unknown(why) => why,
            Self::Rejected { message, .. } => message,
        }
    }

    /// Whether the provider says the call it was asked about no longer exists (Twilio 20404,
    /// Telnyx 90018): it has ended.
    pub fn call_is_gone(&self) -> bool {
        matches!(self, Self::Rejected { code, .. } if code == "20404" || code == "90018")
    }
}

/// A failed request to the provider as a caller sees it: 502 with the provider's sentence
/// (and its code, when it refused).
impl From<GatewayError> for crate::error::Error {
    fn from(e: GatewayError) -> Self {
        match e {
            GatewayError::Rejected { code, message } => {
                Self::Upstream(format!("{message} (code {code})"))
            }
            GatewayError::Unavailable(why)
            | GatewayError::Overloaded(why)
            | GatewayError::Unknown(why)
            | GatewayError::NotFound(why) => Self::Upstream(why),
        }
    }
}

/// What identifies a call a dial may have created, for asking the provider after an answer
/// that left it unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DialLookup {
    /// voiceplane's id of the call (Telnyx's `client_state`).
    pub call_sid: String,
    /// Whom the dial called, E.164.
    pub to: String,
    /// The number it called from, E.164.
    pub from: String,
    /// The earliest moment a call of this dial can have been created at the provider: the
    /// dial's mark minus a minute for the clocks' difference.
    pub since: crate::time::Timestamp,
}

/// A call the provider has, as a lookup found it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderCall {
    /// The provider's id (Twilio's `CallSid`, Telnyx's `call_control_id`).
    pub provider_call_id: String,
    /// Its status in voiceplane's terms, when the provider says (Telnyx's active calls say
    /// only that they are alive).
    pub status: Option<crate::model::CallStatus>,
    /// How long it lasted, in seconds, once it has ended.
    pub duration_seconds: Option<f64>,
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

    /// Places `dial` and answers the provider's id of the new call. Never retried by the
    /// gateway: the caller decides, from the error, whether sending again is safe.
    async fn dial(
        &self,
        credentials: &TelephonyCredentials,
        dial: &DialRequest,
    ) -> Result<String, GatewayError>;

    /// The calls the provider created that `lookup` may have made, oldest first: Twilio's
    /// calls from `from` to `to` created since `lookup.since`; Telnyx's active calls of the
    /// connection whose `client_state` is the call's. Which of them is the dial's is the
    /// caller's to decide (a Twilio call another of its calls holds is not).
    async fn find_dialed(
        &self,
        credentials: &TelephonyCredentials,
        lookup: &DialLookup,
    ) -> Result<Vec<ProviderCall>, GatewayError>;

    /// Where the provider's call `provider_call_id` stands. A call the provider no longer
    /// knows, or has ended without saying how (Telnyx), is [`GatewayError::call_is_gone`].
    async fn call_state(
        &self,
        credentials: &TelephonyCredentials,
        provider_call_id: &str,
    ) -> Result<ProviderCall, GatewayError>;

    /// Telnyx: answers the incoming call `call_control_id`, streaming its media to
    /// `stream_url`; `call_sid` (with the built-in runtime's `stream_token`) is the
    /// `client_state`, and `call_sid` the `command_id`.
    async fn answer(
        &self,
        credentials: &TelephonyCredentials,
        call_control_id: &str,
        stream_url: &str,
        call_sid: &str,
        stream_token: Option<&str>,
    ) -> Result<(), GatewayError>;

    /// Telnyx: rejects the incoming call `call_control_id` (`CALL_REJECTED`).
    async fn reject(
        &self,
        credentials: &TelephonyCredentials,
        call_control_id: &str,
        call_sid: &str,
    ) -> Result<(), GatewayError>;

    /// Ends the call `provider_call_id`: Twilio `canceled` before it is `answered`, `completed`
    /// after; Telnyx `actions/hangup`.
    async fn hangup(
        &self,
        credentials: &TelephonyCredentials,
        provider_call_id: &str,
        answered: bool,
    ) -> Result<(), GatewayError>;
}
