//! The suppression list, and its check inside a dial's transaction.

use async_trait::async_trait;
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, TransactionTrait,
};
use voiceplane_core::model::{EventStamp, Suppression};
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::SuppressionRepository;
use voiceplane_core::time::Timestamp;
use voiceplane_core::{Error, Result};

use super::{all, keyset, one, record_event};
use crate::SeaRepository;
use crate::convert::{db_err, ts, ts_opt};
use crate::entity::suppression;

fn suppression_from(m: suppression::Model) -> Result<Suppression> {
    Ok(Suppression {
        suppression_id: m.suppression_id,
        organization_id: m.organization_id,
        phone_number: m.phone_number,
        reason: m.reason,
        expires_at: ts_opt(m.expires_at),
        created_at: ts(m.created_at),
        updated_at: ts(m.updated_at),
    })
}

fn of_number(organization_id: &str, phone_number: &str) -> sea_orm::Select<suppression::Entity> {
    suppression::Entity::find()
        .filter(suppression::Column::OrganizationId.eq(organization_id))
        .filter(suppression::Column::PhoneNumber.eq(phone_number))
}

/// Whether `phone_number` is on the organization's suppression list at `now`, read on `db`
/// (a campaign's dial transaction).
pub(super) async fn suppressed<C: ConnectionTrait>(
    db: &C,
    organization_id: &str,
    phone_number: &str,
    now: Timestamp,
) -> Result<bool> {
    Ok(one(
        db,
        of_number(organization_id, phone_number),
        suppression_from,
    )
    .await?
    .is_some_and(|entry| entry.active_at(now)))
}

/// 422 when `phone_number` is on the organization's suppression list at `now`: read on `db`,
/// the dial's own transaction, so that a number suppressed before the dial commits is never
/// dialed.
pub(super) async fn refuse_suppressed<C: ConnectionTrait>(
    db: &C,
    organization_id: &str,
    phone_number: &str,
    now: Timestamp,
) -> Result<()> {
    match one(
        db,
        of_number(organization_id, phone_number),
        suppression_from,
    )
    .await?
    {
        Some(entry) if entry.active_at(now) => Err(Error::unprocessable(format!(
            "{phone_number} is on the suppression list{}; it is never dialed",
            entry
                .expires_at
                .map(|end| format!(" until {}", end.to_rfc3339()))
                .unwrap_or_default()
        ))),
        _ => Ok(()),
    }
}

#[async_trait]
impl SuppressionRepository for SeaRepository {
    async fn suppression_put(
        &self,
        entry: &Suppression,
        stamp: &EventStamp,
    ) -> Result<(Suppression, bool)> {
        let txn = self.db.begin().await.map_err(db_err)?;
        // The lock a dial takes as it is marked sent (`call_dial_mark`): a suppression that
        // commits first is seen by that dial's check.
        super::locks::organization(&txn, &entry.organization_id).await?;
        let row = suppression::ActiveModel {
            suppression_id: Set(entry.suppression_id.clone()),
            organization_id: Set(entry.organization_id.clone()),
            phone_number: Set(entry.phone_number.clone()),
            reason: Set(entry.reason.clone()),
            expires_at: Set(entry.expires_at.map(Timestamp::as_micros)),
            created_at: Set(entry.created_at.as_micros()),
            updated_at: Set(entry.updated_at.as_micros()),
        };
        // One statement whichever request comes first: the number's entry is new, or
        // changed.
        suppression::Entity::insert(row)
            .on_conflict(
                OnConflict::columns([
                    suppression::Column::OrganizationId,
                    suppression::Column::PhoneNumber,
                ])
                .update_columns([
                    suppression::Column::Reason,
                    suppression::Column::ExpiresAt,
                    suppression::Column::UpdatedAt,
                ])
                .to_owned(),
            )
            .exec_without_returning(&txn)
            .await
            .map_err(db_err)?;
        let written = one(
            &txn,
            of_number(&entry.organization_id, &entry.phone_number),
            suppression_from,
        )
        .await?
        .ok_or_else(|| Error::Internal("a suppression vanished while written".into()))?;
        record_event(&txn, &entry.organization_id, &stamp.with(&written)?).await?;
        txn.commit().await.map_err(db_err)?;
        let new = written.suppression_id == entry.suppression_id;
        Ok((written, new))
    }

    async fn suppression_list(
        &self,
        organization_id: &str,
        phone_number: Option<&str>,
        page: &PageQuery,
    ) -> Result<Vec<Suppression>> {
        let mut select = suppression::Entity::find()
            .filter(suppression::Column::OrganizationId.eq(organization_id));
        if let Some(number) = phone_number {
            select = select.filter(suppression::Column::PhoneNumber.eq(number));
        }
        all(
            &self.db,
            keyset(
                select,
                suppression::Column::CreatedAt,
                suppression::Column::SuppressionId,
                page,
            ),
            suppression_from,
        )
        .await
    }

    async fn suppression_delete(
        &self,
        organization_id: &str,
        phone_number: &str,
        stamp: &EventStamp,
    ) -> Result<Option<Suppression>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let Some(entry) = one(
            &txn,
            of_number(organization_id, phone_number),
            suppression_from,
        )
        .await?
        else {
            return Ok(None);
        };
        suppression::Entity::delete_by_id(entry.suppression_id.clone())
            .exec(&txn)
            .await
            .map_err(db_err)?;
        record_event(&txn, organization_id, &stamp.with(&entry)?).await?;
        super::campaigns::suppression_lifted(&txn, organization_id, phone_number, stamp.created_at)
            .await?;
        txn.commit().await.map_err(db_err)?;
        Ok(Some(entry))
    }
}
