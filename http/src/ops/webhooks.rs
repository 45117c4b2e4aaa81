//! `/api/webhooks`: endpoints that receive the organization's events, and their deliveries.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{
    CreatedWebhook, Delivery, NewWebhook, Outcome, Webhook, WebhookUpdate,
};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Accepted, Created, Cx, Data, Json, Query, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "webhooks",
    about: "Endpoints that events are delivered to, and (in `webhooks`) what they receive.",
    operations: &[
        WEBHOOK_CREATE,
        WEBHOOK_LIST,
        WEBHOOK_VIEW,
        WEBHOOK_UPDATE,
        WEBHOOK_DELETE,
        WEBHOOK_ROTATE_SECRET,
        WEBHOOK_TEST,
        DELIVERY_LIST,
        DELIVERY_RETRY,
    ],
};

const WEBHOOK_CREATE: Operation = Operation::post("/api/webhooks", handler!(webhook_create)).doc(
    "Create a webhook endpoint; the answer holds its signing secret, shown only here",
    "Creates an endpoint that receives the listed event types (or `[\"*\"]`, all) as signed \
     POSTs. The answer holds its signing secret (`whsec_…`), shown only here and on \
     rotation; 503 when `secrets.master_key` is not set. Needs `webhooks:write` \
     (agent_manager or admin).",
);

async fn webhook_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewWebhook>),
) -> Result<Created<CreatedWebhook>, ApiError> {
    let created = cx.service().webhook_create(&actor, input).await?;
    Ok(Created::member(&cx, created, |x| &x.webhook.webhook_id))
}

const WEBHOOK_LIST: Operation = Operation::get("/api/webhooks", handler!(webhook_list)).doc(
    "List webhook endpoints",
    "Lists webhook endpoints, newest first, without secrets. Needs `webhooks:read` \
     (agent_manager or admin).",
);

async fn webhook_list(
    cx: Cx,
    (): (),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Page<Webhook>, ApiError> {
    Ok(cx.service().webhook_list(&actor, &params).await?)
}

const WEBHOOK_VIEW: Operation =
    Operation::get("/api/webhooks/{webhook_id}", handler!(webhook_view))
        .tagged_view()
        .doc(
            "Get a webhook endpoint",
            "One webhook endpoint, without its secret. Needs `webhooks:read` (agent_manager or \
             admin).",
        );

async fn webhook_view(
    cx: Cx,
    (webhook_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Webhook>, ApiError> {
    Ok(Data(cx.service().webhook_view(&actor, &webhook_id).await?))
}

const WEBHOOK_UPDATE: Operation =
    Operation::patch("/api/webhooks/{webhook_id}", handler!(webhook_update))
        .tagged_write()
        .doc(
            "Update a webhook endpoint",
            "Changes an endpoint's URL, event types, description or status; a `disabled` endpoint \
             is sent nothing. Needs `webhooks:write` (agent_manager or admin).",
        );

async fn webhook_update(
    cx: Cx,
    (webhook_id,): (String,),
    (actor, Json(input)): (Actor, Json<WebhookUpdate>),
) -> Result<Data<Webhook>, ApiError> {
    Ok(Data(
        cx.service()
            .webhook_update(&actor, &webhook_id, input)
            .await?,
    ))
}

const WEBHOOK_DELETE: Operation =
    Operation::delete("/api/webhooks/{webhook_id}", handler!(webhook_delete))
        .conditional_write()
        .doc(
            "Delete a webhook endpoint and its deliveries",
            "Deletes an endpoint and its deliveries. Needs `webhooks:write` (agent_manager or \
             admin).",
        );

async fn webhook_delete(
    cx: Cx,
    (webhook_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Webhook>, ApiError> {
    Ok(cx.service().webhook_delete(&actor, &webhook_id).await?)
}

const WEBHOOK_ROTATE_SECRET: Operation = Operation::post(
    "/api/webhooks/{webhook_id}/rotate-secret",
    handler!(webhook_rotate_secret),
)
.doc(
    "Replace the signing secret; the previous one keeps signing for 24 hours",
    "Replaces the signing secret and answers the new one; deliveries are signed with both \
     for 24 hours, so receivers can switch without losing any. Needs `webhooks:write` \
     (agent_manager or admin).",
);

async fn webhook_rotate_secret(
    cx: Cx,
    (webhook_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<CreatedWebhook>, ApiError> {
    Ok(Data(
        cx.service()
            .webhook_rotate_secret(&actor, &webhook_id)
            .await?,
    ))
}

const WEBHOOK_TEST: Operation =
    Operation::post("/api/webhooks/{webhook_id}/test", handler!(webhook_test)).doc(
        "Send a webhook.test event to this endpoint",
        "Queues a `webhook.test` event for this endpoint only and answers its pending \
         delivery (202). Needs `webhooks:write` (agent_manager or admin).",
    );

async fn webhook_test(
    cx: Cx,
    (webhook_id,): (String,),
    (actor,): (Actor,),
) -> Result<Accepted<Delivery>, ApiError> {
    Ok(Accepted(
        cx.service().webhook_test(&actor, &webhook_id).await?,
    ))
}

const DELIVERY_LIST: Operation = Operation::get(
    "/api/webhooks/{webhook_id}/deliveries",
    handler!(delivery_list),
)
.doc(
    "List the deliveries to an endpoint, newest first",
    "The deliveries to an endpoint, newest first: status, attempts, last answer and next \
     attempt. Needs `webhooks:read` (agent_manager or admin).",
);

async fn delivery_list(
    cx: Cx,
    (webhook_id,): (String,),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Page<Delivery>, ApiError> {
    Ok(cx
        .service()
        .delivery_list(&actor, &webhook_id, &params)
        .await?)
}

const DELIVERY_RETRY: Operation = Operation::post(
    "/api/webhooks/{webhook_id}/deliveries/{delivery_id}/retry",
    handler!(delivery_retry),
)
.doc(
    "Attempt a delivery again at once",
    "Makes a delivery pending again and attempts it at once (202). Needs \
     `webhooks:write` (agent_manager or admin).",
);

async fn delivery_retry(
    cx: Cx,
    (webhook_id, delivery_id): (String, String),
    (actor,): (Actor,),
) -> Result<Accepted<Delivery>, ApiError> {
    Ok(Accepted(
        cx.service()
            .delivery_retry(&actor, &webhook_id, &delivery_id)
            .await?,
    ))
}
