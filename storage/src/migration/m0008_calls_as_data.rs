//! Calls as data: transcripts (with a full-text index in each database's dialect), an index
//! per call filter that keeps keyset pagination, the per-call transcript counter that hands
//! out `seq`, and the organization's retention policy.

use sea_orm::DatabaseBackend;
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{
    big_integer, big_integer_null, integer_null, string, string_null, text, text_null,
};

use super::org_fk;

pub(super) struct M0008CallsAsData;

impl MigrationName for M0008CallsAsData {
    fn name(&self) -> &str {
        "m0008_calls_as_data"
    }
}

/// SQLite: an external-content FTS5 index over `call_messages.text`, kept by triggers.
const SQLITE_FTS: [&str; 3] = [
    "CREATE VIRTUAL TABLE call_messages_fts USING fts5(text, content='call_messages', \
     content_rowid='message_id', tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER call_messages_fts_insert AFTER INSERT ON call_messages BEGIN \
     INSERT INTO call_messages_fts(rowid, text) VALUES (new.message_id, new.text); END",
    "CREATE TRIGGER call_messages_fts_delete AFTER DELETE ON call_messages BEGIN \
     INSERT INTO call_messages_fts(call_messages_fts, rowid, text) \
     VALUES ('delete', old.message_id, old.text); END",
];

const POSTGRES_FTS: [&str; 2] = [
    "ALTER TABLE call_messages ADD COLUMN tsv tsvector \
     GENERATED ALWAYS AS (to_tsvector('english', text)) STORED",
    "CREATE INDEX ix_call_messages_tsv ON call_messages USING GIN (tsv)",
];

/// One index per equality filter of `GET /api/calls`, each ending in the keyset columns, so
/// that a filtered page is a range scan however deep it is.
const FILTER_INDEXES: [(&str, &str); 5] = [
    ("ix_calls_status", "status"),
    ("ix_calls_call_type", "call_type"),
    ("ix_calls_agent", "agent_id"),
    ("ix_calls_to_number", "to_number"),
    ("ix_calls_from_number", "from_number"),
];

#[async_trait::async_trait]
impl MigrationTrait for M0008CallsAsData {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // The last `seq` handed out: appends take their range from it in one statement.
        m.alter_table(
            Table::alter()
                .table("calls")
                .add_column(big_integer("message_seq").default(0))
                .take(),
        )
        .await?;
        for col in [
            "recording_retention_days",
            "transcript_retention_days",
            "call_retention_days",
        ] {
            m.alter_table(
                Table::alter()
                    .table("organizations")
                    .add_column(integer_null(col))
                    .take(),
            )
            .await?;
        }
        for (name, col) in FILTER_INDEXES {
            m.create_index(
                Index::create()
                    .name(name)
                    .table("calls")
                    .col("organization_id")
                    .col(col)
                    .col("created_at")
                    .col("call_sid")
                    .take(),
            )
            .await?;
        }
        m.create_table(
            Table::create()
                .table("call_messages")
                .col(
                    big_integer("message_id")
                        .auto_increment()
                        .primary_key()
                        .take(),
                )
                .col(string("organization_id"))
                .col(string("call_sid"))
                .col(big_integer("seq"))
                .col(string("role"))
                .col(text("text"))
                .col(big_integer_null("start_ms"))
                .col(big_integer_null("end_ms"))
                .col(string_null("tool_name"))
                .col(text_null("tool_arguments"))
                .col(text_null("tool_result"))
                .col(big_integer("created_at"))
                .foreign_key(&mut org_fk("call_messages"))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_call_messages_call")
                        .from("call_messages", "call_sid")
                        .to("calls", "call_sid")
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .take(),
        )
        .await?;
        // Conversation order, and no `seq` twice.
        m.create_index(
            Index::create()
                .name("ux_call_messages_seq")
                .table("call_messages")
                .col("call_sid")
                .col("seq")
                .unique()
                .take(),
        )
        .await?;
        let db = m.get_connection();
        let statements: &[&str] = match m.get_database_backend() {
            DatabaseBackend::Postgres => &POSTGRES_FTS,
            _ => &SQLITE_FTS,
        };
        for sql in statements {
            db.execute_unprepared(sql).await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        if m.get_database_backend() != DatabaseBackend::Postgres {
            m.get_connection()
                .execute_unprepared("DROP TABLE IF EXISTS call_messages_fts")
                .await?;
        }
        m.drop_table(Table::drop().table("call_messages").take())
            .await
    }
}
