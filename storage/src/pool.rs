//! The handle every query goes through: sea-orm's pooled connection, with a wait for a
//! connection that tells an unreachable database (answer 503 at once) from a busy pool on a
//! healthy one (keep waiting while other statements finish).
//!
//! sqlx bounds the whole of getting a connection (waiting for a free slot, then opening a
//! connection when none is idle) by one `acquire_timeout`, and retries a refused connection
//! until it runs out: an unreachable database is noticed only then. So that requests fail
//! fast while the database is down, that timeout is short
//! ([`DatabaseOptions::connect_timeout`], 500 ms by default on Postgres). A busy pool must not
//! fail that fast: when the short wait runs out and some other statement succeeded meanwhile
//! (the pool is turning over, the database answers), the wait starts again, up to
//! [`DatabaseOptions::acquire_timeout`] in all. While the database is unreachable nothing
//! succeeds, so the first short wait's end is the answer: 503, and the next request tries
//! again, so recovery is seen at once.
//!
//! Only acquisition is retried: a statement that got no connection never ran.
//!
//! [`DatabaseOptions::connect_timeout`]: crate::DatabaseOptions::connect_timeout
//! [`DatabaseOptions::acquire_timeout`]: crate::DatabaseOptions::acquire_timeout

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::direct::WriteTurn;
use sea_orm::{
    AccessMode, ConnAcquireErr, ConnectionTrait, DatabaseConnection, DatabaseTransaction,
    DbBackend, DbErr, ExecResult, IsolationLevel, QueryResult, SqliteTransactionMode, Statement,
    TransactionError, TransactionOptions, TransactionTrait,
};

/// The pooled connection, patient only while the pool makes progress.
#[derive(Clone, Debug)]
pub(crate) struct Db {
    pub(crate) inner: DatabaseConnection,
    /// A SQLite file's one writing connection, which every transaction waits its turn for.
    /// SQLite has one writer at a time: without it, concurrent `BEGIN IMMEDIATE`s of the
    /// pool's connections wait in SQLite's busy handler, which sleeps (1, 2, 5, 10 … ms) and
    /// leaves the cores idle; queued here they wait in order, without sleeping.
    writer: Option<DatabaseConnection>,
    /// Statements and transactions that got a connection, by anyone: it moves while the
    /// database answers.
    progress: Arc<AtomicU64>,
    /// The longest wait in all for a connection of a busy pool.
    patience: Duration,
}

impl Db {
    pub(crate) fn new(
        inner: DatabaseConnection,
        writer: Option<DatabaseConnection>,
        patience: Duration,
    ) -> Self {
        Self {
            inner,
            writer,
            progress: Arc::default(),
            patience,
        }
    }

    /// Runs `op`, again while it only failed to get a connection in time and others got one
    /// meanwhile, until the patience is spent.
    async fn patiently<T, F, Fut>(&self, mut op: F) -> Result<T, DbErr>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, DbErr>>,
    {
        let deadline = Instant::now() + self.patience;
        loop {
            let seen = self.progress.load(Ordering::Relaxed);
            match op().await {
                Ok(value) => {
                    self.progress.fetch_add(1, Ordering::Relaxed);
                    return Ok(value);
                }
                Err(DbErr::ConnectionAcquire(ConnAcquireErr::Timeout))
                    if self.progress.load(Ordering::Relaxed) != seen
                        && Instant::now() < deadline => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Where transactions and statements that write (`execute_*`) run: the writing
    /// connection, if there is one.
    fn writing(&self) -> &DatabaseConnection {
        self.writer.as_ref().unwrap_or(&self.inner)
    }

    /// The writing connection of a SQLite file, taken for a direct write (`direct/write.rs`)
    /// so that no transaction of the pool writes until it is given back; `None` without one.
    pub(crate) async fn write_turn(&self) -> Result<Option<WriteTurn>, DbErr> {
        let Some(writer) = &self.writer else {
            return Ok(None);
        };
        let pool = writer.get_sqlite_connection_pool();
        self.patiently(|| async {
            pool.acquire().await.map_err(|e| {
                DbErr::ConnectionAcquire(match e {
                    sea_orm::sqlx::Error::PoolTimedOut => ConnAcquireErr::Timeout,
                    _ => ConnAcquireErr::ConnectionClosed,
                })
            })
        })
        .await
        .map(Some)
    }

    /// The database's dialect.
    pub(crate) fn get_database_backend(&self) -> DbBackend {
        self.inner.get_database_backend()
    }

    /// Checks that the database answers.
    pub(crate) async fn ping(&self) -> Result<(), DbErr> {
        self.inner.ping().await
    }
}

#[async_trait::async_trait]
impl ConnectionTrait for Db {
    fn get_database_backend(&self) -> DbBackend {
        self.inner.get_database_backend()
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        self.patiently(|| self.writing().execute_raw(stmt.clone()))
            .await
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        self.patiently(|| self.writing().execute_unprepared(sql))
            .await
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        self.patiently(|| self.inner.query_one_raw(stmt.clone()))
            .await
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        self.patiently(|| self.inner.query_all_raw(stmt.clone()))
            .await
    }

    fn support_returning(&self) -> bool {
        self.inner.support_returning()
    }
}

#[async_trait::async_trait]
impl TransactionTrait for Db {
    type Transaction = DatabaseTransaction;

    /// Every transaction this crate opens writes, so on SQLite it takes the write lock at
    /// `BEGIN IMMEDIATE`: a deferred transaction that reads first cannot become a writer once
    /// another connection has committed (`SQLITE_BUSY_SNAPSHOT`, which the busy timeout does
    /// not wait out), and holding the lock from the start makes its reads the state its write
    /// applies to. Postgres ignores the mode; its writes lock the rows they read.
    async fn begin(&self) -> Result<DatabaseTransaction, DbErr> {
        let options = TransactionOptions {
            sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
            ..TransactionOptions::default()
        };
        self.patiently(|| self.writing().begin_with_options(options))
            .await
    }

    async fn begin_with_config(
        &self,
        isolation_level: Option<IsolationLevel>,
        access_mode: Option<AccessMode>,
    ) -> Result<DatabaseTransaction, DbErr> {
        self.patiently(|| {
            self.writing()
                .begin_with_config(isolation_level, access_mode)
        })
        .await
    }

    async fn begin_with_options(
        &self,
        options: TransactionOptions,
    ) -> Result<DatabaseTransaction, DbErr> {
        self.patiently(|| self.writing().begin_with_options(options))
            .await
    }

    /// Not retried: the callback runs once.
    async fn transaction<F, T, E>(&self, callback: F) -> Result<T, TransactionError<E>>
    where
        F: for<'c> FnOnce(
                &'c DatabaseTransaction,
            ) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'c>>
            + Send,
        T: Send,
        E: std::fmt::Display + std::fmt::Debug + Send,
    {
        self.writing().transaction(callback).await
    }

    /// Not retried: the callback runs once.
    async fn transaction_with_config<F, T, E>(
        &self,
        callback: F,
        isolation_level: Option<IsolationLevel>,
        access_mode: Option<AccessMode>,
    ) -> Result<T, TransactionError<E>>
    where
        F: for<'c> FnOnce(
                &'c DatabaseTransaction,
            ) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'c>>
            + Send,
        T: Send,
        E: std::fmt::Display + std::fmt::Debug + Send,
    {
        self.writing()
            .transaction_with_config(callback, isolation_level, access_mode)
            .await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use sea_orm::ConnectionTrait as _;

    use crate::{DatabaseOptions, SeaRepository};

    /// A pool far smaller than the load on a healthy database: every statement waits longer
    /// than `connect_timeout` for a connection, and none fails, because others finish
    /// meanwhile. Needs `VOICEPLANE_TEST_POSTGRES_URL`.
    #[tokio::test]
    async fn a_busy_pool_waits_while_others_finish() {
        let Ok(url) = std::env::var("VOICEPLANE_TEST_POSTGRES_URL") else {
            assert!(
                std::env::var("VOICEPLANE_TEST_REQUIRE_POSTGRES").as_deref() != Ok("1"),
                "VOICEPLANE_TEST_REQUIRE_POSTGRES=1 but VOICEPLANE_TEST_POSTGRES_URL is not set"
            );
            eprintln!(
                "SKIPPED a_busy_pool_waits_while_others_finish: VOICEPLANE_TEST_POSTGRES_URL is not set"
            );
            return;
        };
        let repo = SeaRepository::connect(&DatabaseOptions {
            max_connections: Some(2),
            connect_timeout: Duration::from_millis(100),
            acquire_timeout: Duration::from_secs(10),
            ..DatabaseOptions::new(url)
        })
        .await
        .expect("Postgres is reachable");
        // 24 statements of 50 ms on 2 connections: about 600 ms of queueing.
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..24 {
            let repo = repo.clone();
            tasks.spawn(async move {
                repo.db
                    .execute_unprepared("SELECT pg_sleep(0.05)")
                    .await
                    .map(drop)
            });
        }
        let started = std::time::Instant::now();
        while let Some(done) = tasks.join_next().await {
            if let Err(e) = done.expect("the task ran") {
                panic!("a statement failed on a busy pool: {e}");
            }
        }
        assert!(
            started.elapsed() > Duration::from_millis(400),
            "the statements did queue"
        );
    }
}
