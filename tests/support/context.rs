//! Each test's database, service and clock: [`TestContext`] (a temporary SQLite file, or a
//! fresh schema on the Postgres server named by `VOICEPLANE_TEST_POSTGRES_URL`), the
//! [`TestClock`] its service reads, signed bearer tokens ([`jwt_for`]), and [`db_tests!`],
//! which runs one test body on both databases.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rand::RngExt;
use sea_orm::ConnectionTrait;
use voiceplane_core::auth::{Actor, Credentials, JwtSettings, JwtVerifier};
use voiceplane_core::time::{Clock, Timestamp};
use voiceplane_core::{BootstrapInput, BootstrapOutput, Service};
use voiceplane_storage::{DatabaseOptions, SeaRepository};

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

/// One test's database, service and clock.
pub struct TestContext {
    /// Which database this is.
    pub backend: Backend,
    /// The repository (for tests that inspect rows directly).
    pub repo: SeaRepository,
    /// The service under test, with [`TestClock`] and HS256 JWTs signed by [`JWT_SECRET`].
    pub service: Arc<Service>,
    /// The clock the service reads.
    pub clock: Arc<TestClock>,
    cleanup: Cleanup,
}

enum Cleanup {
    File(PathBuf),
    Schema { url: String, schema: String },
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

impl TestContext {
    async fn with_repo(backend: Backend, repo: SeaRepository, cleanup: Cleanup) -> Self {
        repo.migrate()
            .await
            .expect("migrations apply to a fresh database");
        let clock = Arc::new(TestClock::new());
        let jwt = JwtVerifier::new(&JwtSettings {
            hs256_secret: Some(JWT_SECRET.to_owned()),
            ..Default::default()
        })
        .expect("test JWT settings are valid");
        let service = Service::new(Arc::new(repo.clone()))
            .with_clock(clock.clone())
            .with_jwt(jwt)
            .with_cipher(voiceplane_core::crypto::CredentialCipher::new(&MASTER_KEY));
        Self {
            backend,
            repo,
            service: Arc::new(service),
            clock,
            cleanup,
        }
    }

    /// A context on a new temporary SQLite file.
    pub async fn sqlite() -> Self {
        let path = std::env::temp_dir().join(format!("voiceplane-test-{}.db", random_hex(16)));
        let url = format!("sqlite://{}?mode=rwc", path.display());
        let repo = SeaRepository::connect(&DatabaseOptions::new(url))
            .await
            .expect("temporary SQLite database opens");
        Self::with_repo(Backend::Sqlite, repo, Cleanup::File(path)).await
    }

    /// A context on a fresh schema of the Postgres test server, or `None` (after saying so)
    /// when [`POSTGRES_URL_VAR`] is not set.
    pub async fn postgres(test: &str) -> Option<Self> {
        let Ok(url) = std::env::var(POSTGRES_URL_VAR) else {
            if std::env::var(REQUIRE_POSTGRES_VAR).as_deref() == Ok("1") {
                panic!("{POSTGRES_URL_VAR} is not set but {REQUIRE_POSTGRES_VAR}=1");
            }
            eprintln!("SKIPPED {test} on Postgres: {POSTGRES_URL_VAR} is not set");
            return None;
        };
        sweep_stale_schemas(&url).await;
        let schema = format!("vpt_{}_{}", unix_secs(), random_hex(12));
        let repo = SeaRepository::connect(&DatabaseOptions {
            url: url.clone(),
            schema: Some(schema.clone()),
            max_connections: Some(8),
            ..DatabaseOptions::new(url.clone())
        })
        .await
        .expect("Postgres test server is reachable");
        Some(Self::with_repo(Backend::Postgres, repo, Cleanup::Schema { url, schema }).await)
    }

    /// The database file, on SQLite.
    pub fn sqlite_file(&self) -> Option<&std::path::Path> {
        match &self.cleanup {
            Cleanup::File(path) => Some(path),
            Cleanup::Schema { .. } => None,
        }
    }

    /// Removes the database file or schema. Tests that panic leave theirs behind; the next
    /// Postgres test sweeps schemas older than an hour.
    pub async fn cleanup(self) {
        let Self { repo, cleanup, .. } = self;
        let _ = repo.connection().clone().close().await;
        match cleanup {
            Cleanup::File(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
            }
            Cleanup::Schema { url, schema } => {
                if let Ok(admin) = SeaRepository::connect(&DatabaseOptions::new(url)).await {
                    let _ = admin
                        .connection()
                        .execute_unprepared(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                        .await;
                    let _ = admin.connection().clone().close().await;
                }
            }
        }
    }

    /// What names this test's database and must never reach a response: the URL, and the
    /// SQLite file's path or the Postgres schema.
    pub fn database_names(&self) -> Vec<String> {
        match &self.cleanup {
            Cleanup::File(path) => vec![
                format!("sqlite://{}", path.display()),
                path.display().to_string(),
            ],
            Cleanup::Schema { url, schema } => vec![url.clone(), schema.clone()],
        }
    }

    /// The service of a second instance on the same database: its own connection pool, with
    /// the same clock, JWT settings and master key, as another process would have.
    pub async fn another_instance(&self) -> Arc<Service> {
        let options = match &self.cleanup {
            Cleanup::File(path) => {
                DatabaseOptions::new(format!("sqlite://{}?mode=rwc", path.display()))
            }
            Cleanup::Schema { url, schema } => DatabaseOptions {
                url: url.clone(),
                schema: Some(schema.clone()),
                max_connections: Some(8),
                ..DatabaseOptions::new(url.clone())
            },
        };
        let repo = SeaRepository::connect(&options)
            .await
            .expect("a second connection to the test database opens");
        let jwt = JwtVerifier::new(&JwtSettings {
            hs256_secret: Some(JWT_SECRET.to_owned()),
            ..Default::default()
        })
        .expect("test JWT settings are valid");
        Arc::new(
            Service::new(Arc::new(repo))
                .with_clock(self.clock.clone())
                .with_jwt(jwt)
                .with_cipher(voiceplane_core::crypto::CredentialCipher::new(&MASTER_KEY)),
        )
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
