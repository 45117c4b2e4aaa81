//! `/api/calls/{call_sid}/messages`: a call's transcript.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{CallMessage, NewMessages};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Created, Cx, Json, Query};
use crate::error::ApiError;

pub(crate) async fn call_message_append(
    cx: Cx,
    (call_sid,): (String,),
    (actor, Json(input)): (Actor, Json<NewMessages>),
) -> Result<Created<Vec<CallMessage>>, ApiError> {
    let messages = cx
        .service()
        .call_message_append(&actor, &call_sid, input)
        .await?;
    // The appended messages have no URL of their own: the reference is the transcript they
    // joined, `POST …/messages` → `messages` (the same URL).
    Ok(Created::at("messages", messages))
}

pub(crate) async fn call_message_list(
    cx: Cx,
    (call_sid,): (String,),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Page<CallMessage>, ApiError> {
    Ok(cx
        .service()
        .call_message_list(&actor, &call_sid, &params)
        .await?)
}
