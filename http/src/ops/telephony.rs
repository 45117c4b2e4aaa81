//! `/telephony`: the webhooks Twilio and Telnyx call about the calls they carry for an
//! integration. No API key: the provider's signature over the request is the credential
//! ([`Auth::Provider`](crate::operation::Auth::Provider)), checked by the service with the
//! integration's secret; bodies are limited to 64 KiB.

use http::{HeaderValue, Response, StatusCode, header};
use serde_json::json;
use voiceplane_core::service::{TelnyxWebhook, TwilioWebhook};

use crate::body::{RequestBody, collect_limited};
use crate::credentials::Auth;
use crate::endpoint::{Cx, FromRequest, Reply, handler};
use crate::error::ApiError;
use crate::openapi::spec::{Input, OpSpec, Output, Schemas};
use crate::operation::{Area, Operation};
use crate::response::{self, ResponseBody};

pub(crate) const AREA: Area = Area {
    tag: "telephony",
    about: "The webhooks Twilio and Telnyx call about the calls they carry. Not for API \
            clients: a connected number's provider calls them, signed with the integration's \
            secret (see `POST /api/phone-numbers/{phone_number_id}/connect`).",
    operations: &[
        TWILIO_VOICE,
        TWILIO_STATUS,
        TWILIO_CALL_STATUS,
        TELNYX_EVENTS,
    ],
};

/// Largest webhook body read, in bytes.
const PROVIDER_BODY_LIMIT: usize = 64 * 1024;

/// The one value of header `name` as text.
fn header_text(cx: &Cx, name: &str) -> Option<String> {
    cx.parts
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// A form-encoded Twilio webhook with its signature.
pub(crate) struct TwilioForm(TwilioWebhook);

impl FromRequest for TwilioForm {
    async fn from_request(cx: &mut Cx, body: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        let body = body.take().unwrap_or_default();
        let bytes = collect_limited(&cx.parts.headers, body, PROVIDER_BODY_LIMIT).await?;
        Ok(Self(TwilioWebhook {
            path_and_query: cx
                .parts
                .uri
                .path_and_query()
                .map_or_else(|| cx.parts.uri.path().to_owned(), |p| p.as_str().to_owned()),
            signature: header_text(cx, "x-twilio-signature"),
            params: form_urlencoded::parse(&bytes).into_owned().collect(),
        }))
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.credentials = Some(Auth::Provider);
        spec.input = Input::Form;
    }
}

/// A Telnyx webhook: its raw body, and the headers that sign it.
pub(crate) struct TelnyxEvent(TelnyxWebhook);

impl FromRequest for TelnyxEvent {
    async fn from_request(cx: &mut Cx, body: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        let body = body.take().unwrap_or_default();
        let bytes = collect_limited(&cx.parts.headers, body, PROVIDER_BODY_LIMIT).await?;
        Ok(Self(TelnyxWebhook {
            signature: header_text(cx, "telnyx-signature-ed25519"),
            timestamp: header_text(cx, "telnyx-timestamp"),
            body: bytes.to_vec(),
        }))
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.credentials = Some(Auth::Provider);
        spec.input = Input::Json(json!({
            "type": "object",
            "description": "A Telnyx call event: `{data: {event_type, id, occurred_at, payload}}`.",
        }));
    }
}

/// `200` with a TwiML document.
pub(crate) struct Twiml(String);

impl Reply for Twiml {
    fn into_response(self) -> Response<ResponseBody> {
        let mut response = Response::new(response::full(self.0));
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/xml"));
        response
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.output = Output::Xml;
    }
}

/// `200 {"success": true}`: the report was taken (or ignored, for a call or event voiceplane
/// does not know).
pub(crate) struct Received;

impl Reply for Received {
    fn into_response(self) -> Response<ResponseBody> {
        response::json(StatusCode::OK, &json!({"success": true}))
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.output = Output::Json {
            status: StatusCode::OK,
            description: "Taken, or ignored when it is about a call or event voiceplane does \
                          not know.",
            schema: json!({
                "type": "object",
                "required": ["success"],
                "properties": {"success": {"type": "boolean", "const": true}},
            }),
        };
    }
}

pub(crate) const TWILIO_VOICE_PATH: &str = "/telephony/twilio/{integration_id}/voice";
pub(crate) const TWILIO_STATUS_PATH: &str = "/telephony/twilio/{integration_id}/status";
pub(crate) const TWILIO_CALL_STATUS_PATH: &str =
    "/telephony/twilio/{integration_id}/status/{call_sid}";
pub(crate) const TELNYX_EVENTS_PATH: &str = "/telephony/telnyx/{integration_id}/events";

const TWILIO_VOICE: Operation = Operation::post(TWILIO_VOICE_PATH, handler!(twilio_voice))
    .provider()
    .doc(
        "Twilio: answer a call to a connected number",
        "Twilio's voice request for an incoming call, signed with `X-Twilio-Signature` (HMAC-SHA1 \
         with the integration's auth token over this server's `public_url` and path followed by \
         the sorted form). Records the call (`inbound`, `ringing`, once per `CallSid`) and answers \
         TwiML that streams it to the agent's runtime: `<Connect><Stream \
         url=\"{runtime_stream_url}/{call_sid}\">` with `call_sid` and `agent_id` parameters. A \
         number with no agent, with `supports_inbound` false, or without a runtime URL is \
         answered `<Reject reason=\"rejected\"/>` and the call recorded `failed` (`rejected`); \
         a number voiceplane does not know is rejected and nothing is recorded. 403 for a \
         missing or wrong signature, without saying which part failed.",
    );

async fn twilio_voice(
    cx: Cx,
    (integration_id,): (String,),
    (TwilioForm(hook),): (TwilioForm,),
) -> Result<Twiml, ApiError> {
    Ok(Twiml(
        cx.service().twilio_voice(&integration_id, &hook).await?,
    ))
}

const TWILIO_STATUS: Operation = Operation::post(TWILIO_STATUS_PATH, handler!(twilio_status))
    .provider()
    .doc(
        "Twilio: report on a call to a connected number",
        "Twilio's status callback for calls of the integration's numbers, signed like the voice \
         request; the call is found by `CallSid`. Moves the call forward only (`CallStatus` \
         `initiated`→`queued`, `ringing`, `in-progress`→`in_progress`, then `completed`, \
         `busy`, `no-answer`→`no_answer`, `failed` or `canceled`, which is final), with its \
         start and end times, `CallDuration` and `AnsweredBy`; each change records \
         `call.updated`. Unknown calls are ignored.",
    );

async fn twilio_status(
    cx: Cx,
    (integration_id,): (String,),
    (TwilioForm(hook),): (TwilioForm,),
) -> Result<Received, ApiError> {
    cx.service()
        .twilio_status(&integration_id, None, &hook)
        .await?;
    Ok(Received)
}

const TWILIO_CALL_STATUS: Operation =
    Operation::post(TWILIO_CALL_STATUS_PATH, handler!(twilio_call_status))
        .provider()
        .doc(
            "Twilio: report on a call voiceplane placed",
            "The status callback of an outbound call placed by `POST /api/calls/dial`, which \
             names voiceplane's call in its path, so that reports arriving before the dial's \
             answer still apply. Otherwise as the integration's status callback.",
        );

async fn twilio_call_status(
    cx: Cx,
    (integration_id, call_sid): (String, String),
    (TwilioForm(hook),): (TwilioForm,),
) -> Result<Received, ApiError> {
    cx.service()
        .twilio_status(&integration_id, Some(&call_sid), &hook)
        .await?;
    Ok(Received)
}

const TELNYX_EVENTS: Operation = Operation::post(TELNYX_EVENTS_PATH, handler!(telnyx_events))
    .provider()
    .doc(
        "Telnyx: a call event of the integration's Call Control application",
        "Telnyx's webhook, verified with `telnyx-signature-ed25519` (Ed25519 over \
         `{telnyx-timestamp}|{body}`) against the integration's `public_key`; a timestamp more \
         than 300 s from now is refused. `call.initiated` of an incoming call records it and \
         answers it by a durable job (`actions/answer`, streaming to the runtime), or rejects \
         it as Twilio's voice request would; `call.answered`, `call.hangup` (by `hangup_cause`) \
         and `call.machine.detection.ended` move calls forward. Unknown events and calls are \
         ignored.",
    );

async fn telnyx_events(
    cx: Cx,
    (integration_id,): (String,),
    (TelnyxEvent(hook),): (TelnyxEvent,),
) -> Result<Received, ApiError> {
    cx.service().telnyx_event(&integration_id, &hook).await?;
    Ok(Received)
}
