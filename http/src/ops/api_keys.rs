//! `/api/api-keys`: the organization's API keys.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{ApiKey, CreatedApiKey, NewApiKey, Outcome};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Created, Cx, Data, Json, Query};
use crate::error::ApiError;

pub(crate) async fn api_key_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewApiKey>),
) -> Result<Created<CreatedApiKey>, ApiError> {
    let created = cx.service().api_key_create(&actor, input).await?;
    Ok(Created::member(&cx, created, |x| &x.key.key_id))
}

pub(crate) async fn api_key_list(
    cx: Cx,
    (): (),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Page<ApiKey>, ApiError> {
    Ok(cx.service().api_key_list(&actor, &params).await?)
}

pub(crate) async fn api_key_view(
    cx: Cx,
    (key_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<ApiKey>, ApiError> {
    Ok(Data(cx.service().api_key_view(&actor, &key_id).await?))
}

pub(crate) async fn api_key_revoke(
    cx: Cx,
    (key_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<ApiKey>, ApiError> {
    Ok(cx.service().api_key_revoke(&actor, &key_id).await?)
}
