//! The record of every state change: one row per event, its data as JSON text.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{big_integer, string, text};

use super::{keyset_index, org_fk, pk};

pub(super) struct M0004Events;

impl MigrationName for M0004Events {
    fn name(&self) -> &str {
        "m0004_events"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0004Events {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("events")
                .col(pk("event_id"))
                .col(string("organization_id"))
                .col(string("type"))
                .col(big_integer("created_at"))
                .col(text("data"))
                .foreign_key(&mut org_fk("events"))
                .take(),
        )
        .await?;
        m.create_index(keyset_index("events", "event_id")).await?;
        // The list filtered by type: with one type, a range scan in list order.
        m.create_index(
            Index::create()
                .name("ix_events_type_keyset")
                .table("events")
                .col("organization_id")
                .col("type")
                .col("created_at")
                .col("event_id")
                .take(),
        )
        .await?;
        // The retention sweep deletes by age across organizations.
        m.create_index(
            Index::create()
                .name("ix_events_created_at")
                .table("events")
                .col("created_at")
                .take(),
        )
        .await
    }
}
