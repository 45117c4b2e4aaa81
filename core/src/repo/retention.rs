//! The database side of removing calls, their transcripts and recordings, by hand or by an
//! organization's retention policy: [`RetentionRepository`] and the [`CallRemoval`] it
//! applies.

use async_trait::async_trait;

use super::Change;
use crate::error::Result;
use crate::jobs::NewJob;
use crate::model::{AuditedChange, Call, EventStamp, EventType, OrganizationSettings};
use crate::time::Timestamp;

/// What a removal takes from a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallPart {
    /// Only its recording: `recording.deleted`, and a job that deletes the file.
    Recording,
    /// Only its transcript (no event names this).
    Transcript,
    /// The call with its transcript and recording: `call.deleted`, and what removing the
    /// recording records when it had one.
    Call,
}

/// A removal of `part` from calls of one organization: one call (a manual delete) or the
/// oldest calls created before a cutoff (the retention sweep). Both go through
/// [`RetentionRepository::calls_remove`], so both record the same events.
pub struct CallRemoval<'a> {
    /// The organization.
    pub organization_id: &'a str,
    /// Only this call.
    pub call_sid: Option<&'a str>,
    /// Only calls created before this.
    pub created_before: Option<Timestamp>,
    /// What to remove.
    pub part: CallPart,
    /// At most this many calls, oldest first.
    pub limit: u64,
    /// The time of the change (`updated_at` of a call that loses its recording).
    pub now: Timestamp,
    /// A new stamp for each event the removal records.
    pub stamp: &'a (dyn Fn(EventType) -> EventStamp + Send + Sync),
    /// The durable job that deletes a removed recording's file, given the call and the file's
    /// key, once the removal has committed.
    pub blob_job: &'a (dyn Fn(&str, &str) -> NewJob + Send + Sync),
}

impl std::fmt::Debug for CallRemoval<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallRemoval")
            .field("organization_id", &self.organization_id)
            .field("call_sid", &self.call_sid)
            .field("created_before", &self.created_before)
            .field("part", &self.part)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

/// Deleting calls, their transcripts and recordings, by hand or by the retention policy.
#[async_trait]
pub trait RetentionRepository: Send + Sync {
    /// The organization's retention policy; `None` when there is no such organization.
    async fn organization_settings(
        &self,
        organization_id: &str,
    ) -> Result<Option<OrganizationSettings>>;
    /// Applies `change` to the organization's retention policy, with its audit entry; the
    /// policy as changed, `None` when there is no such organization.
    async fn organization_settings_set(
        &self,
        organization_id: &str,
        change: Change<'_, OrganizationSettings>,
        audit: &AuditedChange,
    ) -> Result<Option<OrganizationSettings>>;
    /// Every organization that has a retention policy, with it.
    async fn retention_policies(&self) -> Result<Vec<(String, OrganizationSettings)>>;
    /// Removes `removal.part` from the calls it selects that have it, each with its events and
    /// blob jobs, in one transaction; returns those calls as they were before. A call removed
    /// meanwhile by another transaction is skipped without an event.
    async fn calls_remove(&self, removal: &CallRemoval<'_>) -> Result<Vec<Call>>;
    /// Whether the call's recording is stored under `key` again (a new upload after a delete
    /// reuses the key; its file must survive the older delete's job).
    async fn recording_key_in_use(&self, call_sid: &str, key: &str) -> Result<bool>;
}
