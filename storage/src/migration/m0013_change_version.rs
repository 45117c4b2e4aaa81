//! The change versions: the credential version of m0012 becomes one column of `change_version`,
//! beside `agents`, a number the database itself raises whenever a row of `agents` or
//! `phone_numbers` (an agent's numbers are part of the agent) is inserted, updated or deleted,
//! whatever statement or foreign-key action does it. Each instance caches the agents it has
//! read and trusts an entry only while that number is the one it was read at (see
//! `repo/changes.rs`); triggers rather than the repository's write paths raise it, so a new
//! write path cannot forget to.
//!
//! On Postgres a trigger on `change_version` announces every change of the row with
//! `NOTIFY voiceplane_changes, '<schema>:<credentials>:<agents>'`, delivered at commit; the
//! triggers of `agents` and `phone_numbers` are deferred to commit, so the version row is
//! locked last and briefly, after every other lock of the transaction.

use sea_orm_migration::prelude::*;

pub(super) struct M0013ChangeVersion;

impl MigrationName for M0013ChangeVersion {
    fn name(&self) -> &str {
        "m0013_change_version"
    }
}

/// The tables whose rows make up an agent as the API returns it.
const AGENT_TABLES: [&str; 2] = ["agents", "phone_numbers"];

#[async_trait::async_trait]
impl MigrationTrait for M0013ChangeVersion {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        let mut statements = vec![
            "ALTER TABLE credential_version RENAME TO change_version".to_owned(),
            "ALTER TABLE change_version RENAME COLUMN version TO credentials".to_owned(),
            "ALTER TABLE change_version ADD COLUMN agents BIGINT NOT NULL DEFAULT 0".to_owned(),
        ];
        match m.get_database_backend() {
            sea_orm::DatabaseBackend::Postgres => {
                statements.push(
                    "CREATE FUNCTION voiceplane_agents_changed() RETURNS trigger \
                     LANGUAGE plpgsql AS $$ BEGIN \
                     EXECUTE format('UPDATE %I.change_version SET agents = agents + 1 \
                     WHERE id = 1', TG_TABLE_SCHEMA); \
                     RETURN NULL; END $$"
                        .to_owned(),
                );
                statements.push(
                    "CREATE FUNCTION voiceplane_change_announced() RETURNS trigger \
                     LANGUAGE plpgsql AS $$ BEGIN \
                     PERFORM pg_notify('voiceplane_changes', TG_TABLE_SCHEMA || ':' || \
                     NEW.credentials || ':' || NEW.agents); \
                     RETURN NULL; END $$"
                        .to_owned(),
                );
                statements.push(
                    "CREATE TRIGGER change_version_announced AFTER UPDATE ON change_version \
                     FOR EACH ROW EXECUTE FUNCTION voiceplane_change_announced()"
                        .to_owned(),
                );
                for table in AGENT_TABLES {
                    statements.push(format!(
                        "CREATE CONSTRAINT TRIGGER {table}_changed \
                         AFTER INSERT OR UPDATE OR DELETE ON {table} \
                         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW \
                         EXECUTE FUNCTION voiceplane_agents_changed()"
                    ));
                }
            }
            _ => {
                for table in AGENT_TABLES {
                    for operation in ["INSERT", "UPDATE", "DELETE"] {
                        statements.push(format!(
                            "CREATE TRIGGER {table}_changed_{lower} AFTER {operation} ON {table} \
                             BEGIN UPDATE change_version SET agents = agents + 1 WHERE id = 1; END",
                            lower = operation.to_lowercase()
                        ));
                    }
                }
            }
        }
        for sql in statements {
            m.get_connection().execute_unprepared(&sql).await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        let mut statements = Vec::new();
        match m.get_database_backend() {
            sea_orm::DatabaseBackend::Postgres => {
                for table in AGENT_TABLES {
                    statements.push(format!("DROP TRIGGER {table}_changed ON {table}"));
                }
                statements
                    .push("DROP TRIGGER change_version_announced ON change_version".to_owned());
                statements.push("DROP FUNCTION voiceplane_agents_changed()".to_owned());
                statements.push("DROP FUNCTION voiceplane_change_announced()".to_owned());
            }
            _ => {
                for table in AGENT_TABLES {
                    for operation in ["insert", "update", "delete"] {
                        statements.push(format!("DROP TRIGGER {table}_changed_{operation}"));
                    }
                }
            }
        }
        statements.push("ALTER TABLE change_version DROP COLUMN agents".to_owned());
        statements
            .push("ALTER TABLE change_version RENAME COLUMN credentials TO version".to_owned());
        statements.push("ALTER TABLE change_version RENAME TO credential_version".to_owned());
        for sql in statements {
            m.get_connection().execute_unprepared(&sql).await?;
        }
        Ok(())
    }
}
