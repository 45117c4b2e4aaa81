//! What makes a retry safe when the first answer was lost (DESIGN §23), and a waiting
//! campaign wakeable:
//! - `idempotency_bindings`: an `Idempotency-Key` bound to what its create made, written in the
//!   create's own transaction, so a retry finds it whatever became of the key's row in
//!   `idempotency_keys` (written after the commit, and lost with a crash in between).
//! - `call_usage.item_id`: a client's id of a usage item, unique per call, so that a usage
//!   post sent again adds nothing.
//! - `campaign_recipients.window_wait`: the recipient's `next_attempt_at` is where the pacer
//!   put it because its windows or the calling hours were closed (not a retry's delay), so a
//!   change of those can make it due at once.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{big_integer, string};

pub(super) struct M0027KeysBound;

impl MigrationName for M0027KeysBound {
    fn name(&self) -> &str {
        "m0027_keys_bound"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0027KeysBound {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("idempotency_bindings")
                .col(string("scope"))
                .col(string("idem_key"))
                .col(string("fingerprint"))
                .col(string("resource"))
                .col(big_integer("created_at"))
                .col(big_integer("expires_at"))
                .primary_key(Index::create().col("scope").col("idem_key"))
                .take(),
        )
        .await?;
        // The sweep deletes by expiry across scopes, as it does the keys.
        m.create_index(
            Index::create()
                .name("ix_idempotency_bindings_expires_at")
                .table("idempotency_bindings")
                .col("expires_at")
                .take(),
        )
        .await?;
        let db = m.get_connection();
        for sql in [
            "ALTER TABLE call_usage ADD COLUMN item_id TEXT",
            // Items without an id (NULL) are not unique to each other, on either database.
            "CREATE UNIQUE INDEX ux_call_usage_item ON call_usage (call_sid, item_id)",
            "ALTER TABLE campaign_recipients ADD COLUMN window_wait BOOLEAN NOT NULL \
             DEFAULT FALSE",
        ] {
            db.execute_unprepared(sql).await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        let db = m.get_connection();
        for sql in [
            "DROP INDEX ux_call_usage_item",
            "ALTER TABLE call_usage DROP COLUMN item_id",
            "ALTER TABLE campaign_recipients DROP COLUMN window_wait",
        ] {
            db.execute_unprepared(sql).await?;
        }
        m.drop_table(Table::drop().table("idempotency_bindings").take())
            .await
    }
}
