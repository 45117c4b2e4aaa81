//! A partial index of the calls in flight (`queued`, `ringing`, `in_progress`) by organization
//! and type: the concurrency limit counts an organization's outbound ones in every dial's
//! transaction, which without it walked all of the organization's outbound calls (SQLite) —
//! a cost that grew with history, not with the calls in flight.

use sea_orm_migration::prelude::*;

pub(super) struct M0021LiveCalls;

impl MigrationName for M0021LiveCalls {
    fn name(&self) -> &str {
        "m0021_live_calls"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0021LiveCalls {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.get_connection()
            .execute_unprepared(
                "CREATE INDEX ix_calls_live ON calls (organization_id, call_type) \
                 WHERE status IN ('queued', 'ringing', 'in_progress')",
            )
            .await?;
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.get_connection()
            .execute_unprepared("DROP INDEX ix_calls_live")
            .await?;
        Ok(())
    }
}
