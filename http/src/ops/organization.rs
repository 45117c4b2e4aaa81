//! `/api/organization/settings`: the organization's retention policy.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{OrganizationSettings, OrganizationSettingsUpdate};

use crate::endpoint::{Cx, Data, Json, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "organization",
    about: "The organization's settings.",
    operations: &[ORGANIZATION_SETTINGS_VIEW, ORGANIZATION_SETTINGS_UPDATE],
};

const ORGANIZATION_SETTINGS_VIEW: Operation = Operation::get(
    "/api/organization/settings",
    handler!(organization_settings_view),
)
.tagged_view()
.doc(
    "The organization's retention policy",
    "The organization's retention policy: how many days recordings, transcripts and calls \
     are kept (`null`: forever). Needs `settings:read` (admin).",
);

async fn organization_settings_view(
    cx: Cx,
    (): (),
    (actor,): (Actor,),
) -> Result<Data<OrganizationSettings>, ApiError> {
    Ok(Data(cx.service().organization_settings_view(&actor).await?))
}

const ORGANIZATION_SETTINGS_UPDATE: Operation = Operation::patch(
    "/api/organization/settings",
    handler!(organization_settings_update),
)
.tagged_write()
.doc(
    "Change the organization's retention policy",
    "Changes the retention policy: each field an integer 1–36500 or `null` (keep forever); \
     absent fields are unchanged. The periodic sweep deletes what is older. Needs \
     `settings:write` (admin).",
);

async fn organization_settings_update(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<OrganizationSettingsUpdate>),
) -> Result<Data<OrganizationSettings>, ApiError> {
    Ok(Data(
        cx.service()
            .organization_settings_update(&actor, input)
            .await?,
    ))
}
