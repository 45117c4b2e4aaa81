//! Idempotency keys: one row per `(scope, idem_key)`, the primary key that makes the first
//! insert of a key win, with the stored response once the first request has answered.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{big_integer, blob_null, integer_null, string, text_null};

pub(super) struct M0010Idempotency;

impl MigrationName for M0010Idempotency {
    fn name(&self) -> &str {
        "m0010_idempotency"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0010Idempotency {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("idempotency_keys")
                .col(string("scope"))
                .col(string("idem_key"))
                .col(string("fingerprint"))
                .col(string("token"))
                .col(integer_null("response_status"))
                .col(text_null("response_content_type"))
                .col(text_null("response_location"))
                .col(blob_null("response_body"))
                .col(big_integer("created_at"))
                .col(big_integer("expires_at"))
                .col(big_integer("locked_until"))
                .primary_key(Index::create().col("scope").col("idem_key"))
                .take(),
        )
        .await?;
        // The sweep deletes by expiry across scopes.
        m.create_index(
            Index::create()
                .name("ix_idempotency_keys_expires_at")
                .table("idempotency_keys")
                .col("expires_at")
                .take(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table("idempotency_keys").take())
            .await
    }
}
