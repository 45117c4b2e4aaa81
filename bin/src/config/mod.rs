//! The server's configuration: built-in defaults, then a TOML file, then `VOICEPLANE_*`
//! environment variables (later wins), then [`Config::validate`].
//!
//! Every problem is reported as one [`ConfigError`] line naming the key, e.g.
//! `listen: "abc" is not a socket address (host:port)`. Secrets never appear in `Debug` output
//! or in error lines: they are held in [`Secret`], and database URLs are shown through
//! [`voiceplane_storage::redact_url`].
//!
//! Environment variables are read as raw strings (figment's own `Env` would turn `0123` into
//! the number 123 and `true` into a boolean), an empty variable counts as unset, and every key
//! `KEY` may instead be read from a file named by `KEY_FILE`
//! (`VOICEPLANE_AUTH__JWT_SECRET_FILE=/run/secrets/jwt`), with one trailing newline removed.
//!
//! The parts: [`ConfigError`] and its one-line wording (`error.rs`), [`Secret`] (`secret.rs`),
//! booleans and numbers that may arrive as strings (`lenient.rs`), the keys with their types and
//! defaults by concern (`settings.rs`: the whole and `database.*`, `storage.*`, `auth.*`,
//! `secrets.*`; `upstreams.rs`: `providers.*`, `telephony.*`; `knowledge.rs`: `embeddings.*`,
//! `knowledge.*`; `background.rs`: `events.*`, `audit.*`, `jobs.*`, `retention.*`,
//! `webhooks.*`; `web.rs`: `http.*`, `rate_limit.*`, `metrics.*`, `log.*`), loading and
//! validation (`load.rs`) and the environment layer (`env.rs`).

mod background;
mod env;
mod error;
mod knowledge;
mod lenient;
mod load;
mod secret;
mod settings;
mod upstreams;
mod web;

pub use background::{
    AuditSettings, EventsSettings, JobLanes, JobsSettings, RetentionSettings, WebhooksSettings,
};
pub use env::EnvLayer;
pub use error::ConfigError;
pub(crate) use error::one_line;
pub use knowledge::{EmbeddingsConfig, KnowledgeConfig};
pub use load::{LoadedConfig, config_file};
pub use secret::Secret;
pub use settings::{
    AuthConfig, Config, DatabaseConfig, SecretsConfig, StorageBackend, StorageConfig,
};
pub use upstreams::{
    ProviderOneConfig, ProviderTwoConfig, ProvidersConfig, RuntimeConfig, TelephonyConfig,
    TelephonyProviderConfig,
};
/// Default of `http.max_body_bytes`: the HTTP adapter's own default, 1 MiB.
pub use voiceplane_http::DEFAULT_MAX_BODY_BYTES;
pub use web::{
    ConsoleSettings, CorsOrigins, HttpSettings, LogFormat, LogSettings, MetricsSettings,
    RateLimitSettings,
};

/// Prefix of the environment variables read as configuration.
pub const ENV_PREFIX: &str = "VOICEPLANE_";
/// Separator of nested keys in environment variable names (`VOICEPLANE_DATABASE__URL`).
pub const ENV_SEPARATOR: &str = "__";
/// The environment variable naming the configuration file.
pub const CONFIG_FILE_ENV: &str = "VOICEPLANE_CONFIG";
/// The configuration file read when present and no other is named.
pub const DEFAULT_CONFIG_FILE: &str = "voiceplane.toml";

/// Every configuration key, dotted. Environment variables outside this list are ignored with
/// a warning.
pub const KEYS: &[&str] = &[
    "listen",
    "public_url",
    "database.url",
    "database.max_connections",
    "storage.backend",
    "storage.root",
    "storage.bucket",
    "storage.endpoint",
    "storage.region",
    "storage.access_key_id",
    "storage.secret_access_key",
    "storage.path_style",
    "auth.jwt_secret",
    "auth.jwt_public_key_pem",
    "auth.jwks_url",
    "auth.issuer",
    "auth.audience",
    "secrets.master_key",
    "providers.provider_one.base_url",
    "providers.provider_one.api_key",
    "providers.provider_one.version",
    "providers.provider_two.base_url",
    "providers.provider_two.api_key",
    "providers.deepgram.base_url",
    "providers.deepgram.api_key",
    "providers.openai.base_url",
    "providers.openai.api_key",
    "telephony.twilio.base_url",
    "telephony.telnyx.base_url",
    "telephony.ring_timeout_secs",
    "telephony.dial_attempts",
    "telephony.reconcile_secs",
    "telephony.dial_deadline_secs",
    "runtime.max_call_secs",
    "runtime.enabled",
    "runtime.max_calls",
    "runtime.silence_prompt_secs",
    "runtime.silence_end_secs",
    "runtime.stt_model",
    "http.max_body_bytes",
    "http.max_upload_bytes",
    "http.csv_read_timeout_secs",
    "http.cors_allowed_origins",
    "log.format",
    "http.trusted_proxies",
    "events.retention_days",
    "audit.retention_days",
    "webhooks.retry_schedule",
    "webhooks.allow_private_targets",
    "jobs.lease_secs",
    "jobs.lanes.telephony",
    "retention.sweep_interval_secs",
    "embeddings.base_url",
    "embeddings.api_key",
    "embeddings.model",
    "embeddings.batch_size",
    "embeddings.timeout_secs",
    "knowledge.max_bytes",
    "knowledge.max_pages",
    "knowledge.timeout_secs",
    "metrics.enabled",
    "console.enabled",
    "database.connect_timeout_ms",
    "database.acquire_timeout_secs",
    "rate_limit.per_second",
    "rate_limit.burst",
    "rate_limit.auth_failures_per_minute",
];

/// Keys whose values are secrets: never echoed, not even in type errors.
const SECRET_KEYS: &[&str] = &[
    "storage.secret_access_key",
    "auth.jwt_secret",
    "secrets.master_key",
    "providers.provider_one.api_key",
    "providers.provider_two.api_key",
    "providers.deepgram.api_key",
    "providers.openai.api_key",
    "embeddings.api_key",
];

/// The figment source name of [`EnvLayer`], by which errors recognise values that came from
/// the environment.
const ENV_SOURCE_NAME: &str = "environment variable";

/// Loading as the binary does, for the tests of every part.
#[cfg(test)]
#[allow(clippy::result_large_err)] // figment's `Jail` closures return `figment::Result`.
mod testing {
    use std::path::Path;

    use figment::Jail;

    use super::{Config, ConfigError, LoadedConfig};

    /// Loads as the binary does, inside a jail (its own folder and environment).
    pub(super) fn load(jail: &Jail, explicit: Option<&str>) -> figment::Result<LoadedConfig> {
        try_load(jail, explicit).map_err(|e| figment::Error::from(e.to_string()))
    }

    pub(super) fn try_load(
        jail: &Jail,
        explicit: Option<&str>,
    ) -> Result<LoadedConfig, ConfigError> {
        let _ = jail;
        Config::load(explicit.map(Path::new))
    }

    pub(super) fn load_err(jail: &Jail) -> String {
        match try_load(jail, None) {
            Ok(loaded) => panic!("expected an error, got {:?}", loaded.config),
            Err(e) => format!("config error: {e}"),
        }
    }
}
