//! `/api/api-keys`: the organization's API keys.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{ApiKey, CreatedApiKey, NewApiKey, Outcome};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Created, Cx, Json, Query};
use crate::error::ApiError;

pub(crate) async fn api_key_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewApiKey>),
) -> Result<Created<CreatedApiKey>, ApiError> {
    Ok(Created(cx.service().api_key_create(&actor, input).await?))
}

pub(crate) async fn api_key_list(
    cx: Cx,
    (): (),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Page<ApiKey>, ApiError> {
    Ok(cx.service().api_key_list(&actor, &params).await?)
}

pub(crate) async fn api_key_revoke(
    cx: Cx,
    (key_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<ApiKey>, ApiError> {
    Ok(cx.service().api_key_revoke(&actor, &key_id).await?)
}
