//! Usage and cost: every usage item of a call (priced when recorded; `agent_id` and the
//! call's `created_at` copied in so that the usage report reads items alone), the call's
//! `cost_breakdown` as the API shows it, the organization's price book, and the credits of each
//! calendar month that `monthly_credit_limit` is checked against at dial time (a ledger: calls
//! deleted later do not give their credits back).

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{big_integer, double, double_null, string, string_null, text};

use super::org_fk;

pub(super) struct M0022Usage;

impl MigrationName for M0022Usage {
    fn name(&self) -> &str {
        "m0022_usage"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0022Usage {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for (table, column, kind) in [
            ("organizations", "monthly_credit_limit", "DOUBLE PRECISION"),
            ("calls", "cost_breakdown", "TEXT"),
        ] {
            m.get_connection()
                .execute_unprepared(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"))
                .await?;
        }
        m.create_table(
            Table::create()
                .table("call_usage")
                .col(
                    big_integer("usage_id")
                        .auto_increment()
                        .primary_key()
                        .take(),
                )
                .col(string("organization_id"))
                .col(string("call_sid"))
                .col(string("agent_id"))
                .col(big_integer("call_created_at"))
                .col(string("component"))
                .col(string("provider"))
                .col(string_null("model"))
                .col(double("quantity"))
                .col(string("unit"))
                .col(double_null("credits"))
                .col(big_integer("created_at"))
                .foreign_key(&mut org_fk("call_usage"))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_call_usage_call")
                        .from("call_usage", "call_sid")
                        .to("calls", "call_sid")
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .take(),
        )
        .await?;
        // The report's window is on the call's creation, and the index holds what a report by
        // day or agent reads of an item (no lookup of the row); the foreign key's cascade finds
        // a call's items by `call_sid`.
        for (name, columns) in [
            (
                "ix_call_usage_window",
                &[
                    "organization_id",
                    "call_created_at",
                    "unit",
                    "quantity",
                    "credits",
                    "agent_id",
                ][..],
            ),
            ("ix_call_usage_call", &["call_sid"][..]),
        ] {
            let mut index = Index::create();
            index.name(name).table("call_usage");
            for column in columns {
                index.col(*column);
            }
            m.create_index(index.take()).await?;
        }
        m.create_table(
            Table::create()
                .table("price_books")
                .col(string("organization_id").primary_key())
                .col(text("prices"))
                .col(big_integer("updated_at"))
                .foreign_key(&mut org_fk("price_books"))
                .take(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("credit_months")
                .col(string("organization_id"))
                .col(string("month"))
                .col(double("credits"))
                .primary_key(Index::create().col("organization_id").col("month"))
                .foreign_key(&mut org_fk("credit_months"))
                .take(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for table in ["credit_months", "price_books", "call_usage"] {
            m.drop_table(Table::drop().table(table).take()).await?;
        }
        for (table, column) in [
            ("calls", "cost_breakdown"),
            ("organizations", "monthly_credit_limit"),
        ] {
            m.get_connection()
                .execute_unprepared(&format!("ALTER TABLE {table} DROP COLUMN {column}"))
                .await?;
        }
        Ok(())
    }
}
