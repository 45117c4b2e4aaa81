//! Members and invitations.

use super::*;

impl Service {
    /// Invites an e-mail address to join with `role` (admins only). 409 when a pending
    /// invitation for that address exists.
    pub async fn invitation_create(
        &self,
        actor: &Actor,
        input: NewInvitation,
    ) -> Result<Invitation> {
        actor.require(Permission::InvitationsManage)?;
        let email = validate::email("email", &input.email)?;
        let now = self.now();
        let invitation = Invitation {
            invite_id: self.id(IdKind::Invitation),
            email,
            client_id: actor.organization_id.clone(),
            role: input.role,
            invited_by: actor.user_id.clone(),
            status: InvitationStatus::Pending,
            created_at: now,
            expires_at: now.add_seconds(INVITATION_TTL_SECS),
        };
        self.repo.invitation_insert(&invitation, now).await?;
        Ok(invitation)
    }

    /// Pending, unexpired invitations of the organization, newest first.
    pub async fn invitation_list(&self, actor: &Actor) -> Result<Vec<Invitation>> {
        actor.require(Permission::InvitationsRead)?;
        self.repo
            .invitation_list_pending(&actor.organization_id, self.now())
            .await
    }

    /// Members of the organization, oldest first.
    pub async fn member_list(&self, actor: &Actor) -> Result<Vec<Member>> {
        actor.require(Permission::MembersRead)?;
        self.repo.member_list(&actor.organization_id).await
    }
}
