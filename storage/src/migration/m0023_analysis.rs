//! Post-call analysis: the agent's settings (JSON) and its sealed API key; the call's
//! analysis status, answer (JSON) and error, and its `successful` verdict in a column of its
//! own for the list's filter and the statistics. Every column is nullable: nothing existing
//! changes.

use sea_orm_migration::prelude::*;

pub(super) struct M0023Analysis;

impl MigrationName for M0023Analysis {
    fn name(&self) -> &str {
        "m0023_analysis"
    }
}

/// `(table, column, type)` of every column added.
const COLUMNS: [(&str, &str, &str); 6] = [
    ("agents", "analysis", "TEXT"),
    ("agents", "analysis_key", "TEXT"),
    ("calls", "analysis_status", "TEXT"),
    ("calls", "analysis", "TEXT"),
    ("calls", "analysis_error", "TEXT"),
    ("calls", "successful", "BOOLEAN"),
];

#[async_trait::async_trait]
impl MigrationTrait for M0023Analysis {
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
