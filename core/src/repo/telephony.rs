//! The database side of calls that happen through a provider: [`TelephonyRepository`].

use async_trait::async_trait;

use crate::error::Result;
use crate::idempotency::KeyBinding;
use crate::jobs::NewJob;
use crate::model::{Call, Event, Integration, PhoneNumber};
use crate::telephony::TelephonyProvider;

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
    /// The organization's call that `provider` knows as `provider_call_id`.
    async fn call_find_provider(
        &self,
        organization_id: &str,
        provider: TelephonyProvider,
        provider_call_id: &str,
    ) -> Result<Option<Call>>;
}
