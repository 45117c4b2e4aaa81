//! `/api/calls`: calls handled by the organization's agents.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{
    Call, CallFilter, CallSearch, CallStats, CallUpdate, NewCall, Outcome, StatsGrouping,
};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Created, Cx, Data, Json, Query};
use crate::error::ApiError;

pub(crate) async fn call_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewCall>),
) -> Result<Created<Call>, ApiError> {
    let call = cx.service().call_create(&actor, input).await?;
    Ok(Created::member(&cx, call, |x| &x.call_sid))
}

/// The number filters as they were meant: a `+` sent unencoded in a query string decodes as a
/// space, and no E.164 number starts with a space.
fn plus_restored(mut filter: CallFilter) -> CallFilter {
    for number in [&mut filter.to_number, &mut filter.from_number]
        .into_iter()
        .flatten()
    {
        if let Some(digits) = number.strip_prefix(' ') {
            *number = format!("+{digits}");
        }
    }
    filter
}

pub(crate) async fn call_list(
    cx: Cx,
    (): (),
    (actor, Query(filter), Query(search), Query(params)): (
        Actor,
        Query<CallFilter>,
        Query<CallSearch>,
        Query<PageParams>,
    ),
) -> Result<Page<Call>, ApiError> {
    Ok(cx
        .service()
        .call_list(&actor, &plus_restored(filter), &search, &params)
        .await?)
}

pub(crate) async fn call_stats(
    cx: Cx,
    (): (),
    (actor, Query(filter), Query(grouping)): (Actor, Query<CallFilter>, Query<StatsGrouping>),
) -> Result<Data<CallStats>, ApiError> {
    Ok(Data(
        cx.service()
            .call_stats(&actor, &plus_restored(filter), &grouping)
            .await?,
    ))
}

pub(crate) async fn call_view(
    cx: Cx,
    (call_sid,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Call>, ApiError> {
    Ok(Data(cx.service().call_view(&actor, &call_sid).await?))
}

pub(crate) async fn call_update(
    cx: Cx,
    (call_sid,): (String,),
    (actor, Json(input)): (Actor, Json<CallUpdate>),
) -> Result<Data<Call>, ApiError> {
    Ok(Data(
        cx.service().call_update(&actor, &call_sid, input).await?,
    ))
}

pub(crate) async fn call_delete(
    cx: Cx,
    (call_sid,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Call>, ApiError> {
    Ok(cx.service().call_delete(&actor, &call_sid).await?)
}
