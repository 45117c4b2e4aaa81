//! Health, organizations, users, memberships and invitations.

use async_trait::async_trait;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, TransactionTrait,
};
use voiceplane_core::model::{
    ApiKeyStatus, Event, EventStamp, Invitation, InvitationStatus, Member, Membership, User,
};
use voiceplane_core::repo::{
    AcceptRecords, BootstrapRecords, HealthRepository, OrganizationRepository,
};
use voiceplane_core::role::Role;
use voiceplane_core::time::Timestamp;
use voiceplane_core::{Error, Result};

use super::api_keys::api_key_row;
use super::changes::ChangeFeed;
use super::{all, lock_org, one, record_event, touch};
use crate::SeaRepository;
use crate::convert::{db_err, db_err_unique, enum_str, parse_enum, ts, ts_opt};
use crate::entity::{api_key, invitation, membership, organization, user};

fn invitation_from(m: invitation::Model) -> Result<Invitation> {
    Ok(Invitation {
        role: parse_enum("invitations.role", &m.role)?,
        status: parse_enum("invitations.status", &m.status)?,
        invite_id: m.invite_id,
        email: m.email,
        organization_id: m.organization_id,
        invited_by: m.invited_by,
        created_at: ts(m.created_at),
        expires_at: ts(m.expires_at),
    })
}

fn user_from(m: user::Model) -> User {
    User {
        user_id: m.user_id,
        email: m.email,
        name: m.name,
        created_at: ts(m.created_at),
        last_login: ts_opt(m.last_login),
    }
}

fn membership_from(m: membership::Model) -> Result<Membership> {
    Ok(Membership {
        role: parse_enum("memberships.role", &m.role)?,
        status: parse_enum("memberships.status", &m.status)?,
        membership_id: m.membership_id,
        organization_id: m.organization_id,
        user_id: m.user_id,
        created_at: ts(m.created_at),
    })
}

async fn insert_user<C: ConnectionTrait>(db: &C, u: &User) -> Result<()> {
    user::Entity::insert(user::ActiveModel {
        user_id: Set(u.user_id.clone()),
        email: Set(u.email.clone()),
        name: Set(u.name.clone()),
        created_at: Set(u.created_at.as_micros()),
        last_login: Set(u.last_login.map(Timestamp::as_micros)),
    })
    .exec_without_returning(db)
    .await
    .map_err(|e| {
        db_err_unique(e, || {
            format!("a user with e-mail {} already exists", u.email)
        })
    })?;
    Ok(())
}

async fn insert_membership<C: ConnectionTrait>(db: &C, m: &Membership) -> Result<()> {
    membership::Entity::insert(membership::ActiveModel {
        membership_id: Set(m.membership_id.clone()),
        organization_id: Set(m.organization_id.clone()),
        user_id: Set(m.user_id.clone()),
        role: Set(m.role.as_str().to_owned()),
        status: Set(enum_str(&m.status)),
        created_at: Set(m.created_at.as_micros()),
    })
    .exec_without_returning(db)
    .await
    .map_err(|e| {
        db_err_unique(e, || {
            "the user is already a member of this organization".to_owned()
        })
    })?;
    Ok(())
}

fn member_from(m: membership::Model, u: Option<user::Model>) -> Result<Member> {
    let u =
        u.ok_or_else(|| Error::Internal(format!("membership {} has no user", m.membership_id)))?;
    let m = membership_from(m)?;
    Ok(Member {
        membership_id: m.membership_id,
        user_id: m.user_id,
        email: u.email,
        name: u.name,
        role: m.role,
        status: m.status,
        joined_at: m.created_at,
        last_login: ts_opt(u.last_login),
    })
}

async fn member_get<C: ConnectionTrait>(
    db: &C,
    organization_id: &str,
    membership_id: &str,
) -> Result<Option<Member>> {
    let row = membership::Entity::find_by_id(membership_id.to_owned())
        .filter(membership::Column::OrganizationId.eq(organization_id))
        .find_also_related(user::Entity)
        .one(db)
        .await
        .map_err(db_err)?;
    row.map(|(m, u)| member_from(m, u)).transpose()
}

/// The member, locked in with the organization, and whether changing it away from `admin`
/// would leave no admin. Runs after [`lock_org`] in the changing transaction.
async fn member_for_change<C: ConnectionTrait>(
    db: &C,
    organization_id: &str,
    membership_id: &str,
) -> Result<(Member, bool)> {
    use sea_orm::PaginatorTrait;
    let member = member_get(db, organization_id, membership_id)
        .await?
        .ok_or_else(|| Error::not_found(format!("member {membership_id} not found")))?;
    let last_admin = member.role == Role::Admin
        && membership::Entity::find()
            .filter(membership::Column::OrganizationId.eq(organization_id))
            .filter(membership::Column::Role.eq(Role::Admin.as_str()))
            .count(db)
            .await
            .map_err(db_err)?
            <= 1;
    Ok((member, last_admin))
}

#[async_trait]
impl HealthRepository for SeaRepository {
    async fn ping(&self) -> Result<()> {
        self.db.ping().await.map_err(|e| {
            tracing::warn!(error = %e, "database ping failed");
            Error::Unavailable("the database is unavailable".to_owned())
        })
    }
}

#[async_trait]
impl OrganizationRepository for SeaRepository {
    async fn bootstrap(&self, r: &BootstrapRecords) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        organization::Entity::insert(organization::ActiveModel {
            organization_id: Set(r.organization.organization_id.clone()),
            name: Set(r.organization.name.clone()),
            created_at: Set(r.organization.created_at.as_micros()),
            // Keep everything until an admin sets a policy.
            recording_retention_days: Set(None),
            transcript_retention_days: Set(None),
            call_retention_days: Set(None),
            runtime_stream_url: Set(None),
            calling_hours_start: Set(None),
            calling_hours_end: Set(None),
            timezone: Set(None),
            max_concurrent_calls: Set(None),
            monthly_credit_limit: Set(None),
        })
        .exec_without_returning(&txn)
        .await
        .map_err(db_err)?;
        if r.user_is_new {
            insert_user(&txn, &r.user).await?;
        }
        insert_membership(&txn, &r.membership).await?;
        api_key::Entity::insert(api_key_row(&r.api_key, &r.secret_hash)?)
            .exec_without_returning(&txn)
            .await
            .map_err(db_err)?;
        txn.commit().await.map_err(db_err)
    }

    async fn user_find_by_email(&self, email: &str) -> Result<Option<User>> {
        Ok(user::Entity::find()
            .filter(user::Column::Email.eq(email))
            .one(&self.db)
            .await
            .map_err(db_err)?
            .map(user_from))
    }

    async fn user_touch_login(
        &self,
        user_id: &str,
        now: Timestamp,
        not_before: Timestamp,
    ) -> Result<()> {
        touch::<user::Entity, _>(
            &self.db,
            user::Column::UserId,
            user_id,
            user::Column::LastLogin,
            now,
            not_before,
        )
        .await
    }

    async fn membership_find(
        &self,
        organization_id: &str,
        user_id: &str,
    ) -> Result<Option<Membership>> {
        one(
            &self.db,
            membership::Entity::find()
                .filter(membership::Column::OrganizationId.eq(organization_id))
                .filter(membership::Column::UserId.eq(user_id)),
            membership_from,
        )
        .await
    }

    async fn member_list(&self, organization_id: &str) -> Result<Vec<Member>> {
        let rows = membership::Entity::find()
            .filter(membership::Column::OrganizationId.eq(organization_id))
            .find_also_related(user::Entity)
            .order_by_asc(membership::Column::CreatedAt)
            .order_by_asc(membership::Column::MembershipId)
            .all(&self.db)
            .await
            .map_err(db_err)?;
        rows.into_iter().map(|(m, u)| member_from(m, u)).collect()
    }

    async fn invitation_insert(
        &self,
        inv: &Invitation,
        now: Timestamp,
        event: &Event,
    ) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        // A pending invitation past its expiry no longer blocks a new one.
        invitation::Entity::update_many()
            .col_expr(invitation::Column::Status, Expr::val("expired"))
            .filter(invitation::Column::OrganizationId.eq(&inv.organization_id))
            .filter(invitation::Column::Email.eq(&inv.email))
            .filter(invitation::Column::Status.eq("pending"))
            .filter(invitation::Column::ExpiresAt.lte(now.as_micros()))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        invitation::Entity::insert(invitation::ActiveModel {
            invite_id: Set(inv.invite_id.clone()),
            organization_id: Set(inv.organization_id.clone()),
            email: Set(inv.email.clone()),
            role: Set(inv.role.as_str().to_owned()),
            invited_by: Set(inv.invited_by.clone()),
            status: Set(enum_str(&inv.status)),
            created_at: Set(inv.created_at.as_micros()),
            expires_at: Set(inv.expires_at.as_micros()),
        })
        .exec_without_returning(&txn)
        .await
        .map_err(|e| {
            db_err_unique(e, || {
                format!("a pending invitation for {} already exists", inv.email)
            })
        })?;
        record_event(&txn, &inv.organization_id, event).await?;
        txn.commit().await.map_err(db_err)
    }

    async fn invitation_list_pending(
        &self,
        organization_id: &str,
        now: Timestamp,
    ) -> Result<Vec<Invitation>> {
        all(
            &self.db,
            invitation::Entity::find()
                .filter(invitation::Column::OrganizationId.eq(organization_id))
                .filter(invitation::Column::Status.eq("pending"))
                .filter(invitation::Column::ExpiresAt.gt(now.as_micros()))
                .order_by_desc(invitation::Column::CreatedAt)
                .order_by_desc(invitation::Column::InviteId),
            invitation_from,
        )
        .await
    }

    async fn invitation_get(
        &self,
        organization_id: Option<&str>,
        invite_id: &str,
    ) -> Result<Option<Invitation>> {
        let mut select = invitation::Entity::find_by_id(invite_id.to_owned());
        if let Some(org) = organization_id {
            select = select.filter(invitation::Column::OrganizationId.eq(org));
        }
        one(&self.db, select, invitation_from).await
    }

    async fn invitation_revoke(
        &self,
        organization_id: &str,
        invite_id: &str,
        event: &EventStamp,
    ) -> Result<bool> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let Some(before) = one(
            &txn,
            invitation::Entity::find_by_id(invite_id.to_owned())
                .filter(invitation::Column::OrganizationId.eq(organization_id))
                .lock_exclusive(),
            invitation_from,
        )
        .await?
        else {
            return Ok(false);
        };
        event.preconditions.check(&before)?;
        let result = invitation::Entity::update_many()
            .col_expr(
                invitation::Column::Status,
                Expr::val(enum_str(&InvitationStatus::Revoked)),
            )
            .filter(invitation::Column::InviteId.eq(invite_id))
            .filter(invitation::Column::OrganizationId.eq(organization_id))
            .filter(invitation::Column::Status.eq(enum_str(&InvitationStatus::Pending)))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        if result.rows_affected != 1 {
            return Ok(false);
        }
        let invitation = one(
            &txn,
            invitation::Entity::find_by_id(invite_id.to_owned()),
            invitation_from,
        )
        .await?
        .ok_or_else(|| Error::Internal("revoked invitation vanished".to_owned()))?;
        record_event(&txn, organization_id, &event.updated(&before, &invitation)?).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(true)
    }

    async fn invitation_accept(
        &self,
        a: &AcceptRecords,
        now: Timestamp,
        accepted: &Event,
        member_added: &EventStamp,
    ) -> Result<Member> {
        let org = a.invitation.organization_id.as_str();
        let txn = self.db.begin().await.map_err(db_err)?;
        lock_org(&txn, org).await?;
        // Only one acceptance can move the invitation out of `pending`.
        let taken = invitation::Entity::update_many()
            .col_expr(
                invitation::Column::Status,
                Expr::val(enum_str(&InvitationStatus::Accepted)),
            )
            .filter(invitation::Column::InviteId.eq(&a.invitation.invite_id))
            .filter(invitation::Column::Status.eq(enum_str(&InvitationStatus::Pending)))
            .filter(invitation::Column::ExpiresAt.gt(now.as_micros()))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        if taken.rows_affected != 1 {
            return Err(Error::conflict(format!(
                "invitation {} is no longer pending or has expired",
                a.invitation.invite_id
            )));
        }
        let existing = user::Entity::find_by_id(a.user.user_id.clone())
            .one(&txn)
            .await
            .map_err(db_err)?;
        match existing {
            Some(_) => {
                user::Entity::update_many()
                    .col_expr(user::Column::LastLogin, Expr::val(now.as_micros()))
                    .filter(user::Column::UserId.eq(&a.user.user_id))
                    .exec(&txn)
                    .await
                    .map_err(db_err)?;
            }
            None => insert_user(&txn, &a.user).await?,
        }
        insert_membership(&txn, &a.membership).await?;
        let member = member_get(&txn, org, &a.membership.membership_id)
            .await?
            .ok_or_else(|| Error::Internal("accepted membership vanished".to_owned()))?;
        record_event(&txn, org, accepted).await?;
        record_event(&txn, org, &member_added.with(&member)?).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(member)
    }

    async fn member_get(
        &self,
        organization_id: &str,
        membership_id: &str,
    ) -> Result<Option<Member>> {
        member_get(&self.db, organization_id, membership_id).await
    }

    async fn member_set_role(
        &self,
        organization_id: &str,
        membership_id: &str,
        role: Role,
        event: &EventStamp,
    ) -> Result<Member> {
        let txn = self.db.begin().await.map_err(db_err)?;
        lock_org(&txn, organization_id).await?;
        let (mut member, last_admin) =
            member_for_change(&txn, organization_id, membership_id).await?;
        if last_admin && role != Role::Admin {
            return Err(Error::conflict(
                "this member is the organization's last admin; make another member admin first",
            ));
        }
        membership::Entity::update_many()
            .col_expr(membership::Column::Role, Expr::val(role.as_str()))
            .filter(membership::Column::MembershipId.eq(membership_id))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        let before = member.clone();
        member.role = role;
        record_event(&txn, organization_id, &event.updated(&before, &member)?).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(member)
    }

    async fn member_remove(
        &self,
        organization_id: &str,
        membership_id: &str,
        now: Timestamp,
        event: &EventStamp,
    ) -> Result<Member> {
        let txn = self.db.begin().await.map_err(db_err)?;
        lock_org(&txn, organization_id).await?;
        let (member, last_admin) = member_for_change(&txn, organization_id, membership_id).await?;
        if last_admin {
            return Err(Error::conflict(
                "this member is the organization's last admin and cannot be removed",
            ));
        }
        membership::Entity::delete_by_id(membership_id.to_owned())
            .exec(&txn)
            .await
            .map_err(db_err)?;
        // Keys the member created act on their behalf: they stop with the membership.
        api_key::Entity::update_many()
            .col_expr(
                api_key::Column::Status,
                Expr::val(enum_str(&ApiKeyStatus::Revoked)),
            )
            .col_expr(api_key::Column::RevokedAt, Expr::val(now.as_micros()))
            .filter(api_key::Column::OrganizationId.eq(organization_id))
            .filter(api_key::Column::UserId.eq(&member.user_id))
            .filter(api_key::Column::Status.eq(enum_str(&ApiKeyStatus::Active)))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        record_event(&txn, organization_id, &event.with(&member)?).await?;
        let versions = ChangeFeed::raise_credentials(&txn).await?;
        txn.commit().await.map_err(db_err)?;
        self.changes.committed(versions).await;
        Ok(member)
    }
}
