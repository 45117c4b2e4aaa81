//! `/api/calls`: calls handled by the organization's agents, with their transcripts
//! ([`transcripts`]) and recordings ([`recordings`]), each an area of its own in the document.

pub(super) mod recordings;
pub(super) mod transcripts;

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{
    Call, CallFilter, CallSearch, CallStats, CallUpdate, Dial, NewCall, Outcome, StatsGrouping,
};
use voiceplane_core::page::PageParams;
use voiceplane_core::service::CallSession;

use crate::endpoint::{Accepted, CallPage, Created, Cx, Data, Json, Keyed, Query, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "calls",
    about: "Calls handled by the organization's agents.",
    operations: &[
        CALL_CREATE,
        CALL_DIAL,
        CALL_LIST,
        CALL_STATS,
        CALL_VIEW,
        CALL_UPDATE,
        CALL_DELETE,
        CALL_HANGUP,
        CALL_SESSION,
        CALL_ANALYZE,
    ],
};

const CALL_CREATE: Operation = Operation::post("/api/calls", handler!(call_create)).doc(
    "Record a call",
    "Records a call of one of the organization's agents. `status` defaults to `queued`, \
     `recording_enabled` to the agent's setting, `created_at` to now. Needs `calls:write` \
     (agent_manager or admin); sending `created_at` (an import) also needs the role \
     `admin`, and it must not be in the future (400).",
);

async fn call_create(
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

const CALL_LIST: Operation = Operation::get("/api/calls", handler!(call_list)).doc(
    "List calls",
    "Lists calls, newest first, with optional filters combined with AND (`status`, \
     `call_type`, `agent_id`, `to_number`, `from_number`, `phone_number_id`, \
     `created_after`, `created_before`, `agent_version`, `successful`) and `q`, which keeps calls whose transcript has every word of it. \
     A cursor only continues the filters it was issued for (400 otherwise). Needs \
     `calls:read` (every role).",
);

async fn call_list(
    cx: Cx,
    (): (),
    (actor, Query(filter), Query(search), Query(params)): (
        Actor,
        Query<CallFilter>,
        Query<CallSearch>,
        Query<PageParams>,
    ),
) -> Result<CallPage, ApiError> {
    let page = cx
        .service()
        .call_list_json(&actor, &plus_restored(filter), &search, &params)
        .await?;
    Ok(CallPage(cx.api.representations.calls_page(&page)?))
}

const CALL_STATS: Operation = Operation::get("/api/calls/stats", handler!(call_stats)).doc(
    "Count, cost and duration of the calls the filters keep, in total and per group",
    "Counts the calls the filters keep (those of the list, without `q`) and sums their \
     cost and duration, in total and per `group_by` group (`day`, `agent`, `status`, \
     `end_reason`, `agent_version`), with the `success_rate` of the analysed calls; computed by \
     the database. Needs `calls:read` (every role).",
);

async fn call_stats(
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

const CALL_VIEW: Operation = Operation::get("/api/calls/{call_sid}", handler!(call_view))
    .tagged_view()
    .doc(
        "Get a call",
        "One call with its agent, numbers, times, cost and recording state. Needs `calls:read` \
         (every role).",
    );

async fn call_view(
    cx: Cx,
    (call_sid,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Call>, ApiError> {
    Ok(Data(cx.service().call_view(&actor, &call_sid).await?))
}

const CALL_UPDATE: Operation = Operation::patch("/api/calls/{call_sid}", handler!(call_update))
    .tagged_write()
    .errors(&[409])
    .doc(
        "Update a call",
        "Changes a call's status, end reason, times, duration, cost, turn count or billing \
         status; `duration_seconds` is computed from the times when not given. Once the call \
         has usage, its `total_cost` is their sum and setting it is a 409. Records \
         `call.updated`. Needs `calls:write` (agent_manager or admin).",
    );

async fn call_update(
    cx: Cx,
    (call_sid,): (String,),
    (actor, Json(input)): (Actor, Json<CallUpdate>),
) -> Result<Data<Call>, ApiError> {
    Ok(Data(
        cx.service().call_update(&actor, &call_sid, input).await?,
    ))
}

const CALL_DELETE: Operation = Operation::delete("/api/calls/{call_sid}", handler!(call_delete))
    .conditional_write()
    .doc(
        "Delete a call with its transcript and recording",
        "Deletes the call, its transcript and its recording in one transaction and records \
         `call.deleted`; the recording's file is removed from the object store by a durable \
         job shortly after. Needs `calls:write` (agent_manager or admin).",
    );

async fn call_delete(
    cx: Cx,
    (call_sid,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Call>, ApiError> {
    Ok(cx.service().call_delete(&actor, &call_sid).await?)
}

const CALL_DIAL: Operation = Operation::post("/api/calls/dial", handler!(call_dial))
    .errors(&[404, 422])
    .doc(
        "Place an outbound call",
        "Calls `to_number` from the organization's number `from_phone_number_id` through its \
         integration, answered by `agent_id` in the voice runtime (the call streams to \
         `{runtime_stream_url}/{call_sid}`). Answers 201 with the call `queued`; a durable job \
         places it, and the provider's reports move it on (`call.updated`). A person is never \
         called twice for one dial: a dial whose outcome cannot be known (the provider did not \
         answer in time, or the server stopped while sending) is not sent again, and the call \
         ends `failed` with `end_reason` `dial_outcome_unknown` until the provider reports \
         otherwise; a provider's refusal ends it `failed` (`provider_rejected`) with \
         `provider_error`. Refused before anything is recorded: an unknown agent or number \
         (404); a number that does not place calls, has no integration, or whose Telnyx \
         integration lacks `connection_id` or `public_key`, or no `runtime_stream_url`; a \
         suppressed number, outside `calling_hours`, or once the month's credits reached \
         `monthly_credit_limit` (422); past `max_concurrent_calls` (429). With an \
         `Idempotency-Key` the key is bound to the call in the transaction that records it: \
         a retry whose first answer was lost (a crash, a lost commit acknowledgement) answers \
         that call, 201 with `Idempotent-Replayed: true`, and dials nobody. Needs \
         `calls:write` (agent_manager or admin).",
    );

async fn call_dial(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<Dial>),
) -> Result<Keyed<Created<Call>>, ApiError> {
    let (call, replayed) = cx
        .service()
        .call_dial_keyed(&actor, input, cx.idempotency_key())
        .await?;
    // Relative to `/api/calls/dial`, the call's id alone resolves to `/api/calls/{call_sid}`.
    Ok(Keyed {
        reply: Created::at(call.call_sid.clone(), call),
        replayed,
    })
}

const CALL_HANGUP: Operation =
    Operation::post("/api/calls/{call_sid}/hangup", handler!(call_hangup))
        .errors(&[409, 422, 502])
        .doc(
            "Hang up a call",
            "Ends a call placed or received through a provider: a call not yet dialed is \
             `canceled` and never dialed; a live one is hung up at its provider (Twilio \
             `canceled` before it is answered, `completed` after; Telnyx `actions/hangup`), \
             whose report then ends it. Answers 202 with the call as it stands. 409 when it \
             has ended, or its provider says so; 422 for a call recorded through the API; 502 \
             when the provider cannot be reached. Needs `calls:write` (agent_manager or \
             admin).",
        );

async fn call_hangup(
    cx: Cx,
    (call_sid,): (String,),
    (actor,): (Actor,),
) -> Result<Accepted<Call>, ApiError> {
    Ok(Accepted(cx.service().call_hangup(&actor, &call_sid).await?))
}

const CALL_ANALYZE: Operation =
    Operation::post("/api/calls/{call_sid}/analyze", handler!(call_analyze))
        .errors(&[404, 422])
        .doc(
            "Analyse a call again",
            "Asks the agent's analysis model about the call again, with its transcript as it is \
             now: answers 202 with the call `analysis_status: pending`, and `call.analyzed` is \
             recorded when the answer is stored (`completed`) or given up on (`failed`, with \
             `analysis_error`). A completed call with a transcript, of an agent with `analysis`, \
             is analysed once by itself. 422 when the agent has no `analysis` or the call no \
             transcript. Needs `calls:write` (agent_manager or admin).",
        );

async fn call_analyze(
    cx: Cx,
    (call_sid,): (String,),
    (actor,): (Actor,),
) -> Result<Accepted<Call>, ApiError> {
    Ok(Accepted(
        cx.service().call_analyze(&actor, &call_sid).await?,
    ))
}

const CALL_SESSION: Operation =
    Operation::get("/api/calls/{call_sid}/session", handler!(call_session)).doc(
        "Everything the voice runtime needs to run a call",
        "The voice runtime's one request when a call's stream connects: the call, the \
         configuration of the agent it runs with, the full records of the agent's \
         `custom_tools`, and the dial's `dynamic_variables` and `metadata`. Needs \
         `calls:read` and `agents:read` (every role; give the runtime a key scoped to them, \
         plus `calls:write` to post transcripts and recordings back).",
    );

async fn call_session(
    cx: Cx,
    (call_sid,): (String,),
    (actor,): (Actor,),
) -> Result<Data<CallSession>, ApiError> {
    Ok(Data(cx.service().call_session(&actor, &call_sid).await?))
}
