//! Loading ([`Config::load`]: defaults, the TOML file, the environment), validation with one
//! [`ConfigError`] per problem, and the settings the other crates take, derived from a
//! [`Config`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use voiceplane_core::auth::{JwksSettings, JwksSource, JwtSettings, JwtVerifier};
use voiceplane_storage::{DatabaseOptions, redact_url};

use super::error::truncate;
use super::{
    CONFIG_FILE_ENV, Config, ConfigError, DEFAULT_CONFIG_FILE, EnvLayer, Secret, StorageBackend,
};

/// A loaded and validated configuration, with the file it came from and the warnings to log
/// once logging is set up.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// The configuration.
    pub config: Config,
    /// The TOML file read, if any.
    pub file: Option<PathBuf>,
    /// Unknown `VOICEPLANE_*` variables, one line each. (Settings that are valid but probably
    /// unintended are in [`Config::warnings`].)
    pub warnings: Vec<String>,
}

impl Config {
    /// Loads the configuration the way the binary does: defaults, then the TOML file
    /// (`config_path`, else `$VOICEPLANE_CONFIG`, else `./voiceplane.toml` when present), then
    /// `VOICEPLANE_*` variables; then validates it.
    pub fn load(config_path: Option<&Path>) -> Result<LoadedConfig, ConfigError> {
        let file = config_file(config_path)?;
        let env = EnvLayer::from_process_env()?;
        let warnings = env.warnings().to_vec();
        let config = Self::from_figment(&Self::figment(file.as_deref(), env))?;
        config.validate()?;
        Ok(LoadedConfig {
            config,
            file,
            warnings,
        })
    }

    /// The layered figment: defaults, then `file` (which must exist), then `env`.
    pub fn figment(file: Option<&Path>, env: EnvLayer) -> Figment {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(file) = file {
            figment = figment.merge(Toml::file_exact(file));
        }
        figment.merge(env)
    }

    /// Extracts a configuration from `figment`, without validating it.
    pub fn from_figment(figment: &Figment) -> Result<Self, ConfigError> {
        figment.extract().map_err(ConfigError::from_figment)
    }

    /// Checks every value; the first problem found is returned.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.listen_addr()?;
        if let Some(url) = &self.public_url {
            check_http_url("public_url", url)?;
        }

        let db = &self.database;
        let scheme_ok = ["sqlite:", "postgres://", "postgresql://"]
            .iter()
            .any(|s| db.url.starts_with(s));
        if !scheme_ok {
            return Err(ConfigError::new(
                "database.url",
                format!(
                    "\"{}\" is not a sqlite: or postgres:// URL",
                    truncate(&redact_url(&db.url), 200)
                ),
            ));
        }
        if db.max_connections == Some(0) {
            return Err(ConfigError::new(
                "database.max_connections",
                "must be at least 1",
            ));
        }
        if db.connect_timeout_ms == 0 {
            return Err(ConfigError::new(
                "database.connect_timeout_ms",
                "must be at least 1",
            ));
        }
        if db.acquire_timeout_secs == 0 {
            return Err(ConfigError::new(
                "database.acquire_timeout_secs",
                "must be at least 1",
            ));
        }

        let st = &self.storage;
        check_not_empty("storage.bucket", st.bucket.as_deref())?;
        check_not_empty("storage.region", st.region.as_deref())?;
        check_not_empty("storage.access_key_id", st.access_key_id.as_deref())?;
        check_not_empty(
            "storage.secret_access_key",
            st.secret_access_key.as_ref().map(Secret::expose),
        )?;
        if let Some(endpoint) = &st.endpoint {
            check_http_url("storage.endpoint", endpoint)?;
        }
        match st.backend {
            StorageBackend::Fs if st.root.as_os_str().is_empty() => {
                return Err(ConfigError::new(
                    "storage.root",
                    "must name a folder when storage.backend is fs",
                ));
            }
            StorageBackend::S3 if st.bucket.is_none() => {
                return Err(ConfigError::new(
                    "storage.bucket",
                    "is required when storage.backend is s3",
                ));
            }
            _ => {}
        }
        match (&st.access_key_id, &st.secret_access_key) {
            (Some(_), None) => {
                return Err(ConfigError::new(
                    "storage.secret_access_key",
                    "is required when storage.access_key_id is set",
                ));
            }
            (None, Some(_)) => {
                return Err(ConfigError::new(
                    "storage.access_key_id",
                    "is required when storage.secret_access_key is set",
                ));
            }
            _ => {}
        }

        let auth = &self.auth;
        if let Some(url) = &auth.jwks_url {
            check_http_url("auth.jwks_url", url)?;
            if auth.jwt_public_key_pem.is_some() {
                return Err(ConfigError::new(
                    "auth.jwks_url",
                    "cannot be combined with auth.jwt_public_key_pem; keep one (the JWKS serves the identity provider's keys itself)",
                ));
            }
        }
        check_not_empty(
            "auth.jwt_secret",
            auth.jwt_secret.as_ref().map(Secret::expose),
        )?;
        check_not_empty(
            "auth.jwt_public_key_pem",
            auth.jwt_public_key_pem.as_deref(),
        )?;
        check_not_empty("auth.issuer", auth.issuer.as_deref())?;
        check_not_empty("auth.audience", auth.audience.as_deref())?;
        self.jwt_verifier(None)?;

        check_not_empty(
            "secrets.master_key",
            self.secrets.master_key.as_ref().map(Secret::expose),
        )?;
        self.secrets.master_key_bytes()?;

        let p1 = &self.providers.provider_one;
        check_http_url("providers.provider_one.base_url", &p1.base_url)?;
        check_not_empty(
            "providers.provider_one.api_key",
            p1.api_key.as_ref().map(Secret::expose),
        )?;
        check_not_empty("providers.provider_one.version", Some(&p1.version))?;
        let p2 = &self.providers.provider_two;
        check_http_url("providers.provider_two.base_url", &p2.base_url)?;
        check_not_empty(
            "providers.provider_two.api_key",
            p2.api_key.as_ref().map(Secret::expose),
        )?;
        let keyed = [
            ("providers.deepgram", &self.providers.deepgram),
            ("providers.openai", &self.providers.openai),
        ];
        for (name, provider) in keyed {
            if let Some(url) = &provider.base_url {
                // Deepgram's live API is a WebSocket: its base may be given as ws(s) too.
                let as_http = url
                    .strip_prefix("wss://")
                    .map(|rest| format!("https://{rest}"))
                    .or_else(|| {
                        url.strip_prefix("ws://")
                            .map(|rest| format!("http://{rest}"))
                    })
                    .unwrap_or_else(|| url.clone());
                check_http_url(&format!("{name}.base_url"), &as_http)?;
            }
            check_not_empty(
                &format!("{name}.api_key"),
                provider.api_key.as_ref().map(Secret::expose),
            )?;
        }
        check_http_url("telephony.twilio.base_url", &self.telephony.twilio.base_url)?;
        check_http_url("telephony.telnyx.base_url", &self.telephony.telnyx.base_url)?;
        if !(1..=600).contains(&self.telephony.ring_timeout_secs) {
            return Err(ConfigError::new(
                "telephony.ring_timeout_secs",
                "must be between 1 and 600 seconds",
            ));
        }
        if !(1..=10).contains(&self.telephony.dial_attempts) {
            return Err(ConfigError::new(
                "telephony.dial_attempts",
                "must be between 1 and 10",
            ));
        }
        for (key, value, range) in [
            (
                "telephony.reconcile_secs",
                self.telephony.reconcile_secs,
                10..=86_400,
            ),
            (
                "telephony.dial_deadline_secs",
                self.telephony.dial_deadline_secs,
                5..=86_400,
            ),
            (
                "runtime.max_call_secs",
                self.runtime.max_call_secs,
                10..=86_400,
            ),
            ("runtime.max_calls", self.runtime.max_calls, 1..=100_000),
            (
                "runtime.silence_prompt_secs",
                self.runtime.silence_prompt_secs,
                1..=3600,
            ),
            (
                "runtime.silence_end_secs",
                self.runtime.silence_end_secs,
                1..=3600,
            ),
            ("jobs.lanes.telephony", self.jobs.lanes.telephony, 1..=1000),
        ] {
            if !range.contains(&value) {
                return Err(ConfigError::new(
                    key,
                    format!("must be between {} and {}", range.start(), range.end()),
                ));
            }
        }

        if self.http.max_body_bytes == 0 {
            return Err(ConfigError::new(
                "http.max_body_bytes",
                "must be at least 1",
            ));
        }
        if self.http.max_upload_bytes == 0 {
            return Err(ConfigError::new(
                "http.max_upload_bytes",
                "must be at least 1",
            ));
        }
        if self.http.csv_read_timeout_secs == 0 {
            return Err(ConfigError::new(
                "http.csv_read_timeout_secs",
                "must be at least 1",
            ));
        }
        self.http.cors_origins()?;
        self.http
            .trusted_proxies()
            .map_err(|e| ConfigError::new("http.trusted_proxies", &e))?;
        for (key, value) in [
            ("rate_limit.per_second", self.rate_limit.per_second),
            ("rate_limit.burst", self.rate_limit.burst),
            (
                "rate_limit.auth_failures_per_minute",
                self.rate_limit.auth_failures_per_minute,
            ),
        ] {
            if u32::try_from(value).is_err() {
                return Err(ConfigError::new(key, "must be at most 4294967295"));
            }
        }
        if self.rate_limit.per_second > 0 && self.rate_limit.burst == 0 {
            return Err(ConfigError::new(
                "rate_limit.burst",
                "must be at least 1 while rate_limit.per_second is set",
            ));
        }
        if self.webhooks.schedule().is_none_or(|s| s.len() > 100) {
            return Err(ConfigError::new(
                "webhooks.retry_schedule",
                "must be up to 100 whole numbers of seconds separated by commas, e.g. 5,300,1800",
            ));
        }
        if self.jobs.lease_secs == 0 {
            return Err(ConfigError::new("jobs.lease_secs", "must be at least 1"));
        }
        if self.retention.sweep_interval_secs == 0 {
            return Err(ConfigError::new(
                "retention.sweep_interval_secs",
                "must be at least 1",
            ));
        }
        if self.events.retention_days == 0 {
            return Err(ConfigError::new(
                "events.retention_days",
                "must be at least 1",
            ));
        }
        if self.audit.retention_days == 0 {
            return Err(ConfigError::new(
                "audit.retention_days",
                "must be at least 1",
            ));
        }
        self.validate_knowledge()
    }

    /// `embeddings.*` and `knowledge.*`.
    fn validate_knowledge(&self) -> Result<(), ConfigError> {
        let em = &self.embeddings;
        check_not_empty("embeddings.base_url", em.base_url.as_deref())?;
        if let Some(url) = &em.base_url {
            check_http_url("embeddings.base_url", url)?;
        }
        check_not_empty(
            "embeddings.api_key",
            em.api_key.as_ref().map(Secret::expose),
        )?;
        check_not_empty("embeddings.model", Some(&em.model))?;
        if !(1..=2048).contains(&em.batch_size) {
            return Err(ConfigError::new(
                "embeddings.batch_size",
                "must be between 1 and 2048",
            ));
        }
        let at_least_one = [
            ("embeddings.timeout_secs", em.timeout_secs),
            ("knowledge.max_bytes", self.knowledge.max_bytes),
            ("knowledge.max_pages", self.knowledge.max_pages),
            ("knowledge.timeout_secs", self.knowledge.timeout_secs),
        ];
        for (key, value) in at_least_one {
            if value == 0 {
                return Err(ConfigError::new(key, "must be at least 1"));
            }
        }
        Ok(())
    }

    /// Allowed but probably unintended settings, one line each.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.public_url.is_none() && self.listen_addr().is_ok_and(|a| a.ip().is_unspecified()) {
            out.push(format!(
                "public_url is not set, so URLs handed out (recordings) start with {}; set public_url to the address clients use",
                self.public_url()
            ));
        }
        if self.storage.backend == StorageBackend::Memory {
            out.push("storage.backend is memory: stored recordings and files are lost when the process stops".to_owned());
        }
        let has_key = self.auth.jwt_secret.is_some() || self.auth.jwt_public_key_pem.is_some();
        if !has_key && (self.auth.issuer.is_some() || self.auth.audience.is_some()) {
            out.push("auth.issuer and auth.audience have no effect without auth.jwt_secret or auth.jwt_public_key_pem".to_owned());
        }
        if self
            .auth
            .jwt_secret
            .as_ref()
            .is_some_and(|s| s.expose().len() < 32)
        {
            out.push(
                "auth.jwt_secret is shorter than 32 bytes; HS256 secrets should be at least 32 random bytes"
                    .to_owned(),
            );
        }
        if self.embeddings.base_url.is_none() && self.embeddings.api_key.is_some() {
            out.push("embeddings.api_key has no effect without embeddings.base_url: documents are indexed for lexical search only".to_owned());
        }
        if self.secrets.master_key.is_none() && self.master_key_file().is_none() {
            out.push("secrets.master_key is not set: integrations with credentials cannot be stored and recording links stop working on restart (generate one with `openssl rand -base64 32`)".to_owned());
        }
        out
    }

    /// `listen` as a socket address.
    pub fn listen_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.listen.trim().parse().map_err(|_| {
            ConfigError::new(
                "listen",
                format!(
                    "\"{}\" is not a socket address (host:port)",
                    truncate(&self.listen, 100)
                ),
            )
        })
    }

    /// `public_url` without a trailing slash, or `http://<listen>` when unset.
    pub fn public_url(&self) -> String {
        match &self.public_url {
            Some(url) => url.trim().trim_end_matches('/').to_owned(),
            None => format!("http://{}", self.listen.trim()),
        }
    }

    /// Where the master key is kept when `secrets.master_key` is unset: `<storage.root>/.master-key`
    /// on the `fs` backend with SQLite, one instance's own disk. `None` otherwise: with `s3`,
    /// `memory` or Postgres several instances (or none) would share the key, so it must be set.
    pub fn master_key_file(&self) -> Option<PathBuf> {
        let single_box = self.secrets.master_key.is_none()
            && self.storage.backend == StorageBackend::Fs
            && self.database.url.trim_start().starts_with("sqlite:");
        single_box.then(|| self.storage.root.join(crate::master_key::FILE_NAME))
    }

    /// The storage crate's database options.
    pub fn database_options(&self) -> DatabaseOptions {
        DatabaseOptions {
            url: self.database.url.clone(),
            schema: None,
            max_connections: self.database.max_connections,
            connect_timeout: Duration::from_millis(
                u64::try_from(self.database.connect_timeout_ms).unwrap_or(u64::MAX),
            ),
            acquire_timeout: Duration::from_secs(
                u64::try_from(self.database.acquire_timeout_secs).unwrap_or(u64::MAX),
            ),
        }
    }

    /// The core's JWT settings, without the JWKS source ([`Config::jwt_verifier`] adds it).
    pub fn jwt_settings(&self) -> JwtSettings {
        JwtSettings {
            hs256_secret: self.auth.jwt_secret.as_ref().map(|s| s.expose().to_owned()),
            public_key_pem: self.auth.jwt_public_key_pem.as_ref().map(|pem| {
                if pem.contains('\n') {
                    pem.clone()
                } else {
                    pem.replace("\\n", "\n")
                }
            }),
            issuer: self.auth.issuer.clone(),
            audience: self.auth.audience.clone(),
            jwks: None,
        }
    }

    /// The JWT verifier, checking RS256 and ES256 tokens against the keys `jwks` fetches
    /// from `auth.jwks_url` when given; `Ok(None)` when no key is configured.
    pub fn jwt_verifier(
        &self,
        jwks: Option<Arc<dyn JwksSource>>,
    ) -> Result<Option<JwtVerifier>, ConfigError> {
        let settings = JwtSettings {
            jwks: jwks.map(JwksSettings::new),
            ..self.jwt_settings()
        };
        JwtVerifier::new(&settings).map_err(|e| {
            let message = e.to_string();
            for key in ["auth.jwt_public_key_pem", "auth.jwks_url"] {
                if let Some(rest) = message.strip_prefix(key) {
                    return ConfigError::new(key, rest.trim_start());
                }
            }
            ConfigError::new("auth.jwt_public_key_pem", message)
        })
    }
}

fn check_not_empty(key: &str, value: Option<&str>) -> Result<(), ConfigError> {
    match value {
        Some(v) if v.trim().is_empty() => Err(ConfigError::new(
            key,
            "is empty; remove it or give it a value",
        )),
        _ => Ok(()),
    }
}

fn check_http_url(key: &str, value: &str) -> Result<(), ConfigError> {
    let rest = value
        .strip_prefix("https://")
        .or_else(|| value.strip_prefix("http://"));
    match rest {
        Some(rest)
            if !rest.is_empty()
                && !rest.starts_with('/')
                && !value.chars().any(char::is_whitespace) =>
        {
            Ok(())
        }
        _ => Err(ConfigError::new(
            key,
            format!(
                "\"{}\" is not an http:// or https:// URL",
                truncate(value, 200)
            ),
        )),
    }
}

/// The TOML file to read: `explicit` (must exist), else `$VOICEPLANE_CONFIG` (must exist),
/// else `./voiceplane.toml` when it exists, else none.
pub fn config_file(explicit: Option<&Path>) -> Result<Option<PathBuf>, ConfigError> {
    if let Some(path) = explicit {
        return existing_file("--config", path).map(Some);
    }
    if let Some(path) = std::env::var_os(CONFIG_FILE_ENV).filter(|p| !p.is_empty()) {
        return existing_file(CONFIG_FILE_ENV, Path::new(&path)).map(Some);
    }
    let default = Path::new(DEFAULT_CONFIG_FILE);
    Ok(default.is_file().then(|| default.to_path_buf()))
}

fn existing_file(source: &str, path: &Path) -> Result<PathBuf, ConfigError> {
    if path.is_file() {
        Ok(path.to_path_buf())
    } else if path.exists() {
        Err(ConfigError::new(
            source,
            format!("{} is not a file", path.display()),
        ))
    } else {
        Err(ConfigError::new(
            source,
            format!("{} does not exist", path.display()),
        ))
    }
}

#[cfg(test)]
#[allow(clippy::result_large_err)] // figment's `Jail` closures return `figment::Result`.
mod tests {
    use std::path::PathBuf;

    use figment::Jail;

    use super::super::testing::{load, load_err, try_load};
    use super::super::{Config, Secret, StorageBackend};

    #[test]
    fn toml_overrides_defaults() {
        Jail::expect_with(|jail| {
            jail.create_file(
                "voiceplane.toml",
                r#"
                listen = "0.0.0.0:9000"
                public_url = "https://vp.example.com/"
                [database]
                url = "postgres://app:pw@db/vp"
                max_connections = 7
                [storage]
                backend = "memory"
                [http]
                max_body_bytes = 2048
                [providers.provider_one]
                version = "2025-01-01"
                "#,
            )?;
            let loaded = load(jail, None)?;
            let c = loaded.config;
            assert_eq!(loaded.file, Some(PathBuf::from("voiceplane.toml")));
            assert_eq!(c.listen, "0.0.0.0:9000");
            assert_eq!(c.public_url(), "https://vp.example.com");
            assert_eq!(c.database.url, "postgres://app:pw@db/vp");
            assert_eq!(c.database.max_connections, Some(7));
            assert_eq!(c.storage.backend, StorageBackend::Memory);
            assert_eq!(c.http.max_body_bytes, 2048);
            assert_eq!(c.providers.provider_one.version, "2025-01-01");
            // Untouched keys keep their defaults.
            assert_eq!(c.providers.provider_one.base_url, "https://api.cartesia.ai");
            assert_eq!(c.storage.root, PathBuf::from("./voiceplane-data"));
            Ok(())
        });
    }

    #[test]
    fn a_missing_explicit_file_is_an_error() {
        Jail::expect_with(|jail| {
            let err = try_load(jail, Some("nope.toml")).map(|_| ()).unwrap_err();
            assert_eq!(err.to_string(), "--config: nope.toml does not exist");
            jail.set_env("VOICEPLANE_CONFIG", "gone.toml");
            let err = try_load(jail, None).map(|_| ()).unwrap_err();
            assert_eq!(
                err.to_string(),
                "VOICEPLANE_CONFIG: gone.toml does not exist"
            );
            Ok(())
        });
    }

    #[test]
    fn a_bad_listen_names_the_key_on_one_line() {
        Jail::expect_with(|jail| {
            jail.set_env("VOICEPLANE_LISTEN", "abc");
            let line = load_err(jail);
            assert_eq!(
                line,
                r#"config error: listen: "abc" is not a socket address (host:port)"#
            );
            Ok(())
        });
    }

    #[test]
    fn validation_errors_name_their_key() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "VOICEPLANE_PUBLIC_URL",
                "ftp://x",
                r#"public_url: "ftp://x" is not an http:// or https:// URL"#,
            ),
            (
                "VOICEPLANE_STORAGE__BACKEND",
                "s3",
                "storage.bucket: is required when storage.backend is s3",
            ),
            (
                "VOICEPLANE_AUTH__JWKS_URL",
                "ftp://idp/jwks",
                r#"auth.jwks_url: "ftp://idp/jwks" is not an http:// or https:// URL"#,
            ),
            (
                "VOICEPLANE_AUTH__JWT_PUBLIC_KEY_PEM",
                "not a pem",
                "auth.jwt_public_key_pem: is neither an RSA nor an EC (P-256) public key in PEM form",
            ),
            (
                "VOICEPLANE_SECRETS__MASTER_KEY",
                "c2hvcnQ=",
                "secrets.master_key: decodes to 5 bytes, expected 32 (e.g. from `openssl rand -base64 32`)",
            ),
            (
                "VOICEPLANE_SECRETS__MASTER_KEY",
                "!!not base64!!",
                "secrets.master_key: is not valid base64 (expected the base64 of 32 random bytes, e.g. from `openssl rand -base64 32`)",
            ),
            (
                "VOICEPLANE_DATABASE__URL",
                "mysql://u:hunter2@h/db",
                r#"database.url: "mysql://u:***@h/db" is not a sqlite: or postgres:// URL"#,
            ),
            (
                "VOICEPLANE_DATABASE__MAX_CONNECTIONS",
                "0",
                "database.max_connections: must be at least 1",
            ),
            (
                "VOICEPLANE_HTTP__MAX_BODY_BYTES",
                "0",
                "http.max_body_bytes: must be at least 1",
            ),
            (
                "VOICEPLANE_HTTP__TRUSTED_PROXIES",
                "10.0.0.0/8, proxy.internal",
                "http.trusted_proxies: `proxy.internal` is not an IP address or CIDR block (e.g. 10.0.0.0/8)",
            ),
            (
                "VOICEPLANE_RATE_LIMIT__BURST",
                "0",
                "rate_limit.burst: must be at least 1 while rate_limit.per_second is set",
            ),
            (
                "VOICEPLANE_PROVIDERS__PROVIDER_ONE__BASE_URL",
                "api.cartesia.ai",
                r#"providers.provider_one.base_url: "api.cartesia.ai" is not an http:// or https:// URL"#,
            ),
            (
                "VOICEPLANE_STORAGE__ACCESS_KEY_ID",
                "AK",
                "storage.secret_access_key: is required when storage.access_key_id is set",
            ),
            (
                "VOICEPLANE_EMBEDDINGS__BASE_URL",
                "api.openai.com/v1",
                r#"embeddings.base_url: "api.openai.com/v1" is not an http:// or https:// URL"#,
            ),
            (
                "VOICEPLANE_EMBEDDINGS__MODEL",
                "  ",
                "embeddings.model: is empty; remove it or give it a value",
            ),
            (
                "VOICEPLANE_EMBEDDINGS__BATCH_SIZE",
                "0",
                "embeddings.batch_size: must be between 1 and 2048",
            ),
            (
                "VOICEPLANE_EMBEDDINGS__BATCH_SIZE",
                "2049",
                "embeddings.batch_size: must be between 1 and 2048",
            ),
            (
                "VOICEPLANE_EMBEDDINGS__TIMEOUT_SECS",
                "0",
                "embeddings.timeout_secs: must be at least 1",
            ),
            (
                "VOICEPLANE_KNOWLEDGE__MAX_BYTES",
                "0",
                "knowledge.max_bytes: must be at least 1",
            ),
            (
                "VOICEPLANE_KNOWLEDGE__MAX_PAGES",
                "0",
                "knowledge.max_pages: must be at least 1",
            ),
            (
                "VOICEPLANE_KNOWLEDGE__TIMEOUT_SECS",
                "0",
                "knowledge.timeout_secs: must be at least 1",
            ),
        ];
        for (var, value, expected) in cases {
            Jail::expect_with(|jail| {
                jail.set_env(var, value);
                assert_eq!(load_err(jail), format!("config error: {expected}"));
                Ok(())
            });
        }
    }

    #[test]
    fn a_pem_on_one_line_with_escaped_newlines_is_accepted() {
        Jail::expect_with(|jail| {
            jail.set_env(
                "VOICEPLANE_AUTH__JWT_PUBLIC_KEY_PEM",
                r"-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEBVAhqBnYweIzIaYtDXW4Dk9fDtVp\nWA/KuKqudyeMAS5FXgVlWHxOFWsXuQq5L6CUKKsVLDs2TRdBCIawgRME1g==\n-----END PUBLIC KEY-----\n",
            );
            let c = load(jail, None)?.config;
            assert!(c.jwt_verifier(None).map_err(|e| e.to_string())?.is_some());
            Ok(())
        });
    }

    #[test]
    fn only_one_box_on_disk_generates_its_master_key() {
        let warned = |c: &Config| {
            c.warnings()
                .iter()
                .any(|w| w.contains("secrets.master_key"))
        };
        let c = Config::default();
        let file = c.master_key_file().map(|p| p.display().to_string());
        assert_eq!(file.as_deref(), Some("./voiceplane-data/.master-key"));
        assert!(!warned(&c));
        let mut set = Config::default();
        set.secrets.master_key = Some(Secret::new("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="));
        assert_eq!(set.master_key_file(), None);
        assert!(!warned(&set));
        let mut postgres = Config::default();
        postgres.database.url = "postgres://app@db/vp".into();
        let mut s3 = Config::default();
        s3.storage.backend = StorageBackend::S3;
        let mut memory = Config::default();
        memory.storage.backend = StorageBackend::Memory;
        for c in [postgres, s3, memory] {
            assert_eq!(c.master_key_file(), None, "{c:?}");
            assert!(warned(&c), "{c:?}");
        }
    }
}
