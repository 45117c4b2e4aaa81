//! `/api/events`: the record of the organization's state changes.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{Event, EventFilter};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Cx, Data, Query};
use crate::error::ApiError;

pub(crate) async fn event_list(
    cx: Cx,
    (): (),
    (actor, Query(filter), Query(params)): (Actor, Query<EventFilter>, Query<PageParams>),
) -> Result<Page<Event>, ApiError> {
    Ok(cx.service().event_list(&actor, &filter, &params).await?)
}

pub(crate) async fn event_view(
    cx: Cx,
    (event_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Event>, ApiError> {
    Ok(Data(cx.service().event_view(&actor, &event_id).await?))
}
