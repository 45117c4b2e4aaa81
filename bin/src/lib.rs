//! # voiceplane (the server)
//!
//! Configuration ([`config`]), the command line ([`cli`]), logging ([`logging`]), wiring of
//! the [`voiceplane_core::Service`] over the SeaORM repository, and serving it with
//! [`voiceplane_http`], inside the HTTP layers of [`stack`], until SIGINT or SIGTERM. The binary's `main` only calls [`main_with`];
//! tests and embedders use [`build_service`] and [`serve`] directly:
//!
//! ```no_run
//! # async fn demo() -> Result<(), voiceplane_bin::Error> {
//! use voiceplane_bin::config::Config;
//! let config = Config { listen: "127.0.0.1:0".into(), ..Config::default() };
//! let listener = tokio::net::TcpListener::bind(config.listen_addr()?).await
//!     .map_err(|e| voiceplane_bin::Error::Runtime(e.to_string()))?;
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! let server = tokio::spawn(async move {
//!     voiceplane_bin::serve(&config, listener, async { let _ = stopped.await; }).await
//! });
//! // … send requests …
//! let _ = stop.send(());
//! # let _ = server.await; Ok(()) }
//! ```

pub mod cli;
pub mod config;
pub mod logging;
pub mod master_key;
pub mod metrics;
pub mod stack;
pub mod voice;

use std::fmt;
use std::future::Future;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use tokio::net::TcpListener;
use tracing::{info, warn};
use voiceplane_core::crypto::CredentialCipher;
use voiceplane_core::jobs::RunnerConfig;
use voiceplane_core::signing::LinkSigner;
use voiceplane_core::{BootstrapInput, BootstrapOutput, Service};
use voiceplane_storage::{SeaRepository, redact_url, scrub_url};

use crate::cli::{Cli, Command};
use crate::config::{Config, ConfigError, StorageBackend};
pub use crate::logging::{
    DEFAULT_LOG_FILTER, LogGuard, init_tracing, init_tracing_as, log_layer, log_subscriber,
};

/// Why a command failed.
#[derive(Debug)]
pub enum Error {
    /// The configuration is invalid (exit code 2).
    Config(ConfigError),
    /// Start-up or serving failed: database, storage folder, socket (exit code 1).
    Runtime(String),
}

impl Error {
    /// The process exit code for this error: 2 for configuration errors, else 1.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Config(_) => 2,
            Self::Runtime(_) => 1,
        }
    }

    /// The one line printed on stderr: `config error: …` or `error: …`.
    pub fn report_line(&self) -> String {
        match self {
            Self::Config(e) => format!("config error: {e}"),
            Self::Runtime(m) => format!("error: {m}"),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => e.fmt(f),
            Self::Runtime(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Self::Config(e)
    }
}

/// `message` with the database URL, and its password, replaced by their redacted forms, on one
/// line.
fn scrub(message: &str, database_url: &str) -> String {
    config::one_line(&scrub_url(message, database_url))
}

/// Connects to `database.url` and applies pending migrations.
pub async fn open_database(config: &Config) -> Result<SeaRepository, Error> {
    // The storage crate's messages name the (redacted) URL; scrub again in case a driver
    // error echoes it.
    let url = &config.database.url;
    let fail = |e: voiceplane_core::Error| Error::Runtime(scrub(&e.to_string(), url));
    let repo = SeaRepository::connect(&config.database_options())
        .await
        .map_err(fail)?;
    repo.migrate().await.map_err(fail)?;
    Ok(repo)
}

/// Applies pending migrations (`voiceplane migrate`).
pub async fn migrate(config: &Config) -> Result<(), Error> {
    open_database(config).await.map(drop)
}

/// Builds the service: creates `storage.root` for the `fs` backend and opens the object
/// storage (`storage.*`; nothing is contacted yet, `/readyz` does that), opens and migrates
/// the database, sets up JWT verification, and reads or generates the master key of the
/// embedded default (see [`master_key`]) when `secrets.master_key` is unset.
pub async fn build_service(config: &Config) -> Result<Arc<Service>, Error> {
    build(config).await.map(|(service, _)| service)
}

/// [`build_service`], and the repository under it (the metrics read its pool and queue).
async fn build(config: &Config) -> Result<(Arc<Service>, SeaRepository), Error> {
    if config.storage.backend == StorageBackend::Fs {
        let root = &config.storage.root;
        std::fs::create_dir_all(root).map_err(|e| {
            Error::Runtime(format!(
                "cannot create storage.root {}: {e}",
                root.display()
            ))
        })?;
    }
    let blobs =
        voiceplane_storage::OpendalBlobStore::new(config.storage.blob_config()).map_err(|e| {
            Error::Runtime(format!(
                "cannot open the {} object storage: {e}",
                config.storage.backend
            ))
        })?;
    let repo = open_database(config).await?;
    let (voices, telephony, embedder, jwks) = upstreams(config)?;
    let jwt = config.jwt_verifier(jwks)?;
    let master_key = match (config.secrets.master_key_bytes()?, config.master_key_file()) {
        (Some(key), _) => Some(key),
        (None, Some(path)) => Some(master_key::load_or_create(&path)?),
        (None, None) => None,
    };
    // Recording URLs must verify on every instance: derive their key from the shared master
    // key; without one, a per-process key works for a single instance until it restarts.
    let signer = match &master_key {
        Some(key) => LinkSigner::derived_from(key),
        None => {
            tracing::warn!(
                "secrets.master_key is not set: recording URLs are signed with a per-process key \
                 and stop working when this process restarts; integrations cannot be created"
            );
            let mut key = [0u8; 32];
            rand_key(&mut key);
            LinkSigner::new(&key)
        }
    };
    let policy = voiceplane_core::webhooks::TargetPolicy {
        allow_private: config.webhooks.allow_private_targets,
    };
    let mut service = Service::new(Arc::new(repo.clone()))
        .with_blobs(Arc::new(blobs))
        .with_jwt(jwt)
        .with_voice_providers(voices)
        .with_telephony(telephony.clone())
        .with_telephony_gateway(
            telephony,
            voiceplane_http::Api::telephony_webhooks(&config.public_url()),
        )
        .with_dial_settings(voiceplane_core::service::DialSettings {
            // Both bounded by the configuration's checks (600 and 10).
            ring_timeout_secs: u32::try_from(config.telephony.ring_timeout_secs).unwrap_or(600),
            attempts: u32::try_from(config.telephony.dial_attempts).unwrap_or(10),
            reconcile: secs(config.telephony.reconcile_secs),
            dial_deadline: secs(config.telephony.dial_deadline_secs),
            max_call: secs(config.runtime.max_call_secs),
            ..Default::default()
        })
        .with_recording_links(voiceplane_http::Api::recording_links(
            &config.public_url(),
            signer,
        ))
        .with_webhooks(
            Arc::new(
                voiceplane_clients::HttpWebhookSender::new(
                    voiceplane_clients::WebhookSenderSettings {
                        policy,
                        ..Default::default()
                    },
                )
                .map_err(|e| Error::Runtime(e.to_string()))?,
            ),
            policy,
            config.webhooks.schedule().unwrap_or_default(),
        )
        .with_analyzer(
            Arc::new(
                voiceplane_clients::HttpChatCompletions::new(
                    voiceplane_clients::AnalysisSettings {
                        policy,
                        ..Default::default()
                    },
                )
                .map_err(|e| Error::Runtime(e.to_string()))?,
            ),
            policy,
        )
        .with_resolver(
            Arc::new(voiceplane_clients::SystemResolver),
            voiceplane_core::webhooks::RESOLVE_TIMEOUT,
        )
        .with_event_retention(std::time::Duration::from_secs(
            u64::try_from(config.events.retention_days)
                .unwrap_or(u64::MAX)
                .saturating_mul(86_400),
        ))
        .with_audit_retention(std::time::Duration::from_secs(
            u64::try_from(config.audit.retention_days)
                .unwrap_or(u64::MAX)
                .saturating_mul(86_400),
        ))
        .with_retention_sweep_interval(std::time::Duration::from_secs(
            u64::try_from(config.retention.sweep_interval_secs).unwrap_or(u64::MAX),
        ));
    if let Some(key) = &master_key {
        service = service.with_cipher(CredentialCipher::new(key));
    }
    // Stream tokens must verify on every instance, as recording URLs must.
    service = service.with_runtime(voice::token_settings(
        config.runtime.enabled,
        master_key.as_ref(),
    ));
    let knowledge = &config.knowledge;
    service = service.with_document_processor(
        Arc::new(voiceplane_extract::Processor::new(
            voiceplane_extract::Limits {
                max_bytes: u64::try_from(knowledge.max_bytes).unwrap_or(u64::MAX),
                max_pages: u32::try_from(knowledge.max_pages).unwrap_or(u32::MAX),
                timeout: knowledge.timeout(),
            },
        )),
        knowledge.timeout(),
    );
    if let Some(embedder) = embedder {
        service = service.with_embedder(embedder);
    }
    Ok((Arc::new(service), repo))
}

/// Fills `key` from the operating system's random source.
fn rand_key(key: &mut [u8; 32]) {
    use rand::RngExt;
    let mut rng = rand::rng();
    for b in key.iter_mut() {
        *b = rng.random();
    }
}

/// What [`upstreams`] builds.
type Upstreams = (
    voiceplane_core::voice::VoiceProviders,
    Arc<voiceplane_clients::HttpTelephonyValidator>,
    Option<Arc<dyn voiceplane_core::knowledge::Embedder>>,
    Option<Arc<dyn voiceplane_core::auth::JwksSource>>,
);

/// The voice providers, the telephony probe, the embeddings provider and the JWKS source (the
/// last two when configured), sharing one HTTP connection pool. A voice provider without an API key is still built: its
/// operations answer 503 "… is not configured".
fn upstreams(config: &Config) -> Result<Upstreams, Error> {
    use voiceplane_clients as clients;
    let fail = |e: clients::BuildError| Error::Runtime(e.to_string());
    let http = clients::HttpClient::new(clients::HttpSettings::default()).map_err(fail)?;
    let one = &config.providers.provider_one;
    let two = &config.providers.provider_two;
    let key = |k: &Option<config::Secret>| k.as_ref().map(|s| s.expose().to_owned());
    let provider_one = clients::ProviderOne::new(
        http.clone(),
        clients::ProviderOneSettings {
            base_url: one.base_url.clone(),
            api_key: key(&one.api_key),
            version: one.version.clone(),
        },
    )
    .map_err(fail)?;
    let provider_two = Arc::new(
        clients::ProviderTwo::new(
            http.clone(),
            clients::ProviderTwoSettings {
                base_url: two.base_url.clone(),
                api_key: key(&two.api_key),
            },
        )
        .map_err(fail)?,
    );
    let embedder = embedder(config, &http)?
        .map(|e| Arc::new(e) as Arc<dyn voiceplane_core::knowledge::Embedder>);
    let jwks = config
        .auth
        .jwks_url
        .as_deref()
        .map(|url| clients::HttpJwksSource::new(http.clone(), url))
        .transpose()
        .map_err(fail)?
        .map(|s| Arc::new(s) as Arc<dyn voiceplane_core::auth::JwksSource>);
    let telephony = clients::HttpTelephonyValidator::new(
        http,
        clients::TelephonySettings {
            twilio_base_url: config.telephony.twilio.base_url.clone(),
            telnyx_base_url: config.telephony.telnyx.base_url.clone(),
        },
    )
    .map_err(fail)?;
    let voices = voiceplane_core::voice::VoiceProviders {
        provider_one: Some(Arc::new(provider_one)),
        provider_two: Some(provider_two.clone()),
        library: Some(provider_two),
    };
    Ok((voices, Arc::new(telephony), embedder, jwks))
}

/// The knowledge base's embeddings provider (`embeddings.*`) over the shared pool `http`;
/// `None` when `embeddings.base_url` is unset, and documents are indexed for lexical search
/// only.
pub fn embedder(
    config: &Config,
    http: &voiceplane_clients::HttpClient,
) -> Result<Option<voiceplane_clients::OpenAiEmbedder>, Error> {
    config
        .embeddings
        .client_settings()
        .map(|settings| voiceplane_clients::OpenAiEmbedder::new(http.clone(), settings))
        .transpose()
        .map_err(|e| Error::Runtime(e.to_string()))
}

/// The HTTP adapter over `service`, with the configured limits.
pub fn api(service: Arc<Service>, config: &Config) -> voiceplane_http::Api {
    let limit = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    voiceplane_http::Api::new(service)
        .with_config(voiceplane_http::HttpConfig {
            max_body_bytes: config.http.max_body_bytes,
            max_upload_bytes: config.http.max_upload_bytes as u64,
            csv_read_timeout: std::time::Duration::from_secs(
                config.http.csv_read_timeout_secs as u64,
            ),
        })
        .with_rate_limits(voiceplane_http::RateLimits {
            per_second: limit(config.rate_limit.per_second),
            burst: limit(config.rate_limit.burst),
            auth_failures_per_minute: limit(config.rate_limit.auth_failures_per_minute),
            // Checked when the configuration was loaded.
            trusted_proxies: config.http.trusted_proxies().unwrap_or_default(),
        })
}

/// Builds the service and serves it on `listener` until `shutdown` resolves, with its durable
/// job runner beside it; in-flight requests finish, and running jobs finish or are handed
/// back, before it returns.
pub async fn serve(
    config: &Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    let (service, repo) = build(config).await?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::Runtime(format!("cannot read the listening address: {e}")))?;
    service
        .jobs_schedule_recurring()
        .await
        .map_err(|e| Error::Runtime(scrub(&e.to_string(), &config.database.url)))?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let runner = service.job_runner(RunnerConfig {
        lease: secs(config.jobs.lease_secs),
        lanes: [(
            voiceplane_core::service::TELEPHONY_LANE.to_owned(),
            u32::try_from(config.jobs.lanes.telephony).unwrap_or(1000),
        )]
        .into(),
        ..RunnerConfig::default()
    });
    let job_kinds = runner.kinds();
    let jobs = tokio::spawn(runner.run(async move {
        let _ = stopped.await;
    }));
    let metrics = config
        .metrics
        .enabled
        .then(|| metrics::Metrics::install(repo, &job_kinds))
        .flatten();
    let upkeep = metrics.clone().map(|m| tokio::spawn(m.upkeep()));
    info!("listening on http://{addr}");
    // Jobs keep running while requests drain; the runner stops after them (or at once if
    // the server failed), sending or dropping `stop`.
    let mut api = api(service.clone(), config);
    if config.runtime.enabled {
        api = api.with_media(Arc::new(voice::runtime(service, config)?));
    }
    let app = stack::layered(
        metrics::WithMetrics::new(
            voiceplane_http::WithConsole::new(api, config.console.enabled),
            metrics,
        ),
        &config.http,
    )?;
    let served = voiceplane_http::serve_service(listener, app, shutdown)
        .await
        .map_err(|e| Error::Runtime(format!("server failed: {e}")));
    if let Some(upkeep) = upkeep {
        upkeep.abort();
    }
    drop(stop);
    if let Err(e) = jobs.await {
        tracing::error!(error = %e, "the job runner stopped abnormally");
    }
    served
}

/// Creates an organization with its first admin and API key (`voiceplane bootstrap`).
pub async fn bootstrap(config: &Config, input: BootstrapInput) -> Result<BootstrapOutput, Error> {
    let service = build_service(config).await?;
    service
        .organization_bootstrap(input)
        .await
        .map_err(|e| Error::Runtime(scrub(&e.to_string(), &config.database.url)))
}

/// Binds `listen` and serves until SIGINT or SIGTERM. A second signal during the graceful
/// drain stops at once, with an error.
async fn serve_until_signal(config: &Config) -> Result<(), Error> {
    let mut signals = Signals::install()?;
    let addr = config.listen_addr()?;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Runtime(format!("cannot listen on {addr}: {e}")))?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let mut stop_tx = Some(stop_tx);
    let serving = serve(config, listener, async move {
        // Resolves on the first signal (the sender is never dropped before that).
        let _ = stop_rx.await;
    });
    tokio::pin!(serving);
    loop {
        tokio::select! {
            result = &mut serving => {
                result?;
                info!("shut down cleanly");
                return Ok(());
            }
            name = signals.recv() => match stop_tx.take() {
                Some(tx) => {
                    info!("{name} received: shutting down after in-flight requests finish (send it again to stop now)");
                    let _ = tx.send(());
                }
                None => {
                    return Err(Error::Runtime(format!(
                        "{name} received during shutdown: stopped without waiting for in-flight requests"
                    )));
                }
            },
        }
    }
}

/// SIGINT and SIGTERM (Ctrl-C only where there are no Unix signals).
struct Signals {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> Result<Self, Error> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let fail =
                |e: std::io::Error| Error::Runtime(format!("cannot install signal handlers: {e}"));
            Ok(Self {
                int: signal(SignalKind::interrupt()).map_err(fail)?,
                term: signal(SignalKind::terminate()).map_err(fail)?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Self {})
        }
    }

    async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.int.recv() => "SIGINT",
                _ = self.term.recv() => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            match tokio::signal::ctrl_c().await {
                Ok(()) => "Ctrl-C",
                Err(_) => std::future::pending().await,
            }
        }
    }
}

/// Runs one parsed command line to completion and returns the exit code. Logging is set up
/// once the configuration is loaded, in its `log.format` (see [`init_tracing_as`]; a
/// subscriber installed before is kept). Errors are printed as one line on stderr.
pub async fn run(cli: Cli) -> ExitCode {
    if cli.command == Some(Command::Openapi) {
        // The document is built from the route table and the types alone: no configuration
        // is read, so it can be written out on a machine with nothing set up.
        return match print_json_line(voiceplane_http::openapi_document()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => report(&e),
        };
    }
    let loaded = match Config::load(cli.config.as_deref()) {
        Ok(loaded) => loaded,
        Err(e) => return report(&Error::Config(e)),
    };
    // Dropped when this returns, which writes out the last lines.
    let _log = init_tracing_as(loaded.config.log.format);
    for warning in &loaded.warnings {
        warn!("{warning}");
    }
    let config = loaded.config;
    if cli.command.is_none() || cli.command == Some(Command::Serve) {
        for warning in config.warnings() {
            warn!("{warning}");
        }
    }
    if let Some(file) = &loaded.file {
        info!(file = %file.display(), "configuration file read");
    }
    let result = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            info!(
                version = env!("CARGO_PKG_VERSION"),
                database = %redact_url(&config.database.url),
                storage = %config.storage.backend,
                public_url = %config.public_url(),
                jwt = config.auth.jwt_secret.is_some() || config.auth.jwt_public_key_pem.is_some(),
                "starting voiceplane"
            );
            serve_until_signal(&config).await
        }
        Command::Migrate => migrate(&config).await.map(|()| {
            eprintln!(
                "database is up to date: {}",
                redact_url(&config.database.url)
            );
        }),
        Command::Openapi => print_json_line(voiceplane_http::openapi_document()),
        Command::Bootstrap(args) => {
            let input = BootstrapInput {
                org_name: args.org_name,
                admin_email: args.admin_email,
                admin_name: args.admin_name,
            };
            match bootstrap(&config, input).await {
                Ok(out) => print_json_line(&out),
                Err(e) => Err(e),
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(&e),
    }
}

fn print_json_line(value: &impl serde::Serialize) -> Result<(), Error> {
    let json = serde_json::to_string(value)
        .map_err(|e| Error::Runtime(format!("cannot encode the output: {e}")))?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{json}")
        .and_then(|()| stdout.flush())
        .map_err(|e| Error::Runtime(format!("cannot write to stdout: {e}")))
}

fn report(error: &Error) -> ExitCode {
    eprintln!("{}", error.report_line());
    ExitCode::from(error.exit_code())
}

/// The whole program: parses `args`, runs the command on a multi-threaded
/// runtime and returns the exit code. `main` is `main_with(std::env::args_os())`.
pub fn main_with<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::Parser as _;
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // `--help` and `--version` print to stdout and succeed; usage errors exit 2.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(run(cli)),
        Err(e) => report(&Error::Runtime(format!(
            "cannot start the async runtime: {e}"
        ))),
    }
}

/// A configured number of seconds as a duration (the configuration's checks bound them).
fn secs(n: usize) -> std::time::Duration {
    std::time::Duration::from_secs(u64::try_from(n).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_hides_the_database_password() {
        let url = "postgres://app:hunter2@db:5432/vp";
        let line = scrub(&format!("could not connect to {url}\nsecond line"), url);
        assert_eq!(
            line,
            "could not connect to postgres://app:***@db:5432/vp second line"
        );
        assert_eq!(scrub("auth failed for hunter2", url), "auth failed for ***");
        let sqlite = "sqlite://voiceplane.db?mode=rwc";
        assert_eq!(
            scrub(&format!("at {sqlite}"), sqlite),
            format!("at {sqlite}")
        );
    }

    #[tokio::test]
    async fn the_embedder_follows_the_embeddings_settings() {
        use voiceplane_core::knowledge::Embedder as _;
        use wiremock::matchers::{body_json, header, method, path};
        use wiremock::{Mock, MockServer, ResponseTemplate};

        let http = voiceplane_clients::HttpClient::new(Default::default()).unwrap();
        assert!(embedder(&Config::default(), &http).unwrap().is_none());

        let server = MockServer::start().await;
        let vector = serde_json::json!({"data": [{"index": 0, "embedding": [0.5, 1.0]}]});
        for input in ["a", "b"] {
            Mock::given(method("POST"))
                .and(path("/v1/embeddings"))
                .and(header("authorization", "Bearer emb-key-1"))
                .and(body_json(
                    serde_json::json!({"model": "m", "input": [input]}),
                ))
                .respond_with(ResponseTemplate::new(200).set_body_json(&vector))
                .expect(1)
                .mount(&server)
                .await;
        }
        let mut config = Config::default();
        config.embeddings.base_url = Some(format!("{}/v1/", server.uri()));
        config.embeddings.api_key = Some(config::Secret::new("emb-key-1"));
        config.embeddings.model = "m".into();
        config.embeddings.batch_size = 1;
        let built = embedder(&config, &http).unwrap().expect("configured");
        let vectors = built.embed(&["a".into(), "b".into()]).await.unwrap();
        assert_eq!(vectors, [[0.5, 1.0], [0.5, 1.0]]);

        config.embeddings.api_key = Some(config::Secret::new("emb-key-1\nX"));
        let Err(err) = embedder(&config, &http) else {
            panic!("a key that cannot be a header is refused");
        };
        assert_eq!(
            err.report_line(),
            "error: embeddings.api_key: contains characters not allowed in an HTTP header"
        );
    }

    #[test]
    fn exit_codes() {
        assert_eq!(
            Error::Config(ConfigError::new("listen", "bad")).exit_code(),
            2
        );
        assert_eq!(Error::Runtime("x".into()).exit_code(), 1);
        assert_eq!(
            Error::Config(ConfigError::new("listen", "bad")).report_line(),
            "config error: listen: bad"
        );
    }
}
