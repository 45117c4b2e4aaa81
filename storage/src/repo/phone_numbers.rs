//! Phone numbers.

use async_trait::async_trait;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, TransactionTrait,
};
use voiceplane_core::model::{Event, EventStamp, PhoneNumber, PhoneNumberFilter};
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::{Change, PhoneNumberRepository};
use voiceplane_core::{Error, Result};

use super::{all, keyset, lock_org, one, record_event, require_existing};
use crate::SeaRepository;
use crate::convert::{db_err, db_err_unique, enum_str, parse_enum, ts};
use crate::entity::{agent, integration, phone_number};

pub(super) fn phone_number_from(m: phone_number::Model) -> Result<PhoneNumber> {
    Ok(PhoneNumber {
        status: parse_enum("phone_numbers.status", &m.status)?,
        phone_number_id: m.phone_number_id,
        phone_number: m.phone_number,
        organization_id: m.organization_id,
        provider: m.provider,
        supports_inbound: m.supports_inbound,
        supports_outbound: m.supports_outbound,
        assigned_agent_id: m.assigned_agent_id,
        integration_id: m.integration_id,
        provider_number_id: m.provider_number_id,
        connected_at: m.connected_at.map(ts),
        created_at: ts(m.created_at),
        updated_at: ts(m.updated_at),
    })
}

fn phone_number_row(n: &PhoneNumber) -> phone_number::ActiveModel {
    phone_number::ActiveModel {
        phone_number_id: Set(n.phone_number_id.clone()),
        organization_id: Set(n.organization_id.clone()),
        phone_number: Set(n.phone_number.clone()),
        provider: Set(n.provider.clone()),
        status: Set(enum_str(&n.status)),
        supports_inbound: Set(n.supports_inbound),
        supports_outbound: Set(n.supports_outbound),
        assigned_agent_id: Set(n.assigned_agent_id.clone()),
        integration_id: Set(n.integration_id.clone()),
        provider_number_id: Set(n.provider_number_id.clone()),
        connected_at: Set(n.connected_at.map(|t| t.as_micros())),
        created_at: Set(n.created_at.as_micros()),
        updated_at: Set(n.updated_at.as_micros()),
    }
}

/// Checks, under the organization lock, that the agent and integration a number points at
/// exist in its organization.
async fn check_references<C: ConnectionTrait>(db: &C, n: &PhoneNumber) -> Result<()> {
    let org = n.organization_id.as_str();
    if let Some(agent_id) = &n.assigned_agent_id {
        require_existing(
            db,
            agent::Entity::find().filter(agent::Column::OrganizationId.eq(org)),
            agent::Column::AgentId,
            std::slice::from_ref(agent_id),
            "assigned_agent_id",
        )
        .await?;
    }
    if let Some(integration_id) = &n.integration_id {
        require_existing(
            db,
            integration::Entity::find().filter(integration::Column::OrganizationId.eq(org)),
            integration::Column::IntegrationId,
            std::slice::from_ref(integration_id),
            "integration_id",
        )
        .await?;
    }
    Ok(())
}

/// A write's error: a duplicate number is a 409; a foreign key the database refused (a
/// reference deleted under us) is a 400.
fn write_err(e: sea_orm::DbErr, n: &PhoneNumber) -> Error {
    match e.sql_err() {
        Some(sea_orm::SqlErr::ForeignKeyConstraintViolation(_)) => Error::invalid(
            "assigned_agent_id or integration_id no longer exists in this organization",
        ),
        _ => db_err_unique(e, || {
            format!(
                "phone number {} already exists in this organization",
                n.phone_number
            )
        }),
    }
}

#[async_trait]
impl PhoneNumberRepository for SeaRepository {
    async fn phone_number_insert(&self, n: &PhoneNumber, event: &Event) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        lock_org(&txn, &n.organization_id).await?;
        check_references(&txn, n).await?;
        phone_number::Entity::insert(phone_number_row(n))
            .exec_without_returning(&txn)
            .await
            .map_err(|e| write_err(e, n))?;
        record_event(&txn, &n.organization_id, event).await?;
        txn.commit().await.map_err(db_err)?;
        self.agents_changed().await;
        Ok(())
    }

    async fn phone_number_get(
        &self,
        organization_id: &str,
        id: &str,
    ) -> Result<Option<PhoneNumber>> {
        one(
            &self.db,
            phone_number::Entity::find_by_id(id.to_owned())
                .filter(phone_number::Column::OrganizationId.eq(organization_id)),
            phone_number_from,
        )
        .await
    }

    async fn phone_number_list(
        &self,
        organization_id: &str,
        filter: &PhoneNumberFilter,
        page: &PageQuery,
    ) -> Result<Vec<PhoneNumber>> {
        let mut select = phone_number::Entity::find()
            .filter(phone_number::Column::OrganizationId.eq(organization_id));
        if let Some(agent_id) = &filter.agent_id {
            select = select.filter(phone_number::Column::AssignedAgentId.eq(agent_id.as_str()));
        }
        all(
            &self.db,
            keyset(
                select,
                phone_number::Column::CreatedAt,
                phone_number::Column::PhoneNumberId,
                page,
            ),
            phone_number_from,
        )
        .await
    }

    async fn phone_number_update(
        &self,
        organization_id: &str,
        phone_number_id: &str,
        change: Change<'_, PhoneNumber>,
        event: &EventStamp,
    ) -> Result<Option<PhoneNumber>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        lock_org(&txn, organization_id).await?;
        let Some(before) = one(
            &txn,
            phone_number::Entity::find_by_id(phone_number_id.to_owned())
                .filter(phone_number::Column::OrganizationId.eq(organization_id)),
            phone_number_from,
        )
        .await?
        else {
            return Ok(None);
        };
        let n = event.change(&before, change)?;
        check_references(&txn, &n).await?;
        let mut row = phone_number_row(&n);
        row.created_at = sea_orm::ActiveValue::NotSet;
        phone_number::Entity::update_many()
            .set(row)
            .filter(phone_number::Column::PhoneNumberId.eq(&n.phone_number_id))
            .filter(phone_number::Column::OrganizationId.eq(&n.organization_id))
            .exec(&txn)
            .await
            .map_err(|e| write_err(e, &n))?;
        record_event(&txn, organization_id, &event.updated(&before, &n)?).await?;
        txn.commit().await.map_err(db_err)?;
        self.agents_changed().await;
        Ok(Some(n))
    }

    async fn phone_number_delete(
        &self,
        organization_id: &str,
        id: &str,
        event: &EventStamp,
    ) -> Result<Option<PhoneNumber>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let Some(number) = one(
            &txn,
            phone_number::Entity::find_by_id(id.to_owned())
                .filter(phone_number::Column::OrganizationId.eq(organization_id)),
            phone_number_from,
        )
        .await?
        else {
            return Ok(None);
        };
        let deleted = phone_number::Entity::delete_many()
            .filter(phone_number::Column::PhoneNumberId.eq(id))
            .filter(phone_number::Column::OrganizationId.eq(organization_id))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        if deleted.rows_affected != 1 {
            return Ok(None);
        }
        record_event(&txn, organization_id, &event.with(&number)?).await?;
        txn.commit().await.map_err(db_err)?;
        self.agents_changed().await;
        Ok(Some(number))
    }
}
