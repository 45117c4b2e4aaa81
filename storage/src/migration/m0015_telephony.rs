//! Telephony: where calls' media streams go (the organization's `runtime_stream_url`, which an
//! agent's may override) and what connecting a number at its provider found
//! (`provider_number_id`, `connected_at`). Every column is nullable: nothing existing changes.

use sea_orm_migration::prelude::*;

pub(super) struct M0015Telephony;

impl MigrationName for M0015Telephony {
    fn name(&self) -> &str {
        "m0015_telephony"
    }
}

/// `(table, column, type)` of every column added.
const COLUMNS: [(&str, &str, &str); 4] = [
    ("organizations", "runtime_stream_url", "TEXT"),
    ("agents", "runtime_stream_url", "TEXT"),
    ("phone_numbers", "provider_number_id", "TEXT"),
    ("phone_numbers", "connected_at", "BIGINT"),
];

#[async_trait::async_trait]
impl MigrationTrait for M0015Telephony {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for (table, column, kind) in COLUMNS {
            m.get_connection()
                .execute_unprepared(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"))
                .await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for (table, column, _) in COLUMNS {
            m.get_connection()
                .execute_unprepared(&format!("ALTER TABLE {table} DROP COLUMN {column}"))
                .await?;
        }
        Ok(())
    }
}
