//! The database side of telephony integrations: [`IntegrationRepository`].

use async_trait::async_trait;

use super::Change;
use crate::error::Result;
use crate::model::{AuditedChange, Event, EventStamp, Integration, IntegrationFilter, PhoneNumber};
use crate::page::PageQuery;

/// The result of trying to delete an integration.
#[derive(Debug, Clone, PartialEq)]
pub enum IntegrationDeletion {
    /// Deleted with its credentials; the integration as it was.
    Deleted(Integration),
    /// Refused: these phone numbers still reference it.
    Referenced(Vec<PhoneNumber>),
    /// No such integration in the organization.
    NotFound,
}

/// Telephony integrations. Credentials are stored only as the sealed (encrypted) text the
/// service hands over.
#[async_trait]
pub trait IntegrationRepository: Send + Sync {
    /// Stores a new integration with its sealed credentials.
    async fn integration_insert(
        &self,
        integration: &Integration,
        sealed: &str,
        event: &Event,
    ) -> Result<()>;
    /// The integration, if it belongs to the organization.
    async fn integration_get(
        &self,
        organization_id: &str,
        integration_id: &str,
    ) -> Result<Option<Integration>>;
    /// The integration and its sealed credentials.
    async fn integration_get_sealed(
        &self,
        organization_id: &str,
        integration_id: &str,
    ) -> Result<Option<(Integration, String)>>;
    /// Up to `page.fetch()` integrations after the cursor, newest first.
    async fn integration_list(
        &self,
        organization_id: &str,
        filter: &IntegrationFilter,
        page: &PageQuery,
    ) -> Result<Vec<Integration>>;
    /// Applies `change` to name, category, status and `updated_at`, replaces the
    /// credentials when `sealed` is given, and records the audit entry; the integration as
    /// changed, `None` when there is none.
    async fn integration_update(
        &self,
        organization_id: &str,
        integration_id: &str,
        change: Change<'_, Integration>,
        sealed: Option<&str>,
        audit: &AuditedChange,
    ) -> Result<Option<Integration>>;
    /// Applies `change` (the status a probe found) and records `event`.
    async fn integration_validated(
        &self,
        organization_id: &str,
        integration_id: &str,
        change: Change<'_, Integration>,
        event: &EventStamp,
    ) -> Result<Option<Integration>>;
    /// Deletes the integration and its credentials unless a phone number references it; the
    /// check and the delete cannot be raced by a concurrent assignment. Records `event` with
    /// the integration as it was when deleted.
    async fn integration_delete(
        &self,
        organization_id: &str,
        integration_id: &str,
        event: &EventStamp,
    ) -> Result<IntegrationDeletion>;
}
