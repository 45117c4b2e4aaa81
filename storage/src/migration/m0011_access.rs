//! Access (DESIGN §16): the scopes an API key is narrowed to, and the audit log, one row per
//! state change made by a caller, written in the transaction of the change.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{big_integer, string, string_null, text, text_null};

use super::{keyset_index, org_fk, pk};

pub(super) struct M0011Access;

impl MigrationName for M0011Access {
    fn name(&self) -> &str {
        "m0011_access"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0011Access {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // JSON text of the permission names; NULL: every permission of the key's role.
        m.alter_table(
            Table::alter()
                .table("api_keys")
                .add_column(text_null("scopes"))
                .take(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("audit_log")
                .col(pk("audit_id"))
                .col(string("organization_id"))
                .col(big_integer("created_at"))
                .col(string("action"))
                .col(string("resource_type"))
                .col(string("resource_id"))
                .col(string("actor_type"))
                .col(string_null("actor_key_id"))
                .col(string_null("actor_user_id"))
                .col(text("changes"))
                .col(string_null("request_id"))
                .col(string_null("ip"))
                .foreign_key(&mut org_fk("audit_log"))
                .take(),
        )
        .await?;
        m.create_index(keyset_index("audit_log", "audit_id"))
            .await?;
        // Each equality filter of the list: a range scan in list order.
        for column in ["action", "resource_id", "actor_key_id", "actor_user_id"] {
            m.create_index(
                Index::create()
                    .name(format!("ix_audit_log_{column}_keyset"))
                    .table("audit_log")
                    .col("organization_id")
                    .col(column)
                    .col("created_at")
                    .col("audit_id")
                    .take(),
            )
            .await?;
        }
        // The retention sweep deletes by age across organizations.
        m.create_index(
            Index::create()
                .name("ix_audit_log_created_at")
                .table("audit_log")
                .col("created_at")
                .take(),
        )
        .await
    }
}
