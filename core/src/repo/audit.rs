//! The database side of the audit log: [`AuditRepository`].

use async_trait::async_trait;

use crate::error::Result;
use crate::model::{AuditEntry, AuditFilter};
use crate::page::PageQuery;
use crate::time::Timestamp;

/// The audit log: written by the other areas' writes inside their transactions, listed and
/// swept here. Nothing changes or deletes an entry except the retention sweep.
#[async_trait]
pub trait AuditRepository: Send + Sync {
    /// The organization's entries that match `filter` (already checked), newest first.
    async fn audit_list(
        &self,
        organization_id: &str,
        filter: &AuditFilter,
        page: &PageQuery,
    ) -> Result<Vec<AuditEntry>>;
    /// Deletes up to `limit` entries, of every organization, created before `cutoff`, oldest
    /// first; answers how many.
    async fn audit_delete_older_than(&self, cutoff: Timestamp, limit: u64) -> Result<u64>;
}
