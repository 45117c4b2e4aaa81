//! The Postgres reads a page of calls makes (its organization's calls version, the page), on a
//! few connections of their own rather than through sqlx's pool.
//!
//! sqlx's pool, given a connection back, pings it in a task it spawns (sqlx 0.9
//! `Floating::return_to_pool`, whatever the pool's options): every statement through the pool
//! costs a second round trip, a task and a wake-up. A connection held here runs its statement
//! and is put back as it is, so a page is one round trip; sqlx prepares the statement once
//! per connection and keeps it.
//!
//! The connections are idle ones of the pool, detached from it, and the pool is built that
//! many connections smaller ([`hot_connections`]), so the database never sees more than
//! `max_connections`. A read waits for one of them to be free: pages polled by many clients
//! then hold that many connections at most, and writes keep the pool's. Only while they are
//! still being taken (the pool has none idle), or when none was free within the pool's
//! first wait (`database.connect_timeout`: statements that hang on an unreachable database
//! must not hold the reads behind them), does a read go through the pool instead. A
//! connection whose statement failed, or whose read was dropped mid-statement (its client
//! went away), is closed, never lent again half-read. One idle for longer than a second is
//! pinged before it is lent, as the pool does, and one older than the pool's connection
//! lifetime is closed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use sea_orm::sqlx::postgres::PgRow;
use sea_orm::sqlx::{self, Connection as _, PgConnection, PgPool};
use sea_orm::{DbErr, RuntimeErr, Statement, Values};
use sea_query_sqlx::SqlxValues;
use tokio::sync::{Semaphore, SemaphorePermit};

/// A connection idle for longer is pinged before it is lent (see `lib.rs`, the pool's
/// `test_before_acquire_if_idle_for`).
const PING_IDLE: Duration = Duration::from_secs(1);

/// sqlx's default `max_lifetime` of the pool's connections.
const LIFETIME: Duration = Duration::from_secs(30 * 60);

/// How many of `max` connections are held for hot reads: a quarter, at most 8.
pub(crate) fn hot_connections(max: u32) -> u32 {
    (max / 4).min(8)
}

/// See the module documentation.
pub(crate) struct HotReads {
    pool: PgPool,
    /// The longest wait for a connection before the read goes through the pool, whose own
    /// waits tell an unreachable database (503) from a busy one (`pool.rs`).
    wait: Duration,
    idle: Mutex<Vec<Held>>,
    /// `max` permits: a lent connection holds one, so no more than `max` are ever open.
    permits: Semaphore,
    /// Connections detached from the pool and not yet closed, idle or lent.
    open: AtomicUsize,
    max: usize,
}

impl std::fmt::Debug for HotReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HotReads")
            .field("open", &self.open.load(Ordering::Relaxed))
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

struct Held {
    conn: PgConnection,
    born: Instant,
    since: Instant,
}

/// A connection out of `idle`: put back by [`Lent::give_back`], closed if dropped.
struct Lent<'a> {
    hot: &'a HotReads,
    held: Option<Held>,
    /// Held until the connection is put back or closed.
    permit: Option<SemaphorePermit<'a>>,
}

impl<'a> Lent<'a> {
    fn conn(&mut self) -> &mut PgConnection {
        &mut self.held.as_mut().unwrap_or_else(|| unreachable!()).conn
    }

    /// Closes the connection, keeping its permit for another.
    fn close(mut self) -> Option<SemaphorePermit<'a>> {
        if let Some(held) = self.held.take() {
            self.hot.open.fetch_sub(1, Ordering::SeqCst);
            close(held.conn);
        }
        self.permit.take()
    }

    fn give_back(mut self) {
        if let Some(mut held) = self.held.take() {
            held.since = Instant::now();
            self.hot.idle().push(held);
        }
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            self.hot.open.fetch_sub(1, Ordering::SeqCst);
            close(held.conn);
        }
    }
}

/// Closes `conn` politely (a `Terminate`, so the server logs no lost client) where a runtime
/// is at hand, else drops its socket.
fn close(conn: PgConnection) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(1), conn.close()).await;
        });
    }
}

impl HotReads {
    /// Up to `max` connections of `pool`'s, each waited for up to `wait`.
    pub(crate) fn new(pool: PgPool, max: u32, wait: Duration) -> Self {
        Self {
            pool,
            wait,
            idle: Mutex::default(),
            permits: Semaphore::new(usize::try_from(max).unwrap_or(usize::MAX)),
            open: AtomicUsize::new(0),
            max: usize::try_from(max).unwrap_or(usize::MAX),
        }
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Held>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Connections held, and how many of them are idle.
    pub(crate) fn status(&self) -> (u32, u32) {
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        (
            count(self.open.load(Ordering::SeqCst)),
            count(self.idle().len()),
        )
    }

    /// The most connections held.
    pub(crate) fn max(&self) -> u32 {
        u32::try_from(self.max).unwrap_or(u32::MAX)
    }

    /// The rows of `statement` (built for Postgres) on a connection of its own, once one is
    /// free; `None`, having run nothing, while the pool has none idle to take or when none
    /// was free within the wait (the database may hold them in statements that hang).
    pub(crate) async fn all(&self, statement: &Statement) -> Result<Option<Vec<PgRow>>, DbErr> {
        let Some(mut lent) = self.lend().await else {
            return Ok(None);
        };
        let values = statement.values.clone().unwrap_or(Values(Vec::new()));
        let rows = sqlx::query_with(
            sqlx::AssertSqlSafe(statement.sql.as_str()),
            SqlxValues(values),
        )
        .fetch_all(lent.conn())
        .await
        .map_err(|e| DbErr::Query(RuntimeErr::SqlxError(e.into())))?;
        lent.give_back();
        Ok(Some(rows))
    }

    async fn lend(&self) -> Option<Lent<'_>> {
        if self.max == 0 {
            return None;
        }
        if self.pool.is_closed() {
            let closed = std::mem::take(&mut *self.idle());
            self.open.fetch_sub(closed.len(), Ordering::SeqCst);
            closed.into_iter().for_each(|held| close(held.conn));
            return None;
        }
        let permit = tokio::time::timeout(self.wait, self.permits.acquire()).await;
        let mut permit = Some(permit.ok()?.ok()?);
        loop {
            let held = self.idle().pop();
            let Some(held) = held else { break };
            let (born, since) = (held.born, held.since);
            let mut lent = Lent {
                hot: self,
                held: Some(held),
                permit: permit.take(),
            };
            if born.elapsed() < LIFETIME
                && (since.elapsed() < PING_IDLE || lent.conn().ping().await.is_ok())
            {
                return Some(lent);
            }
            permit = lent.close();
        }
        let conn = self.pool.try_acquire()?.detach();
        self.open.fetch_add(1, Ordering::SeqCst);
        let now = Instant::now();
        Some(Lent {
            hot: self,
            held: Some(Held {
                conn,
                born: now,
                since: now,
            }),
            permit,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use sea_orm::{ConnectionTrait as _, DatabaseBackend, Statement};

    use crate::{DatabaseOptions, SeaRepository};

    fn sql(sql: &str) -> Statement {
        Statement::from_string(DatabaseBackend::Postgres, sql)
    }

    /// The number `statement` selects, on a hot connection: once the pool has one idle (it
    /// takes its connections back in a task of its own).
    async fn number(repo: &SeaRepository, statement: &str) -> i64 {
        let hot = repo.hot.as_ref().unwrap();
        repo.db.execute_unprepared("SELECT 1").await.unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(rows) = hot.all(&sql(statement)).await.unwrap() {
                return sea_orm::sqlx::Row::get::<i64, _>(&rows[0], 0);
            }
            assert!(std::time::Instant::now() < deadline, "no idle connection");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// A connection is put back after a statement that succeeded, and closed after one that
    /// failed or was dropped halfway, so the next read never meets its leftovers; all of them
    /// count within `max_connections`.
    #[tokio::test]
    async fn a_connection_left_mid_statement_is_never_lent_again() {
        let Some((url, schema)) = crate::test_postgres("hot_reads") else {
            return;
        };
        let repo = SeaRepository::connect(&DatabaseOptions {
            schema: Some(schema.clone()),
            max_connections: Some(8),
            connect_timeout: Duration::from_millis(300),
            ..DatabaseOptions::new(url)
        })
        .await
        .unwrap();
        let hot = repo.hot.clone().unwrap();
        assert_eq!(
            repo.pool_status().max,
            8,
            "the hot connections are the pool's"
        );
        assert_eq!(hot.max(), 2);
        assert_eq!(number(&repo, "SELECT 1::BIGINT").await, 1);
        assert_eq!(hot.status(), (1, 1), "put back");

        let sleep = sql("SELECT pg_sleep(3)");
        let slow = hot.all(&sleep);
        assert!(
            tokio::time::timeout(Duration::from_millis(200), slow)
                .await
                .is_err()
        );
        assert_eq!(hot.status(), (0, 0), "dropped mid-statement: closed");

        assert_eq!(number(&repo, "SELECT 3::BIGINT").await, 3);
        assert_eq!(hot.status(), (1, 1));
        assert!(hot.all(&sql("SELECT 1/0")).await.is_err());
        assert_eq!(hot.status(), (0, 0), "failed: closed");

        assert_eq!(number(&repo, "SELECT 2::BIGINT").await, 2);

        // More reads than connections wait for one: never more than two are held.
        let nap = sql("SELECT pg_sleep(0.05)");
        let reads = tokio::join!(hot.all(&nap), hot.all(&nap), hot.all(&nap));
        assert!(reads.0.is_ok() && reads.1.is_ok() && reads.2.is_ok());
        assert!(hot.status().0 <= 2);
        assert!(repo.pool_status().open <= 8);

        // Every connection held (by statements that do not end, say): the next read is given
        // up after the wait, and the caller goes through the pool instead.
        let held = hot.permits.acquire_many(2).await.unwrap();
        let asked = std::time::Instant::now();
        assert!(hot.all(&sql("SELECT 5::BIGINT")).await.unwrap().is_none());
        assert!(asked.elapsed() >= Duration::from_millis(300), "it waited");
        drop(held);
        repo.db
            .execute_unprepared(&format!("DROP SCHEMA {schema} CASCADE"))
            .await
            .unwrap();
    }
}
