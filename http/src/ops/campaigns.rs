//! `/api/campaigns`: outbound calls paced through a list of recipients.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{
    Campaign, CampaignFilter, CampaignUpdate, NewCampaign, NewRecipients, Outcome, Recipient,
    RecipientFilter, RecipientsAdded,
};
use voiceplane_core::page::{Page, PageParams};
use voiceplane_core::service::{MAX_CSV_BYTES, RecipientsBody};

use crate::body::{RequestBody, check_declared_length, media_type, read_json};
use crate::endpoint::{Created, Cx, Data, FromRequest, Json, Query, handler};
use crate::error::ApiError;
use crate::openapi::spec::{Input, OpSpec, Schemas};
use crate::operation::{Area, Operation};
use crate::stream::byte_stream_within;

pub(crate) const AREA: Area = Area {
    tag: "campaigns",
    about: "Outbound campaigns: recipients called through the dial's checks, paced within a \
            concurrency, weekly windows in each recipient's time zone and the organization's \
            calling hours, retried on the outcomes a campaign names.",
    operations: &[
        CAMPAIGN_CREATE,
        CAMPAIGN_LIST,
        CAMPAIGN_VIEW,
        CAMPAIGN_UPDATE,
        CAMPAIGN_DELETE,
        RECIPIENTS_ADD,
        RECIPIENT_LIST,
        CAMPAIGN_START,
        CAMPAIGN_PAUSE,
        CAMPAIGN_CANCEL,
    ],
};

const CAMPAIGN_CREATE: Operation = Operation::post("/api/campaigns", handler!(campaign_create))
    .errors(&[422])
    .doc(
        "Create a campaign",
        "Creates a `draft` campaign: its agent, the numbers it calls from in turn (1–20, each \
         placing calls through an integration), `max_concurrency` (1–100), `timezone`, weekly \
         `windows`, a `retry` policy, `starts_at`/`ends_at` and `dynamic_variables` for every \
         call. 422 when the agent or a number does not exist or cannot place calls. Needs \
         `campaigns:write` (agent_manager or admin).",
    );

async fn campaign_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewCampaign>),
) -> Result<Created<Campaign>, ApiError> {
    let campaign = cx.service().campaign_create(&actor, input).await?;
    Ok(Created::member(&cx, campaign, |x| &x.campaign_id))
}

const CAMPAIGN_LIST: Operation = Operation::get("/api/campaigns", handler!(campaign_list)).doc(
    "List campaigns",
    "Lists campaigns, newest first, with their counts; `status` keeps one status. Needs \
     `campaigns:read` (every role).",
);

async fn campaign_list(
    cx: Cx,
    (): (),
    (actor, Query(filter), Query(params)): (Actor, Query<CampaignFilter>, Query<PageParams>),
) -> Result<Page<Campaign>, ApiError> {
    Ok(cx.service().campaign_list(&actor, &filter, &params).await?)
}

const CAMPAIGN_VIEW: Operation =
    Operation::get("/api/campaigns/{campaign_id}", handler!(campaign_view)).doc(
        "Get a campaign",
        "One campaign with its counts of recipients by status (counted as it is read). Needs \
         `campaigns:read` (every role).",
    );

async fn campaign_view(
    cx: Cx,
    (campaign_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Campaign>, ApiError> {
    Ok(Data(cx.service().campaign_get(&actor, &campaign_id).await?))
}

const CAMPAIGN_UPDATE: Operation =
    Operation::patch("/api/campaigns/{campaign_id}", handler!(campaign_update))
        .errors(&[409, 422])
        .doc(
            "Update a campaign",
            "Changes the fields named (`null` clears `windows`, `starts_at` and `ends_at`); \
             409 unless the campaign is `draft` or `paused`. Needs `campaigns:write` \
             (agent_manager or admin).",
        );

async fn campaign_update(
    cx: Cx,
    (campaign_id,): (String,),
    (actor, Json(input)): (Actor, Json<CampaignUpdate>),
) -> Result<Data<Campaign>, ApiError> {
    Ok(Data(
        cx.service()
            .campaign_update(&actor, &campaign_id, input)
            .await?,
    ))
}

const CAMPAIGN_DELETE: Operation =
    Operation::delete("/api/campaigns/{campaign_id}", handler!(campaign_delete))
        .errors(&[409])
        .doc(
            "Delete a campaign",
            "Deletes a campaign and its recipients (their calls stay); 409 while it is \
             running. Needs `campaigns:write` (agent_manager or admin).",
        );

async fn campaign_delete(
    cx: Cx,
    (campaign_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Campaign>, ApiError> {
    Ok(cx.service().campaign_delete(&actor, &campaign_id).await?)
}

/// The body of an upload of recipients: JSON, or a CSV streamed to the service within the read
/// deadline (`HttpConfig::csv_read_timeout`), which reads it whole before it writes.
struct RecipientsUpload(RecipientsBody);

impl FromRequest for RecipientsUpload {
    async fn from_request(cx: &mut Cx, body: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        let headers = &cx.parts.headers;
        let body = body.take().unwrap_or_default();
        let media = media_type(headers);
        if media.as_ref().is_some_and(|m| m.essence == "text/csv") {
            check_declared_length(headers, MAX_CSV_BYTES)?;
            return Ok(Self(RecipientsBody::Csv(byte_stream_within(
                body,
                MAX_CSV_BYTES,
                cx.api.config.csv_read_timeout,
                "the CSV did not arrive in time; send it faster, or split it into several \
                 uploads",
            ))));
        }
        let limit = cx.api.config.max_body_bytes;
        let json: NewRecipients = read_json(
            headers,
            body,
            limit,
            "Content-Type must be application/json with {\"recipients\": [...]}, or text/csv",
        )
        .await?;
        Ok(Self(RecipientsBody::Json(json)))
    }

    fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
        spec.input = Input::JsonOrCsv(schemas.input::<NewRecipients>());
    }
}

const RECIPIENTS_ADD: Operation = Operation::post(
    "/api/campaigns/{campaign_id}/recipients",
    handler!(recipients_add),
)
.errors(&[409])
.doc(
    "Add recipients to a campaign",
    "Adds recipients, all or nothing: JSON `{recipients: [{to_number, timezone?, \
     dynamic_variables?}]}` (1–1000), or a `text/csv` body (at most 100,000 rows and 10 MiB) \
     whose header row names the columns: `to_number` (required), `timezone` (optional), every \
     other column a dynamic variable. Any bad row refuses the whole upload with a 400 naming \
     up to 20 bad rows by line. The whole body is read and checked before anything is \
     written; a CSV that takes longer than the server's read deadline (`http.csv_read_timeout_secs`, \
     60 s by default) to arrive gets 408. A number the campaign has is not added twice. \
     Answers `{added, duplicates}`; 409 once the campaign is completed or canceled. Needs \
     `campaigns:write` (agent_manager or admin).",
);

async fn recipients_add(
    cx: Cx,
    (campaign_id,): (String,),
    (actor, RecipientsUpload(body)): (Actor, RecipientsUpload),
) -> Result<Data<RecipientsAdded>, ApiError> {
    Ok(Data(
        cx.service()
            .recipients_add(&actor, &campaign_id, body)
            .await?,
    ))
}

const RECIPIENT_LIST: Operation = Operation::get(
    "/api/campaigns/{campaign_id}/recipients",
    handler!(recipient_list),
)
.doc(
    "List a campaign's recipients",
    "Lists recipients, newest first, with their status, attempts, latest call and when they \
     are due next; `status` keeps one status. Needs `campaigns:read` (every role).",
);

async fn recipient_list(
    cx: Cx,
    (campaign_id,): (String,),
    (actor, Query(filter), Query(params)): (Actor, Query<RecipientFilter>, Query<PageParams>),
) -> Result<Page<Recipient>, ApiError> {
    Ok(cx
        .service()
        .recipient_list(&actor, &campaign_id, &filter, &params)
        .await?)
}

const CAMPAIGN_START: Operation = Operation::post(
    "/api/campaigns/{campaign_id}/start",
    handler!(campaign_start),
)
.errors(&[409])
.doc(
    "Start a campaign",
    "Starts a `draft` campaign, or resumes a `paused` one: it dials its due recipients from \
     now on (from `starts_at` when that is later). 409 when it has no recipients, runs \
     already or has finished. Records `campaign.started`. Needs `campaigns:write` \
     (agent_manager or admin).",
);

async fn campaign_start(
    cx: Cx,
    (campaign_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Campaign>, ApiError> {
    Ok(Data(
        cx.service().campaign_start(&actor, &campaign_id).await?,
    ))
}

const CAMPAIGN_PAUSE: Operation = Operation::post(
    "/api/campaigns/{campaign_id}/pause",
    handler!(campaign_pause),
)
.errors(&[409])
.doc(
    "Pause a campaign",
    "Stops a running campaign from dialing; calls under way go on. 409 unless it is \
     running. Records `campaign.paused`. Needs `campaigns:write` (agent_manager or admin).",
);

async fn campaign_pause(
    cx: Cx,
    (campaign_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Campaign>, ApiError> {
    Ok(Data(
        cx.service().campaign_pause(&actor, &campaign_id).await?,
    ))
}

const CAMPAIGN_CANCEL: Operation = Operation::post(
    "/api/campaigns/{campaign_id}/cancel",
    handler!(campaign_cancel),
)
.errors(&[409])
.doc(
    "Cancel a campaign",
    "Stops a campaign for good: its pending recipients become `canceled`; calls under way \
     finish. 409 when it has finished already. Records `campaign.canceled`. Needs \
     `campaigns:write` (agent_manager or admin).",
);

async fn campaign_cancel(
    cx: Cx,
    (campaign_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Campaign>, ApiError> {
    Ok(Data(
        cx.service().campaign_cancel(&actor, &campaign_id).await?,
    ))
}
