//! # voiceplane-storage
//!
//! The SeaORM implementation of [`voiceplane_core::repo::Repository`], one code path for SQLite
//! and Postgres, with its `sea-orm-migration` migrations; and [`OpendalBlobStore`], the
//! [`voiceplane_core::blob::BlobStore`] on OpenDAL (fs, memory, S3), in [`blob`].
//!
//! ```no_run
//! # async fn demo() -> voiceplane_core::Result<()> {
//! use voiceplane_storage::{DatabaseOptions, SeaRepository};
//! let repo = SeaRepository::connect(&DatabaseOptions::new("sqlite://voiceplane.db?mode=rwc")).await?;
//! repo.migrate().await?;
//! let service = voiceplane_core::Service::new(std::sync::Arc::new(repo));
//! # let _ = service; Ok(()) }
//! ```

use std::time::Duration;

use voiceplane_core::{Error, Result};

/// How to reach the database.
#[derive(Clone)]
pub struct DatabaseOptions {
    /// `sqlite://path?mode=rwc`, `sqlite::memory:` or `postgres://user:pass@host/db`.
    pub url: String,
    /// Postgres schema to use instead of `public` (tests use one schema each).
    pub schema: Option<String>,
    /// Pool size; defaults depend on the database.
    pub max_connections: Option<u32>,
    /// Postgres: how long one wait for a connection (a free one, or a new one opened) may take
    /// before, if no other statement got one meanwhile, the database counts as unreachable
    /// (503). Default [`DEFAULT_CONNECT_TIMEOUT`]. SQLite, a local file, waits
    /// [`acquire_timeout`](Self::acquire_timeout) at once.
    pub connect_timeout: Duration,
    /// The longest wait in all for a connection while the pool is busy and the database
    /// answers. Default [`DEFAULT_ACQUIRE_TIMEOUT`].
    pub acquire_timeout: Duration,
}

/// Default of [`DatabaseOptions::connect_timeout`]: 500 ms, so that a request fails within a
/// second while the database is unreachable.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_millis(500);

/// Default of [`DatabaseOptions::acquire_timeout`]: 5 s.
pub const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

impl DatabaseOptions {
    /// Options for `url` with default pool settings.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            schema: None,
            max_connections: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            acquire_timeout: DEFAULT_ACQUIRE_TIMEOUT,
        }
    }
}

impl std::fmt::Debug for DatabaseOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseOptions")
            .field("url", &redact_url(&self.url))
            .field("schema", &self.schema)
            .field("max_connections", &self.max_connections)
            .field("connect_timeout", &self.connect_timeout)
            .field("acquire_timeout", &self.acquire_timeout)
            .finish()
    }
}

/// `url` with any password replaced by `***`, for logs and errors.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let creds = &url[scheme_end + 3..at];
            match creds.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &url[..scheme_end + 3],
                    &creds[..colon],
                    &url[at..]
                ),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

pub mod blob;
mod convert;
mod direct;
mod entity;
mod exec;
mod hot;
mod kept;
mod migration;
mod monitor;
mod pool;
mod repo;

pub use blob::{BlobConfig, OpendalBlobStore, S3Settings};
pub use monitor::{JobCounts, PoolStatus};
pub use repo::calls;
pub use repo::live_outbound;
pub use repo::usage;
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseBackend, DatabaseConnection,
    TransactionTrait,
};

use crate::direct::DirectReads;
use crate::hot::HotReads;
use crate::kept::KeptPages;
use crate::pool::Db;
use crate::repo::changes::ChangeFeed;
use sea_orm_migration::MigratorTrait;
use std::sync::Arc;

/// How long a SQLite connection, of the pool or direct, waits for another's lock.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The SeaORM repository: a pooled connection to SQLite or Postgres. While the database is
/// unreachable, operations fail with [`Error::Unavailable`] within
/// [`DatabaseOptions::connect_timeout`]; a busy pool makes them wait up to
/// [`DatabaseOptions::acquire_timeout`] (see `pool.rs`).
#[derive(Clone, Debug)]
pub struct SeaRepository {
    db: Db,
    /// What this instance knows of the change versions (`repo/changes.rs`).
    changes: Arc<ChangeFeed>,
    /// Whether the Postgres listener of `changes` has been started.
    listening: Arc<std::sync::OnceLock<()>>,
    /// The hot reads of a SQLite file, through rusqlite on bounded blocking threads
    /// (`direct.rs`).
    direct: Option<Arc<DirectReads>>,
    /// Postgres: the connections of a page of calls's reads (`hot.rs`).
    hot: Option<Arc<HotReads>>,
    /// Postgres: pages of calls with their organization's calls version (`kept.rs`).
    pages: Arc<KeptPages<i64>>,
    /// Postgres: the reads of organizations' calls versions (`repo/calls/versions.rs`).
    call_versions: Arc<crate::repo::calls::CallVersions>,
}

impl SeaRepository {
    /// Connects to the database. SQLite runs in WAL mode with foreign keys on and a busy
    /// timeout, set on every pooled connection; `sqlite::memory:` gets a single connection so
    /// that every query sees the same database. Does not migrate.
    pub async fn connect(options: &DatabaseOptions) -> Result<Self> {
        let url = options.url.trim();
        let is_sqlite = url.starts_with("sqlite:");
        let is_memory = is_sqlite && (url.contains(":memory:") || url.contains("mode=memory"));
        if !is_sqlite && !url.starts_with("postgres://") && !url.starts_with("postgresql://") {
            return Err(Error::invalid(format!(
                "database.url must start with sqlite: or postgres://, got {}",
                redact_url(url)
            )));
        }
        let mut opt = ConnectOptions::new(url.to_owned());
        let postgres_max = options.max_connections.unwrap_or(16);
        let hot_max = hot::hot_connections(postgres_max);
        // sea-orm's connect and acquire timeouts are both sqlx's one acquire timeout.
        let first_wait = if is_sqlite {
            options.acquire_timeout
        } else {
            options.connect_timeout.min(options.acquire_timeout)
        };
        opt.acquire_timeout(first_wait).sqlx_logging(false);
        if is_sqlite {
            use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
            opt.map_sqlx_sqlite_opts(|o| {
                o.journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal)
                    .foreign_keys(true)
                    .busy_timeout(SQLITE_BUSY_TIMEOUT)
            });
            if is_memory {
                // Each connection to `:memory:` is its own empty database: keep exactly one,
                // forever.
                opt.max_connections(1)
                    .min_connections(1)
                    .idle_timeout(None)
                    .max_lifetime(None);
            } else {
                // No reaper either: a file has no server to drop idle connections, and sqlx's
                // reaper task can spin a core forever after a race on its idle count
                // (launchbadge/sqlx#3645, fixed by #4289 after 0.9.0): seen here once, in CI.
                opt.max_connections(options.max_connections.unwrap_or(8))
                    .idle_timeout(None)
                    .max_lifetime(None);
            }
            // sqlx pings a connection before lending it (a hand-off to its thread and back, the
            // cost of a statement) to find one a server dropped; a file has no server, and a
            // broken connection is still found when it is given back (sqlx pings it then).
            opt.test_before_acquire(false);
        } else {
            // The connections of hot reads are the pool's, held apart from it (`hot.rs`).
            opt.max_connections(postgres_max - hot_max);
            // sqlx pings every connection it lends, a round trip before each statement. sqlx also
            // pings one when it is given back, so a connection back within the last second was
            // alive then: only those idle longer (which a restart or a proxy may have dropped)
            // are pinged before they are lent, as HikariCP does. One the server ended since
            // (a failover terminates every backend) fails its statement with the server's
            // error, which `convert::db_err` reads as unavailable: a 503, not a 500.
            opt.test_before_acquire_if_idle_for(Duration::from_secs(1));
            if let Some(schema) = &options.schema {
                if !schema
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                {
                    return Err(Error::invalid(
                        "schema names may only contain a-z, 0-9 and _",
                    ));
                }
                opt.set_schema_search_path(schema.clone());
            }
        }
        // The first connection gets the whole patience: a database that is still starting
        // (refusing connections) should not stop this process after one short wait.
        let started = std::time::Instant::now();
        let db = loop {
            match Database::connect(opt.clone()).await {
                Ok(db) => break db,
                Err(sea_orm::DbErr::Conn(sea_orm::RuntimeErr::SqlxError(e)))
                    if matches!(*e, sea_orm::sqlx::Error::PoolTimedOut)
                        && started.elapsed() < options.acquire_timeout => {}
                Err(e) => {
                    return Err(Error::Unavailable(format!(
                        "cannot connect to the database at {}: {}",
                        redact_url(url),
                        scrub_url(&e.to_string(), url)
                    )));
                }
            }
        };
        if let (DatabaseBackend::Postgres, Some(schema)) =
            (db.get_database_backend(), &options.schema)
        {
            let create = format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\"");
            // Two instances creating the schema at once can collide in the catalog even with
            // IF NOT EXISTS; the second attempt then finds the schema.
            if db.execute_unprepared(&create).await.is_err() {
                db.execute_unprepared(&create)
                    .await
                    .map_err(convert::db_err)?;
            }
        }
        // A SQLite file gets one connection more, its only writer (see `pool::Db`); an
        // in-memory database has one connection for everything already.
        let writer = if is_sqlite && !is_memory {
            let mut writer = opt.clone();
            writer.max_connections(1).min_connections(0);
            Some(Database::connect(writer).await.map_err(|e| {
                Error::Unavailable(format!(
                    "cannot connect to the database at {}: {}",
                    redact_url(url),
                    scrub_url(&e.to_string(), url)
                ))
            })?)
        } else {
            None
        };
        let hot = (db.get_database_backend() == DatabaseBackend::Postgres).then(|| {
            Arc::new(HotReads::new(
                db.get_postgres_connection_pool().clone(),
                hot_max,
                first_wait,
            ))
        });
        Ok(Self {
            db: Db::new(db, writer, options.acquire_timeout),
            changes: Arc::default(),
            listening: Arc::default(),
            direct: direct::sqlite_file(url).map(|path| Arc::new(DirectReads::new(path))),
            hot,
            pages: Arc::default(),
            call_versions: Arc::default(),
        })
    }

    /// Applies pending migrations. Several instances starting at once may all call this:
    /// the migrations run in one transaction behind a lock (an advisory lock on Postgres, the
    /// write lock on SQLite), so one applies them and the others then find nothing to do.
    pub async fn migrate(&self) -> Result<()> {
        let failed =
            |e: sea_orm::DbErr| Error::Unavailable(format!("database migration failed: {e}"));
        let txn = self.db.begin().await.map_err(failed)?;
        match self.db.get_database_backend() {
            DatabaseBackend::Postgres => {
                txn.execute_unprepared("SELECT pg_advisory_xact_lock(7262340542345)")
                    .await
                    .map_err(failed)?;
            }
            _ => {
                // A write as the first statement takes SQLite's write lock before anything is
                // read, so no stale snapshot can race another migrating process.
                txn.execute_unprepared(
                    "CREATE TABLE IF NOT EXISTS voiceplane_migration_lock (id INTEGER PRIMARY KEY)",
                )
                .await
                .map_err(failed)?;
                txn.execute_unprepared(
                    "INSERT OR REPLACE INTO voiceplane_migration_lock (id) VALUES (1)",
                )
                .await
                .map_err(failed)?;
            }
        }
        migration::Migrator::up(&txn, None).await.map_err(failed)?;
        txn.commit().await.map_err(failed)
    }

    /// The direct reads of a SQLite file, while the pool is open: a closed repository (shut
    /// down) reads nothing, whichever way.
    pub(crate) fn direct(&self) -> Option<&Arc<DirectReads>> {
        self.direct
            .as_ref()
            .filter(|_| !self.db.inner.get_sqlite_connection_pool().is_closed())
    }

    /// Catches up with a change to agents or phone numbers this instance has just committed
    /// (see `repo/changes.rs`).
    pub(crate) async fn agents_changed(&self) {
        self.changes.after_change(&self.db).await;
    }

    /// The underlying connection, for callers that need raw access (tests, tooling).
    pub fn connection(&self) -> &DatabaseConnection {
        &self.db.inner
    }
}

/// The test Postgres (`VOICEPLANE_TEST_POSTGRES_URL`) and a schema name for `test` in it,
/// named as the suite names its schemas so that its sweep removes one a failure leaves; `None`
/// (after saying so) without one, which fails when `VOICEPLANE_TEST_REQUIRE_POSTGRES=1`.
#[cfg(test)]
pub(crate) fn test_postgres(test: &str) -> Option<(String, String)> {
    let Ok(url) = std::env::var("VOICEPLANE_TEST_POSTGRES_URL") else {
        assert_ne!(
            std::env::var("VOICEPLANE_TEST_REQUIRE_POSTGRES").as_deref(),
            Ok("1"),
            "VOICEPLANE_TEST_POSTGRES_URL is not set but VOICEPLANE_TEST_REQUIRE_POSTGRES=1"
        );
        eprintln!("SKIPPED {test} on Postgres: VOICEPLANE_TEST_POSTGRES_URL is not set");
        return None;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Some((url, format!("vpt_{now}_{test}_{}", std::process::id())))
}

/// Removes any occurrence of the URL's password from an error text: the URL itself becomes
/// its [`redact_url`] form, and the password alone, which drivers sometimes echo, becomes `***`.
pub fn scrub_url(text: &str, url: &str) -> String {
    let redacted = redact_url(url);
    if redacted == url {
        return text.to_owned();
    }
    let mut out = text.replace(url, &redacted);
    let password = url
        .split_once("://")
        .and_then(|(_, rest)| rest.rsplit_once('@'))
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, password)| password)
        .filter(|password| !password.is_empty());
    if let Some(password) = password {
        out = out.replace(password, "***");
    }
    out
}
