//! Idempotency keys through the service: claim, complete, release, and the recurring sweep
//! of expired keys. The rules are in [`crate::idempotency`].

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::Service;
use super::jobs::SWEEP_BATCH;
use crate::error::{Error, Result};
use crate::idempotency::{
    Claim, IDEMPOTENCY_LEASE, IDEMPOTENCY_SWEEP, IDEMPOTENCY_TTL, KeyBinding, NewIdempotencyKey,
    StoredAnswer,
};
use crate::jobs::{Done, Job, JobError, JobHandler, NewJob};
use crate::model::Call;

/// How often the sweep runs.
const SWEEP_INTERVAL: Duration = Duration::from_secs(3600);

impl Service {
    /// Claims `key` in `scope` for a request with `fingerprint`: the key's first use claims it;
    /// a later use with the same fingerprint replays the stored answer, or is
    /// [`Claim::InFlight`] while the first still runs; another fingerprint is a
    /// [`Claim::Mismatch`]. An expired key, or a running one whose lease ended, is claimed
    /// anew.
    pub async fn idempotency_claim(
        &self,
        scope: &str,
        key: &str,
        fingerprint: &str,
    ) -> Result<Claim> {
        // A few rounds at most: each lost race means another request changed the row, and
        // the next read sees what it did.
        for _ in 0..3 {
            let now = self.now();
            let row = NewIdempotencyKey {
                scope: scope.to_owned(),
                key: key.to_owned(),
                fingerprint: fingerprint.to_owned(),
                token: format!("{:032x}", rand::random::<u128>()),
                created_at: now,
                expires_at: now.plus(IDEMPOTENCY_TTL),
                locked_until: now.plus(IDEMPOTENCY_LEASE),
            };
            if self.repo.idempotency_insert(&row).await? {
                return Ok(Claim::Claimed { token: row.token });
            }
            let Some(found) = self.repo.idempotency_get(scope, key).await? else {
                continue; // deleted in between: insert again
            };
            let expired = found.expires_at <= now;
            let abandoned = found.answer.is_none() && found.locked_until <= now;
            if expired || (abandoned && found.fingerprint == fingerprint) {
                if self.repo.idempotency_take_over(&row).await? {
                    return Ok(Claim::Claimed { token: row.token });
                }
                continue;
            }
            if found.fingerprint != fingerprint {
                return Ok(Claim::Mismatch);
            }
            return Ok(match found.answer {
                Some(answer) => Claim::Replay(answer),
                None => Claim::InFlight,
            });
        }
        Ok(Claim::InFlight)
    }

    /// Stores the answer of the request that claimed `key` with `token`, for replay. A claim
    /// lost meanwhile (lease ended and taken over) stores nothing.
    pub async fn idempotency_complete(
        &self,
        scope: &str,
        key: &str,
        token: &str,
        answer: &StoredAnswer,
    ) -> Result<()> {
        if !self
            .repo
            .idempotency_complete(scope, key, token, answer)
            .await?
        {
            tracing::warn!("an idempotency key's claim ended before its answer was stored");
        }
        Ok(())
    }

    /// Forgets `key`, claimed with `token`: its answer is not one to replay, so a retry runs
    /// the operation again.
    pub async fn idempotency_release(&self, scope: &str, key: &str, token: &str) -> Result<()> {
        self.repo.idempotency_release(scope, key, token).await
    }

    /// The call `key` created before, when it did: a dial whose answer was lost. A 422 when
    /// the key was used with another request; a 409 when the call was deleted since (the key
    /// never creates a second one).
    pub(crate) async fn bound_call(
        &self,
        organization_id: &str,
        key: Option<&KeyBinding>,
    ) -> Result<Option<Call>> {
        let Some(key) = key else {
            return Ok(None);
        };
        let Some(bound) = self
            .repo
            .idempotency_bound(&key.scope, &key.key, self.now())
            .await?
        else {
            return Ok(None);
        };
        let call_sid = bound.for_retry(key)?;
        match self.repo.call_get(organization_id, &call_sid).await? {
            Some(call) => Ok(Some(call)),
            None => Err(Error::Conflict(format!(
                "the call this Idempotency-Key created, {call_sid}, has been deleted since"
            ))),
        }
    }

    /// Whether `key` in `scope` is bound to what its first request created: that request
    /// committed, so running it again only answers what it made.
    pub async fn idempotency_bound(&self, scope: &str, key: &str) -> Result<bool> {
        Ok(self
            .repo
            .idempotency_bound(scope, key, self.now())
            .await?
            .is_some())
    }

    /// Deletes every expired key, in batches; returns how many.
    pub async fn idempotency_sweep(&self) -> Result<u64> {
        let now = self.now();
        let mut deleted = 0;
        loop {
            let n = self
                .repo
                .idempotency_delete_expired(now, SWEEP_BATCH)
                .await?;
            deleted += n;
            if n < SWEEP_BATCH {
                return Ok(deleted);
            }
        }
    }

    /// The recurring sweep of expired keys, due at once.
    pub(crate) fn idempotency_sweep_job(&self) -> NewJob {
        NewJob {
            job_id: crate::jobs::new_job_id(),
            kind: IDEMPOTENCY_SWEEP.to_owned(),
            payload: serde_json::json!({}),
            run_at: self.now(),
            max_attempts: 5,
            unique_key: Some(IDEMPOTENCY_SWEEP.to_owned()),
        }
    }

    /// The handler of [`IDEMPOTENCY_SWEEP`].
    pub(crate) fn idempotency_sweep_handler(&self) -> Arc<dyn JobHandler> {
        Arc::new(IdempotencySweep(self.clone()))
    }
}

/// Deletes expired keys, then asks to run again after [`SWEEP_INTERVAL`].
struct IdempotencySweep(Service);

#[async_trait]
impl JobHandler for IdempotencySweep {
    async fn run(&self, _job: &Job) -> std::result::Result<Done, JobError> {
        let started = self.0.now();
        let deleted = self.0.idempotency_sweep().await?;
        if deleted > 0 {
            tracing::info!(deleted, "expired idempotency keys deleted");
        }
        Ok(Done::RunAgainAt(started.plus(SWEEP_INTERVAL)))
    }
}
