//! The credential version: one row whose number every revocation of a key raises, in the
//! revocation's transaction. Each instance caches the keys it has seen and trusts an entry
//! only while the version is the one it was read at (see `repo/changes.rs`).

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{big_integer, integer};

pub(super) struct M0012CredentialVersion;

impl MigrationName for M0012CredentialVersion {
    fn name(&self) -> &str {
        "m0012_credential_version"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0012CredentialVersion {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("credential_version")
                .col(integer("id").primary_key())
                .col(big_integer("version"))
                .take(),
        )
        .await?;
        m.get_connection()
            .execute_unprepared("INSERT INTO credential_version (id, version) VALUES (1, 0)")
            .await
            .map(|_| ())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table("credential_version").take())
            .await
    }
}
