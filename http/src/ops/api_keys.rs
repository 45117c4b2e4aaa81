//! `/api/api-keys`: the organization's API keys.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{ApiKey, CreatedApiKey, NewApiKey, Outcome};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Created, Cx, Data, Json, Query, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "api-keys",
    about: "API keys of the organization.",
    operations: &[API_KEY_CREATE, API_KEY_LIST, API_KEY_VIEW, API_KEY_REVOKE],
};

const API_KEY_CREATE: Operation = Operation::post("/api/api-keys", handler!(api_key_create)).doc(
    "Create an API key",
    "Creates an API key with a role no higher than the caller's; the answer holds the \
     secret (`api_key`, `vpk_…`) once, and it cannot be read again. `scopes` narrows the key \
     to some permissions, each held by its role and by the caller (400 naming the first \
     that is not); left out, the key has every permission of its role. Records \
     `api_key.created` and an audit entry. Needs `api_keys:write` (agent_manager or \
     admin). 403 for a role above the caller's.",
);

async fn api_key_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewApiKey>),
) -> Result<Created<CreatedApiKey>, ApiError> {
    let created = cx.service().api_key_create(&actor, input).await?;
    Ok(Created::member(&cx, created, |x| &x.key.key_id))
}

const API_KEY_LIST: Operation = Operation::get("/api/api-keys", handler!(api_key_list)).doc(
    "List API keys, revoked ones included",
    "Lists the organization's API keys, newest first, revoked and expired ones included \
     (see `status`); never their secrets. Needs `api_keys:read` (every role).",
);

async fn api_key_list(
    cx: Cx,
    (): (),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Page<ApiKey>, ApiError> {
    Ok(cx.service().api_key_list(&actor, &params).await?)
}

const API_KEY_VIEW: Operation = Operation::get("/api/api-keys/{key_id}", handler!(api_key_view))
    .tagged_view()
    .doc(
        "Get an API key (never its secret)",
        "One API key of the organization as the list shows it, never its secret (the \
         `Location` of a new key). 404 for an unknown key or one of another organization. \
         Needs `api_keys:read` (every role).",
    );

async fn api_key_view(
    cx: Cx,
    (key_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<ApiKey>, ApiError> {
    Ok(Data(cx.service().api_key_view(&actor, &key_id).await?))
}

const API_KEY_REVOKE: Operation =
    Operation::delete("/api/api-keys/{key_id}", handler!(api_key_revoke))
        .conditional_write()
        .doc(
            "Revoke an API key",
            "Revokes a key: it stops authenticating at once and stays listed with `status` \
             `revoked`. Needs `api_keys:write` (agent_manager or admin); a key whose role is above \
             the caller's cannot be revoked (403).",
        );

async fn api_key_revoke(
    cx: Cx,
    (key_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<ApiKey>, ApiError> {
    Ok(cx.service().api_key_revoke(&actor, &key_id).await?)
}
