//! Delivering events to webhook endpoints: the `webhook.deliver` job, one per delivery. Each
//! run signs the event (Standard Webhooks: every secret that is still valid signs it), sends
//! it, records the attempt, and asks to run again after the next delay of the retry schedule
//! until the endpoint answers 2xx or the schedule is spent. Each attempt is counted in
//! [`crate::metrics::WEBHOOK_DELIVERY_ATTEMPTS_TOTAL`].

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::crypto::CredentialCipher;
use crate::jobs::{Done, Job, JobError, JobHandler};
use crate::model::{DeliveryAttempt, DeliveryStatus, WebhookStatus};
use crate::repo::Repository;
use crate::time::Clock;
use crate::webhooks::{DeliveryRequest, WebhookSecret, WebhookSender, sign};

/// The default delays between attempts, in seconds.
pub const DEFAULT_RETRY_SCHEDULE: &[u64] = &[5, 300, 1800, 7200, 18000, 36000, 36000];

pub(crate) struct DeliverWebhook {
    pub(crate) repo: Arc<dyn Repository>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) cipher: Option<Arc<CredentialCipher>>,
    pub(crate) sender: Arc<dyn WebhookSender>,
    pub(crate) schedule: Vec<Duration>,
}

/// `delay` give or take a tenth, so that deliveries that failed together spread out.
fn jittered(delay: Duration) -> Duration {
    delay.mul_f64(0.9 + rand::random::<f64>() * 0.2)
}

#[async_trait]
impl JobHandler for DeliverWebhook {
    async fn run(&self, job: &Job) -> Result<Done, JobError> {
        let Some(delivery_id) = job.payload["delivery_id"].as_str() else {
            return Err(JobError::Fail("the job names no delivery".into()));
        };
        // Deleted with its endpoint, or already ended (a duplicate run): nothing to do.
        let Some(target) = self.repo.delivery_target(delivery_id).await? else {
            return Ok(Done::Finished);
        };
        let now = self.clock.now();
        if target.delivery.status != DeliveryStatus::Pending {
            return Ok(Done::Finished);
        }
        // A retry asked while an attempt was scheduled leaves two jobs: the later one finds
        // the delivery already attempted and scheduled by the other, and stops.
        if target.delivery.next_attempt_at.is_some_and(|due| due > now) {
            return Ok(Done::Finished);
        }
        if target.webhook_status != WebhookStatus::Enabled {
            count_attempt(DeliveryStatus::Failed);
            let attempt = DeliveryAttempt {
                at: now,
                status_code: None,
                error: Some("the endpoint is disabled".into()),
                status: DeliveryStatus::Failed,
                next_attempt_at: None,
            };
            self.repo
                .delivery_record_attempt(delivery_id, &attempt)
                .await?;
            return Ok(Done::Finished);
        }
        let cipher = self
            .cipher
            .as_ref()
            .ok_or_else(|| JobError::Retry("secrets.master_key is not configured".into()))?;
        let aad = target.delivery.webhook_id.as_bytes();
        let mut secrets = vec![open_secret(cipher, &target.secret_sealed, aad)?];
        if let (Some(sealed), Some(until)) = (
            &target.previous_secret_sealed,
            target.previous_secret_expires_at,
        ) && until > now
        {
            secrets.push(open_secret(cipher, sealed, aad)?);
        }
        let body = serde_json::to_vec(&target.event)
            .map_err(|e| JobError::Fail(format!("the event does not serialize: {e}")))?;
        // The receiver checks this against its own clock (replay protection), so it is the
        // wall clock's, whatever clock the service keeps its records with.
        let timestamp = crate::time::Timestamp::now().as_micros() / 1_000_000;
        let signature = sign(&secrets, &target.event.event_id, timestamp, &body);
        let request = DeliveryRequest {
            url: target.url.clone(),
            msg_id: target.event.event_id.clone(),
            timestamp,
            body: body.into(),
            signature,
        };
        let outcome = self.sender.deliver(&request).await;
        let attempts = target.delivery.attempts + 1;
        let next = (!outcome.succeeded)
            .then(|| self.schedule.get(attempts as usize - 1).copied())
            .flatten()
            .map(|delay| self.clock.now().plus(jittered(delay)));
        let status = match (outcome.succeeded, next) {
            (true, _) => DeliveryStatus::Succeeded,
            (false, Some(_)) => DeliveryStatus::Pending,
            (false, None) => DeliveryStatus::Failed,
        };
        count_attempt(status);
        let attempt = DeliveryAttempt {
            at: now,
            status_code: outcome.status_code,
            error: outcome.error.clone(),
            status,
            next_attempt_at: next,
        };
        self.repo
            .delivery_record_attempt(delivery_id, &attempt)
            .await?;
        Ok(match next {
            Some(at) => Done::RunAgainAt(at),
            None => Done::Finished,
        })
    }
}

/// Counts one attempt in [`crate::metrics::WEBHOOK_DELIVERY_ATTEMPTS_TOTAL`] by the status
/// it left the delivery in.
fn count_attempt(status: DeliveryStatus) {
    let outcome = match status {
        DeliveryStatus::Succeeded => "succeeded",
        DeliveryStatus::Pending => "retrying",
        DeliveryStatus::Failed => "failed",
    };
    metrics::counter!(crate::metrics::WEBHOOK_DELIVERY_ATTEMPTS_TOTAL, "outcome" => outcome)
        .increment(1);
}

fn open_secret(
    cipher: &CredentialCipher,
    sealed: &str,
    aad: &[u8],
) -> Result<WebhookSecret, JobError> {
    let plain = cipher.open(sealed, aad)?;
    let text = String::from_utf8(plain)
        .map_err(|_| JobError::Fail("a stored webhook secret is not text".into()))?;
    WebhookSecret::parse(&text).map_err(JobError::from)
}
