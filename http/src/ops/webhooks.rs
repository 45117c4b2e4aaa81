//! `/api/webhooks`: endpoints that receive the organization's events, and their deliveries.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{
    CreatedWebhook, Delivery, NewWebhook, Outcome, Webhook, WebhookUpdate,
};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Accepted, Created, Cx, Data, Json, Query};
use crate::error::ApiError;

pub(crate) async fn webhook_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewWebhook>),
) -> Result<Created<CreatedWebhook>, ApiError> {
    let created = cx.service().webhook_create(&actor, input).await?;
    Ok(Created::member(&cx, created, |x| &x.webhook.webhook_id))
}

pub(crate) async fn webhook_list(
    cx: Cx,
    (): (),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Page<Webhook>, ApiError> {
    Ok(cx.service().webhook_list(&actor, &params).await?)
}

pub(crate) async fn webhook_view(
    cx: Cx,
    (webhook_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Webhook>, ApiError> {
    Ok(Data(cx.service().webhook_view(&actor, &webhook_id).await?))
}

pub(crate) async fn webhook_update(
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

pub(crate) async fn webhook_delete(
    cx: Cx,
    (webhook_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Webhook>, ApiError> {
    Ok(cx.service().webhook_delete(&actor, &webhook_id).await?)
}

pub(crate) async fn webhook_rotate_secret(
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

pub(crate) async fn webhook_test(
    cx: Cx,
    (webhook_id,): (String,),
    (actor,): (Actor,),
) -> Result<Accepted<Delivery>, ApiError> {
    Ok(Accepted(
        cx.service().webhook_test(&actor, &webhook_id).await?,
    ))
}

pub(crate) async fn delivery_list(
    cx: Cx,
    (webhook_id,): (String,),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Page<Delivery>, ApiError> {
    Ok(cx
        .service()
        .delivery_list(&actor, &webhook_id, &params)
        .await?)
}

pub(crate) async fn delivery_retry(
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
