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
    "The organization's settings",
    "The organization's settings: its retention policy (how many days recordings, \
     transcripts and calls are kept; `null`: forever), where its calls stream their media \
     (`runtime_stream_url`), and the rules every outbound call keeps to: `calling_hours` in \
     the callee's time zone, the organization's `timezone` (the callee's when the dial names \
     none), `max_concurrent_calls`, and `monthly_credit_limit`. Needs `settings:read` \
     (admin).",
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
    "Change the organization's settings",
    "Changes the settings; absent fields are unchanged. Retention periods: an integer \
     1–36500 or `null` (keep forever; the periodic sweep deletes what is older). \
     `runtime_stream_url`: `wss://` (or `ws://` to a loopback host) without query, or `null`. \
     `calling_hours`: `{start, end}` as `HH:MM` (an end before the start runs over midnight), \
     or `null` for any hour; outside them a dial is a 422. `timezone`: IANA. \
     `max_concurrent_calls`: 1–10000 or `null`; a dial past it is a 429. \
     `monthly_credit_limit`: credits > 0 or `null`; once the usage of the calls created in \
     the calendar month (UTC) reaches it, dials are refused (422) and campaigns wait. Needs \
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
