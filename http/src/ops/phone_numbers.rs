//! `/api/phone-numbers`: phone numbers and the agents that answer them.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{NewPhoneNumber, Outcome, PhoneNumber, PhoneNumberUpdate};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Created, Cx, Data, Json, Query};
use crate::error::ApiError;

pub(crate) async fn phone_number_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewPhoneNumber>),
) -> Result<Created<PhoneNumber>, ApiError> {
    let number = cx.service().phone_number_create(&actor, input).await?;
    Ok(Created::member(&cx, number, |x| &x.phone_number_id))
}

pub(crate) async fn phone_number_list(
    cx: Cx,
    (): (),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Page<PhoneNumber>, ApiError> {
    Ok(cx.service().phone_number_list(&actor, &params).await?)
}

pub(crate) async fn phone_number_view(
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

pub(crate) async fn phone_number_update(
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

pub(crate) async fn phone_number_delete(
    cx: Cx,
    (phone_number_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<PhoneNumber>, ApiError> {
    Ok(cx
        .service()
        .phone_number_delete(&actor, &phone_number_id)
        .await?)
}
