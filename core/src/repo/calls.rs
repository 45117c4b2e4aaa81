//! The database side of calls: the call itself ([`CallRepository`]), the list under its
//! filters and the statistics ([`CallQueryRepository`]), and the transcript
//! ([`TranscriptRepository`]).

use std::sync::Arc;

use async_trait::async_trait;

use super::Change;
use crate::error::Result;
use crate::idempotency::KeyBinding;
use crate::model::{
    AuditEntry, Call, CallJson, CallMessage, CallQuery, CallStats, Event, EventStamp, NewMessage,
    Recording, StatsGroupBy,
};
use crate::page::PageQuery;
use crate::time::Timestamp;

/// Calls.
#[async_trait]
pub trait CallRepository: Send + Sync {
    /// Stores a new call.
    async fn call_insert(&self, call: &Call, event: &Event) -> Result<()>;
    /// The call, if it belongs to the organization.
    async fn call_get(&self, organization_id: &str, call_sid: &str) -> Result<Option<Call>>;
    /// The call `call_sid`, whichever organization's it is: what a media stream, which names
    /// only the call, is checked against (its token proves the rest).
    async fn call_get_any(&self, call_sid: &str) -> Result<Option<Call>>;
    /// Applies `change` to the mutable fields of the call and records `event`; the call as
    /// changed, `None` when there is no such call.
    async fn call_update(
        &self,
        organization_id: &str,
        call_sid: &str,
        change: Change<'_, Call>,
        event: &EventStamp,
    ) -> Result<Option<Call>>;
    /// [`CallRepository::call_update`] that first binds `key` to the call in its transaction:
    /// the call as changed and `false`; when the key is bound already (a retry whose first
    /// answer was lost), nothing is changed and the answer is the call as it is and `true`
    /// (a 422 when the key was used with another request).
    async fn call_update_keyed(
        &self,
        organization_id: &str,
        call_sid: &str,
        change: Change<'_, Call>,
        event: &EventStamp,
        key: &KeyBinding,
    ) -> Result<Option<(Call, bool)>>;
    /// Points the call at its stored recording (or at none).
    async fn call_set_recording(
        &self,
        organization_id: &str,
        call_sid: &str,
        recording: Option<&Recording>,
        updated_at: Timestamp,
        event: &Event,
    ) -> Result<()>;
}

/// The call list under its filters, and call statistics.
#[async_trait]
pub trait CallQueryRepository: Send + Sync {
    /// Up to `page.fetch()` of the organization's calls that match `query`, after the
    /// cursor, newest first.
    async fn call_list(
        &self,
        organization_id: &str,
        query: &CallQuery,
        page: &PageQuery,
    ) -> Result<Vec<Call>>;
    /// [`call_list`](Self::call_list) as JSON, each call exactly as `Call` serializes. By
    /// default the calls are read and serialized; a repository may write its rows straight to
    /// JSON instead.
    async fn call_list_json(
        &self,
        organization_id: &str,
        query: &CallQuery,
        page: &PageQuery,
    ) -> Result<Arc<Vec<CallJson>>> {
        let calls = self.call_list(organization_id, query, page).await?;
        Ok(Arc::new(CallJson::of_all(&calls)?))
    }
    /// Totals over the organization's calls that match `query` (whose `terms` must be empty),
    /// and per group when `group_by` is given, aggregated by the database.
    async fn call_stats(
        &self,
        organization_id: &str,
        query: &CallQuery,
        group_by: Option<StatsGroupBy>,
    ) -> Result<CallStats>;
}

/// Call transcripts.
#[async_trait]
pub trait TranscriptRepository: Send + Sync {
    /// Appends `messages` to the call's transcript in one transaction, numbered after its
    /// last `seq`; concurrent appends to one call never share or skip a number. `None` (and
    /// nothing written) when the call is not the organization's. `audit` is recorded with
    /// it; the built-in runtime's own appends have none.
    async fn call_message_append(
        &self,
        organization_id: &str,
        call_sid: &str,
        messages: &[NewMessage],
        created_at: Timestamp,
        audit: Option<&AuditEntry>,
    ) -> Result<Option<Vec<CallMessage>>>;
    /// Up to `limit` messages of the call with `seq > after_seq`, in `seq` order.
    async fn call_message_list(
        &self,
        organization_id: &str,
        call_sid: &str,
        after_seq: i64,
        limit: u64,
    ) -> Result<Vec<CallMessage>>;
}
