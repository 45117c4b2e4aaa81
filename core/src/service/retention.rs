//! Deleting calls, transcripts and recordings: by hand (`DELETE /api/calls/{call_sid}` and
//! `…/recording`) and by the organization's retention policy, through one repository path so
//! both record the same events. Files are deleted by a durable job after the rows' commit.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{By, Service};
use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::jobs::{Done, Job, JobError, JobHandler, NewJob};
use crate::model::{
    Call, EventType, MAX_RETENTION_DAYS, OrganizationSettings, OrganizationSettingsUpdate, Outcome,
};
use crate::repo::{CallPart, CallRemoval};
use crate::role::Permission;
use crate::time::Timestamp;
use crate::validate;

/// The kind of the recurring job that applies every organization's retention policy.
pub const RETENTION_SWEEP: &str = "retention.sweep";

/// The kind of the job that deletes a removed recording's file.
pub const BLOB_DELETE: &str = "blob.delete";

/// Calls handled per transaction by the sweep: small enough that no transaction holds its
/// locks for long, whatever the backlog.
const REMOVAL_BATCH: u64 = 500;

/// A file delete is retried this often (with the runner's backoff, capped at an hour) before
/// it is left `failed`: an object store down for most of a day still loses no delete.
const BLOB_DELETE_ATTEMPTS: u32 = 20;

const SECONDS_PER_DAY: i64 = 86_400;

impl Service {
    /// Removes `part` from the calls `call_sid` or `created_before` select, committing each
    /// batch with its events and file-delete jobs, then wakes the runners.
    async fn calls_remove(
        &self,
        by: Option<&Actor>,
        organization_id: &str,
        call_sid: Option<&str>,
        created_before: Option<Timestamp>,
        part: CallPart,
        now: Timestamp,
    ) -> Result<Vec<Call>> {
        let stamp = |t: EventType| self.event_stamp(t, by.map_or(By::System, By::Deleting));
        let blob_job = |call_sid: &str, key: &str| NewJob {
            job_id: crate::jobs::new_job_id(),
            kind: BLOB_DELETE.to_owned(),
            payload: serde_json::json!({ "call_sid": call_sid, "key": key }),
            run_at: now,
            max_attempts: BLOB_DELETE_ATTEMPTS,
            unique_key: None,
        };
        let removal = CallRemoval {
            organization_id,
            call_sid,
            created_before,
            part,
            limit: REMOVAL_BATCH,
            now,
            stamp: &stamp,
            blob_job: &blob_job,
        };
        self.after_write(self.repo.calls_remove(&removal).await)
    }

    /// Deletes a call with its transcript and recording; answers the call as it was.
    pub async fn call_delete(&self, actor: &Actor, call_sid: &str) -> Result<Outcome<Call>> {
        actor.require(Permission::CallsWrite)?;
        let call_sid = IdKind::Call.parse(call_sid)?;
        let call = self
            .calls_remove(
                Some(actor),
                &actor.organization_id,
                Some(&call_sid),
                None,
                CallPart::Call,
                self.now(),
            )
            .await?
            .pop()
            .ok_or_else(|| Error::not_found(format!("call {call_sid} not found")))?;
        Ok(Outcome::new(call, "call deleted"))
    }

    /// Deletes only a call's recording; answers the call without it. 404 when the call has
    /// none.
    pub async fn recording_delete(&self, actor: &Actor, call_sid: &str) -> Result<Outcome<Call>> {
        actor.require(Permission::CallsWrite)?;
        let call = self.call_view(actor, call_sid).await?;
        let now = self.now();
        let mut call = self
            .calls_remove(
                Some(actor),
                &actor.organization_id,
                Some(&call.call_sid),
                None,
                CallPart::Recording,
                now,
            )
            .await?
            .pop()
            .ok_or_else(|| Error::not_found(format!("call {} has no recording", call.call_sid)))?;
        call.recording = None;
        call.updated_at = now.max(call.updated_at);
        Ok(Outcome::new(call, "recording deleted"))
    }

    /// The organization's retention policy.
    pub async fn organization_settings_view(&self, actor: &Actor) -> Result<OrganizationSettings> {
        actor.require(Permission::SettingsRead)?;
        self.repo
            .organization_settings(&actor.organization_id)
            .await?
            .ok_or_else(|| Error::not_found("this organization no longer exists"))
    }

    /// Changes the retention policy: absent fields unchanged, `null` keeps forever.
    pub async fn organization_settings_update(
        &self,
        actor: &Actor,
        input: OrganizationSettingsUpdate,
    ) -> Result<OrganizationSettings> {
        actor.require(Permission::SettingsWrite)?;
        let fields = [
            ("recording_retention_days", input.recording_retention_days),
            ("transcript_retention_days", input.transcript_retention_days),
            ("call_retention_days", input.call_retention_days),
        ];
        for (field, change) in fields {
            if let Some(Some(d)) = change
                && !(1..=MAX_RETENTION_DAYS).contains(&d)
            {
                return Err(Error::invalid(format!(
                    "{field} must be between 1 and {MAX_RETENTION_DAYS} days, or null to keep forever"
                )));
            }
        }
        let runtime_stream_url = input
            .runtime_stream_url
            .map(|url| {
                url.as_deref()
                    .map(|url| validate::runtime_stream_url("runtime_stream_url", url))
                    .transpose()
            })
            .transpose()?;
        let calling_hours = input
            .calling_hours
            .map(|hours| {
                hours
                    .map(|h| {
                        let start = validate::time_of_day("calling_hours.start", &h.start)?;
                        let end = validate::time_of_day("calling_hours.end", &h.end)?;
                        if start == end {
                            return Err(Error::invalid(
                                "calling_hours.start and calling_hours.end must differ; use \
                                 null for calls at any hour",
                            ));
                        }
                        Ok(h)
                    })
                    .transpose()
            })
            .transpose()?;
        let timezone = input
            .timezone
            .as_deref()
            .map(|tz| validate::timezone("timezone", tz))
            .transpose()?;
        if let Some(Some(n)) = input.max_concurrent_calls
            && !(1..=10_000).contains(&n)
        {
            return Err(Error::invalid(
                "max_concurrent_calls must be between 1 and 10000, or null for no limit",
            ));
        }
        let max_concurrent_calls = input.max_concurrent_calls;
        if let Some(Some(limit)) = input.monthly_credit_limit
            && !(limit.is_finite() && limit > 0.0 && limit <= 1e15)
        {
            return Err(Error::invalid(
                "monthly_credit_limit must be a number of credits above 0, or null for no limit",
            ));
        }
        let monthly_credit_limit = input.monthly_credit_limit;
        let change = Box::new(move |settings: &mut OrganizationSettings| {
            if let Some(url) = runtime_stream_url {
                settings.runtime_stream_url = url;
            }
            if let Some(hours) = calling_hours {
                settings.calling_hours = hours;
            }
            if let Some(tz) = timezone {
                settings.timezone = tz;
            }
            if let Some(limit) = max_concurrent_calls {
                settings.max_concurrent_calls = limit;
            }
            if let Some(limit) = monthly_credit_limit {
                settings.monthly_credit_limit = limit;
            }
            let slots = [
                &mut settings.recording_retention_days,
                &mut settings.transcript_retention_days,
                &mut settings.call_retention_days,
            ];
            for ((_, change), slot) in fields.into_iter().zip(slots) {
                if let Some(days) = change {
                    *slot = days;
                }
            }
            Ok(())
        });
        let audit = self.audited_change(actor, "settings.update", "settings");
        // A change of calling hours, zone or limits hurries campaigns' pacers.
        self.after_write(
            self.repo
                .organization_settings_set(&actor.organization_id, change, &audit)
                .await,
        )?
        .ok_or_else(|| Error::not_found("this organization no longer exists"))
    }

    /// Applies every organization's retention policy once, in batches; returns how many calls
    /// lost a part.
    pub async fn retention_sweep(&self) -> Result<u64> {
        let now = self.now();
        let mut removed = 0u64;
        for (organization_id, policy) in self.repo.retention_policies().await? {
            // Calls first: a call removed whole needs no separate recording or transcript pass.
            for (part, days) in [
                (CallPart::Call, policy.call_retention_days),
                (CallPart::Recording, policy.recording_retention_days),
                (CallPart::Transcript, policy.transcript_retention_days),
            ] {
                let Some(days) = days else { continue };
                let cutoff = now.add_seconds(-days.saturating_mul(SECONDS_PER_DAY));
                loop {
                    let n = self
                        .calls_remove(None, &organization_id, None, Some(cutoff), part, now)
                        .await?
                        .len() as u64;
                    removed += n;
                    if n < REMOVAL_BATCH {
                        break;
                    }
                }
            }
        }
        if removed > 0 {
            tracing::info!(removed, "retention policy applied");
        }
        Ok(removed)
    }

    /// Runs the retention sweep every `interval` (default an hour).
    pub fn with_retention_sweep_interval(mut self, interval: Duration) -> Self {
        self.retention_sweep_interval = interval;
        self
    }

    /// The jobs and handlers of this module, for [`Service::job_runner`].
    pub(super) fn retention_handlers(&self) -> Vec<(&'static str, Arc<dyn JobHandler>)> {
        let mut handlers: Vec<(&'static str, Arc<dyn JobHandler>)> =
            vec![(RETENTION_SWEEP, Arc::new(RetentionSweep(self.clone())))];
        // Without a store, file deletes wait (pending) for an instance that has one.
        if self.blobs.is_some() {
            handlers.push((BLOB_DELETE, Arc::new(BlobDelete(self.clone()))));
        }
        handlers
    }

    /// The recurring retention sweep, due at once.
    pub(super) fn retention_sweep_job(&self) -> NewJob {
        NewJob {
            job_id: crate::jobs::new_job_id(),
            kind: RETENTION_SWEEP.to_owned(),
            payload: serde_json::json!({}),
            run_at: self.now(),
            max_attempts: 5,
            unique_key: Some(RETENTION_SWEEP.to_owned()),
        }
    }
}

/// Applies the retention policies, then asks to run again after the interval.
struct RetentionSweep(Service);

#[async_trait]
impl JobHandler for RetentionSweep {
    async fn run(&self, _job: &Job) -> std::result::Result<Done, JobError> {
        let started = self.0.now();
        self.0.retention_sweep().await?;
        Ok(Done::RunAgainAt(
            started.plus(self.0.retention_sweep_interval),
        ))
    }
}

/// Deletes the file of a removed recording; a file already gone counts as deleted.
struct BlobDelete(Service);

#[async_trait]
impl JobHandler for BlobDelete {
    async fn run(&self, job: &Job) -> std::result::Result<Done, JobError> {
        let field = |name: &str| {
            job.payload
                .get(name)
                .and_then(|v| v.as_str())
                .ok_or_else(|| JobError::Fail(format!("the job names no {name}")))
        };
        let (call_sid, key) = (field("call_sid")?, field("key")?);
        if self.0.repo.recording_key_in_use(call_sid, key).await? {
            return Ok(Done::Finished);
        }
        self.0.blobs()?.delete(key).await?;
        Ok(Done::Finished)
    }
}
