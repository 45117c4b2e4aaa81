//! Calls that outlive their reports (DESIGN §23): a provider's callback can be lost, and a
//! call it never reports on would stay live forever, holding a concurrency slot and its
//! campaign. A recurring job asks the provider about every call silent for longer than it
//! could last, and applies what it says; a call the provider no longer knows ends
//! `provider_lost` (which a later report still moves).

use async_trait::async_trait;

use crate::jobs::{Done, Job, JobError, JobHandler, NewJob};
use crate::model::Call;
use crate::service::Service;

/// The recurring job that reconciles calls with their providers.
pub const CALLS_RECONCILE: &str = "calls.reconcile";

/// Calls asked about per run; the rest wait for the next run, the longest silent first.
const BATCH: u64 = 200;

/// Seconds past the longest a call can ring or run before its silence is suspicious.
const GRACE_SECS: i64 = 60;

impl Service {
    /// The recurring job of [`CALLS_RECONCILE`], due now.
    pub(in crate::service) fn reconcile_job(&self) -> NewJob {
        NewJob {
            job_id: crate::jobs::new_job_id(),
            kind: CALLS_RECONCILE.to_owned(),
            payload: serde_json::json!({}),
            run_at: self.now(),
            max_attempts: 5,
            unique_key: Some(CALLS_RECONCILE.to_owned()),
        }
    }

    /// Asks the provider about each call silent past its bounds and applies the answer.
    async fn reconcile_calls(&self) -> crate::Result<u64> {
        let now = self.now();
        let ring = i64::from(self.dialing.ring_timeout_secs) + GRACE_SECS;
        let talk = i64::try_from(self.dialing.max_call.as_secs()).unwrap_or(i64::MAX / 2);
        let calls = self
            .repo
            .calls_overdue(
                now.add_seconds(-ring),
                now.add_seconds(-(talk + GRACE_SECS)),
                BATCH,
            )
            .await?;
        let mut ended = 0;
        for call in &calls {
            match self.reconcile_call(call).await {
                Ok(true) => ended += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::info!(call_sid = %call.call_sid, error = %e, "could not ask the provider about a silent call");
                }
            }
        }
        Ok(ended)
    }

    /// Asks `call`'s provider where it stands and applies it: whether it ended.
    async fn reconcile_call(&self, call: &Call) -> crate::Result<bool> {
        let Some(provider_call_id) = call.provider_call_id.as_deref() else {
            return Ok(false);
        };
        let (_, credentials) = self.call_credentials(call).await?;
        let (gateway, _) = self.telephony_gateway()?;
        match gateway.call_state(&credentials, provider_call_id).await {
            Ok(found) => {
                let ends = found
                    .status
                    .is_some_and(crate::telephony::progress::is_terminal);
                self.adopt(call, found).await?;
                Ok(ends)
            }
            Err(e) if e.call_is_gone() => {
                tracing::info!(call_sid = %call.call_sid, "the provider no longer knows a live call; it ends provider_lost");
                self.lose_call(call).await?;
                Ok(true)
            }
            Err(e) => Err(crate::Error::Upstream(e.sentence().to_owned())),
        }
    }
}

/// Runs [`CALLS_RECONCILE`] every `check_every`.
pub(in crate::service) struct ReconcileCalls(pub(in crate::service) Service);

#[async_trait]
impl JobHandler for ReconcileCalls {
    async fn run(&self, _job: &Job) -> std::result::Result<Done, JobError> {
        let ended = self.0.reconcile_calls().await?;
        if ended > 0 {
            tracing::info!(ended, "calls ended by asking their providers");
        }
        Ok(Done::RunAgainAt(
            self.0.now().plus(self.0.dialing.check_every),
        ))
    }
}
