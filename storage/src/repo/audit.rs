//! The audit log: written by every other area's writes through [`record_audit`] inside their
//! transactions (most of them through `record_event`, from the entry their event carries);
//! listed and swept here.

use async_trait::async_trait;
use sea_orm::sea_query::Query;
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter, QueryTrait};
use voiceplane_core::Result;
use voiceplane_core::model::{AuditActor, AuditEntry, AuditFilter};
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::AuditRepository;
use voiceplane_core::time::Timestamp;

use super::{all, keyset};
use crate::SeaRepository;
use crate::convert::{db_err, from_json, parse_enum, to_json, ts};
use crate::entity::audit;
use crate::exec::Exec;

fn entry_from(m: audit::Model) -> Result<AuditEntry> {
    Ok(AuditEntry {
        actor: AuditActor {
            actor_type: parse_enum("audit_log.actor_type", &m.actor_type)?,
            key_id: m.actor_key_id,
            user_id: m.actor_user_id,
        },
        changes: from_json("audit_log.changes", &m.changes)?,
        audit_id: m.audit_id,
        action: m.action,
        resource_type: m.resource_type,
        resource_id: m.resource_id,
        request_id: m.request_id,
        ip: m.ip,
        created_at: ts(m.created_at),
    })
}

/// Stores `entry` of `organization_id` through `db`, which must be the transaction of the
/// change it records: both commit or roll back together.
pub(crate) async fn record_audit<C: Exec>(
    db: &C,
    organization_id: &str,
    entry: &AuditEntry,
) -> Result<()> {
    let insert = audit::Entity::insert(audit::ActiveModel {
        audit_id: Set(entry.audit_id.clone()),
        organization_id: Set(organization_id.to_owned()),
        created_at: Set(entry.created_at.as_micros()),
        action: Set(entry.action.clone()),
        resource_type: Set(entry.resource_type.clone()),
        resource_id: Set(entry.resource_id.clone()),
        actor_type: Set(crate::convert::enum_str(&entry.actor.actor_type)),
        actor_key_id: Set(entry.actor.key_id.clone()),
        actor_user_id: Set(entry.actor.user_id.clone()),
        changes: Set(to_json(&entry.changes)?),
        request_id: Set(entry.request_id.clone()),
        ip: Set(entry.ip.clone()),
    });
    db.run(insert.build(db.backend())).await?;
    Ok(())
}

#[async_trait]
impl AuditRepository for SeaRepository {
    async fn audit_list(
        &self,
        organization_id: &str,
        filter: &AuditFilter,
        page: &PageQuery,
    ) -> Result<Vec<AuditEntry>> {
        let mut select =
            audit::Entity::find().filter(audit::Column::OrganizationId.eq(organization_id));
        for (column, value) in [
            (audit::Column::Action, &filter.action),
            (audit::Column::ResourceId, &filter.resource_id),
            (audit::Column::ActorKeyId, &filter.actor_key_id),
            (audit::Column::ActorUserId, &filter.actor_user_id),
        ] {
            if let Some(value) = value {
                select = select.filter(column.eq(value.as_str()));
            }
        }
        if let Some(after) = filter.created_after {
            select = select.filter(audit::Column::CreatedAt.gte(after.as_micros()));
        }
        if let Some(before) = filter.created_before {
            select = select.filter(audit::Column::CreatedAt.lt(before.as_micros()));
        }
        all(
            &self.db,
            keyset(
                select,
                audit::Column::CreatedAt,
                audit::Column::AuditId,
                page,
            ),
            entry_from,
        )
        .await
    }

    async fn audit_delete_older_than(&self, cutoff: Timestamp, limit: u64) -> Result<u64> {
        // One bounded batch per call, like the events sweep: short transactions and locks.
        let oldest = Query::select()
            .column(audit::Column::AuditId)
            .from(audit::Entity)
            .and_where(audit::Column::CreatedAt.lt(cutoff.as_micros()))
            .order_by(audit::Column::CreatedAt, sea_orm::Order::Asc)
            .limit(limit)
            .to_owned();
        let deleted = audit::Entity::delete_many()
            .filter(audit::Column::AuditId.in_subquery(oldest))
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(deleted.rows_affected)
    }
}
