//! What the service needs from a database. One implementation (SeaORM, in
//! `voiceplane-storage`) serves SQLite and Postgres. Every lookup is scoped by organization, so
//! another organization's row is simply not found.
//!
//! Every write of a state change takes the [`Event`](crate::model::Event) that records it
//! (or, when the data is only known inside the write, its
//! [`EventStamp`](crate::model::EventStamp)) and stores it in the same transaction as the
//! change: no change without its event, no event without its change. A change a caller makes
//! also records its audit entry in that transaction: carried by the event
//! ([`Event::audit`](crate::model::Event::audit)), or passed as an
//! [`AuditEntry`](crate::model::AuditEntry) to the few writes that record no event; a write
//! that changes nothing (a row not found) records no entry.
//!
//! An update takes a [`Change`]: the repository reads the resource inside its write
//! transaction (the row locked: SQLite's write lock is taken at `BEGIN`, Postgres locks the
//! row), applies the change there, and writes it back, so a change touches only the fields
//! its caller named and concurrent changes of other fields all survive. The event's
//! [`EventStamp::change`](crate::model::EventStamp::change) also checks the caller's
//! `If-Match` against the resource as read there, which makes it a compare-and-set across
//! instances.
//!
//! Repositories map their failures onto [`Error`](crate::Error): `Unavailable` when the
//! database cannot be reached, `Conflict` for unique violations named in the method docs, and
//! `Internal` for anything else.
//!
//! One module per resource, named as the resource is in [`model`](crate::model), the service
//! and storage's repository; each trait is re-exported here.

use async_trait::async_trait;

use crate::error::Result;

mod agents;
mod api_keys;
mod audit;
mod calls;
mod campaigns;
mod documents;
mod events;
mod integrations;
mod organizations;
mod phone_numbers;
mod retention;
mod suppressions;
mod telephony;
mod tools;
mod usage;
mod webhooks;

pub use agents::*;
pub use api_keys::*;
pub use audit::*;
pub use calls::*;
pub use campaigns::*;
pub use documents::*;
pub use events::*;
pub use integrations::*;
pub use organizations::*;
pub use phone_numbers::*;
pub use retention::*;
pub use suppressions::*;
pub use telephony::*;
pub use tools::*;
pub use usage::*;
pub use webhooks::*;

/// A change to one resource, applied by the repository to the resource as its write
/// transaction reads it; an error aborts the write.
pub type Change<'a, T> = Box<dyn FnOnce(&mut T) -> Result<()> + Send + 'a>;

/// Liveness of the backend.
#[async_trait]
pub trait HealthRepository: Send + Sync {
    /// Succeeds when the database answers a trivial query.
    async fn ping(&self) -> Result<()>;
}

/// The whole storage interface the [`Service`](crate::Service) uses.
pub trait Repository:
    HealthRepository
    + crate::cache::ChangeRepository
    + OrganizationRepository
    + ApiKeyRepository
    + CallRepository
    + CallQueryRepository
    + TranscriptRepository
    + ToolRepository
    + DocumentRepository
    + AgentRepository
    + PhoneNumberRepository
    + IntegrationRepository
    + crate::jobs::JobRepository
    + EventRepository
    + AuditRepository
    + WebhookRepository
    + RetentionRepository
    + TelephonyRepository
    + SuppressionRepository
    + CampaignRepository
    + UsageRepository
    + crate::idempotency::IdempotencyRepository
    + Send
    + Sync
    + 'static
{
}

impl<T> Repository for T where
    T: HealthRepository
        + crate::cache::ChangeRepository
        + OrganizationRepository
        + ApiKeyRepository
        + CallRepository
        + CallQueryRepository
        + TranscriptRepository
        + ToolRepository
        + DocumentRepository
        + AgentRepository
        + PhoneNumberRepository
        + IntegrationRepository
        + crate::jobs::JobRepository
        + EventRepository
        + AuditRepository
        + WebhookRepository
        + RetentionRepository
        + TelephonyRepository
        + SuppressionRepository
        + CampaignRepository
        + UsageRepository
        + crate::idempotency::IdempotencyRepository
        + Send
        + Sync
        + 'static
{
}
