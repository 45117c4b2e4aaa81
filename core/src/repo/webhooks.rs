//! The database side of webhook endpoints and their deliveries: [`WebhookRepository`].

use async_trait::async_trait;

use super::Change;
use crate::error::Result;
use crate::model::{
    AuditEntry, AuditedChange, Delivery, DeliveryAttempt, DeliveryTarget, Event, Webhook,
};
use crate::page::PageQuery;
use crate::time::Timestamp;

/// Webhook endpoints and their deliveries. Secrets are stored only as the sealed text the
/// service hands over (sealed with the webhook id as associated data). Deliveries of ordinary
/// events are written by the event's own write (the fan-out of every event recorded); the
/// methods here write the others.
#[async_trait]
pub trait WebhookRepository: Send + Sync {
    /// Stores a new endpoint with its sealed secret.
    async fn webhook_insert(
        &self,
        webhook: &Webhook,
        secret_sealed: &str,
        audit: &AuditEntry,
    ) -> Result<()>;
    /// The endpoint, if it belongs to the organization.
    async fn webhook_get(&self, organization_id: &str, webhook_id: &str)
    -> Result<Option<Webhook>>;
    /// Up to `page.fetch()` endpoints after the cursor, newest first.
    async fn webhook_list(&self, organization_id: &str, page: &PageQuery) -> Result<Vec<Webhook>>;
    /// Applies `change` to url, events, description, status and `updated_at`, with its audit
    /// entry; the endpoint as changed, `None` when there is none.
    async fn webhook_update(
        &self,
        organization_id: &str,
        webhook_id: &str,
        change: Change<'_, Webhook>,
        audit: &AuditedChange,
    ) -> Result<Option<Webhook>>;
    /// Deletes the endpoint with its deliveries, with its audit entry; returns it as it was.
    async fn webhook_delete(
        &self,
        organization_id: &str,
        webhook_id: &str,
        audit: &AuditedChange,
    ) -> Result<Option<Webhook>>;
    /// Atomically makes `secret_sealed` the secret and keeps the one it replaces as the
    /// previous secret until `previous_expires_at`; sets `updated_at = now`. Returns the
    /// endpoint after the change.
    async fn webhook_rotate_secret(
        &self,
        organization_id: &str,
        webhook_id: &str,
        secret_sealed: &str,
        previous_expires_at: Timestamp,
        now: Timestamp,
        audit: &AuditEntry,
    ) -> Result<Option<Webhook>>;
    /// In one transaction: records `event` (which goes to no other endpoint), writes
    /// `delivery` of it to the endpoint and the job that attempts it. False (and nothing
    /// written) when the endpoint is not the organization's.
    async fn webhook_test(
        &self,
        organization_id: &str,
        event: &Event,
        delivery: &Delivery,
        job: &crate::jobs::NewJob,
    ) -> Result<bool>;
    /// Up to `page.fetch()` deliveries to the organization's endpoint after the cursor,
    /// newest first.
    async fn delivery_list(
        &self,
        organization_id: &str,
        webhook_id: &str,
        page: &PageQuery,
    ) -> Result<Vec<Delivery>>;
    /// The delivery with its endpoint's URL, status and sealed secrets, and its event: what
    /// one attempt needs. None when the delivery, its endpoint or its event is gone.
    async fn delivery_target(&self, delivery_id: &str) -> Result<Option<DeliveryTarget>>;
    /// Records one attempt: counts it, and sets `last_attempt_at`, `last_status_code`,
    /// `last_error`, `status` and `next_attempt_at`.
    async fn delivery_record_attempt(
        &self,
        delivery_id: &str,
        attempt: &DeliveryAttempt,
    ) -> Result<()>;
    /// In one transaction: makes the delivery of the organization's endpoint pending again,
    /// due at `now`, and writes `job`. Returns the delivery after the change.
    async fn delivery_retry(
        &self,
        organization_id: &str,
        webhook_id: &str,
        delivery_id: &str,
        now: Timestamp,
        job: &crate::jobs::NewJob,
        audit: &AuditEntry,
    ) -> Result<Option<Delivery>>;
}
