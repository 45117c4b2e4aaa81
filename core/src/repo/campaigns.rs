//! The database side of campaigns: [`CampaignRepository`]. A campaign's dial goes through
//! [`CampaignRepository::campaign_dial`], the campaign's twin of
//! [`super::TelephonyRepository::call_open`]: the same checks in the same transaction, with the
//! recipient's claim beside them.

use async_trait::async_trait;

use super::Change;
use crate::error::Result;
use crate::jobs::NewJob;
use crate::model::{
    AuditedChange, Call, Campaign, CampaignStatus, Event, EventStamp, Recipient, RecipientStatus,
};
use crate::page::PageQuery;
use crate::time::Timestamp;

/// What a campaign's transition does besides changing the campaign.
#[derive(Debug, Clone, Default)]
pub struct TransitionEffects {
    /// The pacing job to write with it (start).
    pub pace: Option<NewJob>,
    /// Whether its pending recipients become `canceled` (cancel).
    pub cancel_pending: bool,
}

/// How a campaign's dial went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CampaignDial {
    /// The call and its dial job are written; the recipient is `in_progress`.
    Placed,
    /// The number is on the suppression list: the recipient is `suppressed`, nothing dialed.
    Suppressed,
    /// The organization's `max_concurrent_calls` are in flight: nothing written.
    OrganizationFull,
    /// The month's credits have reached the organization's `monthly_credit_limit`: nothing
    /// written.
    OutOfCredit,
    /// The campaign's `max_concurrency` calls are in flight, it is no longer running, or the
    /// recipient is no longer the pending one read (another pacer took it): nothing written.
    Skipped,
}

/// Writes an upload of recipients in one transaction: nothing is kept unless it commits.
#[async_trait]
pub trait RecipientWriter: Send {
    /// Adds `rows`, skipping numbers the campaign has; returns how many were added.
    async fn add(&mut self, rows: &[Recipient]) -> Result<u64>;
    /// Keeps everything added, and hurries the campaign's pacer when it is running.
    async fn commit(self: Box<Self>, now: Timestamp) -> Result<()>;
}

/// Campaigns and their recipients.
#[async_trait]
pub trait CampaignRepository: Send + Sync {
    /// Writes a new campaign with its audit entry.
    async fn campaign_insert(&self, campaign: &Campaign, audit: &AuditedChange) -> Result<()>;
    /// The campaign with its counts.
    async fn campaign_get(
        &self,
        organization_id: &str,
        campaign_id: &str,
    ) -> Result<Option<Campaign>>;
    /// Up to `page.fetch()` campaigns after the cursor, newest first, with their counts.
    async fn campaign_list(
        &self,
        organization_id: &str,
        status: Option<CampaignStatus>,
        page: &PageQuery,
    ) -> Result<Vec<Campaign>>;
    /// Applies `change` (which may refuse) to the campaign as read, with its counts, in the
    /// write's transaction, and records the audit entry.
    async fn campaign_update(
        &self,
        organization_id: &str,
        campaign_id: &str,
        change: Change<'_, Campaign>,
        audit: &AuditedChange,
    ) -> Result<Option<Campaign>>;
    /// Deletes the campaign and its recipients once `check` accepts it as read in the
    /// transaction.
    async fn campaign_delete(
        &self,
        organization_id: &str,
        campaign_id: &str,
        check: for<'c> fn(&'c Campaign) -> Result<()>,
        audit: &AuditedChange,
    ) -> Result<Option<Campaign>>;
    /// Changes the campaign's status (`change` may refuse), records `event` (and its audit
    /// entry) and applies `effects`, in one transaction.
    async fn campaign_transition(
        &self,
        organization_id: &str,
        campaign_id: &str,
        change: Change<'_, Campaign>,
        event: &EventStamp,
        effects: TransitionEffects,
    ) -> Result<Option<Campaign>>;
    /// Opens an upload of recipients to the campaign; a 409 when it is completed or
    /// canceled.
    async fn recipients_begin(
        &self,
        organization_id: &str,
        campaign_id: &str,
    ) -> Result<Box<dyn RecipientWriter>>;
    /// Up to `page.fetch()` recipients after the cursor, newest first; only those in `status`
    /// when given.
    async fn recipient_list(
        &self,
        organization_id: &str,
        campaign_id: &str,
        status: Option<RecipientStatus>,
        page: &PageQuery,
    ) -> Result<Vec<Recipient>>;
    /// Up to `limit` pending recipients due at `now`, the longest waiting first.
    async fn recipients_due(
        &self,
        campaign_id: &str,
        now: Timestamp,
        limit: u64,
    ) -> Result<Vec<Recipient>>;
    /// Makes a pending recipient wait until `until` (outside its windows), attempts unchanged.
    async fn recipient_defer(&self, recipient_id: &str, until: Timestamp) -> Result<()>;
    /// When the next pending recipient that waits is due.
    async fn recipients_next_due(&self, campaign_id: &str) -> Result<Option<Timestamp>>;
    /// Cancels the campaign's pending recipients (past its `ends_at`); returns how many.
    async fn recipients_expire(&self, campaign_id: &str) -> Result<u64>;
    /// Fails the recipients `in_progress` whose call was deleted; returns how many.
    async fn recipients_lost(&self, campaign_id: &str) -> Result<u64>;
    /// Records `call` with its `call.created` event and `jobs` as the attempt of its recipient
    /// that had made `attempts` before: in one transaction with the suppression list, the
    /// organization's limit, the campaign's `max_concurrency` and its status, all under the
    /// campaign's lock.
    async fn campaign_dial(
        &self,
        call: &Call,
        event: &Event,
        jobs: &[NewJob],
        attempts: u32,
    ) -> Result<CampaignDial>;
}
