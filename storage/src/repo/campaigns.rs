//! Campaigns and their recipients. Counts are grouped from the recipients whenever a campaign
//! is read, so they are always the recipients' statuses. Every write that can race a pacer
//! locks the campaign's row, after the organization's when it needs that one too and before
//! any call's or recipient's (the lock order of docs/ARCHITECTURE.md), and the end of a
//! recipient's call is applied in the transaction that ends it ([`call_ended`]), which locks
//! no campaign. A campaign's row is locked `FOR NO KEY UPDATE`: the key-share locks that
//! inserting its recipients takes never wait on it.

use std::collections::HashMap;

use async_trait::async_trait;
use sea_orm::sea_query::{Expr, ExprTrait, LockType, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, TransactionTrait,
};
use voiceplane_core::jobs::NewJob;
use voiceplane_core::model::{
    AuditedChange, Call, CallStatus, Campaign, CampaignCounts, CampaignStatus, Event, EventStamp,
    Recipient, RecipientStatus, Unsent,
};
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::{
    CampaignDial, CampaignRepository, Change, RecipientWriter, TransitionEffects,
};
use voiceplane_core::service::pace_key;
use voiceplane_core::telephony::progress::is_terminal;
use voiceplane_core::time::Timestamp;
use voiceplane_core::{Error, Result};

use super::{all, execute, jobs, keyset, one, record_audit, record_event};
use crate::SeaRepository;
use crate::convert::{db_err, from_json, to_json, ts, ts_opt};
use crate::entity::{call, campaign, campaign_recipient as recipient};

fn campaign_from(m: campaign::Model, counts: CampaignCounts) -> Result<Campaign> {
    Ok(Campaign {
        status: CampaignStatus::parse(&m.status)
            .ok_or_else(|| Error::Internal(format!("campaigns.status: {}", m.status)))?,
        from_phone_number_ids: from_json(
            "campaigns.from_phone_number_ids",
            &m.from_phone_number_ids,
        )?,
        windows: from_json("campaigns.windows", &m.windows)?,
        retry: from_json("campaigns.retry", &m.retry)?,
        dynamic_variables: from_json("campaigns.dynamic_variables", &m.dynamic_variables)?,
        campaign_id: m.campaign_id,
        organization_id: m.organization_id,
        name: m.name,
        agent_id: m.agent_id,
        max_concurrency: u32::try_from(m.max_concurrency).unwrap_or(1),
        timezone: m.timezone,
        starts_at: ts_opt(m.starts_at),
        ends_at: ts_opt(m.ends_at),
        paused_reason: m.paused_reason,
        counts,
        dials: u64::try_from(m.dials).unwrap_or(0),
        nudges: u64::try_from(m.nudges).unwrap_or(0),
        created_at: ts(m.created_at),
        updated_at: ts(m.updated_at),
    })
}

fn recipient_from(m: recipient::Model) -> Result<Recipient> {
    Ok(Recipient {
        status: RecipientStatus::parse(&m.status)
            .ok_or_else(|| Error::Internal(format!("campaign_recipients.status: {}", m.status)))?,
        dynamic_variables: from_json(
            "campaign_recipients.dynamic_variables",
            &m.dynamic_variables,
        )?,
        recipient_id: m.recipient_id,
        campaign_id: m.campaign_id,
        to_number: m.to_number,
        timezone: m.timezone,
        attempts: u32::try_from(m.attempts).unwrap_or(0),
        last_call_sid: m.last_call_sid,
        next_attempt_at: ts_opt(m.next_attempt_at),
        last_outcome: m.last_outcome,
        created_at: ts(m.created_at),
    })
}

/// The counts of `campaign_ids`, grouped in the database.
async fn counts<C: ConnectionTrait>(
    db: &C,
    campaign_ids: &[String],
) -> Result<HashMap<String, CampaignCounts>> {
    let mut out: HashMap<String, CampaignCounts> = HashMap::new();
    if campaign_ids.is_empty() {
        return Ok(out);
    }
    let rows: Vec<(String, String, i64)> = recipient::Entity::find()
        .select_only()
        .column(recipient::Column::CampaignId)
        .column(recipient::Column::Status)
        .column_as(recipient::Column::RecipientId.count(), "n")
        .filter(recipient::Column::CampaignId.is_in(campaign_ids.iter().cloned()))
        .group_by(recipient::Column::CampaignId)
        .group_by(recipient::Column::Status)
        .into_tuple()
        .all(db)
        .await
        .map_err(db_err)?;
    for (id, status, n) in rows {
        let status = RecipientStatus::parse(&status)
            .ok_or_else(|| Error::Internal(format!("campaign_recipients.status: {status}")))?;
        out.entry(id)
            .or_default()
            .add(status, u64::try_from(n).unwrap_or(0));
    }
    Ok(out)
}

fn in_org(organization_id: &str, campaign_id: &str) -> sea_orm::Select<campaign::Entity> {
    campaign::Entity::find_by_id(campaign_id.to_owned())
        .filter(campaign::Column::OrganizationId.eq(organization_id))
}

/// The campaign with its counts, read on `db`; its row locked when `lock` (Postgres).
async fn read<C: ConnectionTrait>(
    db: &C,
    organization_id: &str,
    campaign_id: &str,
    lock: bool,
) -> Result<Option<Campaign>> {
    let select = in_org(organization_id, campaign_id);
    let select = if lock {
        select.lock(LockType::NoKeyUpdate)
    } else {
        select
    };
    let Some(m) = select.one(db).await.map_err(db_err)? else {
        return Ok(None);
    };
    let mine = counts_of(db, &m.campaign_id).await?;
    campaign_from(m, mine).map(Some)
}

/// The counts of one campaign.
async fn counts_of<C: ConnectionTrait>(db: &C, campaign_id: &str) -> Result<CampaignCounts> {
    Ok(counts(db, &[campaign_id.to_owned()])
        .await?
        .remove(campaign_id)
        .unwrap_or_default())
}

/// Cancels the campaign's pending recipients (a cancel, or past `ends_at`); returns how many.
async fn cancel_pending<C: ConnectionTrait>(db: &C, campaign_id: &str) -> Result<u64> {
    let done = recipient::Entity::update_many()
        .col_expr(
            recipient::Column::Status,
            Expr::val(RecipientStatus::Canceled.as_str()),
        )
        .col_expr(recipient::Column::NextAttemptAt, Expr::val(None::<i64>))
        .filter(recipient::Column::CampaignId.eq(campaign_id))
        .filter(recipient::Column::Status.eq(RecipientStatus::Pending.as_str()))
        .exec(db)
        .await
        .map_err(db_err)?;
    Ok(done.rows_affected)
}

/// Writes every stored field of `c`.
async fn write<C: ConnectionTrait>(db: &C, c: &Campaign) -> Result<()> {
    campaign::Entity::update_many()
        .col_expr(campaign::Column::Name, Expr::val(c.name.clone()))
        .col_expr(campaign::Column::AgentId, Expr::val(c.agent_id.clone()))
        .col_expr(
            campaign::Column::FromPhoneNumberIds,
            Expr::val(to_json(&c.from_phone_number_ids)?),
        )
        .col_expr(
            campaign::Column::MaxConcurrency,
            Expr::val(i64::from(c.max_concurrency)),
        )
        .col_expr(campaign::Column::Timezone, Expr::val(c.timezone.clone()))
        .col_expr(campaign::Column::Windows, Expr::val(to_json(&c.windows)?))
        .col_expr(campaign::Column::Retry, Expr::val(to_json(&c.retry)?))
        .col_expr(
            campaign::Column::StartsAt,
            Expr::val(c.starts_at.map(Timestamp::as_micros)),
        )
        .col_expr(
            campaign::Column::EndsAt,
            Expr::val(c.ends_at.map(Timestamp::as_micros)),
        )
        .col_expr(
            campaign::Column::DynamicVariables,
            Expr::val(to_json(&c.dynamic_variables)?),
        )
        .col_expr(campaign::Column::Status, Expr::val(c.status.as_str()))
        .col_expr(
            campaign::Column::PausedReason,
            Expr::val(c.paused_reason.clone()),
        )
        .col_expr(
            campaign::Column::UpdatedAt,
            Expr::val(c.updated_at.as_micros()),
        )
        .filter(campaign::Column::CampaignId.eq(&c.campaign_id))
        .exec(db)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// Makes the campaign's pacing job due at `now`: a queued one that waits for later, and a
/// running one, whose reschedule then keeps `now` (`job_reschedule`), so that a call ending
/// while the pacer decides when to look again is not missed.
pub(crate) async fn hurry<C: ConnectionTrait>(
    db: &C,
    campaign_id: &str,
    now: Timestamp,
) -> Result<()> {
    execute(
        db,
        "UPDATE jobs SET run_at = $1 WHERE unique_key = $2 \
         AND ((status = 'queued' AND run_at > $1) OR status = 'running')",
        vec![now.as_micros().into(), pace_key(campaign_id).into()],
    )
    .await?;
    Ok(())
}

/// The running campaigns of an organization, as a subquery of their ids (parameter `$org`).
fn running_of(org: &str) -> String {
    format!(
        "SELECT campaign_id FROM campaigns WHERE organization_id = {org} AND status = 'running'"
    )
}

/// Makes the pending recipients that the campaigns of `campaigns` (a subquery of ids, with
/// its own parameters in `values`) keep waiting for their windows or the calling hours due
/// (`next_attempt_at` `NULL`, as before their first look): the pacer looks at them again
/// under the windows and hours as they are now. A retry's delay is kept.
async fn windows_changed<C: ConnectionTrait>(
    db: &C,
    campaigns: &str,
    mut values: Vec<sea_orm::Value>,
) -> Result<u64> {
    values.push(false.into());
    values.push(true.into());
    let (no, yes) = (values.len() - 1, values.len());
    execute(
        db,
        &format!(
            "UPDATE campaign_recipients SET next_attempt_at = NULL, window_wait = ${no} \
             WHERE campaign_id IN ({campaigns}) AND status = 'pending' AND window_wait = ${yes}"
        ),
        values,
    )
    .await
}

/// Makes the pacing jobs of the campaigns of `campaigns` (a subquery of ids, with `$1` for
/// `now`) due at `now`, as [`hurry`] does one.
async fn hurry_all<C: ConnectionTrait>(
    db: &C,
    campaigns: &str,
    mut values: Vec<sea_orm::Value>,
) -> Result<()> {
    values.push(pace_key("").into());
    let prefix = values.len();
    execute(
        db,
        &format!(
            "UPDATE jobs SET run_at = $1 WHERE unique_key IN \
             (SELECT ${prefix} || campaign_id FROM ({campaigns}) AS woken) \
             AND ((status = 'queued' AND run_at > $1) OR status = 'running')"
        ),
        values,
    )
    .await?;
    Ok(())
}

/// Wakes the organization's running campaigns, in the transaction that changed its settings
/// (whose row it holds, first in the lock order): when `windows`, their recipients waiting
/// for the calling hours (or windows) are due again; in any case their pacers are.
pub(crate) async fn organization_changed<C: ConnectionTrait>(
    db: &C,
    organization_id: &str,
    now: Timestamp,
    windows: bool,
) -> Result<()> {
    if windows {
        windows_changed(db, &running_of("$1"), vec![organization_id.into()]).await?;
    }
    hurry_all(
        db,
        &running_of("$2"),
        vec![now.as_micros().into(), organization_id.into()],
    )
    .await
}

/// Puts back to `pending` the recipients with `phone_number` that a campaign of the
/// organization not finished yet found suppressed, in the transaction that removes its
/// suppression, and wakes the running ones' pacers.
pub(crate) async fn suppression_lifted<C: ConnectionTrait>(
    db: &C,
    organization_id: &str,
    phone_number: &str,
    now: Timestamp,
) -> Result<()> {
    let revived = execute(
        db,
        "UPDATE campaign_recipients SET status = 'pending', next_attempt_at = NULL, \
         window_wait = $3 WHERE campaign_id IN (SELECT campaign_id FROM campaigns \
         WHERE organization_id = $1 AND status IN ('draft', 'running', 'paused')) \
         AND to_number = $2 AND status = 'suppressed'",
        vec![organization_id.into(), phone_number.into(), false.into()],
    )
    .await?;
    if revived == 0 {
        return Ok(());
    }
    hurry_all(
        db,
        &running_of("$2"),
        vec![now.as_micros().into(), organization_id.into()],
    )
    .await
}

/// Applies the end of `call`, a campaign's, to its recipient, in the transaction that ended
/// it: the recipient is reached, due again after the retry's delay, or done with, and the
/// campaign's pacer is hurried. A no-op for other calls.
pub(crate) async fn call_ended<C: ConnectionTrait>(
    db: &C,
    before: &Call,
    after: &Call,
) -> Result<()> {
    let (Some(campaign_id), Some(recipient_id)) = (&after.campaign_id, &after.recipient_id) else {
        return Ok(());
    };
    // An ended call moves on only from a dial of unknown outcome, to what a report says.
    let revived = before.ended_provisionally() && !after.ended_provisionally();
    if !is_terminal(after.status) || (is_terminal(before.status) && !revived) {
        return Ok(());
    }
    // The campaign is read, not written: its row comes before the call's in the lock order,
    // and the pacer learns of the end from its job's `run_at` (`hurry`), which a run under
    // way keeps when it reschedules itself.
    let Some(campaign) = read(db, &after.organization_id, campaign_id, false).await? else {
        return Ok(());
    };
    if let Some(unsent) = Unsent::of(after) {
        // Never sent, so not an attempt: the recipient is as it was before this call.
        let status = unsent.recipient_status();
        let next = (status == RecipientStatus::Pending).then_some(after.updated_at.as_micros());
        recipient::Entity::update_many()
            .col_expr(recipient::Column::Status, Expr::val(status.as_str()))
            .col_expr(recipient::Column::NextAttemptAt, Expr::val(next))
            .col_expr(
                recipient::Column::Attempts,
                Expr::cust("CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END"),
            )
            .col_expr(
                recipient::Column::LastOutcome,
                Expr::val(unsent.end_reason()),
            )
            .filter(recipient::Column::RecipientId.eq(recipient_id))
            .filter(recipient::Column::Status.eq(RecipientStatus::InProgress.as_str()))
            .filter(recipient::Column::LastCallSid.eq(&after.call_sid))
            .exec(db)
            .await
            .map_err(db_err)?;
        return hurry(db, campaign_id, after.updated_at).await;
    }
    let Some(r) = one(
        db,
        recipient::Entity::find_by_id(recipient_id.clone())
            .filter(recipient::Column::Status.eq(RecipientStatus::InProgress.as_str()))
            .filter(recipient::Column::LastCallSid.eq(&after.call_sid)),
        recipient_from,
    )
    .await?
    else {
        // Its recipient may have failed when a dial of unknown outcome ended this call, which
        // a report then moved on (at once, or through `ringing` before this end).
        return outcome_learnt(db, recipient_id, after).await;
    };
    let now = after.updated_at;
    let (status, next) = campaign
        .retry
        .after_call(campaign.status, r.attempts, after, now);
    recipient::Entity::update_many()
        .col_expr(recipient::Column::Status, Expr::val(status.as_str()))
        .col_expr(
            recipient::Column::NextAttemptAt,
            Expr::val(next.map(Timestamp::as_micros)),
        )
        .col_expr(
            recipient::Column::LastOutcome,
            Expr::val(after.status.as_str()),
        )
        .filter(recipient::Column::RecipientId.eq(&r.recipient_id))
        .exec(db)
        .await
        .map_err(db_err)?;
    hurry(db, campaign_id, now).await
}

/// Applies the end a report gives a campaign's call whose dial had ended of unknown outcome:
/// its recipient was failed then, without a retry, since the person may have been rung. It
/// keeps that (no second call), but now shows the call's real outcome, and a call that
/// reached the person completes it. A no-op unless the recipient failed on this very call,
/// which only such a dial makes possible (an ended call moves on from no other end).
async fn outcome_learnt<C: ConnectionTrait>(
    db: &C,
    recipient_id: &str,
    after: &Call,
) -> Result<()> {
    let status = if after.status == CallStatus::Completed {
        RecipientStatus::Completed
    } else {
        RecipientStatus::Failed
    };
    recipient::Entity::update_many()
        .col_expr(recipient::Column::Status, Expr::val(status.as_str()))
        .col_expr(
            recipient::Column::LastOutcome,
            Expr::val(after.status.as_str()),
        )
        .filter(recipient::Column::RecipientId.eq(recipient_id))
        .filter(recipient::Column::Status.eq(RecipientStatus::Failed.as_str()))
        .filter(recipient::Column::LastCallSid.eq(&after.call_sid))
        .exec(db)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// An upload of recipients inside its transaction.
struct Upload {
    txn: DatabaseTransaction,
    organization_id: String,
    campaign_id: String,
    running: bool,
}

#[async_trait]
impl RecipientWriter for Upload {
    async fn add(&mut self, rows: &[Recipient]) -> Result<u64> {
        if rows.is_empty() {
            return Ok(0);
        }
        let models = rows
            .iter()
            .map(|r| {
                Ok(recipient::ActiveModel {
                    recipient_id: Set(r.recipient_id.clone()),
                    campaign_id: Set(self.campaign_id.clone()),
                    organization_id: Set(self.organization_id.clone()),
                    to_number: Set(r.to_number.clone()),
                    timezone: Set(r.timezone.clone()),
                    dynamic_variables: Set(to_json(&r.dynamic_variables)?),
                    status: Set(r.status.as_str().to_owned()),
                    attempts: Set(i64::from(r.attempts)),
                    last_call_sid: Set(None),
                    next_attempt_at: Set(None),
                    last_outcome: Set(None),
                    created_at: Set(r.created_at.as_micros()),
                    window_wait: Set(false),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        recipient::Entity::insert_many(models)
            .on_conflict(
                OnConflict::columns([recipient::Column::CampaignId, recipient::Column::ToNumber])
                    .do_nothing()
                    .to_owned(),
            )
            .exec_without_returning(&self.txn)
            .await
            .map_err(db_err)
    }

    async fn commit(self: Box<Self>, now: Timestamp) -> Result<()> {
        if self.running {
            hurry(&self.txn, &self.campaign_id, now).await?;
        }
        self.txn.commit().await.map_err(db_err)
    }
}

#[async_trait]
impl CampaignRepository for SeaRepository {
    async fn campaign_insert(&self, c: &Campaign, audit: &AuditedChange) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        campaign::Entity::insert(campaign::ActiveModel {
            campaign_id: Set(c.campaign_id.clone()),
            organization_id: Set(c.organization_id.clone()),
            name: Set(c.name.clone()),
            agent_id: Set(c.agent_id.clone()),
            from_phone_number_ids: Set(to_json(&c.from_phone_number_ids)?),
            max_concurrency: Set(i64::from(c.max_concurrency)),
            timezone: Set(c.timezone.clone()),
            windows: Set(to_json(&c.windows)?),
            retry: Set(to_json(&c.retry)?),
            starts_at: Set(c.starts_at.map(Timestamp::as_micros)),
            ends_at: Set(c.ends_at.map(Timestamp::as_micros)),
            dynamic_variables: Set(to_json(&c.dynamic_variables)?),
            status: Set(c.status.as_str().to_owned()),
            paused_reason: Set(c.paused_reason.clone()),
            dials: Set(0),
            nudges: Set(0),
            created_at: Set(c.created_at.as_micros()),
            updated_at: Set(c.updated_at.as_micros()),
        })
        .exec_without_returning(&txn)
        .await
        .map_err(db_err)?;
        let entry = audit.entry(&c.campaign_id, None, Some(c))?;
        record_audit(&txn, &c.organization_id, &entry).await?;
        txn.commit().await.map_err(db_err)
    }

    async fn campaign_get(
        &self,
        organization_id: &str,
        campaign_id: &str,
    ) -> Result<Option<Campaign>> {
        read(&self.db, organization_id, campaign_id, false).await
    }

    async fn campaign_list(
        &self,
        organization_id: &str,
        status: Option<CampaignStatus>,
        page: &PageQuery,
    ) -> Result<Vec<Campaign>> {
        let mut select =
            campaign::Entity::find().filter(campaign::Column::OrganizationId.eq(organization_id));
        if let Some(status) = status {
            select = select.filter(campaign::Column::Status.eq(status.as_str()));
        }
        let rows = keyset(
            select,
            campaign::Column::CreatedAt,
            campaign::Column::CampaignId,
            page,
        )
        .all(&self.db)
        .await
        .map_err(db_err)?;
        let ids: Vec<String> = rows.iter().map(|m| m.campaign_id.clone()).collect();
        let mut counts = counts(&self.db, &ids).await?;
        rows.into_iter()
            .map(|m| {
                let mine = counts.remove(&m.campaign_id).unwrap_or_default();
                campaign_from(m, mine)
            })
            .collect()
    }

    async fn campaign_update(
        &self,
        organization_id: &str,
        campaign_id: &str,
        change: Change<'_, Campaign>,
        audit: &AuditedChange,
    ) -> Result<Option<Campaign>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let Some(before) = read(&txn, organization_id, campaign_id, true).await? else {
            return Ok(None);
        };
        let after = audit.change(&before, change)?;
        write(&txn, &after).await?;
        let entry = audit.entry(campaign_id, Some(&before), Some(&after))?;
        record_audit(&txn, organization_id, &entry).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(Some(after))
    }

    async fn campaign_delete(
        &self,
        organization_id: &str,
        campaign_id: &str,
        check: for<'c> fn(&'c Campaign) -> Result<()>,
        audit: &AuditedChange,
    ) -> Result<Option<Campaign>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let Some(found) = read(&txn, organization_id, campaign_id, true).await? else {
            return Ok(None);
        };
        audit.check(&found)?;
        check(&found)?;
        recipient::Entity::delete_many()
            .filter(recipient::Column::CampaignId.eq(campaign_id))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        campaign::Entity::delete_by_id(campaign_id.to_owned())
            .exec(&txn)
            .await
            .map_err(db_err)?;
        // A pacer that was scheduled has nothing left to pace.
        execute(
            &txn,
            "DELETE FROM jobs WHERE unique_key = $1 AND status = 'queued'",
            vec![pace_key(campaign_id).into()],
        )
        .await?;
        let entry = audit.entry(campaign_id, Some(&found), None)?;
        record_audit(&txn, organization_id, &entry).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(Some(found))
    }

    async fn campaign_transition(
        &self,
        organization_id: &str,
        campaign_id: &str,
        change: Change<'_, Campaign>,
        event: &EventStamp,
        effects: TransitionEffects,
    ) -> Result<Option<Campaign>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let Some(before) = read(&txn, organization_id, campaign_id, true).await? else {
            return Ok(None);
        };
        let mut after = event.change(&before, change)?;
        write(&txn, &after).await?;
        if effects.cancel_pending {
            cancel_pending(&txn, campaign_id).await?;
            after.counts = counts_of(&txn, campaign_id).await?;
        }
        if let Some(job) = &effects.pace {
            // The windows may have changed while it was paused (or the calling hours, whose
            // change woke only running campaigns): its waiting recipients are looked at again.
            windows_changed(&txn, "$1", vec![campaign_id.into()]).await?;
            // A pacer of before a pause may still be queued for later, or finishing a run
            // that saw the campaign paused: the new one replaces it (a run still going ends
            // without effect on the queue; its dials are claims like any other).
            execute(
                &txn,
                "DELETE FROM jobs WHERE unique_key = $1 AND status IN ('queued', 'running')",
                vec![pace_key(campaign_id).into()],
            )
            .await?;
            jobs::enqueue(&txn, job, event.created_at).await?;
        }
        record_event(&txn, organization_id, &event.updated(&before, &after)?).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(Some(after))
    }

    async fn recipients_begin(
        &self,
        organization_id: &str,
        campaign_id: &str,
    ) -> Result<Box<dyn RecipientWriter>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let status = one(
            &txn,
            in_org(organization_id, campaign_id).lock(LockType::NoKeyUpdate),
            |m| Ok(m.status),
        )
        .await?
        .ok_or_else(|| Error::not_found(format!("campaign {campaign_id} not found")))?;
        let status = CampaignStatus::parse(&status)
            .ok_or_else(|| Error::Internal(format!("campaigns.status: {status}")))?;
        if let Some(refused) = status.refuses_recipients(campaign_id) {
            return Err(refused);
        }
        Ok(Box::new(Upload {
            txn,
            organization_id: organization_id.to_owned(),
            campaign_id: campaign_id.to_owned(),
            running: status == CampaignStatus::Running,
        }))
    }

    async fn recipient_list(
        &self,
        organization_id: &str,
        campaign_id: &str,
        status: Option<RecipientStatus>,
        page: &PageQuery,
    ) -> Result<Vec<Recipient>> {
        let mut select = recipient::Entity::find()
            .filter(recipient::Column::CampaignId.eq(campaign_id))
            .filter(recipient::Column::OrganizationId.eq(organization_id));
        if let Some(status) = status {
            select = select.filter(recipient::Column::Status.eq(status.as_str()));
        }
        all(
            &self.db,
            keyset(
                select,
                recipient::Column::CreatedAt,
                recipient::Column::RecipientId,
                page,
            ),
            recipient_from,
        )
        .await
    }

    async fn recipients_due(
        &self,
        campaign_id: &str,
        now: Timestamp,
        limit: u64,
    ) -> Result<Vec<Recipient>> {
        let pending = || {
            recipient::Entity::find()
                .filter(recipient::Column::CampaignId.eq(campaign_id))
                .filter(recipient::Column::Status.eq(RecipientStatus::Pending.as_str()))
        };
        // Never tried first, in the index's order (no sort); then those whose time came.
        let mut due = all(
            &self.db,
            pending()
                .filter(recipient::Column::NextAttemptAt.is_null())
                .limit(limit),
            recipient_from,
        )
        .await?;
        let left = limit.saturating_sub(due.len() as u64);
        if left > 0 {
            due.extend(
                all(
                    &self.db,
                    pending()
                        .filter(recipient::Column::NextAttemptAt.lte(now.as_micros()))
                        .order_by_asc(recipient::Column::NextAttemptAt)
                        .limit(left),
                    recipient_from,
                )
                .await?,
            );
        }
        Ok(due)
    }

    async fn recipient_defer(&self, recipient_id: &str, until: Timestamp) -> Result<()> {
        recipient::Entity::update_many()
            .col_expr(
                recipient::Column::NextAttemptAt,
                Expr::val(until.as_micros()),
            )
            .col_expr(recipient::Column::WindowWait, Expr::val(true))
            .filter(recipient::Column::RecipientId.eq(recipient_id))
            .filter(recipient::Column::Status.eq(RecipientStatus::Pending.as_str()))
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn recipients_next_due(&self, campaign_id: &str) -> Result<Option<Timestamp>> {
        let next: Option<Option<i64>> = recipient::Entity::find()
            .select_only()
            .column_as(recipient::Column::NextAttemptAt.min(), "next")
            .filter(recipient::Column::CampaignId.eq(campaign_id))
            .filter(recipient::Column::Status.eq(RecipientStatus::Pending.as_str()))
            .filter(recipient::Column::NextAttemptAt.is_not_null())
            .into_tuple()
            .one(&self.db)
            .await
            .map_err(db_err)?;
        Ok(next.flatten().map(ts))
    }

    async fn recipients_expire(&self, campaign_id: &str) -> Result<u64> {
        cancel_pending(&self.db, campaign_id).await
    }

    async fn recipients_lost(&self, campaign_id: &str) -> Result<u64> {
        execute(
            &self.db,
            "UPDATE campaign_recipients SET status = 'failed', last_outcome = 'call_deleted' \
             WHERE campaign_id = $1 AND status = 'in_progress' AND NOT EXISTS \
             (SELECT 1 FROM calls WHERE calls.call_sid = campaign_recipients.last_call_sid)",
            vec![campaign_id.to_owned().into()],
        )
        .await
    }

    async fn campaign_dial(
        &self,
        call: &Call,
        event: &Event,
        jobs: &[NewJob],
        attempts: u32,
    ) -> Result<CampaignDial> {
        let (Some(campaign_id), Some(recipient_id)) = (&call.campaign_id, &call.recipient_id)
        else {
            return Err(Error::Internal(
                "a campaign's call without its campaign".into(),
            ));
        };
        let org = &call.organization_id;
        let txn = self.db.begin().await.map_err(db_err)?;
        // The organization's row before the campaign's: the limits are counted under it
        // (`refuse_over_limit`), and the lock order puts it first.
        super::locks::organization(&txn, org).await?;
        let Some(found) = one(
            &txn,
            in_org(org, campaign_id).lock(LockType::NoKeyUpdate),
            |m| Ok((m.status, m.max_concurrency)),
        )
        .await?
        else {
            return Ok(CampaignDial::Skipped);
        };
        if found.0 != CampaignStatus::Running.as_str() {
            return Ok(CampaignDial::Skipped);
        }
        let in_flight = recipient::Entity::find()
            .filter(recipient::Column::CampaignId.eq(campaign_id))
            .filter(recipient::Column::Status.eq(RecipientStatus::InProgress.as_str()))
            .count(&txn)
            .await
            .map_err(db_err)?;
        if i64::try_from(in_flight).unwrap_or(i64::MAX) >= found.1 {
            return Ok(CampaignDial::Skipped);
        }
        let claim = |status: RecipientStatus| {
            recipient::Entity::update_many()
                .col_expr(recipient::Column::Status, Expr::val(status.as_str()))
                .col_expr(recipient::Column::NextAttemptAt, Expr::val(None::<i64>))
                .col_expr(recipient::Column::WindowWait, Expr::val(false))
                .filter(recipient::Column::RecipientId.eq(recipient_id))
                .filter(recipient::Column::Status.eq(RecipientStatus::Pending.as_str()))
                .filter(recipient::Column::Attempts.eq(i64::from(attempts)))
        };
        if super::suppressions::suppressed(&txn, org, &call.to_number, call.created_at).await? {
            let done = claim(RecipientStatus::Suppressed)
                .col_expr(recipient::Column::LastOutcome, Expr::val("suppressed"))
                .exec(&txn)
                .await
                .map_err(db_err)?;
            if done.rows_affected == 0 {
                return Ok(CampaignDial::Skipped);
            }
            txn.commit().await.map_err(db_err)?;
            return Ok(CampaignDial::Suppressed);
        }
        match super::telephony::refuse_over_limit(&txn, org, call.created_at).await {
            Ok(()) => {}
            Err(Error::TooManyRequests(_)) => return Ok(CampaignDial::OrganizationFull),
            Err(Error::Unprocessable(_)) => return Ok(CampaignDial::OutOfCredit),
            Err(e) => return Err(e),
        }
        let claimed = claim(RecipientStatus::InProgress)
            .col_expr(
                recipient::Column::Attempts,
                Expr::col(recipient::Column::Attempts).add(1),
            )
            .col_expr(
                recipient::Column::LastCallSid,
                Expr::val(call.call_sid.clone()),
            )
            .exec(&txn)
            .await
            .map_err(db_err)?;
        if claimed.rows_affected == 0 {
            return Ok(CampaignDial::Skipped);
        }
        call::Entity::insert(super::calls::call_row(call)?)
            .exec_without_returning(&txn)
            .await
            .map_err(db_err)?;
        record_event(&txn, org, event).await?;
        jobs::enqueue_many(&txn, jobs, call.created_at).await?;
        execute(
            &txn,
            "UPDATE campaigns SET dials = dials + 1 WHERE campaign_id = $1",
            vec![campaign_id.clone().into()],
        )
        .await?;
        txn.commit().await.map_err(db_err)?;
        Ok(CampaignDial::Placed)
    }
}
