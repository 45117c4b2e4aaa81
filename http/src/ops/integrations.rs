//! `/api/integrations`: stored telephony provider credentials.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{
    Integration, IntegrationFilter, IntegrationUpdate, NewIntegration, Outcome,
};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Created, Cx, Data, Json, JsonContentType, Query};
use crate::error::ApiError;

pub(crate) async fn integration_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewIntegration>),
) -> Result<Created<Integration>, ApiError> {
    let integration = cx.service().integration_create(&actor, input).await?;
    Ok(Created::member(&cx, integration, |x| &x.integration_id))
}

pub(crate) async fn integration_list(
    cx: Cx,
    (): (),
    (actor, Query(filter), Query(params)): (Actor, Query<IntegrationFilter>, Query<PageParams>),
) -> Result<Page<Integration>, ApiError> {
    Ok(cx
        .service()
        .integration_list(&actor, &filter, &params)
        .await?)
}

pub(crate) async fn integration_view(
    cx: Cx,
    (integration_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Integration>, ApiError> {
    Ok(Data(
        cx.service()
            .integration_view(&actor, &integration_id)
            .await?,
    ))
}

pub(crate) async fn integration_update(
    cx: Cx,
    (integration_id,): (String,),
    (actor, Json(input)): (Actor, Json<IntegrationUpdate>),
) -> Result<Data<Integration>, ApiError> {
    Ok(Data(
        cx.service()
            .integration_update(&actor, &integration_id, input)
            .await?,
    ))
}

pub(crate) async fn integration_delete(
    cx: Cx,
    (integration_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Integration>, ApiError> {
    Ok(cx
        .service()
        .integration_delete(&actor, &integration_id)
        .await?)
}

/// The request carries no body, but its contract is a JSON request.
pub(crate) async fn integration_validate(
    cx: Cx,
    (integration_id,): (String,),
    (actor, JsonContentType): (Actor, JsonContentType),
) -> Result<Outcome<Integration>, ApiError> {
    Ok(cx
        .service()
        .integration_validate(&actor, &integration_id)
        .await?)
}
