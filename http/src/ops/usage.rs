//! Usage and cost: a call's usage items, the organization's price book, and the usage report.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{Call, NewPriceBook, NewUsage, PriceBook, UsageFilter, UsageReport};

use crate::endpoint::{Cx, Data, Json, Keyed, Query, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "usage",
    about: "What calls consumed, what it costs in credits, and the prices that decide it.",
    operations: &[CALL_USAGE_ADD, USAGE_REPORT, PRICES_VIEW, PRICES_REPLACE],
};

const CALL_USAGE_ADD: Operation =
    Operation::post("/api/calls/{call_sid}/usage", handler!(call_usage_add))
        .errors(&[404, 409, 422])
        .doc(
            "Record what a call consumed",
            "Appends 1–100 usage items to the call (`component`: `stt`, `llm`, `tts`, \
             `telephony` or `other`; `provider`; `model`; `quantity` > 0; `unit`: `seconds`, \
             `minutes`, `characters`, `input_tokens`, `output_tokens` or `requests`), each \
             priced now by the organization's price book: its `credits` are `quantity × \
             credits_per_unit` of the model's price, else the provider's price without a model, \
             else `null`. The call's `cost_breakdown` lists its items and its `total_cost` \
             becomes their sum (and can no longer be set by a PATCH). A call ended by its \
             provider gets its `telephony` item (minutes, rounded up) by itself. A call holds \
             at most 1,000 items (422). An item may carry the client's `id` (1–64 \
             characters, unique per call): an item whose id the call holds already is not \
             added again (a different item under that id is a 409), so a post sent again after \
             a timeout charges once and answers as the first did; two items of one post with \
             one id are a 400. Under an `Idempotency-Key` the key is bound to the call in the \
             transaction that charges it, so a retry whose first answer was lost adds nothing. \
             Answers the call and records `call.updated`. Needs `calls:write` (agent_manager \
             or admin).",
        );

async fn call_usage_add(
    cx: Cx,
    (call_sid,): (String,),
    (actor, Json(input)): (Actor, Json<NewUsage>),
) -> Result<Keyed<Data<Call>>, ApiError> {
    let (call, replayed) = cx
        .service()
        .call_usage_add_keyed(&actor, &call_sid, input, cx.idempotency_key())
        .await?;
    Ok(Keyed {
        reply: Data(call),
        replayed,
    })
}

const USAGE_REPORT: Operation = Operation::get("/api/usage", handler!(usage_report)).doc(
    "Calls and credits over a window, in total and per group",
    "Counts the calls created in `[created_after, created_before)` and sums the credits of \
     their usage items, in total and per `group_by` group: `day` (the UTC date of the call's \
     `created_at`) or `agent` (calls of the group, created in the window), `component` or \
     `provider` (calls with an item of the group); each group also sums its items' \
     `quantities` by unit. Computed by the database. Needs `calls:read` (every role).",
);

async fn usage_report(
    cx: Cx,
    (): (),
    (actor, Query(filter)): (Actor, Query<UsageFilter>),
) -> Result<Data<UsageReport>, ApiError> {
    Ok(Data(cx.service().usage_report(&actor, &filter).await?))
}

const PRICES_VIEW: Operation = Operation::get("/api/organization/prices", handler!(prices_view))
    .tagged_view()
    .doc(
        "The organization's price book",
        "The prices usage items are charged at: `{component, provider, model, unit, \
             credits_per_unit}`; a price without `model` applies to the provider's models that \
             have none of their own. Needs `settings:read` (admin).",
    );

async fn prices_view(cx: Cx, (): (), (actor,): (Actor,)) -> Result<Data<PriceBook>, ApiError> {
    Ok(Data(cx.service().prices_view(&actor).await?))
}

const PRICES_REPLACE: Operation =
    Operation::put("/api/organization/prices", handler!(prices_replace))
        .tagged_write()
        .doc(
            "Replace the organization's price book",
            "Replaces every price (at most 500; `credits_per_unit` ≥ 0; no two for the same \
             component, provider, model and unit). Items already recorded keep the credits \
             they were charged. Needs `settings:write` (admin).",
        );

async fn prices_replace(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewPriceBook>),
) -> Result<Data<PriceBook>, ApiError> {
    Ok(Data(cx.service().prices_replace(&actor, input).await?))
}
