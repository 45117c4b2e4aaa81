//! Events learn the id of the resource they are about (`call_sid`, `agent_id`, … of their
//! data), so that one resource's history is a range of an index: the console shows a call's
//! events. Events recorded before have none (`NULL`) and are listed only without the filter;
//! they expire with `events.retention_days`.

use sea_orm_migration::prelude::*;

pub(super) struct M0024EventResources;

impl MigrationName for M0024EventResources {
    fn name(&self) -> &str {
        "m0024_event_resources"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0024EventResources {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.get_connection()
            .execute_unprepared("ALTER TABLE events ADD COLUMN resource_id TEXT")
            .await?;
        m.create_index(
            Index::create()
                .name("ix_events_resource_keyset")
                .table("events")
                .col("organization_id")
                .col("resource_id")
                .col("created_at")
                .col("event_id")
                .take(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.get_connection()
            .execute_unprepared("DROP INDEX ix_events_resource_keyset")
            .await?;
        m.get_connection()
            .execute_unprepared("ALTER TABLE events DROP COLUMN resource_id")
            .await?;
        Ok(())
    }
}
