//! Each test's database, folder, service and clock: [`TestContext`] (a temporary folder, and a
//! SQLite file in it or a fresh schema on the Postgres server named by
//! `VOICEPLANE_TEST_POSTGRES_URL`), the
//! [`TestClock`] its service reads, signed bearer tokens ([`jwt_for`]), and [`db_tests!`],
//! which runs one test body on both databases.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rand::RngExt;
use sea_orm::ConnectionTrait;
use voiceplane_core::auth::{Actor, Credentials, JwtSettings, JwtVerifier};
use voiceplane_core::time::{Clock, Timestamp};
use voiceplane_core::{BootstrapInput, BootstrapOutput, Service};
use voiceplane_storage::{DatabaseOptions, SeaRepository};

use crate::folder::TestFolder;

/// Environment variable naming the Postgres server for the Postgres half of the suite.
pub const POSTGRES_URL_VAR: &str = "VOICEPLANE_TEST_POSTGRES_URL";
/// When `1`, a missing Postgres URL fails the Postgres tests instead of skipping them.
pub const REQUIRE_POSTGRES_VAR: &str = "VOICEPLANE_TEST_REQUIRE_POSTGRES";
/// The `secrets.master_key` of test services.
pub const MASTER_KEY: [u8; 32] = [42; 32];
/// The HS256 secret test services accept bearer tokens for.
pub const JWT_SECRET: &str = "voiceplane-test-jwt-secret";

/// A clock that starts at a fixed instant and moves forward one millisecond per reading, so
/// that every created row has a distinct, increasing `created_at`; tests can jump it forward.
///
/// ```
/// use voiceplane_core::time::Clock;
/// let clock = voiceplane_suite::TestClock::new();
/// let first = clock.now();
/// assert!(clock.now() > first);
/// clock.advance(3600);
/// assert!(clock.peek() >= first.add_seconds(3600));
/// ```
#[derive(Debug)]
pub struct TestClock {
    micros: AtomicI64,
}

impl TestClock {
    /// A clock at 2026-01-01T00:00:00Z.
    pub fn new() -> Self {
        Self {
            micros: AtomicI64::new(1_767_225_600_000_000),
        }
    }

    /// Moves the clock forward by `seconds`.
    pub fn advance(&self, seconds: i64) {
        self.micros.fetch_add(seconds * 1_000_000, Ordering::SeqCst);
    }

    /// The current reading without moving the clock.
    pub fn peek(&self) -> Timestamp {
        Timestamp::from_micros(self.micros.load(Ordering::SeqCst))
    }
}

impl Default for TestClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_micros(self.micros.fetch_add(1_000, Ordering::SeqCst))
    }
}

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A temporary SQLite file.
    Sqlite,
    /// A fresh schema on the Postgres test server.
    Postgres,
}

/// One test's database, folder, service and clock.
pub struct TestContext {
    /// Which database this is.
    pub backend: Backend,
    /// The repository (for tests that inspect rows directly).
    pub repo: SeaRepository,
    /// The service under test, with [`TestClock`] and HS256 JWTs signed by [`JWT_SECRET`].
    pub service: Arc<Service>,
    /// The clock the service reads.
    pub clock: Arc<TestClock>,
    folder: TestFolder,
    database: Database,
}

/// Where a context's database is; what [`TestContext::cleanup`] removes.
enum Database {
    /// A file in the context's folder.
    Sqlite(PathBuf),
    /// A schema of its own on the Postgres test server.
    Postgres { url: String, schema: String },
}

fn random_hex(n: usize) -> String {
    let mut rng = rand::rng();
    (0..n)
        .map(|_| char::from_digit(rng.random_range(0..16u32), 16).unwrap_or('0'))
        .collect()
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Database {
    fn options(&self) -> DatabaseOptions {
        match self {
            Self::Sqlite(path) => {
                DatabaseOptions::new(format!("sqlite://{}?mode=rwc", path.display()))
            }
            Self::Postgres { url, schema } => DatabaseOptions {
                schema: Some(schema.clone()),
                max_connections: Some(8),
                ..DatabaseOptions::new(url.clone())
            },
        }
    }
}

impl TestContext {
    /// A context on a new temporary SQLite file, migrated.
    pub async fn sqlite() -> Self {
        Self::open(Backend::Sqlite, "")
            .await
            .expect("SQLite needs no server")
            .migrated()
            .await
    }

    /// A context on a fresh schema of the Postgres test server, migrated, or `None` (after
    /// saying so) when [`POSTGRES_URL_VAR`] is not set.
    pub async fn postgres(test: &str) -> Option<Self> {
        Some(Self::open(Backend::Postgres, test).await?.migrated().await)
    }

    /// A context on `backend` whose database has no tables yet, for tests of migrating it;
    /// `None` as for [`postgres`](Self::postgres).
    pub async fn unmigrated(backend: Backend, test: &str) -> Option<Self> {
        Self::open(backend, test).await
    }

    async fn migrated(self) -> Self {
        self.repo
            .migrate()
            .await
            .expect("migrations apply to a fresh database");
        self
    }

    async fn open(backend: Backend, test: &str) -> Option<Self> {
        let postgres_url = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => match std::env::var(POSTGRES_URL_VAR) {
                Ok(url) => Some(url),
                Err(_) if std::env::var(REQUIRE_POSTGRES_VAR).as_deref() == Ok("1") => {
                    panic!("{POSTGRES_URL_VAR} is not set but {REQUIRE_POSTGRES_VAR}=1")
                }
                Err(_) => {
                    eprintln!("SKIPPED {test} on Postgres: {POSTGRES_URL_VAR} is not set");
                    return None;
                }
            },
        };
        let folder = TestFolder::new("test");
        let database = match postgres_url {
            None => Database::Sqlite(folder.path().join("test.db")),
            Some(url) => {
                sweep_stale_schemas(&url).await;
                let schema = format!("vpt_{}_{}", unix_secs(), random_hex(12));
                Database::Postgres { url, schema }
            }
        };
        let repo = SeaRepository::connect(&database.options())
            .await
            .expect("the test database opens");
        let clock = Arc::new(TestClock::new());
        let service = Arc::new(test_service(repo.clone(), clock.clone()));
        Some(Self {
            backend,
            repo,
            service,
            clock,
            folder,
            database,
        })
    }

    /// This test's own empty folder, removed by [`cleanup`](Self::cleanup): for file stores
    /// and for the working directory of a process the test starts. (A SQLite database file
    /// lives in it too, as `test.db`.)
    pub fn folder(&self) -> &Path {
        self.folder.path()
    }

    /// The database file, on SQLite.
    pub fn sqlite_file(&self) -> Option<&Path> {
        match &self.database {
            Database::Sqlite(path) => Some(path),
            Database::Postgres { .. } => None,
        }
    }

    /// How to open another connection pool to this test's database.
    pub fn database_options(&self) -> DatabaseOptions {
        self.database.options()
    }

    /// A URL that reaches this test's database from another process (the binary's
    /// `database.url`): on Postgres it names the test's schema as the connection's
    /// `search_path`.
    pub fn database_url(&self) -> String {
        match &self.database {
            Database::Sqlite(_) => self.database.options().url,
            Database::Postgres { url, schema } => {
                let separator = if url.contains('?') { '&' } else { '?' };
                format!("{url}{separator}options[search_path]={schema}")
            }
        }
    }

    /// Removes the folder and the database schema. Tests that panic leave theirs behind; the
    /// next Postgres test sweeps schemas older than an hour.
    pub async fn cleanup(self) {
        let Self {
            repo,
            folder,
            database,
            ..
        } = self;
        let _ = repo.connection().clone().close().await;
        if let Database::Postgres { url, schema } = database
            && let Ok(admin) = SeaRepository::connect(&DatabaseOptions::new(url)).await
        {
            let _ = admin
                .connection()
                .execute_unprepared(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                .await;
            let _ = admin.connection().clone().close().await;
        }
        drop(folder);
    }

    /// What names this test's database and must never reach a response: the URL, and the
    /// SQLite file's path or the Postgres schema.
    pub fn database_names(&self) -> Vec<String> {
        match &self.database {
            Database::Sqlite(path) => vec![
                format!("sqlite://{}", path.display()),
                path.display().to_string(),
            ],
            Database::Postgres { url, schema } => vec![url.clone(), schema.clone()],
        }
    }

    /// The service of a second instance on the same database: its own connection pool, with
    /// the same clock, JWT settings and master key, as another process would have.
    pub async fn another_instance(&self) -> Arc<Service> {
        let repo = SeaRepository::connect(&self.database_options())
            .await
            .expect("a second connection to the test database opens");
        Arc::new(test_service(repo, self.clock.clone()))
    }

    /// Creates an organization with an admin; returns what `bootstrap` prints.
    pub async fn bootstrap(&self, org_name: &str) -> BootstrapOutput {
        self.service
            .organization_bootstrap(BootstrapInput {
                org_name: org_name.to_owned(),
                admin_email: format!("admin-{}@example.com", random_hex(8)),
                admin_name: Some("Admin".to_owned()),
            })
            .await
            .expect("bootstrap succeeds")
    }

    /// The actor behind an API key secret in its organization.
    pub async fn actor(&self, org: &str, api_key: &str) -> Actor {
        self.service
            .authenticate(&Credentials {
                api_key: Some(api_key.to_owned()),
                organization_id: Some(org.to_owned()),
                bearer: None,
            })
            .await
            .expect("the key authenticates")
    }
}

/// A service on `repo` as the tests configure it: `clock`, HS256 JWTs signed with
/// [`JWT_SECRET`], credentials encrypted with [`MASTER_KEY`].
fn test_service(repo: SeaRepository, clock: Arc<TestClock>) -> Service {
    let jwt = JwtVerifier::new(&JwtSettings {
        hs256_secret: Some(JWT_SECRET.to_owned()),
        ..Default::default()
    })
    .expect("test JWT settings are valid");
    Service::new(Arc::new(repo))
        .with_clock(clock)
        .with_jwt(jwt)
        .with_cipher(voiceplane_core::crypto::CredentialCipher::new(&MASTER_KEY))
}

/// Drops `vpt_*` schemas created more than an hour ago (left by crashed tests).
async fn sweep_stale_schemas(url: &str) {
    let Ok(admin) = SeaRepository::connect(&DatabaseOptions::new(url)).await else {
        return;
    };
    let cutoff = unix_secs().saturating_sub(3600);
    let db = admin.connection();
    let rows = db
        .query_all_raw(sea_orm::Statement::from_string(
            db.get_database_backend(),
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'vpt\\_%'".to_owned(),
        ))
        .await
        .unwrap_or_default();
    for row in rows {
        let Ok(name) = row.try_get::<String>("", "nspname") else {
            continue;
        };
        let created = name
            .split('_')
            .nth(1)
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(u64::MAX);
        if created < cutoff {
            let _ = db
                .execute_unprepared(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE"))
                .await;
        }
    }
    let _ = db.clone().close().await;
}

/// A signed HS256 bearer token for `user_id`, valid for `ttl_secs` (negative: already
/// expired), with optional `email`.
pub fn jwt_for(user_id: &str, email: Option<&str>, ttl_secs: i64) -> String {
    let exp = unix_secs() as i64 + ttl_secs;
    let mut claims = serde_json::json!({ "sub": user_id, "exp": exp });
    if let Some(email) = email {
        claims["email"] = serde_json::Value::String(email.to_owned());
    }
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(JWT_SECRET.as_bytes()),
    )
    .expect("HS256 signing works")
}

/// Runs each `async fn name(ctx: &TestContext)` of the calling module as `name::sqlite` and
/// `name::postgres`.
#[macro_export]
macro_rules! db_tests {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let ctx = $crate::TestContext::sqlite().await;
                super::$name(&ctx).await;
                ctx.cleanup().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if let Some(ctx) = $crate::TestContext::postgres(stringify!($name)).await {
                    super::$name(&ctx).await;
                    ctx.cleanup().await;
                }
            }
        }
    )*};
}
