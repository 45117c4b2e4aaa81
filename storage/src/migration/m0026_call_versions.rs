//! Postgres: `call_versions`, one number per organization that the database raises at the
//! commit of every change to its calls (a row inserted, updated or deleted, whatever statement
//! or foreign-key action does it; a `TRUNCATE` raises every organization's). A page of calls
//! read twice is kept in memory with the number read before it, and answered while the
//! number is unchanged (`repo/calls/queries.rs`): one single-row read instead of the page.
//! Triggers rather than the repository's write paths raise it, so a new write path cannot
//! forget to.
//!
//! The trigger is deferred to commit, as m0013's are: the organization's row of
//! `call_versions` is locked last and briefly, after every other lock of the transaction, so
//! the writes of calls of one organization wait for each other only while committing. It
//! raises each organization's number once per transaction, however many of its calls the
//! transaction changed: readers see the whole transaction at once anyway. The row has no
//! foreign key: an organization's deletion removes its calls, whose triggers then raise the
//! number of an organization already gone.
//!
//! SQLite needs none of it: a page is kept there while nothing at all has been committed to
//! the file (`direct.rs`).

use sea_orm_migration::prelude::*;

pub(super) struct M0026CallVersions;

impl MigrationName for M0026CallVersions {
    fn name(&self) -> &str {
        "m0026_call_versions"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0026CallVersions {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        if m.get_database_backend() != sea_orm::DatabaseBackend::Postgres {
            return Ok(());
        }
        let statements = [
            "CREATE TABLE call_versions (organization_id TEXT PRIMARY KEY, \
             version BIGINT NOT NULL)",
            // Once per organization and transaction: a bulk write raising the same row for
            // each of its rows would walk that row's ever longer chain of versions (100,000
            // inserts took 150 s instead of 1.5 s). One function, and only catalog functions
            // called by name: a writer's `search_path` may not hold this schema.
            "CREATE FUNCTION voiceplane_calls_changed() RETURNS trigger \
             LANGUAGE plpgsql AS $$ DECLARE \
             raised TEXT := coalesce(current_setting('voiceplane.calls_raised', true), ''); \
             orgs TEXT[] := '{}'; \
             org TEXT; \
             this TEXT; \
             BEGIN \
             IF TG_OP <> 'INSERT' THEN orgs := orgs || OLD.organization_id; END IF; \
             IF TG_OP <> 'DELETE' THEN orgs := orgs || NEW.organization_id; END IF; \
             FOREACH org IN ARRAY orgs LOOP \
             this := TG_TABLE_SCHEMA || '.' || org || ';'; \
             CONTINUE WHEN strpos(raised, ';' || this) > 0; \
             EXECUTE format('INSERT INTO %I.call_versions AS v VALUES ($1, 1) \
             ON CONFLICT (organization_id) DO UPDATE SET version = v.version + 1', \
             TG_TABLE_SCHEMA) USING org; \
             raised := CASE WHEN raised = '' THEN ';' ELSE raised END || this; \
             PERFORM set_config('voiceplane.calls_raised', raised, true); \
             END LOOP; \
             RETURN NULL; END $$",
            "CREATE FUNCTION voiceplane_calls_truncated() RETURNS trigger \
             LANGUAGE plpgsql AS $$ BEGIN \
             EXECUTE format('UPDATE %I.call_versions SET version = version + 1', \
             TG_TABLE_SCHEMA); \
             RETURN NULL; END $$",
            "CREATE CONSTRAINT TRIGGER calls_changed \
             AFTER INSERT OR UPDATE OR DELETE ON calls \
             DEFERRABLE INITIALLY DEFERRED FOR EACH ROW \
             EXECUTE FUNCTION voiceplane_calls_changed()",
            "CREATE TRIGGER calls_truncated AFTER TRUNCATE ON calls \
             FOR EACH STATEMENT EXECUTE FUNCTION voiceplane_calls_truncated()",
        ];
        for sql in statements {
            m.get_connection().execute_unprepared(sql).await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        if m.get_database_backend() != sea_orm::DatabaseBackend::Postgres {
            return Ok(());
        }
        let statements = [
            "DROP TRIGGER calls_truncated ON calls",
            "DROP TRIGGER calls_changed ON calls",
            "DROP FUNCTION voiceplane_calls_truncated()",
            "DROP FUNCTION voiceplane_calls_changed()",
            "DROP TABLE call_versions",
        ];
        for sql in statements {
            m.get_connection().execute_unprepared(sql).await?;
        }
        Ok(())
    }
}
