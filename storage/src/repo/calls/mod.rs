//! Calls: insert, read, update, and point at a recording; the list and statistics
//! (`queries`) and the transcript (`transcripts`) are in the modules beside this one.

use async_trait::async_trait;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter, QuerySelect, TransactionTrait,
};
use voiceplane_core::idempotency::{IdempotencyRepository, KeyBinding};
use voiceplane_core::model::{AnalysisStatus, Call, Event, EventStamp, Recording};
use voiceplane_core::repo::{CallRepository, Change};
use voiceplane_core::time::Timestamp;
use voiceplane_core::{Error, Result};

use super::{one, record_event, record_if_changed};

pub(crate) mod json;
pub mod queries;
mod transcripts;
mod versions;

pub(crate) use versions::CallVersions;

use crate::SeaRepository;
use crate::convert::{db_err, from_json, parse_enum, to_json, ts, ts_opt};
use crate::entity::call;

/// Applies `change` to `before`, the call as read and locked in `txn`, and writes what follows
/// from it there: the row, `call.updated` when what the API shows changed, and the effects of
/// its end (its campaign's recipient, its telephony charge, its analysis). The caller commits.
pub(in crate::repo) async fn write_change(
    txn: &sea_orm::DatabaseTransaction,
    organization_id: &str,
    before: Call,
    change: Change<'_, Call>,
    event: &EventStamp,
) -> Result<Call> {
    let mut c = event.change(&before, change)?;
    if c == before {
        return Ok(c);
    }
    if super::analysis::due(txn, &before, &c).await? {
        c.analysis_status = Some(AnalysisStatus::Pending);
    }
    call::Entity::update_many()
        .col_expr(call::Column::Status, Expr::val(c.status.as_str()))
        .col_expr(call::Column::EndReason, Expr::val(c.end_reason.clone()))
        .col_expr(
            call::Column::BillingStatus,
            Expr::val(c.billing_status.clone()),
        )
        .col_expr(
            call::Column::StartTime,
            Expr::val(c.start_time.map(Timestamp::as_micros)),
        )
        .col_expr(
            call::Column::EndTime,
            Expr::val(c.end_time.map(Timestamp::as_micros)),
        )
        .col_expr(call::Column::DurationSeconds, Expr::val(c.duration_seconds))
        .col_expr(call::Column::TotalCost, Expr::val(c.total_cost))
        .col_expr(call::Column::CostBreakdown, Expr::val(breakdown_col(&c)?))
        .col_expr(
            call::Column::AnalysisStatus,
            Expr::val(c.analysis_status.map(|s| s.as_str())),
        )
        .col_expr(
            call::Column::Analysis,
            Expr::val(c.analysis.as_ref().map(to_json).transpose()?),
        )
        .col_expr(
            call::Column::AnalysisError,
            Expr::val(c.analysis_error.clone()),
        )
        .col_expr(
            call::Column::Successful,
            Expr::val(c.analysis.as_ref().and_then(|a| a.successful)),
        )
        .col_expr(
            call::Column::Latency,
            Expr::val(c.latency.as_ref().map(to_json).transpose()?),
        )
        .col_expr(
            call::Column::RuntimeToken,
            Expr::val(c.runtime_token.clone()),
        )
        .col_expr(call::Column::TurnCount, Expr::val(c.turn_count))
        .col_expr(call::Column::UpdatedAt, Expr::val(c.updated_at.as_micros()))
        .col_expr(
            call::Column::ProviderCallId,
            Expr::val(c.provider_call_id.clone()),
        )
        .col_expr(
            call::Column::AnsweredBy,
            Expr::val(c.answered_by.map(|a| a.as_str())),
        )
        .col_expr(
            call::Column::ProviderError,
            Expr::val(c.provider_error.as_ref().map(to_json).transpose()?),
        )
        .col_expr(
            call::Column::DialStartedAt,
            Expr::val(c.dial_started_at.map(Timestamp::as_micros)),
        )
        .filter(call::Column::CallSid.eq(&c.call_sid))
        .filter(call::Column::OrganizationId.eq(&c.organization_id))
        .exec(txn)
        .await
        .map_err(db_err)?;
    let event = event.updated(&before, &c)?;
    // A change of what the API does not show (the mark of a dial about to be sent) is
    // written, but is no event.
    if serde_json::to_value(&before).ok().as_ref() != Some(&event.data) {
        record_event(txn, organization_id, &event).await?;
    }
    super::campaigns::call_ended(txn, &before, &c).await?;
    super::usage::charged(txn, &before, &c).await?;
    super::analysis::requested(txn, &before, &c).await?;
    Ok(c)
}

pub(in crate::repo) fn call_from(m: call::Model) -> Result<Call> {
    Ok(Call {
        call_type: parse_enum("calls.call_type", &m.call_type)?,
        status: parse_enum("calls.status", &m.status)?,
        call_sid: m.call_sid,
        to_number: m.to_number,
        from_number: m.from_number,
        agent_id: m.agent_id,
        agent_name: m.agent_name,
        organization_id: m.organization_id,
        recording_enabled: m.recording_enabled,
        total_cost: m.total_cost,
        cost_breakdown: m
            .cost_breakdown
            .as_deref()
            .map(|j| from_json("calls.cost_breakdown", j))
            .transpose()?
            .unwrap_or_default(),
        duration_seconds: m.duration_seconds,
        turn_count: m.turn_count,
        created_at: ts(m.created_at),
        updated_at: ts(m.updated_at),
        start_time: ts_opt(m.start_time),
        end_time: ts_opt(m.end_time),
        end_reason: m.end_reason,
        billing_status: m.billing_status,
        provider: m
            .provider
            .as_deref()
            .map(|p| parse_enum("calls.provider", p))
            .transpose()?,
        provider_call_id: m.provider_call_id,
        phone_number_id: m.phone_number_id,
        answered_by: m
            .answered_by
            .as_deref()
            .map(|a| parse_enum("calls.answered_by", a))
            .transpose()?,
        dynamic_variables: from_json("calls.dynamic_variables", &m.dynamic_variables)?,
        metadata: from_json("calls.metadata", &m.metadata)?,
        provider_error: m
            .provider_error
            .as_deref()
            .map(|e| from_json("calls.provider_error", e))
            .transpose()?,
        agent_version: m.agent_version,
        timezone: m.timezone,
        analysis_status: m
            .analysis_status
            .as_deref()
            .map(|s| parse_enum("calls.analysis_status", s))
            .transpose()?,
        analysis: m
            .analysis
            .as_deref()
            .map(|a| from_json("calls.analysis", a))
            .transpose()?,
        analysis_error: m.analysis_error,
        latency: m
            .latency
            .as_deref()
            .map(|l| from_json("calls.latency", l))
            .transpose()?,
        runtime_token: m.runtime_token,
        dial_started_at: ts_opt(m.dial_started_at),
        campaign_id: m.campaign_id,
        recipient_id: m.recipient_id,
        recording: match (m.recording_key, m.recording_content_type, m.recording_size) {
            (Some(key), Some(content_type), Some(size)) => Some(Recording {
                key,
                content_type,
                size,
            }),
            _ => None,
        },
    })
}

/// The `cost_breakdown` column: `NULL` for a call without usage.
fn breakdown_col(c: &Call) -> Result<Option<String>> {
    (!c.cost_breakdown.is_empty())
        .then(|| to_json(&c.cost_breakdown))
        .transpose()
}

pub(in crate::repo) fn call_row(c: &Call) -> Result<call::ActiveModel> {
    Ok(call::ActiveModel {
        call_sid: Set(c.call_sid.clone()),
        organization_id: Set(c.organization_id.clone()),
        agent_id: Set(c.agent_id.clone()),
        agent_name: Set(c.agent_name.clone()),
        to_number: Set(c.to_number.clone()),
        from_number: Set(c.from_number.clone()),
        call_type: Set(c.call_type.as_str().to_owned()),
        status: Set(c.status.as_str().to_owned()),
        recording_enabled: Set(c.recording_enabled),
        total_cost: Set(c.total_cost),
        duration_seconds: Set(c.duration_seconds),
        turn_count: Set(c.turn_count),
        start_time: Set(c.start_time.map(Timestamp::as_micros)),
        end_time: Set(c.end_time.map(Timestamp::as_micros)),
        end_reason: Set(c.end_reason.clone()),
        billing_status: Set(c.billing_status.clone()),
        created_at: Set(c.created_at.as_micros()),
        updated_at: Set(c.updated_at.as_micros()),
        recording_key: Set(c.recording.as_ref().map(|r| r.key.clone())),
        recording_content_type: Set(c.recording.as_ref().map(|r| r.content_type.clone())),
        recording_size: Set(c.recording.as_ref().map(|r| r.size)),
        // Only transcript appends move it.
        message_seq: sea_orm::ActiveValue::NotSet,
        provider: Set(c.provider.map(|p| p.as_str().to_owned())),
        provider_call_id: Set(c.provider_call_id.clone()),
        phone_number_id: Set(c.phone_number_id.clone()),
        answered_by: Set(c.answered_by.map(|a| a.as_str().to_owned())),
        dynamic_variables: Set(to_json(&c.dynamic_variables)?),
        metadata: Set(to_json(&c.metadata)?),
        provider_error: Set(c.provider_error.as_ref().map(to_json).transpose()?),
        agent_version: Set(c.agent_version),
        timezone: Set(c.timezone.clone()),
        dial_started_at: Set(c.dial_started_at.map(Timestamp::as_micros)),
        campaign_id: Set(c.campaign_id.clone()),
        recipient_id: Set(c.recipient_id.clone()),
        cost_breakdown: Set(breakdown_col(c)?),
        analysis_status: Set(c.analysis_status.map(|s| s.as_str().to_owned())),
        analysis: Set(c.analysis.as_ref().map(to_json).transpose()?),
        analysis_error: Set(c.analysis_error.clone()),
        successful: Set(c.analysis.as_ref().and_then(|a| a.successful)),
        runtime_token: Set(c.runtime_token.clone()),
        latency: Set(c.latency.as_ref().map(to_json).transpose()?),
    })
}

impl SeaRepository {
    /// `call_update`, binding `key` to the call first when given; see
    /// [`CallRepository::call_update_keyed`]. The call is the first row it locks: a campaign's
    /// call ending moves on its recipient and hurries the pacer's job, which come after it in
    /// the lock order (docs/ARCHITECTURE.md), and the campaign's row is not written.
    async fn update_call(
        &self,
        organization_id: &str,
        call_sid: &str,
        change: Change<'_, Call>,
        event: &EventStamp,
        key: Option<&KeyBinding>,
    ) -> Result<Option<(Call, bool)>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        if let Some(key) = key
            && !super::idempotency::bind(&txn, key, call_sid, event.created_at).await?
        {
            drop(txn);
            let bound = self
                .idempotency_bound(&key.scope, &key.key, event.created_at)
                .await?
                .ok_or_else(|| {
                    Error::Conflict(
                        "a request with this Idempotency-Key was being processed; retry it"
                            .to_owned(),
                    )
                })?;
            if bound.for_retry(key)? != call_sid {
                return Err(voiceplane_core::idempotency::mismatch());
            }
            return Ok(self
                .call_get(organization_id, call_sid)
                .await?
                .map(|call| (call, true)));
        }
        let Some(before) = one(
            &txn,
            call::Entity::find_by_id(call_sid.to_owned())
                .filter(call::Column::OrganizationId.eq(organization_id))
                .lock_exclusive(),
            call_from,
        )
        .await?
        else {
            return Ok(None);
        };
        let c = write_change(&txn, organization_id, before, change, event).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(Some((c, false)))
    }
}

#[async_trait]
impl CallRepository for SeaRepository {
    async fn call_insert(&self, call: &Call, event: &Event) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        call::Entity::insert(call_row(call)?)
            .exec_without_returning(&txn)
            .await
            .map_err(db_err)?;
        record_event(&txn, &call.organization_id, event).await?;
        txn.commit().await.map_err(db_err)
    }

    async fn call_get(&self, organization_id: &str, call_sid: &str) -> Result<Option<Call>> {
        one(
            &self.db,
            call::Entity::find_by_id(call_sid.to_owned())
                .filter(call::Column::OrganizationId.eq(organization_id)),
            call_from,
        )
        .await
    }

    async fn call_get_any(&self, call_sid: &str) -> Result<Option<Call>> {
        one(
            &self.db,
            call::Entity::find_by_id(call_sid.to_owned()),
            call_from,
        )
        .await
    }

    async fn call_update(
        &self,
        organization_id: &str,
        call_sid: &str,
        change: Change<'_, Call>,
        event: &EventStamp,
    ) -> Result<Option<Call>> {
        Ok(self
            .update_call(organization_id, call_sid, change, event, None)
            .await?
            .map(|(call, _)| call))
    }

    async fn call_update_keyed(
        &self,
        organization_id: &str,
        call_sid: &str,
        change: Change<'_, Call>,
        event: &EventStamp,
        key: &KeyBinding,
    ) -> Result<Option<(Call, bool)>> {
        self.update_call(organization_id, call_sid, change, event, Some(key))
            .await
    }

    async fn call_set_recording(
        &self,
        organization_id: &str,
        call_sid: &str,
        recording: Option<&Recording>,
        updated_at: Timestamp,
        event: &Event,
    ) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let result = call::Entity::update_many()
            .col_expr(
                call::Column::RecordingKey,
                Expr::val(recording.map(|r| r.key.clone())),
            )
            .col_expr(
                call::Column::RecordingContentType,
                Expr::val(recording.map(|r| r.content_type.clone())),
            )
            .col_expr(
                call::Column::RecordingSize,
                Expr::val(recording.map(|r| r.size)),
            )
            .col_expr(call::Column::UpdatedAt, Expr::val(updated_at.as_micros()))
            .filter(call::Column::CallSid.eq(call_sid))
            .filter(call::Column::OrganizationId.eq(organization_id))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        record_if_changed(&txn, organization_id, event, result.rows_affected).await?;
        txn.commit().await.map_err(db_err)
    }
}
