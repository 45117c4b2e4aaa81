//! Calls.

use super::*;

#[async_trait]
impl CallRepository for SeaRepository {
    async fn call_insert(&self, call: &Call) -> Result<()> {
        call::Entity::insert(call_row(call))
            .exec_without_returning(&self.db)
            .await
            .map_err(db_err)?;
        Ok(())
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

    async fn call_update(&self, c: &Call) -> Result<()> {
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
            .col_expr(call::Column::TurnCount, Expr::val(c.turn_count))
            .col_expr(call::Column::UpdatedAt, Expr::val(c.updated_at.as_micros()))
            .filter(call::Column::CallSid.eq(&c.call_sid))
            .filter(call::Column::OrganizationId.eq(&c.client_id))
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn call_list(&self, organization_id: &str, page: &PageQuery) -> Result<Vec<Call>> {
        let select = call::Entity::find().filter(call::Column::OrganizationId.eq(organization_id));
        all(
            &self.db,
            keyset(select, call::Column::CreatedAt, call::Column::CallSid, page),
            call_from,
        )
        .await
    }

    async fn call_set_recording(
        &self,
        organization_id: &str,
        call_sid: &str,
        recording: Option<&Recording>,
        updated_at: Timestamp,
    ) -> Result<()> {
        call::Entity::update_many()
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
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(())
    }
}
