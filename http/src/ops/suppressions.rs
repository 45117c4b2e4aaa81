//! `/api/suppressions`: the suppression (do-not-call) list that every outbound call is checked
//! against.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{NewSuppression, Outcome, Suppression, SuppressionFilter};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Created, Cx, Json, Put, Query, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "suppressions",
    about: "The suppression (do-not-call) list: numbers no outbound call ever rings, checked in \
            the transaction of every dial.",
    operations: &[SUPPRESSION_PUT, SUPPRESSION_LIST, SUPPRESSION_DELETE],
};

/// A phone number in a path, where `+` comes as `%2B` (a path is never decoded otherwise; the
/// number is then checked as E.164).
fn path_number(raw: &str) -> String {
    raw.replace("%2B", "+").replace("%2b", "+")
}

const SUPPRESSION_PUT: Operation = Operation::post("/api/suppressions", handler!(suppression_put))
    .doc(
        "Suppress a number",
        "Puts an E.164 number on the suppression list, with an optional `reason` and \
         `expires_at` (in the future): no outbound call rings it while the entry holds — a \
         dial to it is a 422 and nothing is recorded. 201 for a new entry (`Location` is \
         `suppressions/%2B<digits>`); 200 when the number was there already and its reason \
         and expiry are replaced. Records `suppression.created`. Needs `suppressions:write` \
         (agent_manager or admin).",
    );

async fn suppression_put(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewSuppression>),
) -> Result<Put<Suppression>, ApiError> {
    let (entry, new) = cx.service().suppression_put(&actor, input).await?;
    Ok(if new {
        let location = format!("suppressions/{}", entry.phone_number.replace('+', "%2B"));
        Put::Created(Created::at(location, entry))
    } else {
        Put::Changed(entry)
    })
}

const SUPPRESSION_LIST: Operation = Operation::get("/api/suppressions", handler!(suppression_list))
    .doc(
        "List suppressed numbers",
        "Lists the suppression list, newest first, expired entries included (their \
         `expires_at` is past); with `phone_number`, only that number's entry. Needs \
         `suppressions:read` (every role).",
    );

async fn suppression_list(
    cx: Cx,
    (): (),
    (actor, Query(filter), Query(params)): (Actor, Query<SuppressionFilter>, Query<PageParams>),
) -> Result<Page<Suppression>, ApiError> {
    Ok(cx
        .service()
        .suppression_list(&actor, &filter, &params)
        .await?)
}

const SUPPRESSION_DELETE: Operation = Operation::delete(
    "/api/suppressions/{phone_number}",
    handler!(suppression_delete),
)
.doc(
    "Stop suppressing a number",
    "Takes a number off the suppression list (E.164 in the path, `+` sent as `%2B`); 404 when \
     it is not on it. Records `suppression.deleted`. Needs `suppressions:write` \
     (agent_manager or admin).",
);

async fn suppression_delete(
    cx: Cx,
    (phone_number,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Suppression>, ApiError> {
    Ok(cx
        .service()
        .suppression_delete(&actor, &path_number(&phone_number))
        .await?)
}
