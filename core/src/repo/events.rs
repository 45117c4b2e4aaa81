//! The database side of events: [`EventRepository`].

use async_trait::async_trait;

use crate::error::Result;
use crate::model::{Event, EventType};
use crate::page::PageQuery;
use crate::time::Timestamp;

/// Events. They are written by the other areas' writes, inside their transactions.
#[async_trait]
pub trait EventRepository: Send + Sync {
    /// Up to `page.fetch()` events of the organization after the cursor, newest first; only
    /// those of `types` unless it is empty, and only those about `resource_id` when given.
    async fn event_list(
        &self,
        organization_id: &str,
        types: &[EventType],
        resource_id: Option<&str>,
        page: &PageQuery,
    ) -> Result<Vec<Event>>;
    /// The event, if it belongs to the organization.
    async fn event_get(&self, organization_id: &str, event_id: &str) -> Result<Option<Event>>;
    /// Deletes up to `limit` events (of every organization) created before `cutoff`, oldest
    /// first; returns how many it deleted, so a sweep repeats until fewer than `limit`.
    async fn event_delete_older_than(&self, cutoff: Timestamp, limit: u64) -> Result<u64>;
}
