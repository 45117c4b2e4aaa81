//! Members and invitations: a user's role in one organization, and the offers to join one.

use serde::{Deserialize, Serialize};

use crate::role::Role;
use crate::time::Timestamp;

/// A user's role in one organization.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Membership {
    /// `mem_…`
    pub membership_id: String,
    /// The organization.
    pub organization_id: String,
    /// The member.
    pub user_id: String,
    /// Role in this organization.
    pub role: Role,
    /// `active`.
    pub status: MemberStatus,
    /// When the user joined.
    pub created_at: Timestamp,
}

/// Status of a membership.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MemberStatus {
    /// The member can act in the organization.
    Active,
}

/// A member as listed by `GET /api/auth/organizations/members`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Member {
    /// `mem_…`
    pub membership_id: String,
    /// `user_…`
    pub user_id: String,
    /// The user's e-mail.
    pub email: String,
    /// The user's display name.
    pub name: Option<String>,
    /// Role in this organization.
    pub role: Role,
    /// `active`.
    pub status: MemberStatus,
    /// When the membership was created.
    pub joined_at: Timestamp,
    /// Last JWT sign-in of the user.
    pub last_login: Option<Timestamp>,
}

/// State of an invitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum InvitationStatus {
    /// Waiting for the invitee.
    Pending,
    /// The invitee joined.
    Accepted,
    /// An admin withdrew it.
    Revoked,
    /// It was not accepted in time.
    Expired,
}

/// An invitation to join an organization.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Invitation {
    /// `inv_…`
    pub invite_id: String,
    /// Invitee e-mail, lower case.
    pub email: String,
    /// The id of the organization it belongs to.
    #[serde(rename = "client_id")]
    pub organization_id: String,
    /// Role offered.
    pub role: Role,
    /// User id of the admin who invited.
    pub invited_by: String,
    /// `pending`, `accepted`, `revoked` or `expired`.
    pub status: InvitationStatus,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it can no longer be accepted.
    pub expires_at: Timestamp,
}

/// Body of `POST /api/auth/organizations/invitations`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewInvitation {
    /// Invitee e-mail.
    pub email: String,
    /// Role offered.
    pub role: Role,
}

/// Body of `PATCH /api/auth/organizations/members/{membership_id}`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MemberUpdate {
    /// The new role.
    pub role: Role,
}
