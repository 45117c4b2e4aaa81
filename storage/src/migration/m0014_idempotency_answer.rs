//! An idempotency key's stored answer becomes its body and one opaque `response_meta`, which
//! the adapter that stored it encodes and reads (the HTTP adapter: the status, then one
//! `name: value` line per header it repeats), instead of HTTP's status and two headers in
//! columns of their own. Answers stored before are carried over in that encoding, so a retry
//! across the upgrade is still answered from the store.

use sea_orm_migration::prelude::*;

pub(super) struct M0014IdempotencyAnswer;

impl MigrationName for M0014IdempotencyAnswer {
    fn name(&self) -> &str {
        "m0014_idempotency_answer"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0014IdempotencyAnswer {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // The newlines inside the literals are the encoding's line breaks; both databases
        // take them as they are, and `||` with NULL is NULL, so an absent header adds nothing.
        for sql in [
            "ALTER TABLE idempotency_keys ADD COLUMN response_meta TEXT",
            "UPDATE idempotency_keys SET response_meta = CAST(response_status AS TEXT) \
             || COALESCE('\ncontent-type: ' || response_content_type, '') \
             || COALESCE('\nlocation: ' || response_location, '') \
             WHERE response_status IS NOT NULL",
            // One column per statement: SQLite drops no more at once.
            "ALTER TABLE idempotency_keys DROP COLUMN response_status",
            "ALTER TABLE idempotency_keys DROP COLUMN response_content_type",
            "ALTER TABLE idempotency_keys DROP COLUMN response_location",
        ] {
            m.get_connection().execute_unprepared(sql).await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // The encoding is the adapter's to read: answers stored since are forgotten, and a
        // retry runs its operation again.
        for sql in [
            "DELETE FROM idempotency_keys WHERE response_meta IS NOT NULL",
            "ALTER TABLE idempotency_keys ADD COLUMN response_status INTEGER",
            "ALTER TABLE idempotency_keys ADD COLUMN response_content_type TEXT",
            "ALTER TABLE idempotency_keys ADD COLUMN response_location TEXT",
            "ALTER TABLE idempotency_keys DROP COLUMN response_meta",
        ] {
            m.get_connection().execute_unprepared(sql).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use sea_orm::{ConnectOptions, ConnectionTrait, Database, DatabaseConnection, Statement};
    use sea_orm_migration::MigratorTrait;

    use super::super::Migrator;

    /// Migrates `db` to just before this migration, stores three keys the old way (answered
    /// with headers, answered without, running), migrates on and reads them back.
    async fn carried_over(db: &DatabaseConnection) {
        let before = Migrator::migrations()
            .iter()
            .position(|m| m.name() == "m0014_idempotency_answer")
            .unwrap();
        Migrator::up(db, Some(before as u32)).await.unwrap();
        db.execute_unprepared(
            "INSERT INTO idempotency_keys (scope, idem_key, fingerprint, token, \
             response_status, response_content_type, response_location, response_body, \
             created_at, expires_at, locked_until) VALUES \
             ('s', 'created', 'f', 't', 201, 'application/json', '/api/agents/agent_1', \
              '{}', 1, 2, 3), \
             ('s', 'empty', 'f', 't', 204, NULL, NULL, '', 1, 2, 3), \
             ('s', 'running', 'f', 't', NULL, NULL, NULL, NULL, 1, 2, 3)",
        )
        .await
        .unwrap();
        Migrator::up(db, None).await.unwrap();
        let rows = db
            .query_all_raw(Statement::from_string(
                db.get_database_backend(),
                "SELECT idem_key, response_meta, response_body FROM idempotency_keys \
                 ORDER BY idem_key",
            ))
            .await
            .unwrap();
        let rows: Vec<(String, Option<String>, Option<Vec<u8>>)> = rows
            .iter()
            .map(|r| {
                (
                    r.try_get("", "idem_key").unwrap(),
                    r.try_get("", "response_meta").unwrap(),
                    r.try_get("", "response_body").unwrap(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "created".to_owned(),
                    Some(
                        "201\ncontent-type: application/json\nlocation: /api/agents/agent_1".into()
                    ),
                    Some(b"{}".to_vec())
                ),
                ("empty".to_owned(), Some("204".into()), Some(Vec::new())),
                ("running".to_owned(), None, None),
            ]
        );
    }

    #[tokio::test]
    async fn answers_stored_before_are_carried_over_on_sqlite() {
        // One connection: every connection to `sqlite::memory:` has a database of its own.
        let mut options = ConnectOptions::new("sqlite::memory:");
        options.max_connections(1);
        carried_over(&Database::connect(options).await.unwrap()).await;
    }

    /// On Postgres when `VOICEPLANE_TEST_POSTGRES_URL` names one, in a schema of its own,
    /// named as the suite names its schemas so that its sweep removes one a failure leaves.
    #[tokio::test]
    async fn answers_stored_before_are_carried_over_on_postgres() {
        let Some((url, schema)) = crate::test_postgres("m0014") else {
            return;
        };
        let admin = Database::connect(url.as_str()).await.unwrap();
        admin
            .execute_unprepared(&format!("CREATE SCHEMA {schema}"))
            .await
            .unwrap();
        let mut options = ConnectOptions::new(url.as_str());
        options.max_connections(1).set_schema_search_path(&schema);
        let db = Database::connect(options).await.unwrap();
        carried_over(&db).await;
        db.close().await.unwrap();
        admin
            .execute_unprepared(&format!("DROP SCHEMA {schema} CASCADE"))
            .await
            .unwrap();
    }
}
