//! The credential version and how each instance learns it.
//!
//! `credential_version` is one row whose number every revocation of a key raises, in the
//! revocation's transaction (a key revoked by hand, or the keys of a removed member). The
//! service caches the keys it has read and trusts an entry only while the version is the one
//! it was read at, so the number must never be behind what has committed when a request asks
//! for it:
//!
//! - **Postgres**: the revoking transaction also sends `NOTIFY voiceplane_credentials` with
//!   `<schema>:<version>`, delivered at commit. Each instance listens on a connection of its
//!   own and keeps the highest version of its schema in memory, so asking costs nothing. While
//!   the listener is down (or not yet listening) the version is read from the table on every
//!   request, and after each (re)connection it is read once before the memory is trusted
//!   again; every 30 s it is read anyway, a backstop against a notification that never came.
//! - **SQLite**: another process may share the file and has no way to notify, so the version
//!   is read from the table on every request, a primary-key read; an in-memory database has
//!   one connection in one process, which knows every revocation itself.
//!
//! The instance that revokes raises its own copy as soon as its transaction commits, so it
//! never trusts a stale entry, whatever its listener is doing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use sea_orm::{ConnectionTrait, DatabaseBackend, DatabaseConnection, Statement};
use voiceplane_core::{Error, Result};

use crate::convert::db_err;

/// The channel revocations are announced on (Postgres).
const CHANNEL: &str = "voiceplane_credentials";

/// The statement that reads the version, whichever way it is run.
pub(crate) const READ_VERSION: &str = "SELECT version FROM credential_version WHERE id = 1";

/// The error of a database whose `credential_version` row is gone.
pub(crate) fn missing_row() -> Error {
    Error::Internal("the credential_version row is missing".to_owned())
}

/// How often a listening instance reads the version anyway.
const BACKSTOP: Duration = Duration::from_secs(30);

/// How long a failed listener waits before it connects again.
const RECONNECT_DELAY: Duration = Duration::from_secs(1);

/// What this instance knows of the credential version.
#[derive(Debug, Default)]
pub(crate) struct CredentialFeed {
    /// The highest version seen.
    version: AtomicI64,
    /// Whether `version` is kept current without asking: the Postgres listener is listening
    /// and has read the version since it started, or the database is this process's alone.
    live: AtomicBool,
}

impl CredentialFeed {
    /// A feed for a database no other process can write: the memory is always current.
    pub(crate) fn exclusive() -> Self {
        Self {
            version: AtomicI64::new(0),
            live: AtomicBool::new(true),
        }
    }

    fn seen(&self, version: i64) {
        self.version.fetch_max(version, Ordering::SeqCst);
    }

    /// The current version: from memory while the feed is live, else read from the table.
    pub(crate) async fn current<C: ConnectionTrait>(&self, db: &C) -> Result<i64> {
        if self.live.load(Ordering::SeqCst) {
            return Ok(self.version.load(Ordering::SeqCst));
        }
        let version = read(db).await?;
        self.seen(version);
        Ok(version)
    }

    /// Raises the version in the transaction `txn` of a revocation (and on Postgres announces
    /// it at commit); call [`CredentialFeed::committed`] with the result once `txn` committed.
    pub(crate) async fn raise<C: ConnectionTrait>(txn: &C) -> Result<i64> {
        let backend = txn.get_database_backend();
        let row = txn
            .query_one_raw(Statement::from_string(
                backend,
                "UPDATE credential_version SET version = version + 1 WHERE id = 1 \
                 RETURNING version",
            ))
            .await
            .map_err(db_err)?
            .ok_or_else(missing_row)?;
        let version: i64 = row.try_get_by_index(0).map_err(db_err)?;
        if backend == DatabaseBackend::Postgres {
            txn.execute_raw(Statement::from_sql_and_values(
                backend,
                "SELECT pg_notify($1, current_schema() || ':' || $2)",
                [CHANNEL.into(), version.to_string().into()],
            ))
            .await
            .map_err(db_err)?;
        }
        Ok(version)
    }

    /// Records the version a committed revocation of this instance raised.
    pub(crate) fn committed(&self, version: i64) {
        self.seen(version);
    }
}

async fn read<C: ConnectionTrait>(db: &C) -> Result<i64> {
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            READ_VERSION,
        ))
        .await
        .map_err(db_err)?
        .ok_or_else(missing_row)?;
    row.try_get_by_index(0).map_err(db_err)
}

/// Listens for revocations on Postgres for as long as the process runs (the task holds only a
/// weak reference to the feed, and ends when the repository is gone).
pub(crate) fn listen(db: DatabaseConnection, feed: &Arc<CredentialFeed>) {
    let feed = Arc::downgrade(feed);
    tokio::spawn(async move {
        loop {
            let outcome = listen_once(&db, &feed).await;
            let Some(feed) = feed.upgrade() else { return };
            feed.live.store(false, Ordering::SeqCst);
            if let Err(e) = outcome {
                tracing::warn!(error = %e, "credential change listener stopped; reading the credential version on every request until it is back");
            }
            drop(feed);
            tokio::time::sleep(RECONNECT_DELAY).await;
        }
    });
}

/// One listening connection, until it fails or the feed is dropped.
async fn listen_once(
    db: &DatabaseConnection,
    feed: &std::sync::Weak<CredentialFeed>,
) -> Result<()> {
    use sea_orm::sqlx::postgres::PgListener;
    let failed = |e: sea_orm::sqlx::Error| Error::Unavailable(e.to_string());
    let pool = db.get_postgres_connection_pool();
    let mut listener = PgListener::connect_with(pool).await.map_err(failed)?;
    listener.listen(CHANNEL).await.map_err(failed)?;
    let schema: String = db
        .query_one_raw(Statement::from_string(
            DatabaseBackend::Postgres,
            "SELECT current_schema()",
        ))
        .await
        .map_err(db_err)?
        .ok_or_else(|| Error::Internal("no current schema".to_owned()))?
        .try_get_by_index(0)
        .map_err(db_err)?;
    // Listening first, reading second: nothing committed after the read can be missed.
    {
        let Some(feed) = feed.upgrade() else {
            return Ok(());
        };
        feed.seen(read(db).await?);
        feed.live.store(true, Ordering::SeqCst);
    }
    loop {
        let next = tokio::time::timeout(BACKSTOP, listener.try_recv()).await;
        let Some(feed) = feed.upgrade() else {
            return Ok(());
        };
        match next {
            Ok(Ok(Some(notification))) => {
                let version = notification
                    .payload()
                    .strip_prefix(schema.as_str())
                    .and_then(|rest| rest.strip_prefix(':'))
                    .and_then(|v| v.parse().ok());
                if let Some(version) = version {
                    feed.seen(version);
                }
            }
            // The connection was lost: notifications may have been missed.
            Ok(Ok(None)) => {
                return Err(Error::Unavailable(
                    "the listening connection was lost".to_owned(),
                ));
            }
            Ok(Err(e)) => return Err(failed(e)),
            Err(_) => feed.seen(read(db).await?),
        }
    }
}
