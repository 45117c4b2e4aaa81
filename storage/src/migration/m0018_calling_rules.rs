//! Dial-time rules of an organization: calling hours (start and end, `HH:MM`), its time zone
//! (`NULL` reads as UTC) and its limit of outbound calls at once. Every column is nullable:
//! nothing existing changes.

use sea_orm_migration::prelude::*;

pub(super) struct M0018CallingRules;

impl MigrationName for M0018CallingRules {
    fn name(&self) -> &str {
        "m0018_calling_rules"
    }
}

/// `(column, type)` of every column added to `organizations`.
const COLUMNS: [(&str, &str); 4] = [
    ("calling_hours_start", "TEXT"),
    ("calling_hours_end", "TEXT"),
    ("timezone", "TEXT"),
    ("max_concurrent_calls", "BIGINT"),
];

#[async_trait::async_trait]
impl MigrationTrait for M0018CallingRules {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for (column, kind) in COLUMNS {
            m.get_connection()
                .execute_unprepared(&format!(
                    "ALTER TABLE organizations ADD COLUMN {column} {kind}"
                ))
                .await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for (column, _) in COLUMNS {
            m.get_connection()
                .execute_unprepared(&format!("ALTER TABLE organizations DROP COLUMN {column}"))
                .await?;
        }
        Ok(())
    }
}
