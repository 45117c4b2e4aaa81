//! Knowledge-base processing: a document's processing error and the job that owns its
//! processing, and the chunks search reads, with a full-text index in each database's own
//! dialect (FTS5 on SQLite, a generated `tsvector` under a GIN index on Postgres).

use sea_orm::DatabaseBackend;
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{big_integer, blob_null, string, string_null, text, text_null};

use super::{create_full_text_index, org_fk};

pub(super) struct M0007Knowledge;

impl MigrationName for M0007Knowledge {
    fn name(&self) -> &str {
        "m0007_knowledge"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0007Knowledge {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite alters one thing at a time.
        for col in [text_null("processing_error"), string_null("processing_job")] {
            m.alter_table(Table::alter().table("kb_documents").add_column(col).take())
                .await?;
        }
        // An integer key of its own: the FTS5 index refers to rows by it, and SQLite may
        // renumber the implicit rowid of a table without one.
        m.create_table(
            Table::create()
                .table("kb_chunks")
                .col(
                    big_integer("chunk_id")
                        .auto_increment()
                        .primary_key()
                        .take(),
                )
                .col(string("organization_id"))
                .col(string("documentation_id"))
                .col(big_integer("chunk_index"))
                .col(text("text"))
                .col(blob_null("embedding"))
                .foreign_key(&mut org_fk("kb_chunks"))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_kb_chunks_document")
                        .from("kb_chunks", "documentation_id")
                        .to("kb_documents", "documentation_id")
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ux_kb_chunks_document")
                .table("kb_chunks")
                .col("documentation_id")
                .col("chunk_index")
                .unique()
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ix_kb_chunks_organization")
                .table("kb_chunks")
                .col("organization_id")
                .take(),
        )
        .await?;
        create_full_text_index(m, "kb_chunks", "chunk_id").await?;
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        if m.get_database_backend() != DatabaseBackend::Postgres {
            m.get_connection()
                .execute_unprepared("DROP TABLE IF EXISTS kb_chunks_fts")
                .await?;
        }
        m.drop_table(Table::drop().table("kb_chunks").take()).await
    }
}
