//! Call transcripts. An append takes its range of `seq` with one
//! `UPDATE calls SET message_seq = message_seq + n … RETURNING message_seq` in the transaction
//! that inserts the messages: the row lock on Postgres and the write lock on SQLite make
//! concurrent appends to one call take consecutive, disjoint ranges.

use async_trait::async_trait;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveValue::{NotSet, Set},
    ColumnTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect, TransactionTrait,
};
use voiceplane_core::model::{AuditEntry, CallMessage, NewMessage};
use voiceplane_core::repo::TranscriptRepository;
use voiceplane_core::time::Timestamp;
use voiceplane_core::{Error, Result};

use crate::SeaRepository;
use crate::convert::{db_err, from_json, parse_enum, to_json, ts};
use crate::entity::{call, call_message};
use crate::repo::{all, record_audit};

fn message_from(m: call_message::Model) -> Result<CallMessage> {
    Ok(CallMessage {
        role: parse_enum("call_messages.role", &m.role)?,
        tool_arguments: m
            .tool_arguments
            .as_deref()
            .map(|j| from_json("call_messages.tool_arguments", j))
            .transpose()?,
        tool_result: m
            .tool_result
            .as_deref()
            .map(|j| from_json("call_messages.tool_result", j))
            .transpose()?,
        call_sid: m.call_sid,
        seq: m.seq,
        text: m.text,
        start_ms: m.start_ms,
        end_ms: m.end_ms,
        tool_name: m.tool_name,
        created_at: ts(m.created_at),
        interrupted: m.interrupted.filter(|i| *i),
    })
}

#[async_trait]
impl TranscriptRepository for SeaRepository {
    async fn call_message_append(
        &self,
        organization_id: &str,
        call_sid: &str,
        messages: &[NewMessage],
        created_at: Timestamp,
        audit: Option<&AuditEntry>,
    ) -> Result<Option<Vec<CallMessage>>> {
        let count = i64::try_from(messages.len())
            .map_err(|_| Error::Internal("too many messages in one append".to_owned()))?;
        let txn = self.db.begin().await.map_err(db_err)?;
        let taken = call::Entity::update_many()
            .col_expr(
                call::Column::MessageSeq,
                Expr::col(call::Column::MessageSeq).add(count),
            )
            .filter(call::Column::CallSid.eq(call_sid))
            .filter(call::Column::OrganizationId.eq(organization_id))
            .exec_with_returning(&txn)
            .await
            .map_err(db_err)?;
        let Some(last) = taken.first().map(|c| c.message_seq) else {
            txn.rollback().await.map_err(db_err)?;
            return Ok(None);
        };
        let appended: Vec<CallMessage> = messages
            .iter()
            .zip(last - count + 1..)
            .map(|(m, seq)| CallMessage {
                call_sid: call_sid.to_owned(),
                seq,
                role: m.role,
                text: m.text.clone(),
                start_ms: m.start_ms,
                end_ms: m.end_ms,
                tool_name: m.tool_name.clone(),
                tool_arguments: m.tool_arguments.clone(),
                tool_result: m.tool_result.clone(),
                interrupted: m.interrupted.filter(|i| *i),
                created_at,
            })
            .collect();
        let rows = appended
            .iter()
            .map(|m| {
                Ok(call_message::ActiveModel {
                    message_id: NotSet,
                    organization_id: Set(organization_id.to_owned()),
                    call_sid: Set(m.call_sid.clone()),
                    seq: Set(m.seq),
                    role: Set(m.role.as_str().to_owned()),
                    text: Set(m.text.clone()),
                    start_ms: Set(m.start_ms),
                    end_ms: Set(m.end_ms),
                    tool_name: Set(m.tool_name.clone()),
                    tool_arguments: Set(m.tool_arguments.as_ref().map(to_json).transpose()?),
                    tool_result: Set(m.tool_result.as_ref().map(to_json).transpose()?),
                    interrupted: Set(m.interrupted.filter(|i| *i)),
                    created_at: Set(created_at.as_micros()),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        call_message::Entity::insert_many(rows)
            .exec_without_returning(&txn)
            .await
            .map_err(db_err)?;
        if let Some(row) = taken.first() {
            crate::repo::analysis::transcript_grew(&txn, row, created_at).await?;
        }
        if let Some(audit) = audit {
            record_audit(&txn, organization_id, audit).await?;
        }
        txn.commit().await.map_err(db_err)?;
        Ok(Some(appended))
    }

    async fn call_message_list(
        &self,
        organization_id: &str,
        call_sid: &str,
        after_seq: i64,
        limit: u64,
    ) -> Result<Vec<CallMessage>> {
        all(
            &self.db,
            call_message::Entity::find()
                .filter(call_message::Column::CallSid.eq(call_sid))
                .filter(call_message::Column::OrganizationId.eq(organization_id))
                .filter(call_message::Column::Seq.gt(after_seq))
                .order_by_asc(call_message::Column::Seq)
                .limit(limit),
            message_from,
        )
        .await
    }
}
