//! The database side of the suppression list: [`SuppressionRepository`]. The list is also
//! read by [`super::TelephonyRepository::call_open`], inside the dial's own transaction.

use async_trait::async_trait;

use crate::error::Result;
use crate::model::{EventStamp, Suppression};
use crate::page::PageQuery;

/// The suppression (do-not-call) list.
#[async_trait]
pub trait SuppressionRepository: Send + Sync {
    /// Adds `entry`, or, when the organization already has its number (even from a request
    /// racing this one), changes that entry's reason and expiry; records `stamp`'s event with
    /// the entry as written. Answers the entry and whether it is new.
    async fn suppression_put(
        &self,
        entry: &Suppression,
        stamp: &EventStamp,
    ) -> Result<(Suppression, bool)>;
    /// Up to `page.fetch()` entries after the cursor, newest first; only `phone_number`'s
    /// when given.
    async fn suppression_list(
        &self,
        organization_id: &str,
        phone_number: Option<&str>,
        page: &PageQuery,
    ) -> Result<Vec<Suppression>>;
    /// Deletes the organization's entry of `phone_number`, recording `stamp`'s event with it;
    /// `None` when there is none.
    async fn suppression_delete(
        &self,
        organization_id: &str,
        phone_number: &str,
        stamp: &EventStamp,
    ) -> Result<Option<Suppression>>;
}
