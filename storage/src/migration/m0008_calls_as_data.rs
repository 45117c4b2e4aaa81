//! Calls as data: transcripts (with a full-text index in each database's dialect), an index
//! per call filter that keeps keyset pagination, the per-call transcript counter that hands
//! out `seq`, and the organization's retention policy.

use sea_orm::DatabaseBackend;
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{
    big_integer, big_integer_null, integer_null, string, string_null, text, text_null,
};

use super::{create_full_text_index, org_fk};

pub(super) struct M0008CallsAsData;

impl MigrationName for M0008CallsAsData {
    fn name(&self) -> &str {
        "m0008_calls_as_data"
    }
}

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
        create_full_text_index(m, "call_messages", "message_id").await?;
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
