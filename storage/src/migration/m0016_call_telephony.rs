//! Calls that happen through a provider: which provider and which of its calls
//! (`provider_call_id`, one call per provider call id, enforced by a unique index so that a
//! provider repeating itself or two instances racing record one call), the number it came
//! through (filtered on, with its own keyset index), who answered, what the dial carried
//! (`dynamic_variables`, `metadata`, `timezone`, `agent_version`), the provider's refusal, and
//! `dial_started_at`: marked in its own commit before a dial is sent, so that no retry ever
//! sends it again.

use sea_orm_migration::prelude::*;

pub(super) struct M0016CallTelephony;

impl MigrationName for M0016CallTelephony {
    fn name(&self) -> &str {
        "m0016_call_telephony"
    }
}

/// `(column, type)` of every column added to `calls`.
const COLUMNS: [(&str, &str); 10] = [
    ("provider", "TEXT"),
    ("provider_call_id", "TEXT"),
    ("phone_number_id", "TEXT"),
    ("answered_by", "TEXT"),
    ("dynamic_variables", "TEXT NOT NULL DEFAULT '{}'"),
    ("metadata", "TEXT NOT NULL DEFAULT '{}'"),
    ("provider_error", "TEXT"),
    ("agent_version", "BIGINT"),
    ("timezone", "TEXT"),
    ("dial_started_at", "BIGINT"),
];

#[async_trait::async_trait]
impl MigrationTrait for M0016CallTelephony {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        let db = m.get_connection();
        for (column, kind) in COLUMNS {
            db.execute_unprepared(&format!("ALTER TABLE calls ADD COLUMN {column} {kind}"))
                .await?;
        }
        // Rows without a provider (recorded through the API) are NULL, which never collides.
        db.execute_unprepared(
            "CREATE UNIQUE INDEX ux_calls_provider_call ON calls (provider, provider_call_id)",
        )
        .await?;
        db.execute_unprepared(
            "CREATE INDEX ix_calls_phone_number ON calls \
             (organization_id, phone_number_id, created_at, call_sid)",
        )
        .await?;
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        let db = m.get_connection();
        db.execute_unprepared("DROP INDEX ix_calls_phone_number")
            .await?;
        db.execute_unprepared("DROP INDEX ux_calls_provider_call")
            .await?;
        for (column, _) in COLUMNS {
            db.execute_unprepared(&format!("ALTER TABLE calls DROP COLUMN {column}"))
                .await?;
        }
        Ok(())
    }
}
