//! `/api/auth/…`: members of the organization and invitations. The two lists answer
//! `{"invitations": […]}` and `{"members": […]}`, without the success envelope.

use schemars::JsonSchema;
use serde::Serialize;
use voiceplane_core::auth::Actor;
use voiceplane_core::model::{Invitation, Member, MemberUpdate, NewInvitation, Outcome};

use crate::endpoint::{Bare, Created, Cx, Data, Invitee, Json, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "members",
    about: "Members and invitations.",
    operations: &[
        INVITATION_CREATE,
        INVITATION_LIST,
        INVITATION_VIEW,
        INVITATION_REVOKE,
        INVITATION_ACCEPT,
        MEMBER_LIST,
        MEMBER_UPDATE,
        MEMBER_REMOVE,
    ],
};

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

const INVITATION_CREATE: Operation = Operation::post(
    "/api/auth/organizations/invitations",
    handler!(invitation_create),
)
.errors(&[409])
.doc(
    "Invite someone",
    "Invites an e-mail address with a role; valid 7 days. 409 when one is already pending \
     for that address. Needs `members:write` (admin).",
);

async fn invitation_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewInvitation>),
) -> Result<Created<Invitation>, ApiError> {
    let invitation = cx.service().invitation_create(&actor, input).await?;
    Ok(Created::member(&cx, invitation, |x| &x.invite_id))
}

const INVITATION_LIST: Operation = Operation::get(
    "/api/auth/organizations/invitations",
    handler!(invitation_list),
)
.doc(
    "List pending invitations",
    "The pending, unexpired invitations, as `{\"invitations\": […]}`. Needs \
     `members:read` (every role).",
);

async fn invitation_list(
    cx: Cx,
    (): (),
    (actor,): (Actor,),
) -> Result<Bare<Invitations>, ApiError> {
    let invitations = cx.service().invitation_list(&actor).await?;
    Ok(Bare(Invitations { invitations }))
}

const INVITATION_VIEW: Operation = Operation::get(
    "/api/auth/organizations/invitations/{invite_id}",
    handler!(invitation_view),
)
.tagged_view()
.doc(
    "Get an invitation, whatever its status",
    "One invitation of the organization, whatever its status; a pending one past its \
     expiry shows as `expired` (the `Location` of a new invitation). 404 for an unknown \
     invitation or one of another organization. Needs `members:read` (every role).",
);

async fn invitation_view(
    cx: Cx,
    (invite_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Invitation>, ApiError> {
    Ok(Data(
        cx.service().invitation_view(&actor, &invite_id).await?,
    ))
}

const INVITATION_REVOKE: Operation = Operation::delete(
    "/api/auth/organizations/invitations/{invite_id}",
    handler!(invitation_revoke),
)
.conditional_write()
.errors(&[409])
.doc(
    "Withdraw an invitation",
    "Withdraws a pending invitation (`status` `revoked`). 409 when it is no longer \
     pending. Needs `members:write` (admin).",
);

async fn invitation_revoke(
    cx: Cx,
    (invite_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Invitation>, ApiError> {
    Ok(cx.service().invitation_revoke(&actor, &invite_id).await?)
}

const INVITATION_ACCEPT: Operation = Operation::post(
    "/api/auth/invitations/{invite_id}/accept",
    handler!(invitation_accept),
)
.invitee()
.errors(&[409])
.doc(
    "Accept an invitation with the invitee's JWT",
    "Accepts an invitation with the invitee's bearer JWT, whose `email` claim must be the \
     invited address (403 otherwise); no `X-Organization-Id`. The user is created from \
     `sub`, `email` and `name` when new. 409 when the invitation expired, was revoked or \
     was used.",
);

/// The invitee's JWT, without `X-Organization-Id`: they are not a member yet.
async fn invitation_accept(
    cx: Cx,
    (invite_id,): (String,),
    (Invitee(bearer, request),): (Invitee,),
) -> Result<Outcome<Member>, ApiError> {
    Ok(cx
        .service()
        .invitation_accept_from(bearer.as_deref(), &invite_id, request)
        .await?)
}

const MEMBER_LIST: Operation =
    Operation::get("/api/auth/organizations/members", handler!(member_list)).doc(
        "List members",
        "The organization's members, as `{\"members\": […]}`. Needs `members:read` (every \
         role).",
    );

async fn member_list(cx: Cx, (): (), (actor,): (Actor,)) -> Result<Bare<Members>, ApiError> {
    let members = cx.service().member_list(&actor).await?;
    Ok(Bare(Members { members }))
}

const MEMBER_UPDATE: Operation = Operation::patch(
    "/api/auth/organizations/members/{membership_id}",
    handler!(member_update),
)
.errors(&[409])
.doc(
    "Change a member's role",
    "Changes a member's role. 409 rather than demote the last admin. Needs \
     `members:write` (admin).",
);

async fn member_update(
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

const MEMBER_REMOVE: Operation = Operation::delete(
    "/api/auth/organizations/members/{membership_id}",
    handler!(member_remove),
)
.errors(&[409])
.doc(
    "Remove a member and revoke the API keys they created",
    "Removes a member and revokes the API keys they created in this organization. 409 for \
     the last admin. Needs `members:write` (admin).",
);

async fn member_remove(
    cx: Cx,
    (membership_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Member>, ApiError> {
    Ok(cx.service().member_remove(&actor, &membership_id).await?)
}
