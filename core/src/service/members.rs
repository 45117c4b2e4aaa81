//! Members and invitations.

use super::{By, Service};
use crate::auth::{Actor, Principal, RequestContext};
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{
    EventType, Invitation, InvitationStatus, Member, MemberStatus, MemberUpdate, Membership,
    NewInvitation, Outcome, User,
};
use crate::repo::AcceptRecords;
use crate::role::Permission;
use crate::validate;

/// How long an invitation can be accepted.
const INVITATION_TTL_SECS: i64 = 7 * 24 * 3600;

impl Service {
    /// Invites an e-mail address to join with `role` (admins only). 409 when a pending
    /// invitation for that address exists.
    pub async fn invitation_create(
        &self,
        actor: &Actor,
        input: NewInvitation,
    ) -> Result<Invitation> {
        actor.require(Permission::MembersWrite)?;
        let email = validate::email("email", &input.email)?;
        let now = self.now();
        let invitation = Invitation {
            invite_id: self.id(IdKind::Invitation),
            email,
            organization_id: actor.organization_id.clone(),
            role: input.role,
            invited_by: actor.user_id.clone(),
            status: InvitationStatus::Pending,
            created_at: now,
            expires_at: now.add_seconds(INVITATION_TTL_SECS),
        };
        let event = self.event(
            EventType::InvitationCreated,
            &invitation,
            By::Creating(actor),
        )?;
        self.after_write(self.repo.invitation_insert(&invitation, now, &event).await)?;
        Ok(invitation)
    }

    /// Pending, unexpired invitations of the organization, newest first.
    pub async fn invitation_list(&self, actor: &Actor) -> Result<Vec<Invitation>> {
        actor.require(Permission::MembersRead)?;
        self.repo
            .invitation_list_pending(&actor.organization_id, self.now())
            .await
    }

    /// One invitation of the organization, whatever its status; a pending one past its
    /// expiry is shown as `expired`. 404 for an unknown invitation or one of another
    /// organization.
    pub async fn invitation_view(&self, actor: &Actor, invite_id: &str) -> Result<Invitation> {
        actor.require(Permission::MembersRead)?;
        let id = IdKind::Invitation.parse(invite_id)?;
        let mut invitation = self
            .repo
            .invitation_get(Some(&actor.organization_id), &id)
            .await?
            .ok_or_else(|| Error::not_found(format!("invitation {id} not found")))?;
        if invitation.status == InvitationStatus::Pending && invitation.expires_at <= self.now() {
            invitation.status = InvitationStatus::Expired;
        }
        Ok(invitation)
    }

    /// Members of the organization, oldest first.
    pub async fn member_list(&self, actor: &Actor) -> Result<Vec<Member>> {
        actor.require(Permission::MembersRead)?;
        self.repo.member_list(&actor.organization_id).await
    }

    /// Withdraws a pending invitation (admins only).
    pub async fn invitation_revoke(
        &self,
        actor: &Actor,
        invite_id: &str,
    ) -> Result<Outcome<Invitation>> {
        actor.require(Permission::MembersWrite)?;
        let id = IdKind::Invitation.parse(invite_id)?;
        let org = actor.organization_id.as_str();
        let not_found = || Error::not_found(format!("invitation {id} not found"));
        let invitation = self
            .repo
            .invitation_get(Some(org), &id)
            .await?
            .ok_or_else(not_found)?;
        if invitation.status != InvitationStatus::Pending
            || !self.after_write(
                self.repo
                    .invitation_revoke(
                        org,
                        &id,
                        &self.event_stamp(EventType::InvitationRevoked, By::changing(actor)),
                    )
                    .await,
            )?
        {
            return Err(Error::conflict(format!(
                "invitation {id} is no longer pending; only pending invitations can be revoked"
            )));
        }
        let invitation = self
            .repo
            .invitation_get(Some(org), &id)
            .await?
            .ok_or_else(not_found)?;
        Ok(Outcome {
            data: invitation,
            message: "invitation revoked".to_owned(),
        })
    }

    /// Accepts an invitation with the invitee's JWT, whose `email` claim must equal the
    /// invitation's address. Creates the user (from `sub`, `email`, `name`) if new and the
    /// membership; the invitation leaves the pending list. Expired or used invitations: 409.
    pub async fn invitation_accept(
        &self,
        bearer: Option<&str>,
        invite_id: &str,
    ) -> Result<Outcome<Member>> {
        self.invitation_accept_from(bearer, invite_id, RequestContext::default())
            .await
    }

    /// [`invitation_accept`](Self::invitation_accept) for a request from `request`, which the
    /// audit log records with the invitee as the actor.
    pub async fn invitation_accept_from(
        &self,
        bearer: Option<&str>,
        invite_id: &str,
        request: RequestContext,
    ) -> Result<Outcome<Member>> {
        let token = bearer
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                Error::unauthenticated(
                    "accepting an invitation needs the invitee's Authorization: Bearer token",
                )
            })?;
        let claims = self.verify_user_token(token).await?;
        let id = IdKind::Invitation.parse(invite_id)?;
        let invitation = self
            .repo
            .invitation_get(None, &id)
            .await?
            .ok_or_else(|| Error::not_found(format!("invitation {id} not found")))?;
        let email = claims
            .email
            .as_deref()
            .map(|e| validate::email("email claim", e))
            .transpose()?
            .ok_or_else(|| {
                Error::forbidden("the bearer token has no `email` claim to match the invitation")
            })?;
        if email != invitation.email {
            return Err(Error::forbidden(
                "this invitation was sent to another e-mail address",
            ));
        }
        let now = self.now();
        if invitation.status != InvitationStatus::Pending {
            return Err(Error::conflict(format!(
                "invitation {id} is no longer pending"
            )));
        }
        if invitation.expires_at <= now {
            return Err(Error::conflict(format!(
                "invitation {id} has expired; ask for a new one"
            )));
        }
        let records = AcceptRecords {
            user: User {
                user_id: claims.sub.clone(),
                email,
                name: claims
                    .name
                    .as_deref()
                    .map(|n| validate::text("name claim", n, 200))
                    .transpose()?,
                created_at: now,
                last_login: Some(now),
            },
            membership: Membership {
                membership_id: self.id(IdKind::Membership),
                organization_id: invitation.organization_id.clone(),
                user_id: claims.sub,
                role: invitation.role,
                status: MemberStatus::Active,
                created_at: now,
            },
            invitation,
        };
        // The invitee acts as the member they become.
        let invitee = Actor {
            organization_id: records.membership.organization_id.clone(),
            user_id: records.membership.user_id.clone(),
            role: records.membership.role,
            principal: Principal::User,
            scopes: None,
            request,
            versions: None,
        };
        let accepted = self.event(
            EventType::InvitationAccepted,
            &Invitation {
                status: InvitationStatus::Accepted,
                ..records.invitation.clone()
            },
            By::updating(&invitee, &records.invitation)?,
        )?;
        let member = self.after_write(
            self.repo
                .invitation_accept(
                    &records,
                    now,
                    &accepted,
                    &self.event_stamp(EventType::MemberAdded, By::Creating(&invitee)),
                )
                .await,
        )?;
        Ok(Outcome {
            data: member,
            message: "invitation accepted".to_owned(),
        })
    }

    /// Changes a member's role (admins only); the last admin cannot be demoted.
    pub async fn member_update(
        &self,
        actor: &Actor,
        membership_id: &str,
        input: MemberUpdate,
    ) -> Result<Member> {
        actor.require(Permission::MembersWrite)?;
        let id = IdKind::Membership.parse(membership_id)?;
        // The member as it was is read by the write, which refuses a missing one.
        let by = By::changing(actor);
        self.after_write(
            self.repo
                .member_set_role(
                    &actor.organization_id,
                    &id,
                    input.role,
                    &self.event_stamp(EventType::MemberUpdated, by),
                )
                .await,
        )
    }

    /// Removes a member (admins only) and revokes the API keys they created here; the last
    /// admin cannot be removed.
    pub async fn member_remove(
        &self,
        actor: &Actor,
        membership_id: &str,
    ) -> Result<Outcome<Member>> {
        actor.require(Permission::MembersWrite)?;
        let id = IdKind::Membership.parse(membership_id)?;
        let member = self.after_write(
            self.repo
                .member_remove(
                    &actor.organization_id,
                    &id,
                    self.now(),
                    &self.event_stamp(EventType::MemberRemoved, By::Deleting(actor)),
                )
                .await,
        )?;
        self.keys
            .forget(|k| k.organization_id == actor.organization_id && k.user_id == member.user_id);
        Ok(Outcome::new(
            member,
            "member removed; the API keys they created here are revoked",
        ))
    }
}
