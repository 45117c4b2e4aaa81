//! When a call's post-call analysis starts: a call of an agent with `analysis` that is
//! `completed` and has transcript messages, once, whichever comes last (the provider's report
//! of the end, or the runtime's transcript posted after it). The call turns `pending` and its
//! `call.analyze` job is written in the same transaction.

use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter};
use voiceplane_core::Result;
use voiceplane_core::model::{AnalysisStatus, Call, CallStatus, analyze_job};
use voiceplane_core::time::Timestamp;

use super::jobs;
use crate::convert::db_err;
use crate::entity::{agent, call, call_message};

/// Whether the agent `agent_id` analyses its calls.
async fn analyses<C: ConnectionTrait>(
    db: &C,
    organization_id: &str,
    agent_id: &str,
) -> Result<bool> {
    Ok(agent::Entity::find_by_id(agent_id.to_owned())
        .filter(agent::Column::OrganizationId.eq(organization_id))
        .filter(agent::Column::Analysis.is_not_null())
        .count(db)
        .await
        .map_err(db_err)?
        > 0)
}

/// Whether the change from `before` to `after` completes a call with a transcript whose agent
/// analyses its calls (and that was never analysed): it is then due.
pub(crate) async fn due<C: ConnectionTrait>(db: &C, before: &Call, after: &Call) -> Result<bool> {
    if after.status != CallStatus::Completed
        || before.status == CallStatus::Completed
        || after.analysis_status.is_some()
    {
        return Ok(false);
    }
    let has_transcript = call_message::Entity::find()
        .filter(call_message::Column::CallSid.eq(&after.call_sid))
        .count(db)
        .await
        .map_err(db_err)?
        > 0;
    Ok(has_transcript && analyses(db, &after.organization_id, &after.agent_id).await?)
}

/// Writes the analysis job of a call that turned `pending` in this change.
pub(crate) async fn requested<C: ConnectionTrait>(
    db: &C,
    before: &Call,
    after: &Call,
) -> Result<()> {
    let pending = Some(AnalysisStatus::Pending);
    if before.analysis_status != pending && after.analysis_status == pending {
        jobs::enqueue(
            db,
            &analyze_job(&after.organization_id, &after.call_sid, after.updated_at),
            after.updated_at,
        )
        .await?;
    }
    Ok(())
}

/// After messages were appended to `row` (the call as the append left it): a completed call
/// never analysed, of an agent that analyses, turns `pending` with its job.
pub(crate) async fn transcript_grew<C: ConnectionTrait>(
    db: &C,
    row: &call::Model,
    now: Timestamp,
) -> Result<()> {
    if row.status != CallStatus::Completed.as_str()
        || row.analysis_status.is_some()
        || !analyses(db, &row.organization_id, &row.agent_id).await?
    {
        return Ok(());
    }
    call::Entity::update_many()
        .col_expr(
            call::Column::AnalysisStatus,
            Expr::val(AnalysisStatus::Pending.as_str()),
        )
        .filter(call::Column::CallSid.eq(&row.call_sid))
        .exec(db)
        .await
        .map_err(db_err)?;
    jobs::enqueue(
        db,
        &analyze_job(&row.organization_id, &row.call_sid, now),
        now,
    )
    .await?;
    Ok(())
}
