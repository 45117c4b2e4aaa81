//! Agent versions: the configuration of an agent as each publish froze it, never changed; the
//! agent learns its latest version and its deployment (nullable columns: agents never
//! published read as such).

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{big_integer, string, string_null, text};

use super::org_fk;

pub(super) struct M0020AgentVersions;

impl MigrationName for M0020AgentVersions {
    fn name(&self) -> &str {
        "m0020_agent_versions"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0020AgentVersions {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("agent_versions")
                .col(string("agent_id"))
                .col(big_integer("version"))
                .col(string("organization_id"))
                .col(string_null("description"))
                .col(big_integer("published_at"))
                .col(text("config"))
                .primary_key(Index::create().col("agent_id").col("version"))
                .foreign_key(&mut org_fk("agent_versions"))
                .take(),
        )
        .await?;
        for (column, kind) in [("published_version", "BIGINT"), ("deployment", "TEXT")] {
            m.get_connection()
                .execute_unprepared(&format!("ALTER TABLE agents ADD COLUMN {column} {kind}"))
                .await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for column in ["published_version", "deployment"] {
            m.get_connection()
                .execute_unprepared(&format!("ALTER TABLE agents DROP COLUMN {column}"))
                .await?;
        }
        m.drop_table(Table::drop().table("agent_versions").take())
            .await
    }
}
