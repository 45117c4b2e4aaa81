//! Webhook endpoints (secrets sealed; the previous one kept while it still signs) and the
//! record of every delivery, which goes with its endpoint.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{
    big_integer, big_integer_null, integer, integer_null, string, text, text_null,
};

use super::{keyset_index, org_fk, pk};

pub(super) struct M0006Webhooks;

impl MigrationName for M0006Webhooks {
    fn name(&self) -> &str {
        "m0006_webhooks"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0006Webhooks {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("webhooks")
                .col(pk("webhook_id"))
                .col(string("organization_id"))
                .col(text("url"))
                .col(text("events"))
                .col(text_null("description"))
                .col(string("status"))
                .col(text("secret_sealed"))
                .col(text_null("previous_secret_sealed"))
                .col(big_integer_null("previous_secret_expires_at"))
                .col(big_integer("created_at"))
                .col(big_integer("updated_at"))
                .foreign_key(&mut org_fk("webhooks"))
                .take(),
        )
        .await?;
        m.create_index(keyset_index("webhooks", "webhook_id"))
            .await?;
        // No foreign key to `events`: the retention sweep deletes old events whatever
        // deliveries still name them.
        m.create_table(
            Table::create()
                .table("webhook_deliveries")
                .col(pk("delivery_id"))
                .col(string("webhook_id"))
                .col(string("event_id"))
                .col(string("event_type"))
                .col(string("status"))
                .col(integer("attempts"))
                .col(big_integer_null("last_attempt_at"))
                .col(big_integer_null("next_attempt_at"))
                .col(integer_null("last_status_code"))
                .col(text_null("last_error"))
                .col(big_integer("created_at"))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_webhook_deliveries_webhook")
                        .from("webhook_deliveries", "webhook_id")
                        .to("webhooks", "webhook_id")
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .take(),
        )
        .await?;
        // The deliveries list of one endpoint, newest first.
        m.create_index(
            Index::create()
                .name("ix_webhook_deliveries_keyset")
                .table("webhook_deliveries")
                .col("webhook_id")
                .col("created_at")
                .col("delivery_id")
                .take(),
        )
        .await
    }
}
