//! When a key was revoked: set once, by the one request that revoked it.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::big_integer_null;

pub(super) struct M0002ApiKeyRevokedAt;

impl MigrationName for M0002ApiKeyRevokedAt {
    fn name(&self) -> &str {
        "m0002_api_key_revoked_at"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0002ApiKeyRevokedAt {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.alter_table(
            Table::alter()
                .table("api_keys")
                .add_column(big_integer_null("revoked_at"))
                .take(),
        )
        .await
    }
}
