//! `/api/events`: the record of the organization's state changes.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{Event, EventFilter};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Cx, Data, Query, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "events",
    about: "The record of every change, kept for `events.retention_days`.",
    operations: &[EVENT_LIST, EVENT_VIEW],
};

const EVENT_LIST: Operation = Operation::get("/api/events", handler!(event_list)).doc(
    "List events, newest first",
    "Lists the organization's events, newest first, optionally of some `type`s (repeat \
     the parameter); an unknown type is a 400 naming it; `resource_id` keeps the events \
     about one resource (a call's, say). Events are kept for \
     `events.retention_days`. Needs `events:read` (agent_manager or admin).",
);

async fn event_list(
    cx: Cx,
    (): (),
    (actor, Query(filter), Query(params)): (Actor, Query<EventFilter>, Query<PageParams>),
) -> Result<Page<Event>, ApiError> {
    Ok(cx.service().event_list(&actor, &filter, &params).await?)
}

const EVENT_VIEW: Operation = Operation::get("/api/events/{event_id}", handler!(event_view))
    .tagged_view()
    .doc(
        "Get an event",
        "One event: its type, time and the resource as it was. Needs `events:read` \
         (agent_manager or admin).",
    );

async fn event_view(
    cx: Cx,
    (event_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Event>, ApiError> {
    Ok(Data(cx.service().event_view(&actor, &event_id).await?))
}
