//! The database side of calls that happen through a provider: [`TelephonyRepository`].

use async_trait::async_trait;

use crate::error::Result;
use crate::idempotency::KeyBinding;
use crate::jobs::NewJob;
use crate::model::{
    Call, CampaignStatus, Event, EventStamp, Integration, OrganizationSettings, PhoneNumber, Unsent,
};
use crate::telephony::TelephonyProvider;
use crate::time::Timestamp;

/// What the checks of a dial about to be sent read, in the transaction that marks it sent.
#[derive(Debug)]
pub struct DialFacts<'a> {
    /// The call, queued and not yet sent.
    pub call: &'a Call,
    /// Its organization's settings (calling hours, zone).
    pub settings: &'a OrganizationSettings,
    /// Its campaign's status, for a campaign's call.
    pub campaign: Option<CampaignStatus>,
    /// Whether the callee is on the suppression list now.
    pub suppressed: bool,
    /// Whether the month's credits have reached the organization's limit.
    pub out_of_credit: bool,
}

/// The send-time checks: why the call must not be sent, if it must not.
pub type DialCheck = Box<dyn FnOnce(&DialFacts<'_>) -> Option<Unsent> + Send>;

/// What [`TelephonyRepository::call_dial_mark`] did.
#[derive(Debug)]
pub enum DialMark {
    /// The call is marked `dial_started_at`: send it, once.
    Marked(Call),
    /// The checks stopped it: the call has ended with this reason and is never sent.
    Unsent(Call, Unsent),
    /// It is no longer to be sent (canceled, sent, gone); nothing was written.
    Skip,
}

/// What the provider webhooks and the dial need beyond [`super::CallRepository`]: lookups
/// by what a provider knows (an integration id alone, a number, its own call id), and
/// recording a call with the jobs it starts in one transaction.
#[async_trait]
pub trait TelephonyRepository: Send + Sync {
    /// An integration and its sealed credentials by id alone: a provider's webhook names the
    /// integration, not the organization (which is the integration's).
    async fn integration_route(
        &self,
        integration_id: &str,
    ) -> Result<Option<(Integration, String)>>;
    /// The organization's phone number `e164`.
    async fn phone_number_find(
        &self,
        organization_id: &str,
        e164: &str,
    ) -> Result<Option<PhoneNumber>>;
    /// Records `call` with `event` and `jobs` in one transaction; answers the call and `true`.
    /// When a call with the same provider and provider call id exists (the provider repeating
    /// itself, or another instance racing this one), that call and `false`, and nothing is
    /// written. An outbound call to a number on the organization's suppression list is refused
    /// in that transaction (422), and so is one that would take the organization's outbound
    /// calls `queued`, `ringing` or `in_progress` past its `max_concurrent_calls` (429; the
    /// organization's row is locked while they are counted, so instances racing each other
    /// cannot both pass); nothing is written then. With `key`, the key is bound to the call
    /// first thing in the transaction; when it is bound already (a retry of a dial whose
    /// answer was lost, or one racing it), nothing is written and the answer is the call it
    /// was bound to and `false` (a 422 when the key was used with another request, a 409 when
    /// that call was deleted since).
    async fn call_open(
        &self,
        call: &Call,
        event: &Event,
        jobs: &[NewJob],
        key: Option<&KeyBinding>,
    ) -> Result<(Call, bool)>;
    /// Marks the queued call `call_sid` as being sent at `now` (`dial_started_at`), after
    /// `check` found nothing against it in the same transaction, which locks the organization
    /// (as suppression writes do, so that a number suppressed before this commits is never
    /// rung), the call's campaign and the call, in that order. When `check` answers a reason,
    /// the call ends with it instead (recording `stamp`'s event, and a campaign's recipient
    /// going back to where it was).
    async fn call_dial_mark(
        &self,
        organization_id: &str,
        call_sid: &str,
        now: Timestamp,
        check: DialCheck,
        stamp: &EventStamp,
    ) -> Result<DialMark>;
    /// Calls placed through a provider that no report has moved for longer than they could
    /// last: `queued` or `ringing` (with a provider call id) since before `ringing_before`,
    /// `in_progress` since before `talking_before`; at most `limit`, the longest silent first.
    async fn calls_overdue(
        &self,
        ringing_before: Timestamp,
        talking_before: Timestamp,
        limit: u64,
    ) -> Result<Vec<Call>>;
    /// The organization's call that `provider` knows as `provider_call_id`.
    async fn call_find_provider(
        &self,
        organization_id: &str,
        provider: TelephonyProvider,
        provider_call_id: &str,
    ) -> Result<Option<Call>>;
}
