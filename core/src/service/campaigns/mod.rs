//! Campaigns: outbound calls paced through a list of recipients (DESIGN §19). A campaign is
//! written `draft`, gets recipients (`recipients.rs`), and once started a durable pacing job
//! (`pace.rs`) dials its due recipients through the same checks as `POST /api/calls/dial`.
//! What a recipient's call ends as is applied in the transaction that ends it (the storage
//! side of `call_update`), so the counts are always the recipients' statuses.

use std::collections::BTreeSet;

use super::telephony::{Window, outbound_integration, variables};
use super::{By, Service, cursor_of};
use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{
    Campaign, CampaignCounts, CampaignFilter, CampaignStatus, CampaignUpdate, CampaignWindow,
    EventType, NewCampaign, Outcome, RetryPolicy,
};
use crate::page::{Page, PageParams, PageQuery};
use crate::repo::TransitionEffects;
use crate::role::Permission;
use crate::time::Timestamp;
use crate::validate;

mod pace;
mod recipients;

pub(super) use pace::PaceCampaign;
pub use pace::{CAMPAIGN_PACE, pace_key};
pub use recipients::{MAX_CSV_BYTES, RecipientsBody};

/// Most numbers a campaign calls from.
const MAX_NUMBERS: usize = 20;
/// Most weekly windows of a campaign.
const MAX_WINDOWS: usize = 50;

fn name(value: &str) -> Result<String> {
    validate::text("name", value, 200)
}

fn max_concurrency(value: u32) -> Result<u32> {
    if !(1..=100).contains(&value) {
        return Err(Error::invalid(format!(
            "max_concurrency must be between 1 and 100, got {value}"
        )));
    }
    Ok(value)
}

fn windows(value: Vec<CampaignWindow>) -> Result<Vec<CampaignWindow>> {
    if value.len() > MAX_WINDOWS {
        return Err(Error::invalid(format!(
            "windows holds {} windows; at most {MAX_WINDOWS} are allowed",
            value.len()
        )));
    }
    for (i, w) in value.iter().enumerate() {
        Window::parse(&format!("windows[{i}]"), w)?;
    }
    Ok(value)
}

fn retry(value: RetryPolicy) -> Result<RetryPolicy> {
    if !(1..=10).contains(&value.max_attempts) {
        return Err(Error::invalid(format!(
            "retry.max_attempts must be between 1 and 10, got {}",
            value.max_attempts
        )));
    }
    if value.delay_secs < 60 {
        return Err(Error::invalid(format!(
            "retry.delay_secs must be at least 60, got {}",
            value.delay_secs
        )));
    }
    let on: BTreeSet<_> = value.on.into_iter().collect();
    Ok(RetryPolicy {
        on: on.into_iter().collect(),
        ..value
    })
}

fn period(starts_at: Option<Timestamp>, ends_at: Option<Timestamp>) -> Result<()> {
    if let (Some(start), Some(end)) = (starts_at, ends_at)
        && end <= start
    {
        return Err(Error::invalid("ends_at must be after starts_at"));
    }
    Ok(())
}

/// 409 unless the campaign can still be changed.
fn changeable(c: &Campaign) -> Result<()> {
    match c.status {
        CampaignStatus::Draft | CampaignStatus::Paused => Ok(()),
        other => Err(Error::Conflict(format!(
            "campaign {} is {}; only a draft or paused campaign can be changed (pause it first)",
            c.campaign_id,
            other.as_str()
        ))),
    }
}

/// 409 while the campaign runs.
fn deletable(c: &Campaign) -> Result<()> {
    if c.status == CampaignStatus::Running {
        return Err(Error::Conflict(format!(
            "campaign {} is running; pause or cancel it before deleting it",
            c.campaign_id
        )));
    }
    Ok(())
}

impl Service {
    /// Checks that `agent_id` and every number exist, and that the numbers place calls.
    async fn campaign_refs(&self, org: &str, agent_id: &str, numbers: &[String]) -> Result<()> {
        if self.repo.agent_get(org, agent_id).await?.is_none() {
            return Err(Error::unprocessable(format!("agent {agent_id} not found")));
        }
        for number_id in numbers {
            let number = self
                .repo
                .phone_number_get(org, number_id)
                .await?
                .ok_or_else(|| {
                    Error::unprocessable(format!("phone number {number_id} not found"))
                })?;
            outbound_integration(&number)?;
        }
        Ok(())
    }

    /// Creates a campaign, `draft`, without recipients.
    pub async fn campaign_create(&self, actor: &Actor, input: NewCampaign) -> Result<Campaign> {
        actor.require(Permission::CampaignsWrite)?;
        let org = &actor.organization_id;
        let name = name(&input.name)?;
        let agent_id = IdKind::Agent.parse(&input.agent_id)?;
        let numbers = phone_numbers(input.from_phone_number_ids)?;
        let max_concurrency = max_concurrency(input.max_concurrency.unwrap_or(1))?;
        let timezone = match input.timezone.as_deref() {
            Some(tz) => validate::timezone("timezone", tz)?,
            None => "UTC".to_owned(),
        };
        let windows = windows(input.windows.unwrap_or_default())?;
        let retry = retry(input.retry.map(RetryPolicy::from).unwrap_or_default())?;
        period(input.starts_at, input.ends_at)?;
        let dynamic_variables = variables(input.dynamic_variables)?;
        self.campaign_refs(org, &agent_id, &numbers).await?;
        let now = self.now();
        let campaign = Campaign {
            campaign_id: self.id(IdKind::Campaign),
            organization_id: org.clone(),
            name,
            agent_id,
            from_phone_number_ids: numbers,
            max_concurrency,
            timezone,
            windows,
            retry,
            starts_at: input.starts_at,
            ends_at: input.ends_at,
            dynamic_variables,
            status: CampaignStatus::Draft,
            paused_reason: None,
            counts: CampaignCounts::default(),
            dials: 0,
            nudges: 0,
            created_at: now,
            updated_at: now,
        };
        let audit = self.audited_change(actor, "campaign.create", "campaign");
        self.repo.campaign_insert(&campaign, &audit).await?;
        Ok(campaign)
    }

    /// The organization's campaigns, newest first; only those in `status` when given.
    pub async fn campaign_list(
        &self,
        actor: &Actor,
        filter: &CampaignFilter,
        params: &PageParams,
    ) -> Result<Page<Campaign>> {
        actor.require(Permission::CampaignsRead)?;
        let status = filter
            .status
            .as_deref()
            .map(|s| {
                CampaignStatus::parse(s).ok_or_else(|| {
                    Error::invalid(format!(
                        "status `{}` is not one of draft, running, paused, completed, canceled",
                        crate::ids::truncate(s, 20)
                    ))
                })
            })
            .transpose()?;
        let scope = status.map(CampaignStatus::as_str).unwrap_or_default();
        let query = PageQuery::from_params_scoped(params, IdKind::Campaign, scope)?;
        let rows = self
            .repo
            .campaign_list(&actor.organization_id, status, &query)
            .await?;
        Ok(Page::from_rows_by(rows, query.limit, |c| {
            cursor_of(c.created_at, &c.campaign_id).encode_scoped(scope)
        }))
    }

    /// One campaign with its counts.
    pub async fn campaign_get(&self, actor: &Actor, campaign_id: &str) -> Result<Campaign> {
        actor.require(Permission::CampaignsRead)?;
        let id = IdKind::Campaign.parse(campaign_id)?;
        self.repo
            .campaign_get(&actor.organization_id, &id)
            .await?
            .ok_or_else(|| not_found(&id))
    }

    /// Changes the fields of a draft or paused campaign that `input` names.
    pub async fn campaign_update(
        &self,
        actor: &Actor,
        campaign_id: &str,
        input: CampaignUpdate,
    ) -> Result<Campaign> {
        actor.require(Permission::CampaignsWrite)?;
        let org = actor.organization_id.clone();
        let id = IdKind::Campaign.parse(campaign_id)?;
        let name = input.name.as_deref().map(name).transpose()?;
        let agent_id = input
            .agent_id
            .as_deref()
            .map(|a| IdKind::Agent.parse(a))
            .transpose()?;
        let numbers = input.from_phone_number_ids.map(phone_numbers).transpose()?;
        let concurrency = input.max_concurrency.map(max_concurrency).transpose()?;
        let timezone = input
            .timezone
            .as_deref()
            .map(|tz| validate::timezone("timezone", tz))
            .transpose()?;
        let new_windows = input
            .windows
            .map(|w| windows(w.unwrap_or_default()))
            .transpose()?;
        let new_retry = input.retry.map(|r| retry(r.into())).transpose()?;
        let vars = input
            .dynamic_variables
            .map(|v| variables(Some(v)))
            .transpose()?;
        if agent_id.is_some() || numbers.is_some() {
            let current = self.campaign_get(actor, &id).await?;
            self.campaign_refs(
                &org,
                agent_id.as_deref().unwrap_or(&current.agent_id),
                numbers
                    .as_deref()
                    .unwrap_or(current.from_phone_number_ids.as_slice()),
            )
            .await?;
        }
        let now = self.now();
        let change = Box::new(move |c: &mut Campaign| {
            changeable(c)?;
            if let Some(v) = name {
                c.name = v;
            }
            if let Some(v) = agent_id {
                c.agent_id = v;
            }
            if let Some(v) = numbers {
                c.from_phone_number_ids = v;
            }
            if let Some(v) = concurrency {
                c.max_concurrency = v;
            }
            if let Some(v) = timezone {
                c.timezone = v;
            }
            if let Some(v) = new_windows {
                c.windows = v;
            }
            if let Some(v) = new_retry {
                c.retry = v;
            }
            if let Some(v) = input.starts_at {
                c.starts_at = v;
            }
            if let Some(v) = input.ends_at {
                c.ends_at = v;
            }
            if let Some(v) = vars {
                c.dynamic_variables = v;
            }
            period(c.starts_at, c.ends_at)?;
            c.updated_at = now.max(c.updated_at);
            Ok(())
        });
        let audit = self.audited_change(actor, "campaign.update", "campaign");
        self.repo
            .campaign_update(&org, &id, change, &audit)
            .await?
            .ok_or_else(|| not_found(&id))
    }

    /// Deletes a campaign that is not running, with its recipients (their calls stay).
    pub async fn campaign_delete(
        &self,
        actor: &Actor,
        campaign_id: &str,
    ) -> Result<Outcome<Campaign>> {
        actor.require(Permission::CampaignsWrite)?;
        let id = IdKind::Campaign.parse(campaign_id)?;
        let audit = self.audited_change(actor, "campaign.delete", "campaign");
        let campaign = self
            .repo
            .campaign_delete(&actor.organization_id, &id, deletable, &audit)
            .await?
            .ok_or_else(|| not_found(&id))?;
        Ok(Outcome::new(campaign, "campaign deleted"))
    }

    /// Starts (or resumes) a draft or paused campaign that has recipients.
    pub async fn campaign_start(&self, actor: &Actor, campaign_id: &str) -> Result<Campaign> {
        actor.require(Permission::CampaignsWrite)?;
        let id = IdKind::Campaign.parse(campaign_id)?;
        let now = self.now();
        let change = Box::new(move |c: &mut Campaign| {
            match c.status {
                CampaignStatus::Draft | CampaignStatus::Paused => {}
                CampaignStatus::Running => {
                    return Err(Error::Conflict(format!(
                        "campaign {} is running already",
                        c.campaign_id
                    )));
                }
                other => {
                    return Err(Error::Conflict(format!(
                        "campaign {} is {}; a finished campaign cannot start again",
                        c.campaign_id,
                        other.as_str()
                    )));
                }
            }
            if c.counts.total == 0 {
                return Err(Error::Conflict(format!(
                    "campaign {} has no recipients; add some before starting it",
                    c.campaign_id
                )));
            }
            c.status = CampaignStatus::Running;
            c.paused_reason = None;
            c.updated_at = now.max(c.updated_at);
            Ok(())
        });
        let effects = TransitionEffects {
            pace: Some(pace::pace_job(&actor.organization_id, &id, now)?),
            cancel_pending: false,
        };
        self.transition(actor, &id, EventType::CampaignStarted, change, effects)
            .await
    }

    /// Pauses a running campaign: no new dials until it is started again; calls under way
    /// go on.
    pub async fn campaign_pause(&self, actor: &Actor, campaign_id: &str) -> Result<Campaign> {
        actor.require(Permission::CampaignsWrite)?;
        let id = IdKind::Campaign.parse(campaign_id)?;
        let now = self.now();
        let change = Box::new(move |c: &mut Campaign| {
            if c.status != CampaignStatus::Running {
                return Err(Error::Conflict(format!(
                    "campaign {} is {}; only a running campaign can be paused",
                    c.campaign_id,
                    c.status.as_str()
                )));
            }
            c.status = CampaignStatus::Paused;
            c.updated_at = now.max(c.updated_at);
            Ok(())
        });
        self.transition(
            actor,
            &id,
            EventType::CampaignPaused,
            change,
            TransitionEffects::default(),
        )
        .await
    }

    /// Cancels a campaign: its pending recipients are `canceled`; calls under way finish.
    pub async fn campaign_cancel(&self, actor: &Actor, campaign_id: &str) -> Result<Campaign> {
        actor.require(Permission::CampaignsWrite)?;
        let id = IdKind::Campaign.parse(campaign_id)?;
        let now = self.now();
        let change = Box::new(move |c: &mut Campaign| {
            if matches!(
                c.status,
                CampaignStatus::Completed | CampaignStatus::Canceled
            ) {
                return Err(Error::Conflict(format!(
                    "campaign {} is {} already",
                    c.campaign_id,
                    c.status.as_str()
                )));
            }
            c.status = CampaignStatus::Canceled;
            c.updated_at = now.max(c.updated_at);
            Ok(())
        });
        let effects = TransitionEffects {
            pace: None,
            cancel_pending: true,
        };
        self.transition(actor, &id, EventType::CampaignCanceled, change, effects)
            .await
    }

    async fn transition(
        &self,
        actor: &Actor,
        id: &str,
        event: EventType,
        change: crate::repo::Change<'static, Campaign>,
        effects: TransitionEffects,
    ) -> Result<Campaign> {
        let stamp = self.event_stamp(event, By::changing(actor));
        self.after_write(
            self.repo
                .campaign_transition(&actor.organization_id, id, change, &stamp, effects)
                .await,
        )?
        .ok_or_else(|| not_found(id))
    }
}

fn not_found(id: &str) -> Error {
    Error::not_found(format!("campaign {id} not found"))
}

/// Checks `from_phone_number_ids`: 1 to 20 distinct well-formed ids.
fn phone_numbers(ids: Vec<String>) -> Result<Vec<String>> {
    if ids.is_empty() || ids.len() > MAX_NUMBERS {
        return Err(Error::invalid(format!(
            "from_phone_number_ids must hold 1 to {MAX_NUMBERS} numbers, got {}",
            ids.len()
        )));
    }
    let mut seen = BTreeSet::new();
    for id in &ids {
        IdKind::PhoneNumber.parse(id)?;
        if !seen.insert(id.as_str()) {
            return Err(Error::invalid(format!(
                "from_phone_number_ids names {id} twice"
            )));
        }
    }
    Ok(ids)
}
