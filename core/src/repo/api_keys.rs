//! The database side of API keys: [`ApiKeyRepository`].

use async_trait::async_trait;

use crate::error::Result;
use crate::model::{ApiKey, Event, EventStamp};
use crate::page::PageQuery;
use crate::time::Timestamp;

/// API keys.
#[async_trait]
pub trait ApiKeyRepository: Send + Sync {
    /// Stores a new key with the hash of its secret.
    async fn api_key_insert(&self, key: &ApiKey, secret_hash: &str, event: &Event) -> Result<()>;
    /// The key whose secret hashes to `secret_hash`, in any organization.
    async fn api_key_find_by_hash(&self, secret_hash: &str) -> Result<Option<ApiKey>>;
    /// Sets `last_used_at = now` unless it is already later than `not_before`; the condition
    /// keeps the write rate at one per key per interval.
    async fn api_key_touch(
        &self,
        key_id: &str,
        now: Timestamp,
        not_before: Timestamp,
    ) -> Result<()>;
    /// Up to `page.fetch()` keys of the organization after the cursor, newest first.
    async fn api_key_list(&self, organization_id: &str, page: &PageQuery) -> Result<Vec<ApiKey>>;
    /// One key of the organization.
    async fn api_key_get(&self, organization_id: &str, key_id: &str) -> Result<Option<ApiKey>>;
    /// Revokes an active key and records `event` with the revoked key; true when this call
    /// revoked it, false (and no event) when it already was.
    async fn api_key_revoke(
        &self,
        organization_id: &str,
        key_id: &str,
        now: Timestamp,
        event: &EventStamp,
    ) -> Result<bool>;
}
