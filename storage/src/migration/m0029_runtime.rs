//! The built-in voice runtime (DESIGN §24) on calls:
//! - `runtime_token`: the SHA-256 of the token a call's media stream must present;
//! - `latency`: the call's turn latency summary, as JSON;
//! - `call_messages.interrupted`: an agent message the caller cut short (only what was heard
//!   is kept).

use sea_orm_migration::prelude::*;

pub(super) struct M0029Runtime;

impl MigrationName for M0029Runtime {
    fn name(&self) -> &str {
        "m0029_runtime"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0029Runtime {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        let db = m.get_connection();
        for sql in [
            "ALTER TABLE calls ADD COLUMN runtime_token TEXT",
            "ALTER TABLE calls ADD COLUMN latency TEXT",
            "ALTER TABLE call_messages ADD COLUMN interrupted BOOLEAN",
        ] {
            db.execute_unprepared(sql).await?;
        }
        Ok(())
    }
}
