//! The agents' change version (m0013) also numbers what routes a provider's webhook: an
//! integration (its credentials, public key and status) and an organization's
//! `runtime_stream_url`. Each instance then keeps the route of an integration beside its agents
//! and numbers, trusted at the same version, and a call coming in reads nothing but writes
//! its own row. Triggers raise it, as m0013's do, so no write path can forget to; an
//! organization's other writes (its settings, the no-op write that serialises reference
//! checks) leave it alone.

use sea_orm_migration::prelude::*;

pub(super) struct M0025RoutingChanges;

impl MigrationName for M0025RoutingChanges {
    fn name(&self) -> &str {
        "m0025_routing_changes"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0025RoutingChanges {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        let statements = match m.get_database_backend() {
            sea_orm::DatabaseBackend::Postgres => vec![
                "CREATE CONSTRAINT TRIGGER integrations_changed \
                 AFTER UPDATE OR DELETE ON integrations \
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW \
                 EXECUTE FUNCTION voiceplane_agents_changed()"
                    .to_owned(),
                "CREATE CONSTRAINT TRIGGER organizations_runtime_changed \
                 AFTER UPDATE OF runtime_stream_url ON organizations \
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW \
                 WHEN (OLD.runtime_stream_url IS DISTINCT FROM NEW.runtime_stream_url) \
                 EXECUTE FUNCTION voiceplane_agents_changed()"
                    .to_owned(),
            ],
            _ => {
                let raise = "BEGIN UPDATE change_version SET agents = agents + 1 WHERE id = 1; END";
                vec![
                    format!(
                        "CREATE TRIGGER integrations_changed_update AFTER UPDATE ON integrations {raise}"
                    ),
                    format!(
                        "CREATE TRIGGER integrations_changed_delete AFTER DELETE ON integrations {raise}"
                    ),
                    format!(
                        "CREATE TRIGGER organizations_runtime_changed \
                         AFTER UPDATE OF runtime_stream_url ON organizations \
                         WHEN OLD.runtime_stream_url IS NOT NEW.runtime_stream_url {raise}"
                    ),
                ]
            }
        };
        for sql in statements {
            m.get_connection().execute_unprepared(&sql).await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        let statements: &[&str] = match m.get_database_backend() {
            sea_orm::DatabaseBackend::Postgres => &[
                "DROP TRIGGER integrations_changed ON integrations",
                "DROP TRIGGER organizations_runtime_changed ON organizations",
            ],
            _ => &[
                "DROP TRIGGER integrations_changed_update",
                "DROP TRIGGER integrations_changed_delete",
                "DROP TRIGGER organizations_runtime_changed",
            ],
        };
        for sql in statements {
            m.get_connection().execute_unprepared(sql).await?;
        }
        Ok(())
    }
}
