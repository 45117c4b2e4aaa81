//! `/api/calls/{call_sid}/messages`: a call's transcript.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{CallMessage, NewMessages};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Created, Cx, Json, Query, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "transcripts",
    about: "The transcript of each call, message by message.",
    operations: &[CALL_MESSAGE_APPEND, CALL_MESSAGE_LIST],
};

const CALL_MESSAGE_APPEND: Operation = Operation::post(
    "/api/calls/{call_sid}/messages",
    handler!(call_message_append),
)
.doc(
    "Append messages to the call's transcript",
    "Appends 1–100 messages to the call's transcript in one transaction; they get the next \
     `seq` numbers in the order sent, and concurrent appends never share or skip one. A \
     400 names the message and field at fault. Needs `calls:write` (agent_manager or \
     admin).",
);

async fn call_message_append(
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

const CALL_MESSAGE_LIST: Operation = Operation::get(
    "/api/calls/{call_sid}/messages",
    handler!(call_message_list),
)
.doc(
    "List the call's transcript in conversation order",
    "The call's transcript in conversation order (`seq` ascending), one page at a time. \
     Needs `calls:read` (every role).",
);

async fn call_message_list(
    cx: Cx,
    (call_sid,): (String,),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Page<CallMessage>, ApiError> {
    Ok(cx
        .service()
        .call_message_list(&actor, &call_sid, &params)
        .await?)
}
