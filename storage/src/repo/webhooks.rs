//! Webhook endpoints, their sealed secrets and their deliveries; [`fan_out`] writes the
//! deliveries of an event inside the event's own transaction.

use async_trait::async_trait;
use sea_orm::sea_query::{Expr, ExprTrait, Query, SimpleExpr};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect,
    QueryTrait, Select, TransactionTrait,
};
use voiceplane_core::Result;
use voiceplane_core::jobs::NewJob;
use voiceplane_core::model::{
    AuditEntry, AuditedChange, Delivery, DeliveryAttempt, DeliveryStatus, DeliveryTarget, Event,
    EventType, Webhook, WebhookStatus,
};
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::{Change, WebhookRepository};
use voiceplane_core::time::Timestamp;

use super::jobs::{enqueue, enqueue_many};
use super::{all, keyset, one, record_audit, record_event};
use crate::SeaRepository;
use crate::convert::{db_err, enum_str, from_json, parse_enum, to_json, ts, ts_opt};
use crate::entity::{event, webhook, webhook_delivery};
use crate::exec::Exec;

fn webhook_from(m: webhook::Model) -> Result<Webhook> {
    Ok(Webhook {
        events: from_json("webhooks.events", &m.events)?,
        status: parse_enum("webhooks.status", &m.status)?,
        webhook_id: m.webhook_id,
        organization_id: m.organization_id,
        url: m.url,
        description: m.description,
        created_at: ts(m.created_at),
        updated_at: ts(m.updated_at),
    })
}

fn delivery_from(m: webhook_delivery::Model) -> Result<Delivery> {
    Ok(Delivery {
        status: parse_enum("webhook_deliveries.status", &m.status)?,
        attempts: u32::try_from(m.attempts).unwrap_or(0),
        last_status_code: m.last_status_code.and_then(|c| u16::try_from(c).ok()),
        delivery_id: m.delivery_id,
        webhook_id: m.webhook_id,
        event_id: m.event_id,
        event_type: m.event_type,
        last_attempt_at: ts_opt(m.last_attempt_at),
        next_attempt_at: ts_opt(m.next_attempt_at),
        last_error: m.last_error,
        created_at: ts(m.created_at),
    })
}

fn in_org(organization_id: &str, webhook_id: &str) -> Select<webhook::Entity> {
    webhook::Entity::find_by_id(webhook_id.to_owned())
        .filter(webhook::Column::OrganizationId.eq(organization_id))
}

/// Deliveries to the organization's endpoint `webhook_id` (none when it is another's).
fn to_endpoint_of(organization_id: &str, webhook_id: &str) -> SimpleExpr {
    let owned = Query::select()
        .column(webhook::Column::WebhookId)
        .from(webhook::Entity)
        .and_where(webhook::Column::WebhookId.eq(webhook_id))
        .and_where(webhook::Column::OrganizationId.eq(organization_id))
        .to_owned();
    webhook_delivery::Column::WebhookId.in_subquery(owned)
}

/// Writes `delivery` and the job that attempts it, due at `run_at`, on `db`.
fn delivery_row(delivery: &Delivery) -> webhook_delivery::ActiveModel {
    webhook_delivery::ActiveModel {
        delivery_id: Set(delivery.delivery_id.clone()),
        webhook_id: Set(delivery.webhook_id.clone()),
        event_id: Set(delivery.event_id.clone()),
        event_type: Set(delivery.event_type.clone()),
        status: Set(enum_str(&delivery.status)),
        attempts: Set(i32::try_from(delivery.attempts).unwrap_or(i32::MAX)),
        last_attempt_at: Set(delivery.last_attempt_at.map(Timestamp::as_micros)),
        next_attempt_at: Set(delivery.next_attempt_at.map(Timestamp::as_micros)),
        last_status_code: Set(delivery.last_status_code.map(i32::from)),
        last_error: Set(delivery.last_error.clone()),
        created_at: Set(delivery.created_at.as_micros()),
    }
}

async fn insert_delivery<C: ConnectionTrait>(
    db: &C,
    delivery: &Delivery,
    job: &NewJob,
) -> Result<()> {
    webhook_delivery::Entity::insert(delivery_row(delivery))
        .exec_without_returning(db)
        .await
        .map_err(db_err)?;
    enqueue(db, job, delivery.created_at).await?;
    Ok(())
}

/// Writes, on `db` (the transaction recording `event`), one pending delivery and its job for
/// every enabled endpoint of the organization subscribed to the event's type. A test event
/// goes only to the endpoint it tests, which writes its own delivery.
pub(crate) async fn fan_out<C: Exec>(db: &C, organization_id: &str, event: &Event) -> Result<()> {
    if event.event_type == EventType::WebhookTest {
        return Ok(());
    }
    // An organization has few endpoints: matching the subscription here reads the same rows
    // a JSON query would, with one code path for both databases.
    let endpoints = webhook::Entity::find()
        .select_only()
        .columns([webhook::Column::WebhookId, webhook::Column::Events])
        .filter(webhook::Column::OrganizationId.eq(organization_id))
        .filter(webhook::Column::Status.eq(enum_str(&WebhookStatus::Enabled)))
        .build(db.backend());
    let name = event.event_type.as_str();
    let mut deliveries = Vec::new();
    for (webhook_id, events) in db.text_pairs(endpoints).await? {
        let events: Vec<String> = from_json("webhooks.events", &events)?;
        if events.iter().any(|e| e == "*" || e == name) {
            deliveries.push(Delivery::pending(&webhook_id, event));
        }
    }
    if deliveries.is_empty() {
        return Ok(());
    }
    // Two statements whatever the number of endpoints: the deliveries, then their jobs.
    let insert = webhook_delivery::Entity::insert_many(deliveries.iter().map(delivery_row));
    db.run(insert.build(db.backend())).await?;
    let jobs: Vec<NewJob> = deliveries.iter().map(|d| d.job(event.created_at)).collect();
    enqueue_many(db, &jobs, event.created_at).await?;
    Ok(())
}

#[async_trait]
impl WebhookRepository for SeaRepository {
    async fn webhook_insert(
        &self,
        w: &Webhook,
        secret_sealed: &str,
        audit: &AuditEntry,
    ) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        webhook::Entity::insert(webhook::ActiveModel {
            webhook_id: Set(w.webhook_id.clone()),
            organization_id: Set(w.organization_id.clone()),
            url: Set(w.url.clone()),
            events: Set(to_json(&w.events)?),
            description: Set(w.description.clone()),
            status: Set(enum_str(&w.status)),
            secret_sealed: Set(secret_sealed.to_owned()),
            previous_secret_sealed: Set(None),
            previous_secret_expires_at: Set(None),
            created_at: Set(w.created_at.as_micros()),
            updated_at: Set(w.updated_at.as_micros()),
        })
        .exec_without_returning(&txn)
        .await
        .map_err(db_err)?;
        record_audit(&txn, &w.organization_id, audit).await?;
        txn.commit().await.map_err(db_err)
    }

    async fn webhook_get(
        &self,
        organization_id: &str,
        webhook_id: &str,
    ) -> Result<Option<Webhook>> {
        one(&self.db, in_org(organization_id, webhook_id), webhook_from).await
    }

    async fn webhook_list(&self, organization_id: &str, page: &PageQuery) -> Result<Vec<Webhook>> {
        let select =
            webhook::Entity::find().filter(webhook::Column::OrganizationId.eq(organization_id));
        all(
            &self.db,
            keyset(
                select,
                webhook::Column::CreatedAt,
                webhook::Column::WebhookId,
                page,
            ),
            webhook_from,
        )
        .await
    }

    async fn webhook_update(
        &self,
        organization_id: &str,
        webhook_id: &str,
        change: Change<'_, Webhook>,
        audit: &AuditedChange,
    ) -> Result<Option<Webhook>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let Some(before) = one(
            &txn,
            in_org(organization_id, webhook_id).lock_exclusive(),
            webhook_from,
        )
        .await?
        else {
            return Ok(None);
        };
        let w = audit.change(&before, change)?;
        webhook::Entity::update_many()
            .filter(webhook::Column::WebhookId.eq(&w.webhook_id))
            .filter(webhook::Column::OrganizationId.eq(&w.organization_id))
            .col_expr(webhook::Column::Url, Expr::value(w.url.clone()))
            .col_expr(webhook::Column::Events, Expr::value(to_json(&w.events)?))
            .col_expr(
                webhook::Column::Description,
                Expr::value(w.description.clone()),
            )
            .col_expr(webhook::Column::Status, Expr::value(enum_str(&w.status)))
            .col_expr(
                webhook::Column::UpdatedAt,
                Expr::value(w.updated_at.as_micros()),
            )
            .exec(&txn)
            .await
            .map_err(db_err)?;
        let entry = audit.entry(webhook_id, Some(&before), Some(&w))?;
        record_audit(&txn, organization_id, &entry).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(Some(w))
    }

    async fn webhook_delete(
        &self,
        organization_id: &str,
        webhook_id: &str,
        audit: &AuditedChange,
    ) -> Result<Option<Webhook>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let Some(found) = one(
            &txn,
            in_org(organization_id, webhook_id).lock_exclusive(),
            webhook_from,
        )
        .await?
        else {
            return Ok(None);
        };
        audit.check(&found)?;
        // Deliveries go with their endpoint; deleted explicitly rather than trusting every
        // SQLite connection to enforce the cascade.
        webhook_delivery::Entity::delete_many()
            .filter(webhook_delivery::Column::WebhookId.eq(webhook_id))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        webhook::Entity::delete_by_id(webhook_id.to_owned())
            .exec(&txn)
            .await
            .map_err(db_err)?;
        let entry = audit.entry(webhook_id, Some(&found), None)?;
        record_audit(&txn, organization_id, &entry).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(Some(found))
    }

    async fn webhook_rotate_secret(
        &self,
        organization_id: &str,
        webhook_id: &str,
        secret_sealed: &str,
        previous_expires_at: Timestamp,
        now: Timestamp,
        audit: &AuditEntry,
    ) -> Result<Option<Webhook>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        // The previous secret is the column's value in the same statement, so two concurrent
        // rotations cannot both keep the same one.
        let done = webhook::Entity::update_many()
            .filter(webhook::Column::WebhookId.eq(webhook_id))
            .filter(webhook::Column::OrganizationId.eq(organization_id))
            .col_expr(
                webhook::Column::PreviousSecretSealed,
                Expr::col(webhook::Column::SecretSealed),
            )
            .col_expr(
                webhook::Column::PreviousSecretExpiresAt,
                Expr::value(previous_expires_at.as_micros()),
            )
            .col_expr(
                webhook::Column::SecretSealed,
                Expr::value(secret_sealed.to_owned()),
            )
            .col_expr(webhook::Column::UpdatedAt, Expr::value(now.as_micros()))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        if done.rows_affected == 0 {
            return Ok(None);
        }
        let found = one(&txn, in_org(organization_id, webhook_id), webhook_from).await?;
        record_audit(&txn, organization_id, audit).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(found)
    }

    async fn webhook_test(
        &self,
        organization_id: &str,
        event: &Event,
        delivery: &Delivery,
        job: &NewJob,
    ) -> Result<bool> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let exists = in_org(organization_id, &delivery.webhook_id)
            .one(&txn)
            .await
            .map_err(db_err)?
            .is_some();
        if !exists {
            return Ok(false);
        }
        record_event(&txn, organization_id, event).await?;
        insert_delivery(&txn, delivery, job).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(true)
    }

    async fn delivery_list(
        &self,
        organization_id: &str,
        webhook_id: &str,
        page: &PageQuery,
    ) -> Result<Vec<Delivery>> {
        all(
            &self.db,
            keyset(
                webhook_delivery::Entity::find()
                    .filter(to_endpoint_of(organization_id, webhook_id)),
                webhook_delivery::Column::CreatedAt,
                webhook_delivery::Column::DeliveryId,
                page,
            ),
            delivery_from,
        )
        .await
    }

    async fn delivery_target(&self, delivery_id: &str) -> Result<Option<DeliveryTarget>> {
        let Some(delivery) = webhook_delivery::Entity::find_by_id(delivery_id.to_owned())
            .one(&self.db)
            .await
            .map_err(db_err)?
        else {
            return Ok(None);
        };
        let Some(endpoint) = webhook::Entity::find_by_id(delivery.webhook_id.clone())
            .one(&self.db)
            .await
            .map_err(db_err)?
        else {
            return Ok(None);
        };
        let Some(event) = event::Entity::find_by_id(delivery.event_id.clone())
            .filter(event::Column::OrganizationId.eq(&endpoint.organization_id))
            .one(&self.db)
            .await
            .map_err(db_err)?
        else {
            return Ok(None);
        };
        Ok(Some(DeliveryTarget {
            delivery: delivery_from(delivery)?,
            webhook_status: parse_enum("webhooks.status", &endpoint.status)?,
            organization_id: endpoint.organization_id,
            url: endpoint.url,
            secret_sealed: endpoint.secret_sealed,
            previous_secret_sealed: endpoint.previous_secret_sealed,
            previous_secret_expires_at: ts_opt(endpoint.previous_secret_expires_at),
            event: super::events::event_from(event)?,
        }))
    }

    async fn delivery_record_attempt(
        &self,
        delivery_id: &str,
        attempt: &DeliveryAttempt,
    ) -> Result<()> {
        webhook_delivery::Entity::update_many()
            .filter(webhook_delivery::Column::DeliveryId.eq(delivery_id))
            .col_expr(
                webhook_delivery::Column::Attempts,
                Expr::col(webhook_delivery::Column::Attempts).add(1),
            )
            .col_expr(
                webhook_delivery::Column::LastAttemptAt,
                Expr::value(attempt.at.as_micros()),
            )
            .col_expr(
                webhook_delivery::Column::LastStatusCode,
                Expr::value(attempt.status_code.map(i32::from)),
            )
            .col_expr(
                webhook_delivery::Column::LastError,
                Expr::value(attempt.error.clone()),
            )
            .col_expr(
                webhook_delivery::Column::Status,
                Expr::value(enum_str(&attempt.status)),
            )
            .col_expr(
                webhook_delivery::Column::NextAttemptAt,
                Expr::value(attempt.next_attempt_at.map(Timestamp::as_micros)),
            )
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn delivery_retry(
        &self,
        organization_id: &str,
        webhook_id: &str,
        delivery_id: &str,
        now: Timestamp,
        job: &NewJob,
        audit: &AuditEntry,
    ) -> Result<Option<Delivery>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let done = webhook_delivery::Entity::update_many()
            .filter(webhook_delivery::Column::DeliveryId.eq(delivery_id))
            .filter(to_endpoint_of(organization_id, webhook_id))
            .col_expr(
                webhook_delivery::Column::Status,
                Expr::value(enum_str(&DeliveryStatus::Pending)),
            )
            .col_expr(
                webhook_delivery::Column::NextAttemptAt,
                Expr::value(now.as_micros()),
            )
            .exec(&txn)
            .await
            .map_err(db_err)?;
        if done.rows_affected == 0 {
            return Ok(None);
        }
        enqueue(&txn, job, now).await?;
        record_audit(&txn, organization_id, audit).await?;
        let found = one(
            &txn,
            webhook_delivery::Entity::find_by_id(delivery_id.to_owned()),
            delivery_from,
        )
        .await?;
        txn.commit().await.map_err(db_err)?;
        Ok(found)
    }
}
