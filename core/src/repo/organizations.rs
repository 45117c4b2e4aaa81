//! The database side of organizations, their users, memberships and invitations
//! ([`OrganizationRepository`]), with what bootstrap and accepting an invitation write.

use async_trait::async_trait;

use crate::error::Result;
use crate::model::{ApiKey, Event, EventStamp, Invitation, Member, Membership, Organization, User};
use crate::role::Role;
use crate::time::Timestamp;

/// Everything `bootstrap` writes, in one transaction.
#[derive(Debug, Clone)]
pub struct BootstrapRecords {
    /// The new organization.
    pub organization: Organization,
    /// The admin user.
    pub user: User,
    /// Whether `user` must be inserted (false when the e-mail already belongs to a user).
    pub user_is_new: bool,
    /// The admin membership.
    pub membership: Membership,
    /// The admin API key.
    pub api_key: ApiKey,
    /// SHA-256 (hex) of the key's secret.
    pub secret_hash: String,
}

/// Organizations, users, memberships and invitations.
#[async_trait]
pub trait OrganizationRepository: Send + Sync {
    /// Writes all of `records` atomically.
    async fn bootstrap(&self, records: &BootstrapRecords) -> Result<()>;
    /// The user with this e-mail (lower case), if any.
    async fn user_find_by_email(&self, email: &str) -> Result<Option<User>>;
    /// Sets the user's `last_login = now` unless it is already later than `not_before`; the
    /// condition keeps the write rate at one per user per interval.
    async fn user_touch_login(
        &self,
        user_id: &str,
        now: Timestamp,
        not_before: Timestamp,
    ) -> Result<()>;
    /// The membership of `user_id` in `organization_id`, if any.
    async fn membership_find(
        &self,
        organization_id: &str,
        user_id: &str,
    ) -> Result<Option<Membership>>;
    /// Every member of the organization, oldest first.
    async fn member_list(&self, organization_id: &str) -> Result<Vec<Member>>;
    /// Stores a new invitation. Conflict when a pending, unexpired invitation for the same
    /// e-mail exists in the organization; expired pending ones stop counting as pending.
    async fn invitation_insert(
        &self,
        invitation: &Invitation,
        now: Timestamp,
        event: &Event,
    ) -> Result<()>;
    /// Pending invitations that have not expired at `now`, newest first.
    async fn invitation_list_pending(
        &self,
        organization_id: &str,
        now: Timestamp,
    ) -> Result<Vec<Invitation>>;
    /// The invitation, in any organization when `organization_id` is `None`.
    async fn invitation_get(
        &self,
        organization_id: Option<&str>,
        invite_id: &str,
    ) -> Result<Option<Invitation>>;
    /// Moves a pending invitation to `revoked` and records `event` with the revoked
    /// invitation; false (and no event) when it was not pending.
    async fn invitation_revoke(
        &self,
        organization_id: &str,
        invite_id: &str,
        event: &EventStamp,
    ) -> Result<bool>;
    /// Accepts a pending, unexpired invitation atomically: marks it `accepted`, inserts the user
    /// when new, and creates the membership. Conflict when the invitation is no longer pending
    /// or expired at `now`, or when the user is already a member. Records `accepted` and
    /// `member_added` (with the new member).
    async fn invitation_accept(
        &self,
        accept: &AcceptRecords,
        now: Timestamp,
        accepted: &Event,
        member_added: &EventStamp,
    ) -> Result<Member>;
    /// One member of the organization.
    async fn member_get(
        &self,
        organization_id: &str,
        membership_id: &str,
    ) -> Result<Option<Member>>;
    /// Changes a member's role. Conflict when that would leave the organization without an
    /// admin; the check and the change are one transaction, serialized per organization.
    /// Records `event` with the changed member.
    async fn member_set_role(
        &self,
        organization_id: &str,
        membership_id: &str,
        role: Role,
        event: &EventStamp,
    ) -> Result<Member>;
    /// Removes a member and revokes the API keys that member created in the organization.
    /// Conflict when the member is the last admin. Records `event` with the member as it was.
    async fn member_remove(
        &self,
        organization_id: &str,
        membership_id: &str,
        now: Timestamp,
        event: &EventStamp,
    ) -> Result<Member>;
}

/// What accepting an invitation writes.
#[derive(Debug, Clone)]
pub struct AcceptRecords {
    /// The invitation being accepted.
    pub invitation: Invitation,
    /// The accepting user (inserted if no user with this id exists).
    pub user: User,
    /// The new membership.
    pub membership: Membership,
}
