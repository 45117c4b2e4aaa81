//! Test support for the voiceplane workspace: a [`TestContext`] that gives each test a fresh
//! database (a temporary SQLite file, or a fresh schema on the Postgres server named by
//! `VOICEPLANE_TEST_POSTGRES_URL`), a controllable clock, helpers to create organizations and
//! actors, a [`TestServer`] that serves the HTTP API on a real listener on port 0, and an
//! [`ApiCaller`] that sends it requests with an organization and a credential and checks the
//! JSON answers ([`read_json`]).
//!
//! [`db_tests!`] turns each `async fn name(ctx: &TestContext)` into two tests, `name::sqlite`
//! and `name::postgres`. Without `VOICEPLANE_TEST_POSTGRES_URL` the Postgres half prints that it
//! was skipped and passes, unless `VOICEPLANE_TEST_REQUIRE_POSTGRES=1` (set by CI) makes it fail.
//!
//! A test file of the suite (`tests/*.rs`) looks like this:
//!
//! ```no_run
//! use voiceplane_suite::{TestContext, TestServer, db_tests};
//!
//! async fn health_answers(ctx: &TestContext) {
//!     let org = ctx.bootstrap("Acme").await;
//!     let actor = ctx.actor(&org.organization_id, &org.api_key).await;
//!     assert_eq!(actor.organization_id, org.organization_id);
//!
//!     let server = TestServer::start(ctx).await;
//!     // … requests to server.url("/healthz") …
//!     server.stop().await;
//! }
//!
//! db_tests!(health_answers); // `health_answers::sqlite` and `health_answers::postgres`
//! # fn main() {}
//! ```

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rand::RngExt;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use sea_orm::ConnectionTrait;
use serde_json::Value;
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
        })
        .await
        .expect("Postgres test server is reachable");
        Some(Self::with_repo(Backend::Postgres, repo, Cleanup::Schema { url, schema }).await)
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

/// A reqwest client for talking to test servers. reqwest shares the workspace's rustls build,
/// which carries no default crypto provider: this installs ring's first, as the server does.
pub fn http_client() -> reqwest::Client {
    voiceplane_clients::install_crypto_provider();
    reqwest::Client::new()
}

/// The HTTP API of a [`TestContext`]'s service, served on `127.0.0.1:0`.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    /// Starts serving `ctx.service` with the default HTTP settings.
    pub async fn start(ctx: &TestContext) -> Self {
        Self::start_with(ctx, voiceplane_http::HttpConfig::default()).await
    }

    /// Starts serving `ctx.service` with `config`.
    pub async fn start_with(ctx: &TestContext, config: voiceplane_http::HttpConfig) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind port 0");
        let addr = listener.local_addr().expect("bound address");
        let api = voiceplane_http::Api::new(ctx.service.clone()).with_config(config);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(voiceplane_http::serve(listener, api, async move {
            let _ = rx.await;
        }));
        Self {
            base: format!("http://{addr}"),
            shutdown: Some(tx),
            task: Some(task),
        }
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Stops accepting, lets in-flight requests finish, and waits for the server to return.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await
                .expect("server task")
                .expect("server returns cleanly");
        }
    }
}

impl TestServer {
    /// Starts serving a copy of `ctx.service` changed by `configure`, e.g. with voice
    /// providers: `TestServer::start_configured(ctx, |s| s.with_voice_providers(p))`. The copy
    /// shares `ctx`'s database, clock and JWT settings, so keys made through `ctx` work.
    pub async fn start_configured(
        ctx: &TestContext,
        configure: impl FnOnce(Service) -> Service,
    ) -> Self {
        Self::start_at(ctx, voiceplane_http::HttpConfig::default(), |s, _| {
            configure(s)
        })
        .await
    }

    /// Like [`start_configured`](Self::start_configured), with the adapter's `config`, and
    /// with the server's own base URL given to `configure` (for `with_recording_urls`).
    pub async fn start_at(
        ctx: &TestContext,
        config: voiceplane_http::HttpConfig,
        configure: impl FnOnce(Service, &str) -> Service,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind port 0");
        let base = format!("http://{}", listener.local_addr().expect("bound address"));
        let service = Arc::new(configure(Service::clone(&ctx.service), &base));
        let api = voiceplane_http::Api::new(service).with_config(config);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(voiceplane_http::serve(listener, api, async move {
            let _ = rx.await;
        }));
        Self {
            base,
            shutdown: Some(tx),
            task: Some(task),
        }
    }
}

/// The names of a JSON object's fields.
pub fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().expect("an object").keys().cloned().collect()
}

/// A list of field names as a set, to compare with [`keys`].
pub fn fields(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Status and JSON body of an answer of the API, checked: every JSON answer says so in its
/// Content-Type, and an error body is exactly `{detail}` with a sentence.
pub async fn read_json(resp: reqwest::Response) -> (StatusCode, Value) {
    let status = resp.status();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let text = resp.text().await.expect("body");
    assert!(
        ct.starts_with("application/json"),
        "{status} has content-type {ct:?}: {text}"
    );
    let v: Value = serde_json::from_str(&text).expect("JSON body");
    if !status.is_success() {
        assert_eq!(
            keys(&v),
            fields(&["detail"]),
            "error body is {{detail}}: {v}"
        );
        assert!(
            v["detail"].as_str().is_some_and(|d| d.len() > 10),
            "detail is a sentence: {v}"
        );
    }
    (status, v)
}

/// A further check a test suite applies to every answer [`ApiCaller::send`] reads, after
/// those of [`read_json`]: status, headers and JSON body.
pub type AnswerCheck = fn(StatusCode, &HeaderMap, &Value);

/// A caller of the HTTP API: base URL, organization and credential, sent with every request.
#[derive(Clone, Debug)]
pub struct ApiCaller {
    /// The client (from [`http_client`]).
    pub http: reqwest::Client,
    /// `http://127.0.0.1:PORT`, to which request paths are appended.
    pub base: String,
    /// Sent as `X-Organization-Id` when set.
    pub org: Option<String>,
    /// Sent as `X-API-Key` when set.
    pub key: Option<String>,
    /// Sent as `Authorization: Bearer …` when set.
    pub bearer: Option<String>,
    /// Run by [`send`](Self::send) on every answer, when set.
    pub check: Option<AnswerCheck>,
}

impl ApiCaller {
    /// A caller of `server` for organization `org` with the API key `key`.
    pub fn new(server: &TestServer, org: &str, key: &str) -> Self {
        Self::at(&server.base, org, key)
    }

    /// A caller of the API served at `base` for organization `org` with the API key `key`.
    pub fn at(base: &str, org: &str, key: &str) -> Self {
        Self {
            http: http_client(),
            base: base.to_owned(),
            org: Some(org.to_owned()),
            key: Some(key.to_owned()),
            bearer: None,
            check: None,
        }
    }

    /// Bootstraps the organization `org_name` and returns a caller with its admin's key.
    pub async fn bootstrap(ctx: &TestContext, server: &TestServer, org_name: &str) -> Self {
        let boot = ctx.bootstrap(org_name).await;
        Self::new(server, &boot.organization_id, &boot.api_key)
    }

    /// The same caller with the API key `key` instead of its credential.
    pub fn with_key(&self, key: &str) -> Self {
        Self {
            key: Some(key.to_owned()),
            bearer: None,
            ..self.clone()
        }
    }

    /// The same caller with the bearer token `token` instead of its credential.
    pub fn with_bearer(&self, token: &str) -> Self {
        Self {
            key: None,
            bearer: Some(token.to_owned()),
            ..self.clone()
        }
    }

    /// A request to `base` + `path` with the organization and credential headers.
    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(org) = &self.org {
            req = req.header("X-Organization-Id", org);
        }
        if let Some(key) = &self.key {
            req = req.header("X-API-Key", key);
        }
        if let Some(token) = &self.bearer {
            req = req.bearer_auth(token);
        }
        req
    }

    /// Sends a request with `body` as JSON, if any; returns the answer as [`read_json`] reads
    /// it, after [`check`](Self::check).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self.request(method, path);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.expect("request is answered");
        let headers = resp.headers().clone();
        let (status, v) = read_json(resp).await;
        if let Some(check) = self.check {
            check(status, &headers, &v);
        }
        (status, v)
    }

    /// `GET path`.
    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(Method::GET, path, None).await
    }

    /// `POST path` with the JSON `body`.
    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(Method::POST, path, Some(body)).await
    }

    /// POST that must answer 201 with `success: true`; returns `data`.
    pub async fn create(&self, path: &str, body: Value) -> Value {
        let (status, v) = self.post(path, body).await;
        assert_eq!(status, StatusCode::CREATED, "POST {path}: {v}");
        assert_eq!(v["success"], true);
        v["data"].clone()
    }
}
