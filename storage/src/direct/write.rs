//! The hot writes of a SQLite file, a whole transaction on one thread.
//!
//! Through sqlx every statement of a transaction is a hand-off to the connection's thread and
//! back, and SQLite's one write lock is held across all of them: an incoming call (begin, the
//! call, its event, the organization's webhook endpoints, commit) held it about a quarter of a
//! millisecond, mostly waiting for threads to wake, so a hundred calls arriving at once queued
//! behind one another for 25 ms and more. Run here, by rusqlite on a blocking thread, the same
//! statements (built by SeaORM, shared with the sqlx path through [`Exec`]) hold it for the
//! time SQLite takes to run them.
//!
//! Nothing else in this process writes meanwhile: a direct write first takes the pool's
//! writing connection ([`WriteTurn`]), which every sqlx write waits for, and keeps it until it
//! has committed. Other processes are kept out by SQLite's write lock, waited for up to the busy
//! timeout as the pool's connections do.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use async_trait::async_trait;
use rusqlite::Connection;
use sea_orm::{DbBackend, Statement};
use voiceplane_core::{Error, Result};

use super::{DirectReads, failed, values};
use crate::exec::Exec;

/// The pool's writing connection, held for the length of a direct write.
pub(crate) type WriteTurn = sea_orm::sqlx::pool::PoolConnection<sea_orm::sqlx::Sqlite>;

/// The body of a direct write: statements run through [`Exec`], and nothing else awaited.
pub(crate) type WriteBody<T> = Box<
    dyn for<'t> FnOnce(&'t DirectTxn) -> Pin<Box<dyn Future<Output = Result<T>> + Send + 't>>
        + Send,
>;

/// An open write transaction of the direct writer (see the module documentation).
pub(crate) struct DirectTxn {
    // A mutex only so that the transaction is `Sync`, as [`Exec`] asks: it is used on the one
    // thread that runs the write.
    conn: Mutex<Connection>,
}

impl DirectTxn {
    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        f(&self.conn.lock().unwrap_or_else(PoisonError::into_inner)).map_err(failed)
    }
}

#[async_trait]
impl Exec for DirectTxn {
    fn backend(&self) -> DbBackend {
        DbBackend::Sqlite
    }

    async fn run(&self, statement: Statement) -> Result<u64> {
        let params = values(&statement)?;
        let changed = self.with(|conn| {
            conn.prepare_cached(&statement.sql)?
                .execute(rusqlite::params_from_iter(params))
        })?;
        Ok(u64::try_from(changed).unwrap_or(u64::MAX))
    }

    async fn text_pairs(&self, statement: Statement) -> Result<Vec<(String, String)>> {
        let params = values(&statement)?;
        self.with(|conn| {
            conn.prepare_cached(&statement.sql)?
                .query_map(rusqlite::params_from_iter(params), |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })?
                .collect()
        })
    }
}

impl DirectReads {
    /// Runs `body` in one write transaction on a blocking thread while `turn` keeps the pool
    /// from writing; commits when it succeeds, rolls back when it fails.
    pub(crate) async fn write<T: Send + 'static>(
        self: &Arc<Self>,
        turn: WriteTurn,
        body: WriteBody<T>,
    ) -> Result<T> {
        let this = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            let conn = match this
                .writer
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
            {
                Some(conn) => conn,
                None => this.open_writer().map_err(failed)?,
            };
            conn.execute_batch("BEGIN IMMEDIATE").map_err(failed)?;
            let txn = DirectTxn {
                conn: Mutex::new(conn),
            };
            let outcome = {
                let mut written = body(&txn);
                // The statements run as they are awaited, so the body is done after one poll;
                // one that waits for anything else does not belong here.
                match written
                    .as_mut()
                    .poll(&mut Context::from_waker(Waker::noop()))
                {
                    Poll::Ready(outcome) => outcome,
                    Poll::Pending => Err(Error::Internal(
                        "a direct write waited for something other than its statements".into(),
                    )),
                }
            };
            let conn = txn
                .conn
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner);
            let end = if outcome.is_ok() {
                "COMMIT"
            } else {
                "ROLLBACK"
            };
            // A connection whose transaction could not end is closed, which rolls it back.
            conn.execute_batch(end).map_err(failed)?;
            *this.writer.lock().unwrap_or_else(PoisonError::into_inner) = Some(conn);
            outcome
        })
        .await
        .map_err(|e| Error::Internal(format!("a direct write did not finish: {e}")))?
    }

    /// A connection that writes, set up as the pool's are (`SeaRepository::connect`).
    fn open_writer(&self) -> rusqlite::Result<Connection> {
        let conn = self.connect()?;
        conn.pragma_update(None, "foreign_keys", true)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        Ok(conn)
    }
}

#[cfg(test)]
mod tests {
    use sea_orm::{ConnectionTrait as _, TransactionTrait as _};

    use super::*;
    use crate::{DatabaseOptions, SeaRepository};

    async fn count(repo: &SeaRepository) -> i64 {
        let row = repo
            .db
            .query_one_raw(Statement::from_string(
                DbBackend::Sqlite,
                "SELECT COUNT(*) AS n FROM t",
            ))
            .await
            .unwrap()
            .unwrap();
        row.try_get("", "n").unwrap()
    }

    fn insert(n: i64) -> Statement {
        Statement::from_sql_and_values(DbBackend::Sqlite, "INSERT INTO t VALUES (?)", [n.into()])
    }

    /// A direct write commits all of its statements or none, and holds the pool's writer
    /// meanwhile, so a pool transaction started during it runs after it.
    #[tokio::test]
    async fn a_direct_write_is_all_or_nothing_and_keeps_the_pool_from_writing() {
        let dir = std::env::temp_dir().join(format!("vp-direct-write-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.join("w.db").display());
        let repo = SeaRepository::connect(&DatabaseOptions::new(url))
            .await
            .unwrap();
        repo.db
            .execute_unprepared("CREATE TABLE t (n INTEGER PRIMARY KEY)")
            .await
            .unwrap();
        let direct = Arc::clone(repo.direct().unwrap());

        let turn = repo.db.write_turn().await.unwrap().unwrap();
        let failed = direct
            .write(
                turn,
                Box::new(|txn| {
                    Box::pin(async move {
                        txn.run(insert(1)).await?;
                        Err::<(), _>(Error::invalid("the second statement failed"))
                    })
                }),
            )
            .await;
        assert!(failed.is_err());
        assert_eq!(count(&repo).await, 0, "the first statement was rolled back");

        let turn = repo.db.write_turn().await.unwrap().unwrap();
        let pool = tokio::spawn({
            let repo = repo.clone();
            async move {
                let txn = repo.db.begin().await.unwrap();
                txn.execute_raw(insert(3)).await.unwrap();
                txn.commit().await.unwrap();
            }
        });
        let written = direct
            .write(
                turn,
                Box::new(move |txn| {
                    Box::pin(async move {
                        // The pool's transaction has been given every chance to run first.
                        for _ in 0..100 {
                            std::thread::yield_now();
                        }
                        let changed = txn.run(insert(2)).await?;
                        let seen = txn
                            .text_pairs(Statement::from_string(
                                DbBackend::Sqlite,
                                "SELECT CAST(COUNT(*) AS TEXT), CAST(MAX(n) AS TEXT) FROM t",
                            ))
                            .await?;
                        Ok((changed, seen))
                    })
                }),
            )
            .await
            .unwrap();
        assert_eq!(written, (1, vec![("1".to_owned(), "2".to_owned())]));
        pool.await.unwrap();
        assert_eq!(
            count(&repo).await,
            2,
            "the pool wrote after the direct write"
        );
        repo.db.inner.close_by_ref().await.ok();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
