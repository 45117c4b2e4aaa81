//! Telephony integrations and their sealed credentials.

use async_trait::async_trait;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Select, TransactionTrait,
};
use voiceplane_core::model::{AuditedChange, Event, EventStamp, Integration, IntegrationFilter};
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::{Change, IntegrationDeletion, IntegrationRepository};
use voiceplane_core::{Error, Result};

use super::phone_numbers::phone_number_from;
use super::{all, keyset, lock_org, one, record_audit, record_event};
use crate::SeaRepository;
use crate::convert::{db_err, enum_str, parse_enum, ts};
use crate::entity::{integration, phone_number};

pub(super) fn integration_from(m: integration::Model) -> Result<Integration> {
    Ok(Integration {
        status: parse_enum("integrations.status", &m.status)?,
        integration_id: m.integration_id,
        organization_id: m.organization_id,
        name: m.name,
        provider: m.provider,
        category: m.category,
        created_at: ts(m.created_at),
        updated_at: ts(m.updated_at),
    })
}

fn integration_row(i: &Integration, sealed: &str) -> integration::ActiveModel {
    integration::ActiveModel {
        integration_id: Set(i.integration_id.clone()),
        organization_id: Set(i.organization_id.clone()),
        name: Set(i.name.clone()),
        provider: Set(i.provider.clone()),
        category: Set(i.category.clone()),
        status: Set(enum_str(&i.status)),
        credentials_ciphertext: Set(sealed.to_owned()),
        created_at: Set(i.created_at.as_micros()),
        updated_at: Set(i.updated_at.as_micros()),
    }
}

fn in_org(organization_id: &str, id: &str) -> Select<integration::Entity> {
    integration::Entity::find_by_id(id.to_owned())
        .filter(integration::Column::OrganizationId.eq(organization_id))
}

/// Writes name, category, status and `updated_at` of `i`, and the credentials when `sealed`
/// is given.
async fn write<C: ConnectionTrait>(db: &C, i: &Integration, sealed: Option<&str>) -> Result<()> {
    let mut row = integration_row(i, sealed.unwrap_or_default());
    row.created_at = sea_orm::ActiveValue::NotSet;
    row.provider = sea_orm::ActiveValue::NotSet;
    if sealed.is_none() {
        row.credentials_ciphertext = sea_orm::ActiveValue::NotSet;
    }
    integration::Entity::update_many()
        .set(row)
        .filter(integration::Column::IntegrationId.eq(&i.integration_id))
        .filter(integration::Column::OrganizationId.eq(&i.organization_id))
        .exec(db)
        .await
        .map_err(db_err)?;
    Ok(())
}

#[async_trait]
impl IntegrationRepository for SeaRepository {
    async fn integration_insert(&self, i: &Integration, sealed: &str, event: &Event) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        integration::Entity::insert(integration_row(i, sealed))
            .exec_without_returning(&txn)
            .await
            .map_err(db_err)?;
        record_event(&txn, &i.organization_id, event).await?;
        txn.commit().await.map_err(db_err)
    }

    async fn integration_get(
        &self,
        organization_id: &str,
        id: &str,
    ) -> Result<Option<Integration>> {
        one(&self.db, in_org(organization_id, id), integration_from).await
    }

    async fn integration_get_sealed(
        &self,
        organization_id: &str,
        id: &str,
    ) -> Result<Option<(Integration, String)>> {
        one(&self.db, in_org(organization_id, id), |m| {
            let sealed = m.credentials_ciphertext.clone();
            Ok((integration_from(m)?, sealed))
        })
        .await
    }

    async fn integration_list(
        &self,
        organization_id: &str,
        filter: &IntegrationFilter,
        page: &PageQuery,
    ) -> Result<Vec<Integration>> {
        let mut select = integration::Entity::find()
            .filter(integration::Column::OrganizationId.eq(organization_id));
        if let Some(status) = &filter.status {
            select = select.filter(integration::Column::Status.eq(enum_str(status)));
        }
        all(
            &self.db,
            keyset(
                select,
                integration::Column::CreatedAt,
                integration::Column::IntegrationId,
                page,
            ),
            integration_from,
        )
        .await
    }

    async fn integration_update(
        &self,
        organization_id: &str,
        integration_id: &str,
        change: Change<'_, Integration>,
        sealed: Option<&str>,
        audit: &AuditedChange,
    ) -> Result<Option<Integration>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let Some(before) = one(
            &txn,
            in_org(organization_id, integration_id).lock_exclusive(),
            integration_from,
        )
        .await?
        else {
            return Ok(None);
        };
        let after = audit.change(&before, change)?;
        write(&txn, &after, sealed).await?;
        let entry = audit.entry(integration_id, Some(&before), Some(&after))?;
        record_audit(&txn, organization_id, &entry).await?;
        txn.commit().await.map_err(db_err)?;
        // Its route, kept by every instance, follows (migration m0025).
        self.agents_changed().await;
        Ok(Some(after))
    }

    async fn integration_validated(
        &self,
        organization_id: &str,
        integration_id: &str,
        change: Change<'_, Integration>,
        event: &EventStamp,
    ) -> Result<Option<Integration>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let Some(before) = one(
            &txn,
            in_org(organization_id, integration_id).lock_exclusive(),
            integration_from,
        )
        .await?
        else {
            return Ok(None);
        };
        let after = event.change(&before, change)?;
        write(&txn, &after, None).await?;
        record_event(&txn, organization_id, &event.updated(&before, &after)?).await?;
        txn.commit().await.map_err(db_err)?;
        self.agents_changed().await;
        Ok(Some(after))
    }

    async fn integration_delete(
        &self,
        organization_id: &str,
        id: &str,
        event: &EventStamp,
    ) -> Result<IntegrationDeletion> {
        let txn = self.db.begin().await.map_err(db_err)?;
        // Phone number writes take the same lock, so no number can start referencing the
        // integration between the check and the delete; the RESTRICT foreign key backs this up.
        lock_org(&txn, organization_id).await?;
        let Some(integration) = one(&txn, in_org(organization_id, id), integration_from).await?
        else {
            return Ok(IntegrationDeletion::NotFound);
        };
        // A stale If-Match is answered before whether the integration may go.
        event.preconditions.check(&integration)?;
        let numbers = all(
            &txn,
            phone_number::Entity::find()
                .filter(phone_number::Column::OrganizationId.eq(organization_id))
                .filter(phone_number::Column::IntegrationId.eq(id))
                .order_by_asc(phone_number::Column::CreatedAt)
                .order_by_asc(phone_number::Column::PhoneNumberId),
            phone_number_from,
        )
        .await?;
        if !numbers.is_empty() {
            return Ok(IntegrationDeletion::Referenced(numbers));
        }
        integration::Entity::delete_by_id(id.to_owned())
            .exec(&txn)
            .await
            .map_err(|e| match e.sql_err() {
                Some(sea_orm::SqlErr::ForeignKeyConstraintViolation(_)) => Error::conflict(
                    "integration is still referenced by phone numbers; remove or reassign them first",
                ),
                _ => db_err(e),
            })?;
        record_event(&txn, organization_id, &event.with(&integration)?).await?;
        txn.commit().await.map_err(db_err)?;
        self.agents_changed().await;
        Ok(IntegrationDeletion::Deleted(integration))
    }
}
