//! Webhook endpoints: where an organization's events are delivered, the bodies that create and
//! change them, the record of each delivery, and what the delivery job reads and writes.

use serde::{Deserialize, Serialize};

use super::Event;
use crate::ids::{IdGenerator, IdKind, RandomIds};
use crate::jobs::NewJob;
use crate::time::Timestamp;

/// The kind of the job that makes a delivery's next attempt; its payload is
/// `{"delivery_id": …}`.
pub const WEBHOOK_DELIVER: &str = "webhook.deliver";

/// A delivery job gives up only when its handler says so (the handler follows the retry
/// schedule itself), so its attempt limit is only a bound on a handler that keeps crashing.
const DELIVER_MAX_ATTEMPTS: u32 = 1000;

/// Whether an endpoint receives events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum WebhookStatus {
    /// Events of its types are delivered.
    Enabled,
    /// Nothing is delivered; deliveries already scheduled are not attempted.
    Disabled,
}

/// A webhook endpoint, without its secret.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Webhook {
    /// `whk_` + 12 hex digits.
    pub webhook_id: String,
    /// Organization id (not serialized: the endpoint's JSON has no organization field).
    #[serde(skip_serializing)]
    pub organization_id: String,
    /// Where events are POSTed, `http` or `https`.
    pub url: String,
    /// The event types delivered, or exactly `["*"]` for every type.
    pub events: Vec<String>,
    /// What it is for.
    pub description: Option<String>,
    /// `enabled` or `disabled`.
    pub status: WebhookStatus,
    /// When it was created.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// An endpoint with its signing secret: the answer of create and rotate-secret, the only
/// answers that show the secret.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct CreatedWebhook {
    /// The endpoint.
    #[serde(flatten)]
    pub webhook: Webhook,
    /// `whsec_` + standard base64 of 32 random bytes; the HMAC key is the decoded bytes.
    pub secret: String,
}

/// Body of `POST /api/webhooks`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewWebhook {
    /// Where events are POSTed: an `http` or `https` URL.
    pub url: String,
    /// Event types to deliver (e.g. `call.created`), or exactly `["*"]` for every type.
    pub events: Vec<String>,
    /// What it is for, at most 500 characters.
    pub description: Option<String>,
}

/// Body of `PATCH /api/webhooks/{webhook_id}`: the fields to change.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WebhookUpdate {
    /// Where events are POSTed: an `http` or `https` URL.
    pub url: Option<String>,
    /// Event types to deliver, or exactly `["*"]`.
    pub events: Option<Vec<String>>,
    /// What it is for, at most 500 characters.
    pub description: Option<String>,
    /// `enabled` or `disabled`.
    pub status: Option<WebhookStatus>,
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Waiting for its next attempt.
    Pending,
    /// The endpoint answered 2xx.
    Succeeded,
    /// Every attempt of the retry schedule failed.
    Failed,
}

/// One event's delivery to one endpoint, with the outcome of its last attempt.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Delivery {
    /// `dlv_` + 16 hex digits.
    pub delivery_id: String,
    /// The endpoint.
    pub webhook_id: String,
    /// The event delivered; also the `webhook-id` header of every attempt.
    pub event_id: String,
    /// The event's type.
    pub event_type: String,
    /// `pending`, `succeeded` or `failed`.
    pub status: DeliveryStatus,
    /// Attempts made so far.
    pub attempts: u32,
    /// When the last attempt was made.
    pub last_attempt_at: Option<Timestamp>,
    /// When the next attempt is due (none once it succeeded or failed).
    pub next_attempt_at: Option<Timestamp>,
    /// The HTTP status of the last attempt's answer, if one came.
    pub last_status_code: Option<u16>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// When the delivery was scheduled.
    pub created_at: Timestamp,
}

impl Delivery {
    /// A new pending delivery of `event` to `webhook_id`, due at the event's time, with a
    /// random id.
    pub fn pending(webhook_id: &str, event: &Event) -> Self {
        Self {
            delivery_id: RandomIds.generate(IdKind::Delivery),
            webhook_id: webhook_id.to_owned(),
            event_id: event.event_id.clone(),
            event_type: event.event_type.as_str().to_owned(),
            status: DeliveryStatus::Pending,
            attempts: 0,
            last_attempt_at: None,
            next_attempt_at: Some(event.created_at),
            last_status_code: None,
            last_error: None,
            created_at: event.created_at,
        }
    }

    /// The job that attempts this delivery at `run_at`.
    pub fn job(&self, run_at: Timestamp) -> NewJob {
        delivery_job(&self.delivery_id, run_at)
    }
}

/// The job that attempts delivery `delivery_id` at `run_at`.
pub fn delivery_job(delivery_id: &str, run_at: Timestamp) -> NewJob {
    NewJob {
        job_id: crate::jobs::new_job_id(),
        kind: WEBHOOK_DELIVER.to_owned(),
        payload: serde_json::json!({ "delivery_id": delivery_id }),
        run_at,
        max_attempts: DELIVER_MAX_ATTEMPTS,
        unique_key: None,
    }
}

/// Everything one delivery attempt needs, read in one go by the delivery job.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryTarget {
    /// The delivery as stored.
    pub delivery: Delivery,
    /// The endpoint's organization.
    pub organization_id: String,
    /// The endpoint's URL now (it may have changed since the event).
    pub url: String,
    /// Whether the endpoint is enabled now.
    pub webhook_status: WebhookStatus,
    /// The current secret, sealed with the credential cipher.
    pub secret_sealed: String,
    /// The secret before the last rotation, sealed, while it still signs.
    pub previous_secret_sealed: Option<String>,
    /// When the previous secret stops signing.
    pub previous_secret_expires_at: Option<Timestamp>,
    /// The event delivered.
    pub event: Event,
}

/// The outcome of one delivery attempt, to record.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryAttempt {
    /// When it was made.
    pub at: Timestamp,
    /// The answer's HTTP status, if one came.
    pub status_code: Option<u16>,
    /// Why it failed.
    pub error: Option<String>,
    /// Where the delivery stands after it.
    pub status: DeliveryStatus,
    /// When the next attempt is due, if there is one.
    pub next_attempt_at: Option<Timestamp>,
}
