//! `/api/integrations`: stored telephony provider credentials.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{
    Integration, IntegrationFilter, IntegrationUpdate, NewIntegration, Outcome,
};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Created, Cx, Data, EmptyJson, Json, Query, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "integrations",
    about: "Stored telephony provider credentials.",
    operations: &[
        INTEGRATION_CREATE,
        INTEGRATION_LIST,
        INTEGRATION_VIEW,
        INTEGRATION_UPDATE,
        INTEGRATION_DELETE,
        INTEGRATION_VALIDATE,
    ],
};

const INTEGRATION_CREATE: Operation =
    Operation::post("/api/integrations", handler!(integration_create)).doc(
        "Store telephony credentials",
        "Stores a telephony provider's credentials: `{account_sid, auth_token}` for `twilio`, \
         `{api_key}` for `telnyx`. They are encrypted at rest with `secrets.master_key` (503 \
         when it is not set) and never returned; `status` starts `active`. Needs \
         `integrations:write` (agent_manager or admin).",
    );

async fn integration_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewIntegration>),
) -> Result<Created<Integration>, ApiError> {
    let integration = cx.service().integration_create(&actor, input).await?;
    Ok(Created::member(&cx, integration, |x| &x.integration_id))
}

const INTEGRATION_LIST: Operation = Operation::get("/api/integrations", handler!(integration_list))
    .doc(
        "List integrations",
        "Lists integrations, newest first, optionally only those of one `status`; never their \
         credentials. Needs `integrations:read` (every role).",
    );

async fn integration_list(
    cx: Cx,
    (): (),
    (actor, Query(filter), Query(params)): (Actor, Query<IntegrationFilter>, Query<PageParams>),
) -> Result<Page<Integration>, ApiError> {
    Ok(cx
        .service()
        .integration_list(&actor, &filter, &params)
        .await?)
}

const INTEGRATION_VIEW: Operation = Operation::get(
    "/api/integrations/{integration_id}",
    handler!(integration_view),
)
.tagged_view()
.doc(
    "Get an integration",
    "One integration, without its credentials. Needs `integrations:read` (every role).",
);

async fn integration_view(
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

const INTEGRATION_UPDATE: Operation = Operation::patch(
    "/api/integrations/{integration_id}",
    handler!(integration_update),
)
.tagged_write()
.doc(
    "Update an integration",
    "Renames or recategorizes an integration, or replaces its credentials (same provider, \
     same shape); new credentials set `status` back to `active`. Needs \
     `integrations:write` (agent_manager or admin).",
);

async fn integration_update(
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

const INTEGRATION_DELETE: Operation = Operation::delete(
    "/api/integrations/{integration_id}",
    handler!(integration_delete),
)
.conditional_write()
.errors(&[409])
.doc(
    "Delete an integration and its stored credentials",
    "Deletes an integration and its stored credentials. 409 while phone numbers refer to \
     it, naming them. Needs `integrations:delete` (agent_manager or admin).",
);

async fn integration_delete(
    cx: Cx,
    (integration_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Integration>, ApiError> {
    Ok(cx
        .service()
        .integration_delete(&actor, &integration_id)
        .await?)
}

const INTEGRATION_VALIDATE: Operation = Operation::post(
    "/api/integrations/{integration_id}/validate",
    handler!(integration_validate),
)
.errors(&[502])
.doc(
    "Test the stored credentials with the provider; status becomes active or invalid",
    "Makes a test call to the provider with the stored credentials and stores the outcome \
     in `status` (`active` or `invalid`); `updated_at` changes. The body is not read, but \
     must be sent as `application/json` (415 otherwise). Needs `integrations:read` (every \
     role).",
);

/// The request carries no body, but its contract is a JSON request.
async fn integration_validate(
    cx: Cx,
    (integration_id,): (String,),
    (actor, EmptyJson): (Actor, EmptyJson),
) -> Result<Outcome<Integration>, ApiError> {
    Ok(cx
        .service()
        .integration_validate(&actor, &integration_id)
        .await?)
}
