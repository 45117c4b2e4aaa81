//! Removing calls, transcripts and recordings (by hand and by retention policy), and the
//! organization's retention settings. Every removal goes through [`remove_part`], so a manual
//! delete and the sweep write the same rows, events and file-delete jobs.

use async_trait::async_trait;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Statement, TransactionTrait,
};
use voiceplane_core::Result;
use voiceplane_core::jobs::NewJob;
use voiceplane_core::model::{
    AuditedChange, Call, CallingHours, EventType, OrganizationSettings, RecordingDeleted,
};
use voiceplane_core::repo::{CallPart, CallRemoval, Change, RetentionRepository};

use super::calls::call_from;
use super::jobs::enqueue_many;
use super::{all, lock_org, record_audit, record_event};
use crate::SeaRepository;
use crate::convert::db_err;
use crate::entity::{call, organization};

/// Calls that still have a transcript. The `call_messages` table has no entity here: only
/// removal reads it, by its `(call_sid, seq)` index.
const HAS_TRANSCRIPT: &str =
    "EXISTS (SELECT 1 FROM call_messages WHERE call_messages.call_sid = calls.call_sid)";

pub(super) fn settings_from(m: &organization::Model) -> OrganizationSettings {
    OrganizationSettings {
        recording_retention_days: m.recording_retention_days.map(i64::from),
        transcript_retention_days: m.transcript_retention_days.map(i64::from),
        call_retention_days: m.call_retention_days.map(i64::from),
        runtime_stream_url: m.runtime_stream_url.clone(),
        calling_hours: m
            .calling_hours_start
            .clone()
            .zip(m.calling_hours_end.clone())
            .map(|(start, end)| CallingHours { start, end }),
        timezone: m.timezone.clone().unwrap_or_else(|| "UTC".to_owned()),
        max_concurrent_calls: m.max_concurrent_calls,
        monthly_credit_limit: m.monthly_credit_limit,
    }
}

/// Days fit in the column: the service accepts at most 36,500.
fn days_col(days: Option<i64>) -> Option<i32> {
    days.map(|d| i32::try_from(d).unwrap_or(i32::MAX))
}

/// Deletes the transcript of `call_sid`.
async fn delete_transcript(txn: &DatabaseTransaction, call_sid: &str) -> Result<()> {
    let backend = txn.get_database_backend();
    let sql = match backend {
        sea_orm::DatabaseBackend::Postgres => "DELETE FROM call_messages WHERE call_sid = $1",
        _ => "DELETE FROM call_messages WHERE call_sid = ?",
    };
    txn.execute_raw(Statement::from_sql_and_values(
        backend,
        sql,
        [call_sid.into()],
    ))
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Removes `removal.part` from `c` inside `txn`: the rows, the events, and the job that
/// deletes a recording's file. Returns false (and writes nothing) when another transaction
/// removed it first.
async fn remove_part(
    txn: &DatabaseTransaction,
    removal: &CallRemoval<'_>,
    c: &Call,
    jobs: &mut Vec<NewJob>,
) -> Result<bool> {
    let org = removal.organization_id;
    let changed = match removal.part {
        CallPart::Transcript => {
            delete_transcript(txn, &c.call_sid).await?;
            return Ok(true);
        }
        CallPart::Recording => {
            let Some(recording) = &c.recording else {
                return Ok(false);
            };
            call::Entity::update_many()
                .col_expr(
                    call::Column::RecordingKey,
                    Expr::val(Option::<String>::None),
                )
                .col_expr(
                    call::Column::RecordingContentType,
                    Expr::val(Option::<String>::None),
                )
                .col_expr(call::Column::RecordingSize, Expr::val(Option::<i64>::None))
                .col_expr(
                    call::Column::UpdatedAt,
                    Expr::val(removal.now.max(c.updated_at).as_micros()),
                )
                .filter(call::Column::CallSid.eq(&c.call_sid))
                .filter(call::Column::OrganizationId.eq(org))
                // Unchanged since it was read: a concurrent upload or delete wins.
                .filter(call::Column::RecordingKey.eq(&recording.key))
                .exec(txn)
                .await
                .map_err(db_err)?
                .rows_affected
        }
        CallPart::Call => {
            // Explicit, though the foreign key cascades: the full-text index of SQLite is
            // kept by triggers on these deletes.
            delete_transcript(txn, &c.call_sid).await?;
            call::Entity::delete_many()
                .filter(call::Column::CallSid.eq(&c.call_sid))
                .filter(call::Column::OrganizationId.eq(org))
                .exec(txn)
                .await
                .map_err(db_err)?
                .rows_affected
        }
    };
    if changed == 0 {
        return Ok(false);
    }
    if let Some(recording) = &c.recording {
        let data = RecordingDeleted {
            call_sid: c.call_sid.clone(),
            content_type: recording.content_type.clone(),
            size: recording.size,
        };
        let event = (removal.stamp)(EventType::RecordingDeleted).with(&data)?;
        record_event(txn, org, &event).await?;
        jobs.push((removal.blob_job)(&c.call_sid, &recording.key));
    }
    if removal.part == CallPart::Call {
        let event = (removal.stamp)(EventType::CallDeleted).with(c)?;
        record_event(txn, org, &event).await?;
        if let Some(campaign_id) = &c.campaign_id {
            // Its recipient no longer waits for it (the pacer fails it, `recipients_lost`),
            // and its slot is free.
            super::campaigns::hurry(txn, campaign_id, removal.now).await?;
        }
    }
    Ok(true)
}

#[async_trait]
impl RetentionRepository for SeaRepository {
    async fn organization_settings(
        &self,
        organization_id: &str,
    ) -> Result<Option<OrganizationSettings>> {
        Ok(organization::Entity::find_by_id(organization_id.to_owned())
            .one(&self.db)
            .await
            .map_err(db_err)?
            .as_ref()
            .map(settings_from))
    }

    async fn organization_settings_set(
        &self,
        organization_id: &str,
        change: Change<'_, OrganizationSettings>,
        audit: &AuditedChange,
    ) -> Result<Option<OrganizationSettings>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let Some(before) = organization::Entity::find_by_id(organization_id.to_owned())
            .lock(sea_orm::sea_query::LockType::NoKeyUpdate)
            .one(&txn)
            .await
            .map_err(db_err)?
            .as_ref()
            .map(settings_from)
        else {
            return Ok(None);
        };
        let settings = audit.change(&before, change)?;
        organization::Entity::update_many()
            .col_expr(
                organization::Column::RecordingRetentionDays,
                Expr::val(days_col(settings.recording_retention_days)),
            )
            .col_expr(
                organization::Column::TranscriptRetentionDays,
                Expr::val(days_col(settings.transcript_retention_days)),
            )
            .col_expr(
                organization::Column::CallRetentionDays,
                Expr::val(days_col(settings.call_retention_days)),
            )
            .col_expr(
                organization::Column::RuntimeStreamUrl,
                Expr::val(settings.runtime_stream_url.clone()),
            )
            .col_expr(
                organization::Column::CallingHoursStart,
                Expr::val(settings.calling_hours.as_ref().map(|h| h.start.clone())),
            )
            .col_expr(
                organization::Column::CallingHoursEnd,
                Expr::val(settings.calling_hours.as_ref().map(|h| h.end.clone())),
            )
            .col_expr(
                organization::Column::Timezone,
                Expr::val(settings.timezone.clone()),
            )
            .col_expr(
                organization::Column::MaxConcurrentCalls,
                Expr::val(settings.max_concurrent_calls),
            )
            .col_expr(
                organization::Column::MonthlyCreditLimit,
                Expr::val(settings.monthly_credit_limit),
            )
            .filter(organization::Column::OrganizationId.eq(organization_id))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        let entry = audit.entry(organization_id, Some(&before), Some(&settings))?;
        record_audit(&txn, organization_id, &entry).await?;
        // What decides when a campaign may dial: its waiting pacers look again at once.
        let windows =
            settings.calling_hours != before.calling_hours || settings.timezone != before.timezone;
        let limits = settings.max_concurrent_calls != before.max_concurrent_calls
            || settings.monthly_credit_limit != before.monthly_credit_limit;
        if windows || limits {
            super::campaigns::organization_changed(
                &txn,
                organization_id,
                audit.stamp.created_at,
                windows,
            )
            .await?;
        }
        txn.commit().await.map_err(db_err)?;
        if settings.runtime_stream_url != before.runtime_stream_url {
            // The routes every instance keeps follow (migration m0025).
            self.agents_changed().await;
        }
        Ok(Some(settings))
    }

    async fn retention_policies(&self) -> Result<Vec<(String, OrganizationSettings)>> {
        let rows = organization::Entity::find()
            .filter(
                organization::Column::RecordingRetentionDays
                    .is_not_null()
                    .or(organization::Column::TranscriptRetentionDays.is_not_null())
                    .or(organization::Column::CallRetentionDays.is_not_null()),
            )
            .order_by_asc(organization::Column::OrganizationId)
            .all(&self.db)
            .await
            .map_err(db_err)?;
        Ok(rows
            .into_iter()
            .map(|m| {
                let settings = settings_from(&m);
                (m.organization_id, settings)
            })
            .collect())
    }

    async fn calls_remove(&self, removal: &CallRemoval<'_>) -> Result<Vec<Call>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        // Write first: a SQLite transaction that reads and then writes fails with "database is
        // locked" if another connection wrote in between; this one waits its turn instead.
        lock_org(&txn, removal.organization_id).await?;
        let mut select =
            call::Entity::find().filter(call::Column::OrganizationId.eq(removal.organization_id));
        if let Some(call_sid) = removal.call_sid {
            select = select.filter(call::Column::CallSid.eq(call_sid));
        }
        if let Some(before) = removal.created_before {
            select = select.filter(call::Column::CreatedAt.lt(before.as_micros()));
        }
        select = match removal.part {
            CallPart::Recording => select.filter(call::Column::RecordingKey.is_not_null()),
            CallPart::Transcript => select.filter(Expr::cust(HAS_TRANSCRIPT)),
            CallPart::Call => select,
        };
        let select = select
            .order_by_asc(call::Column::CreatedAt)
            .order_by_asc(call::Column::CallSid)
            .limit(removal.limit);
        let candidates = all(&txn, select, call_from).await?;
        let mut removed = Vec::with_capacity(candidates.len());
        let mut jobs = Vec::new();
        for c in candidates {
            if remove_part(&txn, removal, &c, &mut jobs).await? {
                removed.push(c);
            }
        }
        enqueue_many(&txn, &jobs, removal.now).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(removed)
    }

    async fn recording_key_in_use(&self, call_sid: &str, key: &str) -> Result<bool> {
        let found = call::Entity::find_by_id(call_sid.to_owned())
            .select_only()
            .column(call::Column::CallSid)
            .filter(call::Column::RecordingKey.eq(key))
            .limit(1)
            .into_tuple::<String>()
            .one(&self.db)
            .await
            .map_err(db_err)?;
        Ok(found.is_some())
    }
}
