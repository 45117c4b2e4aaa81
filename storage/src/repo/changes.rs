//! The change versions ([`ChangeVersions`]) and how each instance learns them.
//!
//! `change_version` is one row of numbers, each raised in the transaction of every change that
//! cached rows depend on: `credentials` by the revocations of keys (a key revoked by hand, or
//! the keys of a removed member), `agents` by triggers on `agents` and `phone_numbers`
//! (migration m0013), on `integrations` and on an organization's `runtime_stream_url` (m0025:
//! what routes an incoming call). The service trusts a cached row only while its number is the one it was
//! read at, so a number must never be behind what has committed when a request asks for it:
//!
//! - **Postgres**: a trigger on the row sends `NOTIFY voiceplane_changes` with
//!   `<schema>:<credentials>:<agents>`, delivered at commit. Each instance listens on a
//!   connection of its own and keeps the highest numbers of its schema in memory, so asking
//!   costs nothing. While the listener is down (or not yet listening) the row is read on every
//!   request, and after each (re)connection it is read once before the memory is trusted
//!   again; every 30 s it is read anyway, a backstop against a notification that never came.
//! - **SQLite**: another process may share the file and has no way to notify, so the row is
//!   read whenever the file has changed (see `direct.rs`). An in-memory database reads it on
//!   every request: a write made past the repository (a test's raw `UPDATE`) is numbered by the
//!   triggers alone, and only the row knows it.
//!
//! The instance that makes a change raises its own copy as soon as its transaction commits
//! ([`ChangeFeed::committed`], or [`ChangeFeed::after_change`] for the changes the triggers
//! number), so it never trusts a stale entry, whatever its listener is doing. On Postgres it
//! then waits (up to a second) for its own listener to hear the change before the change is
//! answered: Postgres hands a notification to every listener at the same commit, so by the
//! time a client holds the answer, the other instances' listeners have it in hand too, rather
//! than racing the client's next request to another instance.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use async_trait::async_trait;
use sea_orm::{ConnectionTrait, DatabaseBackend, DatabaseConnection, QueryResult, Statement};
use voiceplane_core::cache::{ChangeRepository, ChangeVersions};
use voiceplane_core::{Error, Result};

use crate::SeaRepository;
use crate::convert::db_err;

/// The channel changes are announced on (Postgres), by the trigger of migration m0013.
const CHANNEL: &str = "voiceplane_changes";

/// The statement that reads the versions, whichever way it is run.
pub(crate) const READ_VERSIONS: &str =
    "SELECT credentials, agents FROM change_version WHERE id = 1";

/// The error of a database whose `change_version` row is gone.
pub(crate) fn missing_row() -> Error {
    Error::Internal("the change_version row is missing".to_owned())
}

/// How often a listening instance reads the version anyway.
const BACKSTOP: Duration = Duration::from_secs(30);

/// How long a failed listener waits before it connects again.
const RECONNECT_DELAY: Duration = Duration::from_secs(1);

/// How long a change waits for its own notification before it is answered anyway.
const ECHO_WAIT: Duration = Duration::from_secs(1);

/// What this instance knows of the change versions.
#[derive(Debug)]
pub(crate) struct ChangeFeed {
    /// The highest numbers seen.
    credentials: AtomicI64,
    agents: AtomicI64,
    /// Whether the numbers are kept current without asking: the Postgres listener is
    /// listening and has read the row since it started.
    live: AtomicBool,
    /// The highest numbers the listener has heard (or read), for changes waiting on their echo.
    heard: watch::Sender<ChangeVersions>,
}

impl Default for ChangeFeed {
    fn default() -> Self {
        Self {
            credentials: AtomicI64::default(),
            agents: AtomicI64::default(),
            live: AtomicBool::default(),
            heard: watch::Sender::new(ChangeVersions::default()),
        }
    }
}

impl ChangeFeed {
    /// Numbers the listener heard in a notification or read from the row.
    fn heard(&self, versions: ChangeVersions) {
        self.seen(versions);
        self.heard.send_modify(|heard| {
            heard.credentials = heard.credentials.max(versions.credentials);
            heard.agents = heard.agents.max(versions.agents);
        });
    }

    /// Waits until the listener has heard `versions` (see the module documentation). A
    /// listener that stays silent that long is not trusted until it reads the row again.
    async fn echoed(&self, versions: ChangeVersions) {
        if !self.live.load(Ordering::SeqCst) {
            return;
        }
        let mut heard = self.heard.subscribe();
        let wait = heard
            .wait_for(|h| h.credentials >= versions.credentials && h.agents >= versions.agents);
        if !matches!(tokio::time::timeout(ECHO_WAIT, wait).await, Ok(Ok(_))) {
            self.live.store(false, Ordering::SeqCst);
            tracing::warn!(
                "a change was not announced back within a second; reading the change versions on every request for now"
            );
        }
    }

    fn seen(&self, versions: ChangeVersions) {
        self.credentials
            .fetch_max(versions.credentials, Ordering::SeqCst);
        self.agents.fetch_max(versions.agents, Ordering::SeqCst);
    }

    /// The current versions: from memory while the feed is live, else read from the table.
    pub(crate) async fn current<C: ConnectionTrait>(&self, db: &C) -> Result<ChangeVersions> {
        if self.live.load(Ordering::SeqCst) {
            return Ok(ChangeVersions {
                credentials: self.credentials.load(Ordering::SeqCst),
                agents: self.agents.load(Ordering::SeqCst),
            });
        }
        let versions = read(db).await?;
        self.seen(versions);
        Ok(versions)
    }

    /// Raises the credential version in the transaction `txn` of a revocation (on Postgres
    /// the row's trigger announces it at commit); call [`ChangeFeed::committed`] with the
    /// result once `txn` committed.
    pub(crate) async fn raise_credentials<C: ConnectionTrait>(txn: &C) -> Result<ChangeVersions> {
        let row = txn
            .query_one_raw(Statement::from_string(
                txn.get_database_backend(),
                "UPDATE change_version SET credentials = credentials + 1 WHERE id = 1 \
                 RETURNING credentials, agents",
            ))
            .await
            .map_err(db_err)?
            .ok_or_else(missing_row)?;
        versions_of(&row)
    }

    /// Records the versions a committed change of this instance raised, and waits for their
    /// echo.
    pub(crate) async fn committed(&self, versions: ChangeVersions) {
        self.seen(versions);
        self.echoed(versions).await;
    }

    /// Catches up with a change this instance has just committed to agents or phone numbers,
    /// which the database's triggers numbered. Only a live feed needs to: otherwise the row is
    /// read on every request anyway. The change has committed, so a failed read does not fail
    /// it; the feed reads the row on every request until the listener has read it again.
    pub(crate) async fn after_change<C: ConnectionTrait>(&self, db: &C) {
        if !self.live.load(Ordering::SeqCst) {
            return;
        }
        match read(db).await {
            Ok(versions) => self.committed(versions).await,
            Err(e) => {
                self.live.store(false, Ordering::SeqCst);
                tracing::warn!(error = %e, "could not read the change versions after a change; reading them on every request for now");
            }
        }
    }
}

fn versions_of(row: &QueryResult) -> Result<ChangeVersions> {
    Ok(ChangeVersions {
        credentials: row.try_get_by_index(0).map_err(db_err)?,
        agents: row.try_get_by_index(1).map_err(db_err)?,
    })
}

async fn read<C: ConnectionTrait>(db: &C) -> Result<ChangeVersions> {
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            READ_VERSIONS,
        ))
        .await
        .map_err(db_err)?
        .ok_or_else(missing_row)?;
    versions_of(&row)
}

#[async_trait]
impl ChangeRepository for SeaRepository {
    /// On a SQLite file the row is read directly; on Postgres the first call starts the
    /// listener that keeps the numbers in memory (after migrations, which create the row).
    async fn change_versions(&self) -> Result<ChangeVersions> {
        if let Some(direct) = self.direct() {
            return direct.versions().await;
        }
        if self.db.get_database_backend() == DatabaseBackend::Postgres {
            self.listening.get_or_init(|| {
                listen(self.db.inner.clone(), &self.changes);
            });
        }
        self.changes.current(&self.db).await
    }
}

/// Listens for changes on Postgres for as long as the process runs (the task holds only a
/// weak reference to the feed, and ends when the repository is gone).
pub(crate) fn listen(db: DatabaseConnection, feed: &Arc<ChangeFeed>) {
    let feed = Arc::downgrade(feed);
    tokio::spawn(async move {
        loop {
            let outcome = listen_once(&db, &feed).await;
            let Some(feed) = feed.upgrade() else { return };
            feed.live.store(false, Ordering::SeqCst);
            if let Err(e) = outcome {
                tracing::warn!(error = %e, "change listener stopped; reading the change versions on every request until it is back");
            }
            drop(feed);
            tokio::time::sleep(RECONNECT_DELAY).await;
        }
    });
}

/// One listening connection, until it fails or the feed is dropped.
async fn listen_once(db: &DatabaseConnection, feed: &std::sync::Weak<ChangeFeed>) -> Result<()> {
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
        feed.heard(read(db).await?);
        feed.live.store(true, Ordering::SeqCst);
    }
    loop {
        let next = tokio::time::timeout(BACKSTOP, listener.try_recv()).await;
        let Some(feed) = feed.upgrade() else {
            return Ok(());
        };
        match next {
            Ok(Ok(Some(notification))) => {
                if let Some(versions) = announced(notification.payload(), &schema) {
                    feed.heard(versions);
                }
            }
            // The connection was lost: notifications may have been missed.
            Ok(Ok(None)) => {
                return Err(Error::Unavailable(
                    "the listening connection was lost".to_owned(),
                ));
            }
            Ok(Err(e)) => return Err(failed(e)),
            Err(_) => {
                feed.heard(read(db).await?);
                // Listening and just read: current again, whatever `after_change` met.
                feed.live.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// The versions of a notification's payload, `<schema>:<credentials>:<agents>`, when it is
/// about `schema`.
fn announced(payload: &str, schema: &str) -> Option<ChangeVersions> {
    let rest = payload.strip_prefix(schema)?.strip_prefix(':')?;
    let (credentials, agents) = rest.split_once(':')?;
    Some(ChangeVersions {
        credentials: credentials.parse().ok()?,
        agents: agents.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notification_counts_only_for_its_own_schema() {
        let versions = ChangeVersions {
            credentials: 4,
            agents: 17,
        };
        assert_eq!(announced("t_ab:4:17", "t_ab"), Some(versions));
        assert_eq!(announced("t_abc:4:17", "t_ab"), None);
        assert_eq!(announced("t_ab:4", "t_ab"), None);
        assert_eq!(announced("t_ab:x:17", "t_ab"), None);
    }
}
