//! `/api/auth/…`: members of the organization and invitations. The two lists answer
//! `{"invitations": […]}` and `{"members": […]}`, without the success envelope.

use schemars::JsonSchema;
use serde::Serialize;
use voiceplane_core::auth::Actor;
use voiceplane_core::model::{Invitation, Member, MemberUpdate, NewInvitation, Outcome};

use crate::endpoint::{Bare, Created, Cx, Data, Invitee, Json};
use crate::error::ApiError;

/// `{"invitations": […]}`.
#[derive(Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct Invitations {
    invitations: Vec<Invitation>,
}

/// `{"members": […]}`.
#[derive(Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct Members {
    members: Vec<Member>,
}

pub(crate) async fn invitation_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewInvitation>),
) -> Result<Created<Invitation>, ApiError> {
    let invitation = cx.service().invitation_create(&actor, input).await?;
    Ok(Created::member(&cx, invitation, |x| &x.invite_id))
}

pub(crate) async fn invitation_list(
    cx: Cx,
    (): (),
    (actor,): (Actor,),
) -> Result<Bare<Invitations>, ApiError> {
    let invitations = cx.service().invitation_list(&actor).await?;
    Ok(Bare(Invitations { invitations }))
}

pub(crate) async fn invitation_view(
    cx: Cx,
    (invite_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Invitation>, ApiError> {
    Ok(Data(
        cx.service().invitation_view(&actor, &invite_id).await?,
    ))
}

pub(crate) async fn invitation_revoke(
    cx: Cx,
    (invite_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Invitation>, ApiError> {
    Ok(cx.service().invitation_revoke(&actor, &invite_id).await?)
}

/// The invitee's JWT, without `X-Organization-Id`: they are not a member yet.
pub(crate) async fn invitation_accept(
    cx: Cx,
    (invite_id,): (String,),
    (Invitee(bearer, request),): (Invitee,),
) -> Result<Outcome<Member>, ApiError> {
    Ok(cx
        .service()
        .invitation_accept_from(bearer.as_deref(), &invite_id, request)
        .await?)
}

pub(crate) async fn member_list(
    cx: Cx,
    (): (),
    (actor,): (Actor,),
) -> Result<Bare<Members>, ApiError> {
    let members = cx.service().member_list(&actor).await?;
    Ok(Bare(Members { members }))
}

pub(crate) async fn member_update(
    cx: Cx,
    (membership_id,): (String,),
    (actor, Json(input)): (Actor, Json<MemberUpdate>),
) -> Result<Data<Member>, ApiError> {
    Ok(Data(
        cx.service()
            .member_update(&actor, &membership_id, input)
            .await?,
    ))
}

pub(crate) async fn member_remove(
    cx: Cx,
    (membership_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Member>, ApiError> {
    Ok(cx.service().member_remove(&actor, &membership_id).await?)
}
