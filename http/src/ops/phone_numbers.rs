//! `/api/phone-numbers`: phone numbers and the agents that answer them, and connecting a
//! number at its provider to the provider webhooks this server answers.

use std::sync::Arc;

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{
    NewPhoneNumber, Outcome, PhoneNumber, PhoneNumberFilter, PhoneNumberUpdate,
};
use voiceplane_core::page::{Page, PageParams};
use voiceplane_core::runtime::MediaEndpoint;
use voiceplane_core::telephony::gateway::{NumberWebhooks, WebhookUrls};

use crate::api::Api;
use crate::endpoint::{Created, Cx, Data, Json, Query, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};
use crate::ops::telephony::{
    TELNYX_EVENTS_PATH, TWILIO_CALL_STATUS_PATH, TWILIO_STATUS_PATH, TWILIO_VOICE_PATH,
};

pub(crate) const AREA: Area = Area {
    tag: "phone-numbers",
    about: "Phone numbers and their agents.",
    operations: &[
        PHONE_NUMBER_CREATE,
        PHONE_NUMBER_LIST,
        PHONE_NUMBER_VIEW,
        PHONE_NUMBER_UPDATE,
        PHONE_NUMBER_DELETE,
        PHONE_NUMBER_CONNECT,
    ],
};

const PHONE_NUMBER_CREATE: Operation =
    Operation::post("/api/phone-numbers", handler!(phone_number_create))
        .errors(&[409])
        .doc(
            "Add a phone number",
            "Adds an E.164 phone number, optionally tied to an integration and assigned to an \
             agent. 409 when the organization already has it. Needs `phone_numbers:write` \
             (agent_manager or admin).",
        );

async fn phone_number_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewPhoneNumber>),
) -> Result<Created<PhoneNumber>, ApiError> {
    let number = cx.service().phone_number_create(&actor, input).await?;
    Ok(Created::member(&cx, number, |x| &x.phone_number_id))
}

const PHONE_NUMBER_LIST: Operation =
    Operation::get("/api/phone-numbers", handler!(phone_number_list)).doc(
        "List phone numbers",
        "Lists phone numbers, newest first; with `agent_id`, only the numbers assigned to that \
         agent (400 for a malformed id). Needs `phone_numbers:read` (every role).",
    );

async fn phone_number_list(
    cx: Cx,
    (): (),
    (actor, Query(filter), Query(params)): (Actor, Query<PhoneNumberFilter>, Query<PageParams>),
) -> Result<Page<PhoneNumber>, ApiError> {
    Ok(cx
        .service()
        .phone_number_list(&actor, &filter, &params)
        .await?)
}

const PHONE_NUMBER_VIEW: Operation = Operation::get(
    "/api/phone-numbers/{phone_number_id}",
    handler!(phone_number_view),
)
.tagged_view()
.doc(
    "Get a phone number",
    "One phone number. Needs `phone_numbers:read` (every role).",
);

async fn phone_number_view(
    cx: Cx,
    (phone_number_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<PhoneNumber>, ApiError> {
    Ok(Data(
        cx.service()
            .phone_number_view(&actor, &phone_number_id)
            .await?,
    ))
}

const PHONE_NUMBER_UPDATE: Operation = Operation::patch(
    "/api/phone-numbers/{phone_number_id}",
    handler!(phone_number_update),
)
.tagged_write()
.errors(&[409])
.doc(
    "Update a phone number",
    "Changes a number's agent, integration, provider or directions; `null` clears the \
     agent or the integration. Needs `phone_numbers:write` (agent_manager or admin).",
);

async fn phone_number_update(
    cx: Cx,
    (phone_number_id,): (String,),
    (actor, Json(input)): (Actor, Json<PhoneNumberUpdate>),
) -> Result<Data<PhoneNumber>, ApiError> {
    Ok(Data(
        cx.service()
            .phone_number_update(&actor, &phone_number_id, input)
            .await?,
    ))
}

const PHONE_NUMBER_DELETE: Operation = Operation::delete(
    "/api/phone-numbers/{phone_number_id}",
    handler!(phone_number_delete),
)
.conditional_write()
.doc(
    "Delete a phone number",
    "Deletes a phone number. Needs `phone_numbers:write` (agent_manager or admin).",
);

async fn phone_number_delete(
    cx: Cx,
    (phone_number_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<PhoneNumber>, ApiError> {
    Ok(cx
        .service()
        .phone_number_delete(&actor, &phone_number_id)
        .await?)
}

const PHONE_NUMBER_CONNECT: Operation = Operation::post(
    "/api/phone-numbers/{phone_number_id}/connect",
    handler!(phone_number_connect),
)
.errors(&[422, 502])
.doc(
    "Point the number at this server at its provider, so that its calls arrive here",
    "Finds the number on its integration's account (exactly that number: Twilio's search \
     matches loosely, Telnyx's by digits) and configures it there: Twilio's `VoiceUrl` and \
     `StatusCallback` become this server's `/telephony/twilio/{integration_id}/voice` and \
     `/status` under `public_url`; a Telnyx number joins the integration's `connection_id`, \
     whose Call Control application gets `/telephony/telnyx/{integration_id}/events` as its \
     event URL. Answers the number with `provider_number_id` and `connected_at` set; doing \
     it again does it again, harmlessly. 422 when the number has no integration, the Telnyx \
     integration has no `connection_id` or `public_key`, or the provider does not have the \
     number; 502 when the provider refuses or cannot be reached, and nothing is recorded. \
     Needs `phone_numbers:write` (agent_manager or admin).",
);

async fn phone_number_connect(
    cx: Cx,
    (phone_number_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<PhoneNumber>, ApiError> {
    Ok(Data(
        cx.service()
            .phone_number_connect(&actor, &phone_number_id)
            .await?,
    ))
}

struct ProviderWebhooks {
    public_url: String,
}

impl ProviderWebhooks {
    fn url(&self, template: &str, integration_id: &str) -> String {
        format!(
            "{}{}",
            self.public_url,
            template.replace("{integration_id}", integration_id)
        )
    }
}

impl WebhookUrls for ProviderWebhooks {
    fn number_webhooks(&self, integration_id: &str) -> NumberWebhooks {
        NumberWebhooks {
            twilio_voice_url: self.url(TWILIO_VOICE_PATH, integration_id),
            twilio_status_url: self.url(TWILIO_STATUS_PATH, integration_id),
            telnyx_events_url: self.url(TELNYX_EVENTS_PATH, integration_id),
        }
    }

    fn call_status_url(&self, integration_id: &str, call_sid: &str) -> String {
        self.url(TWILIO_CALL_STATUS_PATH, integration_id)
            .replace("{call_sid}", call_sid)
    }

    fn public_url_of(&self, path_and_query: &str) -> String {
        format!("{}{path_and_query}", self.public_url)
    }

    fn media_stream_url(&self, endpoint: MediaEndpoint, call_sid: &str) -> String {
        // The same host and path over WebSocket: `https` → `wss`, `http` → `ws`.
        let base = match self.public_url.split_once("://") {
            Some(("https", rest)) => format!("wss://{rest}"),
            Some((_, rest)) => format!("ws://{rest}"),
            None => self.public_url.clone(),
        };
        format!("{base}/runtime/{}/{call_sid}", endpoint.as_str())
    }
}

impl Api {
    /// Where the provider webhooks of this API are, for a server reached at `public_url`
    /// (its external base URL, e.g. `https://voice.example.com`): what
    /// [`Service::with_telephony_gateway`](voiceplane_core::Service::with_telephony_gateway)
    /// takes to connect numbers.
    pub fn telephony_webhooks(public_url: &str) -> Arc<dyn WebhookUrls> {
        Arc::new(ProviderWebhooks {
            public_url: public_url.trim_end_matches('/').to_owned(),
        })
    }
}
