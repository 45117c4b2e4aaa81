//! `/api/phone-numbers`: phone numbers and the agents that answer them.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{
    NewPhoneNumber, Outcome, PhoneNumber, PhoneNumberFilter, PhoneNumberUpdate,
};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Created, Cx, Data, Json, Query, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "phone-numbers",
    about: "Phone numbers and their agents.",
    operations: &[
        PHONE_NUMBER_CREATE,
        PHONE_NUMBER_LIST,
        PHONE_NUMBER_VIEW,
        PHONE_NUMBER_UPDATE,
        PHONE_NUMBER_DELETE,
    ],
};

const PHONE_NUMBER_CREATE: Operation =
    Operation::post("/api/phone-numbers", handler!(phone_number_create))
        .errors(&[409])
        .doc(
            "Add a phone number",
            "Adds an E.164 phone number, optionally tied to an integration and assigned to an \
             agent. 409 when the organization already has it. Needs `phone_numbers:write` \
             (agent_manager or admin).",
        );

async fn phone_number_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewPhoneNumber>),
) -> Result<Created<PhoneNumber>, ApiError> {
    let number = cx.service().phone_number_create(&actor, input).await?;
    Ok(Created::member(&cx, number, |x| &x.phone_number_id))
}

const PHONE_NUMBER_LIST: Operation =
    Operation::get("/api/phone-numbers", handler!(phone_number_list)).doc(
        "List phone numbers",
        "Lists phone numbers, newest first; with `agent_id`, only the numbers assigned to that \
         agent (400 for a malformed id). Needs `phone_numbers:read` (every role).",
    );

async fn phone_number_list(
    cx: Cx,
    (): (),
    (actor, Query(filter), Query(params)): (Actor, Query<PhoneNumberFilter>, Query<PageParams>),
) -> Result<Page<PhoneNumber>, ApiError> {
    Ok(cx
        .service()
        .phone_number_list(&actor, &filter, &params)
        .await?)
}

const PHONE_NUMBER_VIEW: Operation = Operation::get(
    "/api/phone-numbers/{phone_number_id}",
    handler!(phone_number_view),
)
.tagged_view()
.doc(
    "Get a phone number",
    "One phone number. Needs `phone_numbers:read` (every role).",
);

async fn phone_number_view(
    cx: Cx,
    (phone_number_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<PhoneNumber>, ApiError> {
    Ok(Data(
        cx.service()
            .phone_number_view(&actor, &phone_number_id)
            .await?,
    ))
}

const PHONE_NUMBER_UPDATE: Operation = Operation::patch(
    "/api/phone-numbers/{phone_number_id}",
    handler!(phone_number_update),
)
.tagged_write()
.errors(&[409])
.doc(
    "Update a phone number",
    "Changes a number's agent, integration, provider or directions; `null` clears the \
     agent or the integration. Needs `phone_numbers:write` (agent_manager or admin).",
);

async fn phone_number_update(
    cx: Cx,
    (phone_number_id,): (String,),
    (actor, Json(input)): (Actor, Json<PhoneNumberUpdate>),
) -> Result<Data<PhoneNumber>, ApiError> {
    Ok(Data(
        cx.service()
            .phone_number_update(&actor, &phone_number_id, input)
            .await?,
    ))
}

const PHONE_NUMBER_DELETE: Operation = Operation::delete(
    "/api/phone-numbers/{phone_number_id}",
    handler!(phone_number_delete),
)
.conditional_write()
.doc(
    "Delete a phone number",
    "Deletes a phone number. Needs `phone_numbers:write` (agent_manager or admin).",
);

async fn phone_number_delete(
    cx: Cx,
    (phone_number_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<PhoneNumber>, ApiError> {
    Ok(cx
        .service()
        .phone_number_delete(&actor, &phone_number_id)
        .await?)
}
