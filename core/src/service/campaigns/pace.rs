//! Pacing: the durable `campaign.pace` job of a running campaign, one per campaign (its
//! unique key), so that one instance paces a campaign at a time. A run dials the due
//! recipients that its windows allow while the campaign has room, through the checks of
//! `POST /api/calls/dial` (`prepare_dial`) and a transaction that claims the recipient beside
//! the call (`campaign_dial`), then schedules itself for the next moment there is something
//! to do. A call's end hurries the job, in the transaction that ends the call; so does every
//! other change that can make a recipient dialable (DESIGN §23): a start, the organization's
//! calling hours, zone or limits, a suppression removed. A recipient the windows or calling
//! hours keep waiting is deferred with its `window_wait` mark, which those changes clear.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::jobs::{Done, Job, JobError, JobHandler, NewJob};
use crate::model::{Campaign, CampaignStatus, EventType};
use crate::repo::{CampaignDial, TransitionEffects};
use crate::service::telephony::{DialPlan, Schedule, callee_zones};
use crate::service::{By, Service};
use crate::time::Timestamp;

/// The job that paces a running campaign.
pub const CAMPAIGN_PACE: &str = "campaign.pace";

/// How long a pacer with calls in flight waits for one to end before it looks again anyway.
const RECHECK_SECS: i64 = 30;
/// How long it waits when the organization's `max_concurrent_calls` are in flight.
const ORGANIZATION_FULL_SECS: i64 = 5;
/// How long it waits when the month's credits have reached the `monthly_credit_limit` (until
/// the limit is raised or the month ends).
const OUT_OF_CREDIT_SECS: i64 = 300;
/// Most due recipients read at once.
const DUE_BATCH: u64 = 200;

/// The payload of [`CAMPAIGN_PACE`].
#[derive(Debug, Serialize, Deserialize)]
struct PaceJob {
    organization_id: String,
    campaign_id: String,
}

/// The unique key of a campaign's pacing job.
pub fn pace_key(campaign_id: &str) -> String {
    format!("{CAMPAIGN_PACE}:{campaign_id}")
}

/// The pacing job of a campaign, due at `now`.
pub(super) fn pace_job(organization_id: &str, campaign_id: &str, now: Timestamp) -> Result<NewJob> {
    Ok(NewJob {
        job_id: crate::jobs::new_job_id(),
        kind: CAMPAIGN_PACE.to_owned(),
        payload: serde_json::to_value(PaceJob {
            organization_id: organization_id.to_owned(),
            campaign_id: campaign_id.to_owned(),
        })
        .map_err(|e| Error::Internal(format!("encoding a pacing job: {e}")))?,
        run_at: now,
        max_attempts: 20,
        unique_key: Some(pace_key(campaign_id)),
    })
}

impl Service {
    /// Moves a running campaign on to `status` as the system (completed; paused by a dial no
    /// call could pass), when it still runs and, for completion, has nothing left to do.
    async fn campaign_settle(
        &self,
        campaign: &Campaign,
        event: EventType,
        reason: Option<String>,
    ) -> Result<()> {
        let now = self.now();
        let change = Box::new(move |c: &mut Campaign| {
            let idle = c.counts.pending == 0 && c.counts.in_progress == 0;
            if c.status != CampaignStatus::Running
                || (event == EventType::CampaignCompleted && !idle)
            {
                return Err(Error::Conflict("no longer to be settled".to_owned()));
            }
            c.status = match event {
                EventType::CampaignCompleted => CampaignStatus::Completed,
                _ => CampaignStatus::Paused,
            };
            c.paused_reason = reason;
            c.updated_at = now.max(c.updated_at);
            Ok(())
        });
        let stamp = self.event_stamp(event, By::System);
        match self
            .repo
            .campaign_transition(
                &campaign.organization_id,
                &campaign.campaign_id,
                change,
                &stamp,
                TransitionEffects::default(),
            )
            .await
        {
            Ok(_) => {
                self.jobs.wake();
                Ok(())
            }
            Err(Error::Conflict(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// One run of a campaign's pacer; see the module's documentation.
    async fn pace(&self, org: &str, campaign_id: &str) -> Result<Done> {
        let Some(campaign) = self.repo.campaign_get(org, campaign_id).await? else {
            return Ok(Done::Finished);
        };
        if campaign.status != CampaignStatus::Running {
            return Ok(Done::Finished);
        }
        let now = self.now();
        let ended = campaign.ends_at.is_some_and(|end| end <= now);
        if ended {
            self.repo.recipients_expire(campaign_id).await?;
        } else if let Some(start) = campaign.starts_at.filter(|start| *start > now) {
            return Ok(Done::RunAgainAt(start));
        }
        self.repo.recipients_lost(campaign_id).await?;
        let Some(settings) = self.repo.organization_settings(org).await? else {
            return Ok(Done::Finished);
        };
        let mut room =
            u64::from(campaign.max_concurrency).saturating_sub(campaign.counts.in_progress);
        let mut dials = campaign.dials;
        let mut wait_for_room = false;
        if !ended {
            let schedule = Schedule::new(&campaign.windows, settings.calling_hours.as_ref())?;
            'dialing: while room > 0 {
                let due = self
                    .repo
                    .recipients_due(campaign_id, now, DUE_BATCH.min(room * 4))
                    .await?;
                if due.is_empty() {
                    break;
                }
                for recipient in due {
                    if room == 0 {
                        break 'dialing;
                    }
                    // Windows are read in the recipient's zone, else the campaign's; calling
                    // hours in the callee's (`callee_zones`).
                    let zone = recipient
                        .timezone
                        .clone()
                        .unwrap_or_else(|| campaign.timezone.clone());
                    let hours_zones = callee_zones(
                        recipient.timezone.as_deref(),
                        &recipient.to_number,
                        &settings.timezone,
                    );
                    if let Some(at) = schedule.wait_in(&zone, &hours_zones, now)? {
                        self.repo
                            .recipient_defer(&recipient.recipient_id, at)
                            .await?;
                        continue;
                    }
                    let numbers = &campaign.from_phone_number_ids;
                    let number_id = numbers[(dials % numbers.len() as u64) as usize].clone();
                    let mut variables = campaign.dynamic_variables.clone();
                    variables.extend(recipient.dynamic_variables.clone());
                    let mut metadata = serde_json::Map::new();
                    metadata.insert("campaign_id".into(), campaign_id.into());
                    metadata.insert("recipient_id".into(), recipient.recipient_id.clone().into());
                    let plan = DialPlan {
                        agent_id: campaign.agent_id.clone(),
                        number_id,
                        to_number: recipient.to_number.clone(),
                        dynamic_variables: variables,
                        metadata,
                        timezone: recipient.timezone.clone(),
                        agent_version: None,
                    };
                    let (mut call, job) = match self.prepare_dial(org, plan, &settings).await {
                        Ok(ready) => ready,
                        Err(e @ (Error::NotFound(_) | Error::Unprocessable(_))) => {
                            // What stops this dial stops every other: the campaign waits for
                            // someone to fix it.
                            tracing::warn!(campaign_id, error = %e, "a campaign cannot dial; it is paused");
                            self.campaign_settle(
                                &campaign,
                                EventType::CampaignPaused,
                                Some(e.to_string()),
                            )
                            .await?;
                            return Ok(Done::Finished);
                        }
                        Err(e) => return Err(e),
                    };
                    call.campaign_id = Some(campaign_id.to_owned());
                    call.recipient_id = Some(recipient.recipient_id.clone());
                    let event = self.event(EventType::CallCreated, &call, By::System)?;
                    match self
                        .repo
                        .campaign_dial(&call, &event, &[job], recipient.attempts)
                        .await?
                    {
                        CampaignDial::Placed => {
                            self.jobs.wake();
                            dials += 1;
                            room -= 1;
                        }
                        CampaignDial::Suppressed => {}
                        CampaignDial::OrganizationFull => {
                            return Ok(Done::RunAgainAt(now.add_seconds(ORGANIZATION_FULL_SECS)));
                        }
                        CampaignDial::OutOfCredit => {
                            return Ok(Done::RunAgainAt(now.add_seconds(OUT_OF_CREDIT_SECS)));
                        }
                        CampaignDial::Skipped => {
                            wait_for_room = true;
                            break 'dialing;
                        }
                    }
                }
            }
        }
        let Some(campaign) = self.repo.campaign_get(org, campaign_id).await? else {
            return Ok(Done::Finished);
        };
        if campaign.status != CampaignStatus::Running {
            return Ok(Done::Finished);
        }
        if campaign.counts.pending == 0 && campaign.counts.in_progress == 0 {
            self.campaign_settle(&campaign, EventType::CampaignCompleted, None)
                .await?;
            return Ok(Done::Finished);
        }
        let full =
            wait_for_room || u64::from(campaign.max_concurrency) <= campaign.counts.in_progress;
        let mut next = self.now().add_seconds(RECHECK_SECS);
        if !full && let Some(due) = self.repo.recipients_next_due(campaign_id).await? {
            next = next.min(due);
        }
        if let Some(end) = campaign.ends_at.filter(|end| *end > now) {
            next = next.min(end);
        }
        Ok(Done::RunAgainAt(next))
    }
}

/// Runs [`CAMPAIGN_PACE`].
pub(in crate::service) struct PaceCampaign(pub(in crate::service) Service);

#[async_trait]
impl JobHandler for PaceCampaign {
    async fn run(&self, job: &Job) -> std::result::Result<Done, JobError> {
        let pace: PaceJob = serde_json::from_value(job.payload.clone())
            .map_err(|e| JobError::Fail(format!("unreadable payload: {e}")))?;
        Ok(self
            .0
            .pace(&pace.organization_id, &pace.campaign_id)
            .await?)
    }
}
