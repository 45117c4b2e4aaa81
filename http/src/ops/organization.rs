//! `/api/organization/settings`: the organization's retention policy.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{OrganizationSettings, OrganizationSettingsUpdate};

use crate::endpoint::{Cx, Data, Json};
use crate::error::ApiError;

pub(crate) async fn organization_settings_view(
    cx: Cx,
    (): (),
    (actor,): (Actor,),
) -> Result<Data<OrganizationSettings>, ApiError> {
    Ok(Data(cx.service().organization_settings_view(&actor).await?))
}

pub(crate) async fn organization_settings_update(
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
