//! Idempotency keys, in plain SQL that SQLite and Postgres both speak: every claim, take-over,
//! completion and release is one conditional statement, so no transaction reads and then
//! writes (on SQLite that would fail with "database is locked" under concurrency).
//!
//! A key's binding to what a create made ([`bind`]) is written by the create's own
//! transaction, as its first write (see docs/ARCHITECTURE.md, "Lock order").

use async_trait::async_trait;
use sea_orm::{ConnectionTrait, DatabaseBackend, Statement, Value};
use voiceplane_core::idempotency::{
    Bound, IDEMPOTENCY_TTL, IdempotencyRecord, IdempotencyRepository, KeyBinding,
    NewIdempotencyKey, StoredAnswer,
};
use voiceplane_core::time::Timestamp;
use voiceplane_core::{Error, Result};

use crate::SeaRepository;
use crate::convert::{db_err, ts};

impl SeaRepository {
    /// Runs `sql` (written with Postgres's `$N` parameters) with `values`; returns the rows
    /// it changed.
    async fn idem_execute(&self, sql: &str, values: Vec<Value>) -> Result<u64> {
        let backend = self.db.get_database_backend();
        let done = self
            .db
            .execute_raw(Statement::from_sql_and_values(
                backend,
                dialect(backend, sql),
                values,
            ))
            .await
            .map_err(db_err)?;
        Ok(done.rows_affected())
    }
}

/// `sql` in the backend's parameter syntax: SQLite numbers its parameters `?N`.
fn dialect(backend: DatabaseBackend, sql: &str) -> String {
    match backend {
        DatabaseBackend::Postgres => sql.to_owned(),
        _ => sql.replace('$', "?"),
    }
}

/// Binds `key` to `resource` inside `db`, the transaction that creates it: whether it did.
/// `false` when the key is bound already (and unexpired at `now`): the transaction must then
/// write nothing, and its caller answers with what the key was bound to. Of two concurrent
/// creates with one key, the second waits here for the first to end (Postgres; SQLite has one
/// writer) and then finds the key bound.
pub(crate) async fn bind<C: ConnectionTrait>(
    db: &C,
    key: &KeyBinding,
    resource: &str,
    now: Timestamp,
) -> Result<bool> {
    let n = super::execute(
        db,
        "INSERT INTO idempotency_bindings (scope, idem_key, fingerprint, resource, created_at, \
         expires_at) VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (scope, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint, \
         resource = excluded.resource, created_at = excluded.created_at, \
         expires_at = excluded.expires_at \
         WHERE idempotency_bindings.expires_at <= excluded.created_at",
        vec![
            key.scope.clone().into(),
            key.key.clone().into(),
            key.fingerprint.clone().into(),
            resource.into(),
            now.as_micros().into(),
            now.plus(IDEMPOTENCY_TTL).as_micros().into(),
        ],
    )
    .await?;
    Ok(n == 1)
}

fn claim_values(row: &NewIdempotencyKey) -> Vec<Value> {
    vec![
        row.scope.clone().into(),
        row.key.clone().into(),
        row.fingerprint.clone().into(),
        row.token.clone().into(),
        row.created_at.as_micros().into(),
        row.expires_at.as_micros().into(),
        row.locked_until.as_micros().into(),
    ]
}

fn record_from(row: &sea_orm::QueryResult) -> Result<IdempotencyRecord> {
    let get = |e: sea_orm::DbErr| Error::Internal(format!("idempotency_keys row: {e}"));
    let meta: Option<String> = row.try_get("", "response_meta").map_err(get)?;
    let answer = match meta {
        Some(meta) => Some(StoredAnswer {
            meta,
            body: row
                .try_get::<Option<Vec<u8>>>("", "response_body")
                .map_err(get)?
                .unwrap_or_default(),
        }),
        None => None,
    };
    Ok(IdempotencyRecord {
        fingerprint: row.try_get("", "fingerprint").map_err(get)?,
        answer,
        expires_at: ts(row.try_get("", "expires_at").map_err(get)?),
        locked_until: ts(row.try_get("", "locked_until").map_err(get)?),
    })
}

#[async_trait]
impl IdempotencyRepository for SeaRepository {
    async fn idempotency_insert(&self, row: &NewIdempotencyKey) -> Result<bool> {
        let n = self
            .idem_execute(
                "INSERT INTO idempotency_keys (scope, idem_key, fingerprint, token, created_at, \
                 expires_at, locked_until) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT DO NOTHING",
                claim_values(row),
            )
            .await?;
        Ok(n == 1)
    }

    async fn idempotency_get(&self, scope: &str, key: &str) -> Result<Option<IdempotencyRecord>> {
        let backend = self.db.get_database_backend();
        let row = self
            .db
            .query_one_raw(Statement::from_sql_and_values(
                backend,
                dialect(
                    backend,
                    "SELECT fingerprint, response_meta, response_body, expires_at, locked_until \
                     FROM idempotency_keys WHERE scope = $1 AND idem_key = $2",
                ),
                [scope.into(), key.into()],
            ))
            .await
            .map_err(db_err)?;
        row.as_ref().map(record_from).transpose()
    }

    async fn idempotency_take_over(&self, row: &NewIdempotencyKey) -> Result<bool> {
        let n = self
            .idem_execute(
                "UPDATE idempotency_keys SET fingerprint = $3, token = $4, \
                 response_meta = NULL, response_body = NULL, \
                 created_at = $5, expires_at = $6, locked_until = $7 \
                 WHERE scope = $1 AND idem_key = $2 AND (expires_at <= $5 \
                 OR (response_meta IS NULL AND locked_until <= $5))",
                claim_values(row),
            )
            .await?;
        Ok(n == 1)
    }

    async fn idempotency_complete(
        &self,
        scope: &str,
        key: &str,
        token: &str,
        answer: &StoredAnswer,
    ) -> Result<bool> {
        let n = self
            .idem_execute(
                "UPDATE idempotency_keys SET response_meta = $4, response_body = $5 \
                 WHERE scope = $1 AND idem_key = $2 AND token = $3 \
                 AND response_meta IS NULL",
                vec![
                    scope.into(),
                    key.into(),
                    token.into(),
                    answer.meta.clone().into(),
                    answer.body.clone().into(),
                ],
            )
            .await?;
        Ok(n == 1)
    }

    async fn idempotency_release(&self, scope: &str, key: &str, token: &str) -> Result<()> {
        self.idem_execute(
            "DELETE FROM idempotency_keys WHERE scope = $1 AND idem_key = $2 AND token = $3 \
             AND response_meta IS NULL",
            vec![scope.into(), key.into(), token.into()],
        )
        .await?;
        Ok(())
    }

    async fn idempotency_delete_expired(&self, now: Timestamp, limit: u64) -> Result<u64> {
        let mut deleted = 0;
        for table in ["idempotency_keys", "idempotency_bindings"] {
            deleted += self
                .idem_execute(
                    &format!(
                        "DELETE FROM {table} WHERE (scope, idem_key) IN \
                         (SELECT scope, idem_key FROM {table} WHERE expires_at <= $1 LIMIT $2)"
                    ),
                    vec![
                        now.as_micros().into(),
                        i64::try_from(limit).unwrap_or(i64::MAX).into(),
                    ],
                )
                .await?;
        }
        Ok(deleted)
    }

    async fn idempotency_bound(
        &self,
        scope: &str,
        key: &str,
        now: Timestamp,
    ) -> Result<Option<Bound>> {
        let backend = self.db.get_database_backend();
        let row = self
            .db
            .query_one_raw(Statement::from_sql_and_values(
                backend,
                dialect(
                    backend,
                    "SELECT fingerprint, resource FROM idempotency_bindings \
                     WHERE scope = $1 AND idem_key = $2 AND expires_at > $3",
                ),
                [scope.into(), key.into(), now.as_micros().into()],
            ))
            .await
            .map_err(db_err)?;
        let get = |e: sea_orm::DbErr| Error::Internal(format!("idempotency_bindings row: {e}"));
        row.map(|row| {
            Ok(Bound {
                fingerprint: row.try_get("", "fingerprint").map_err(get)?,
                resource: row.try_get("", "resource").map_err(get)?,
            })
        })
        .transpose()
    }
}
