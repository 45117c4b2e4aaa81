//! Events: written by every other area's writes through [`record_event`], inside their
//! transactions; listed and read here.

use async_trait::async_trait;
use sea_orm::sea_query::Query;
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter, QueryTrait};
use voiceplane_core::Result;
use voiceplane_core::model::{Event, EventType};
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::EventRepository;
use voiceplane_core::time::Timestamp;

use super::{all, keyset, one};
use crate::SeaRepository;
use crate::convert::{db_err, from_json, parse_enum, to_json, ts};
use crate::entity::event;
use crate::exec::Exec;

pub(super) fn event_from(m: event::Model) -> Result<Event> {
    Ok(Event {
        event_type: parse_enum("events.type", &m.event_type)?,
        data: from_json("events.data", &m.data)?,
        event_id: m.event_id,
        created_at: ts(m.created_at),
        audit: None,
    })
}

/// Stores `event` of `organization_id` through `db`, which must be the transaction of the
/// write the event records: the change, its event, its audit entry (when a caller made the
/// change) and the event's webhook deliveries (with their jobs) commit or roll back together.
pub(crate) async fn record_event<C: Exec>(
    db: &C,
    organization_id: &str,
    event: &Event,
) -> Result<()> {
    let insert = event::Entity::insert(event::ActiveModel {
        event_id: Set(event.event_id.clone()),
        organization_id: Set(organization_id.to_owned()),
        event_type: Set(event.event_type.as_str().to_owned()),
        created_at: Set(event.created_at.as_micros()),
        data: Set(to_json(&event.data)?),
        resource_id: Set(event.resource_id().map(str::to_owned)),
    });
    db.run(insert.build(db.backend())).await?;
    if let Some(entry) = &event.audit {
        super::record_audit(db, organization_id, entry).await?;
    }
    super::webhooks::fan_out(db, organization_id, event).await
}

/// [`record_event`] when the write changed a row (`rows_affected` of an update by id): a
/// row deleted under the write changes nothing, so it records nothing.
pub(crate) async fn record_if_changed<C: Exec>(
    db: &C,
    organization_id: &str,
    event: &Event,
    rows_affected: u64,
) -> Result<()> {
    if rows_affected == 0 {
        return Ok(());
    }
    record_event(db, organization_id, event).await
}

#[async_trait]
impl EventRepository for SeaRepository {
    async fn event_list(
        &self,
        organization_id: &str,
        types: &[EventType],
        resource_id: Option<&str>,
        page: &PageQuery,
    ) -> Result<Vec<Event>> {
        let mut select =
            event::Entity::find().filter(event::Column::OrganizationId.eq(organization_id));
        if let Some(id) = resource_id {
            select = select.filter(event::Column::ResourceId.eq(id));
        }
        if !types.is_empty() {
            select =
                select.filter(event::Column::EventType.is_in(types.iter().map(|t| t.as_str())));
        }
        all(
            &self.db,
            keyset(
                select,
                event::Column::CreatedAt,
                event::Column::EventId,
                page,
            ),
            event_from,
        )
        .await
    }

    async fn event_get(&self, organization_id: &str, event_id: &str) -> Result<Option<Event>> {
        one(
            &self.db,
            event::Entity::find_by_id(event_id.to_owned())
                .filter(event::Column::OrganizationId.eq(organization_id)),
            event_from,
        )
        .await
    }

    async fn event_delete_older_than(&self, cutoff: Timestamp, limit: u64) -> Result<u64> {
        // One bounded batch per call keeps each delete's transaction and locks short while a
        // sweep works through a large backlog.
        let oldest = Query::select()
            .column(event::Column::EventId)
            .from(event::Entity)
            .and_where(event::Column::CreatedAt.lt(cutoff.as_micros()))
            .order_by(event::Column::CreatedAt, sea_orm::Order::Asc)
            .limit(limit)
            .to_owned();
        let deleted = event::Entity::delete_many()
            .filter(event::Column::EventId.in_subquery(oldest))
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(deleted.rows_affected)
    }
}
