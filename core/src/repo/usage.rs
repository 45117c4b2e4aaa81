//! The database side of usage and cost: the price book and the usage report
//! ([`UsageRepository`]). A call's usage items themselves are written by
//! [`super::CallRepository::call_update`], with the call.

use async_trait::async_trait;

use super::Change;
use crate::error::Result;
use crate::model::{AuditedChange, PriceBook, UsageGroupBy, UsageReport};
use crate::time::Timestamp;

/// The price book and the usage report.
#[async_trait]
pub trait UsageRepository: Send + Sync {
    /// The organization's price book (empty when none was set).
    async fn price_book(&self, organization_id: &str) -> Result<PriceBook>;
    /// Applies `change` to the price book in one transaction with its audit entry.
    async fn price_book_set(
        &self,
        organization_id: &str,
        change: Change<'_, PriceBook>,
        audit: &AuditedChange,
        now: Timestamp,
    ) -> Result<PriceBook>;
    /// Calls and credits of the calls created in `[after, before)`, and per group when
    /// `group_by` is given, aggregated by the database from one snapshot.
    async fn usage_report(
        &self,
        organization_id: &str,
        after: Option<Timestamp>,
        before: Option<Timestamp>,
        group_by: Option<UsageGroupBy>,
    ) -> Result<UsageReport>;
}
