//! Campaigns and their recipients; calls learn the campaign and recipient that placed them
//! (nullable columns: nothing existing changes).
//!
//! A recipient's number is unique in its campaign (the index de-duplicates uploads); the
//! pacer finds due recipients and the counts are grouped through `(campaign_id, status,
//! next_attempt_at)`.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{big_integer, big_integer_null, string, string_null, text};

use super::{keyset_index, org_fk, pk};

pub(super) struct M0019Campaigns;

impl MigrationName for M0019Campaigns {
    fn name(&self) -> &str {
        "m0019_campaigns"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0019Campaigns {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("campaigns")
                .col(pk("campaign_id"))
                .col(string("organization_id"))
                .col(string("name"))
                .col(string("agent_id"))
                .col(text("from_phone_number_ids"))
                .col(big_integer("max_concurrency"))
                .col(string("timezone"))
                .col(text("windows"))
                .col(text("retry"))
                .col(big_integer_null("starts_at"))
                .col(big_integer_null("ends_at"))
                .col(text("dynamic_variables"))
                .col(string("status"))
                .col(string_null("paused_reason"))
                .col(big_integer("dials").default(0))
                .col(big_integer("nudges").default(0))
                .col(big_integer("created_at"))
                .col(big_integer("updated_at"))
                .foreign_key(&mut org_fk("campaigns"))
                .take(),
        )
        .await?;
        m.create_index(keyset_index("campaigns", "campaign_id"))
            .await?;
        m.create_table(
            Table::create()
                .table("campaign_recipients")
                .col(pk("recipient_id"))
                .col(string("campaign_id"))
                .col(string("organization_id"))
                .col(string("to_number"))
                .col(string_null("timezone"))
                .col(text("dynamic_variables"))
                .col(string("status"))
                .col(big_integer("attempts"))
                .col(string_null("last_call_sid"))
                .col(big_integer_null("next_attempt_at"))
                .col(string_null("last_outcome"))
                .col(big_integer("created_at"))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_campaign_recipients_campaign")
                        .from("campaign_recipients", "campaign_id")
                        .to("campaigns", "campaign_id")
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ux_campaign_recipients_number")
                .table("campaign_recipients")
                .col("campaign_id")
                .col("to_number")
                .unique()
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ix_campaign_recipients_due")
                .table("campaign_recipients")
                .col("campaign_id")
                .col("status")
                .col("next_attempt_at")
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ix_campaign_recipients_keyset")
                .table("campaign_recipients")
                .col("campaign_id")
                .col("created_at")
                .col("recipient_id")
                .take(),
        )
        .await?;
        for column in ["campaign_id", "recipient_id"] {
            m.get_connection()
                .execute_unprepared(&format!("ALTER TABLE calls ADD COLUMN {column} TEXT"))
                .await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for column in ["campaign_id", "recipient_id"] {
            m.get_connection()
                .execute_unprepared(&format!("ALTER TABLE calls DROP COLUMN {column}"))
                .await?;
        }
        m.drop_table(Table::drop().table("campaign_recipients").take())
            .await?;
        m.drop_table(Table::drop().table("campaigns").take()).await
    }
}
