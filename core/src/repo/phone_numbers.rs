//! The database side of phone numbers: [`PhoneNumberRepository`].

use async_trait::async_trait;

use super::Change;
use crate::error::Result;
use crate::model::{Event, EventStamp, PhoneNumber, PhoneNumberFilter};
use crate::page::PageQuery;

/// Phone numbers. Inserts and updates check, inside their transaction, that the assigned agent
/// and the integration exist in the organization (else `InvalidInput`); the database's foreign
/// key keeps a number from ever referencing a deleted integration.
#[async_trait]
pub trait PhoneNumberRepository: Send + Sync {
    /// Stores a new number. Conflict when the organization already has this number.
    async fn phone_number_insert(&self, number: &PhoneNumber, event: &Event) -> Result<()>;
    /// The number, if it belongs to the organization.
    async fn phone_number_get(
        &self,
        organization_id: &str,
        phone_number_id: &str,
    ) -> Result<Option<PhoneNumber>>;
    /// Up to `page.fetch()` numbers the filter keeps after the cursor, newest first.
    async fn phone_number_list(
        &self,
        organization_id: &str,
        filter: &PhoneNumberFilter,
        page: &PageQuery,
    ) -> Result<Vec<PhoneNumber>>;
    /// Applies `change` to the number (its references checked inside the write) and records
    /// `event`; the number as changed, `None` when there is no such number.
    async fn phone_number_update(
        &self,
        organization_id: &str,
        phone_number_id: &str,
        change: Change<'_, PhoneNumber>,
        event: &EventStamp,
    ) -> Result<Option<PhoneNumber>>;
    /// Deletes the number, with `event` carrying it as it was.
    async fn phone_number_delete(
        &self,
        organization_id: &str,
        phone_number_id: &str,
        event: &EventStamp,
    ) -> Result<Option<PhoneNumber>>;
}
