//! The suppression (do-not-call) list: one entry per organization and number (a unique index,
//! which also serves the dial's check), listed newest first.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{big_integer, big_integer_null, string, string_null};

use super::{org_fk, pk};

pub(super) struct M0017Suppressions;

impl MigrationName for M0017Suppressions {
    fn name(&self) -> &str {
        "m0017_suppressions"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0017Suppressions {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("suppressions")
                .col(pk("suppression_id"))
                .col(string("organization_id"))
                .col(string("phone_number"))
                .col(string_null("reason"))
                .col(big_integer_null("expires_at"))
                .col(big_integer("created_at"))
                .col(big_integer("updated_at"))
                .foreign_key(&mut org_fk("suppressions"))
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ux_suppressions_number")
                .table("suppressions")
                .col("organization_id")
                .col("phone_number")
                .unique()
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ix_suppressions_keyset")
                .table("suppressions")
                .col("organization_id")
                .col("created_at")
                .col("suppression_id")
                .take(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table("suppressions").take())
            .await
    }
}
