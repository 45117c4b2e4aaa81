//! The configuration as a whole ([`Config`]) and the keys of the server's own resources:
//! `database.*`, `storage.*`, `auth.*` and `secrets.*`, each field documented with its dotted
//! key, with the built-in defaults. The other sections are in the modules beside this one.

use std::fmt;
use std::path::PathBuf;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use voiceplane_storage::{BlobConfig, S3Settings, redact_url};

use super::lenient::{deserialize_bool, deserialize_opt_u32, deserialize_usize};
use super::{
    AuditSettings, ConfigError, ConsoleSettings, EmbeddingsConfig, EventsSettings, HttpSettings,
    JobsSettings, KnowledgeConfig, LogSettings, MetricsSettings, ProvidersConfig,
    RateLimitSettings, RetentionSettings, RuntimeConfig, Secret, TelephonyConfig, WebhooksSettings,
};

/// The whole configuration. Field names are the dotted keys of [`KEYS`](super::KEYS), which
/// TOML files and `VOICEPLANE_*` variables already name: renaming a field breaks deployments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// `listen`: the socket address to serve on.
    pub listen: String,
    /// `public_url`: base of the URLs the server hands out; `http://<listen>` when unset.
    pub public_url: Option<String>,
    /// `database.*`.
    pub database: DatabaseConfig,
    /// `storage.*`: where recordings and files go.
    pub storage: StorageConfig,
    /// `auth.*`: how bearer tokens are verified.
    pub auth: AuthConfig,
    /// `secrets.*`.
    pub secrets: SecretsConfig,
    /// `providers.*`: the voice providers.
    pub providers: ProvidersConfig,
    /// `telephony.*`: the telephony providers probed when validating integrations.
    pub telephony: TelephonyConfig,
    /// `runtime.*`: the calls the agents run.
    pub runtime: RuntimeConfig,
    /// `http.*`: limits of the HTTP adapter.
    pub http: HttpSettings,
    /// `events.*`: how long events are kept.
    pub events: EventsSettings,
    /// `audit.*`: how long the audit log is kept.
    pub audit: AuditSettings,
    /// `webhooks.*`: how events are delivered.
    pub webhooks: WebhooksSettings,
    /// `jobs.*`: the durable job runner.
    pub jobs: JobsSettings,
    /// `retention.*`: how often organizations' retention policies are applied.
    pub retention: RetentionSettings,
    /// `embeddings.*`: the optional embeddings provider of the knowledge base.
    pub embeddings: EmbeddingsConfig,
    /// `knowledge.*`: the bounds of processing one knowledge-base document.
    pub knowledge: KnowledgeConfig,
    /// `log.*`: how the server logs.
    pub log: LogSettings,
    /// `metrics.*`: `GET /metrics`.
    pub metrics: MetricsSettings,
    /// `console.*`: the web console under `/console/`.
    pub console: ConsoleSettings,
    /// `rate_limit.*`: requests per credential, failed authentications per client IP.
    pub rate_limit: RateLimitSettings,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".to_owned(),
            public_url: None,
            database: DatabaseConfig::default(),
            storage: StorageConfig::default(),
            auth: AuthConfig::default(),
            secrets: SecretsConfig::default(),
            providers: ProvidersConfig::default(),
            telephony: TelephonyConfig::default(),
            runtime: RuntimeConfig::default(),
            http: HttpSettings::default(),
            events: EventsSettings::default(),
            audit: AuditSettings::default(),
            webhooks: WebhooksSettings::default(),
            jobs: JobsSettings::default(),
            retention: RetentionSettings::default(),
            embeddings: EmbeddingsConfig::default(),
            knowledge: KnowledgeConfig::default(),
            log: LogSettings::default(),
            metrics: MetricsSettings::default(),
            console: ConsoleSettings::default(),
            rate_limit: RateLimitSettings::default(),
        }
    }
}

/// `database.*`. `Debug` hides the password in the URL.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseConfig {
    /// `database.url`: `sqlite://path?mode=rwc`, `sqlite::memory:` or
    /// `postgres://user:password@host/db`.
    pub url: String,
    /// `database.max_connections`: pool size; the storage crate picks one when unset.
    #[serde(deserialize_with = "deserialize_opt_u32")]
    pub max_connections: Option<u32>,
    /// `database.connect_timeout_ms`: Postgres: how long a request waits for a connection
    /// before, if no other statement got one meanwhile, the database counts as unreachable
    /// and the request gets 503.
    #[serde(deserialize_with = "deserialize_usize")]
    pub connect_timeout_ms: usize,
    /// `database.acquire_timeout_secs`: the longest wait for a connection while the pool is
    /// busy and the database answers.
    #[serde(deserialize_with = "deserialize_usize")]
    pub acquire_timeout_secs: usize,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self {
            url: "sqlite://voiceplane.db?mode=rwc".to_owned(),
            max_connections: None,
            connect_timeout_ms: voiceplane_storage::DEFAULT_CONNECT_TIMEOUT.as_millis() as usize,
            acquire_timeout_secs: voiceplane_storage::DEFAULT_ACQUIRE_TIMEOUT.as_secs() as usize,
        }
    }
}

impl fmt::Debug for DatabaseConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatabaseConfig")
            .field("url", &redact_url(&self.url))
            .field("max_connections", &self.max_connections)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field("acquire_timeout_secs", &self.acquire_timeout_secs)
            .finish()
    }
}

/// `storage.backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageBackend {
    /// Files under `storage.root`.
    #[default]
    Fs,
    /// In memory; lost when the process stops.
    Memory,
    /// An S3-compatible bucket.
    S3,
}

impl fmt::Display for StorageBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Fs => "fs",
            Self::Memory => "memory",
            Self::S3 => "s3",
        })
    }
}

/// `storage.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// `storage.backend`: `fs`, `memory` or `s3`.
    pub backend: StorageBackend,
    /// `storage.root`: the folder of the `fs` backend, created on first run.
    pub root: PathBuf,
    /// `storage.bucket`: the bucket of the `s3` backend (required for it).
    pub bucket: Option<String>,
    /// `storage.endpoint`: the S3 endpoint, for S3-compatible servers.
    pub endpoint: Option<String>,
    /// `storage.region`: the S3 region.
    pub region: Option<String>,
    /// `storage.access_key_id`: the S3 access key id.
    pub access_key_id: Option<String>,
    /// `storage.secret_access_key`: the S3 secret key.
    pub secret_access_key: Option<Secret>,
    /// `storage.path_style`: path-style S3 URLs (`https://endpoint/bucket/key`, what most
    /// S3-compatible servers want) rather than virtual-host style
    /// (`https://bucket.endpoint/key`). Default `true`.
    #[serde(deserialize_with = "deserialize_bool")]
    pub path_style: bool,
}

impl StorageConfig {
    /// The storage crate's blob store settings for the configured backend.
    pub fn blob_config(&self) -> BlobConfig {
        match self.backend {
            StorageBackend::Fs => BlobConfig::Fs {
                root: self.root.clone(),
            },
            StorageBackend::Memory => BlobConfig::Memory,
            StorageBackend::S3 => BlobConfig::S3(S3Settings {
                bucket: self.bucket.clone().unwrap_or_default(),
                endpoint: self.endpoint.clone(),
                region: self.region.clone(),
                access_key_id: self.access_key_id.clone(),
                secret_access_key: self
                    .secret_access_key
                    .as_ref()
                    .map(|s| s.expose().to_owned()),
                path_style: self.path_style,
            }),
        }
    }
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            backend: StorageBackend::Fs,
            root: PathBuf::from("./voiceplane-data"),
            bucket: None,
            endpoint: None,
            region: None,
            access_key_id: None,
            secret_access_key: None,
            path_style: true,
        }
    }
}

/// `auth.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// `auth.jwt_secret`: HS256 shared secret.
    pub jwt_secret: Option<Secret>,
    /// `auth.jwt_public_key_pem`: PEM public key for RS256 or ES256. A literal `\n` in it is
    /// read as a newline, so that a PEM fits on one environment variable line.
    pub jwt_public_key_pem: Option<String>,
    /// `auth.jwks_url`: the identity provider's JWKS (an http(s) URL); RS256 and ES256 tokens
    /// are checked against its keys by `kid`. Excludes `auth.jwt_public_key_pem`; combines
    /// with `auth.jwt_secret` (HS256 tokens).
    pub jwks_url: Option<String>,
    /// `auth.issuer`: required `iss` claim.
    pub issuer: Option<String>,
    /// `auth.audience`: required `aud` claim.
    pub audience: Option<String>,
}

/// `secrets.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SecretsConfig {
    /// `secrets.master_key`: base64 of 32 bytes, the key that encrypts integration
    /// credentials at rest.
    pub master_key: Option<Secret>,
}

impl SecretsConfig {
    /// The decoded master key; `Ok(None)` when unset. Standard and URL-safe base64 are
    /// accepted, with or without padding.
    pub fn master_key_bytes(&self) -> Result<Option<[u8; 32]>, ConfigError> {
        let Some(key) = &self.master_key else {
            return Ok(None);
        };
        let text = key.expose().trim();
        let decoded = [
            &base64::engine::general_purpose::STANDARD,
            &base64::engine::general_purpose::STANDARD_NO_PAD,
            &base64::engine::general_purpose::URL_SAFE,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ]
        .iter()
        .find_map(|engine| engine.decode(text).ok())
        .ok_or_else(|| {
            ConfigError::new(
                "secrets.master_key",
                "is not valid base64 (expected the base64 of 32 random bytes, e.g. from `openssl rand -base64 32`)",
            )
        })?;
        let len = decoded.len();
        <[u8; 32]>::try_from(decoded).map(Some).map_err(|_| {
            ConfigError::new(
                "secrets.master_key",
                format!(
                    "decodes to {len} bytes, expected 32 (e.g. from `openssl rand -base64 32`)"
                ),
            )
        })
    }
}

#[cfg(test)]
#[allow(clippy::result_large_err)] // figment's `Jail` closures return `figment::Result`.
mod tests {
    use figment::Jail;
    use figment::value::Value;

    use super::super::KEYS;
    use super::super::testing::{load, load_err};
    use super::*;

    #[test]
    fn the_built_in_defaults() {
        Jail::expect_with(|jail| {
            let loaded = load(jail, None)?;
            let c = &loaded.config;
            assert_eq!(loaded.file, None);
            assert_eq!(c, &Config::default());
            assert_eq!(c.listen, "127.0.0.1:8080");
            assert_eq!(c.public_url(), "http://127.0.0.1:8080");
            assert_eq!(c.database.url, "sqlite://voiceplane.db?mode=rwc");
            assert_eq!(c.database.max_connections, None);
            assert_eq!(c.storage.backend, StorageBackend::Fs);
            assert_eq!(c.storage.root, PathBuf::from("./voiceplane-data"));
            assert_eq!(c.auth, AuthConfig::default());
            assert_eq!(c.secrets.master_key, None);
            assert_eq!(c.providers.provider_one.base_url, "https://api.cartesia.ai");
            assert_eq!(c.providers.provider_one.version, "2024-06-10");
            assert_eq!(
                c.providers.provider_two.base_url,
                "https://api.elevenlabs.io"
            );
            assert_eq!(c.telephony.twilio.base_url, "https://api.twilio.com");
            assert_eq!(c.telephony.telnyx.base_url, "https://api.telnyx.com");
            assert_eq!(c.http.max_body_bytes, 1024 * 1024);
            assert_eq!(c.embeddings.base_url, None);
            assert_eq!(c.embeddings.client_settings(), None);
            assert_eq!(c.embeddings.model, "text-embedding-3-small");
            assert_eq!(c.embeddings.batch_size, 64);
            assert_eq!(c.embeddings.timeout_secs, 10);
            assert_eq!(c.knowledge.max_bytes, 52_428_800);
            assert_eq!(c.knowledge.max_pages, 2000);
            assert_eq!(c.knowledge.timeout(), std::time::Duration::from_secs(60));
            assert!(c.jwt_verifier(None).map_err(|e| e.to_string())?.is_none());
            Ok(())
        });
    }

    #[test]
    fn a_valid_master_key_decodes() {
        Jail::expect_with(|jail| {
            jail.set_env(
                "VOICEPLANE_SECRETS__MASTER_KEY",
                "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
            );
            let c = load(jail, None)?.config;
            let key = c.secrets.master_key_bytes().map_err(|e| e.to_string())?;
            assert_eq!(key.map(|k| k[31]), Some(31));
            Ok(())
        });
    }

    #[test]
    fn keys_list_matches_the_defaults() {
        fn leaves(prefix: &str, value: &Value, out: &mut Vec<String>) {
            match value {
                Value::Dict(_, dict) => {
                    for (k, v) in dict {
                        let key = if prefix.is_empty() {
                            k.clone()
                        } else {
                            format!("{prefix}.{k}")
                        };
                        leaves(&key, v, out);
                    }
                }
                _ => out.push(prefix.to_owned()),
            }
        }
        let value = Value::serialize(Config::default()).unwrap();
        let mut found = Vec::new();
        leaves("", &value, &mut found);
        for key in &found {
            assert!(KEYS.contains(&key.as_str()), "{key} missing from KEYS");
        }
        // Optional keys serialize as empty values, so every key appears exactly once.
        let mut known: Vec<String> = KEYS.iter().map(|k| (*k).to_owned()).collect();
        known.sort();
        found.sort();
        assert_eq!(found, known);
    }

    #[test]
    fn s3_storage_settings_reach_the_blob_store() {
        Jail::expect_with(|jail| {
            jail.set_env("VOICEPLANE_STORAGE__BACKEND", "s3");
            jail.set_env("VOICEPLANE_STORAGE__BUCKET", "recordings");
            jail.set_env("VOICEPLANE_STORAGE__ENDPOINT", "http://127.0.0.1:9000");
            jail.set_env("VOICEPLANE_STORAGE__ACCESS_KEY_ID", "AK");
            jail.set_env("VOICEPLANE_STORAGE__SECRET_ACCESS_KEY", "hunter2-secret");
            let c = load(jail, None)?.config;
            assert!(c.storage.path_style, "path-style by default");
            let BlobConfig::S3(s3) = c.storage.blob_config() else {
                panic!("expected s3");
            };
            assert_eq!(s3.bucket, "recordings");
            assert_eq!(s3.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
            assert_eq!(s3.region, None);
            assert_eq!(s3.secret_access_key.as_deref(), Some("hunter2-secret"));
            assert!(s3.path_style);
            assert!(!format!("{c:?}").contains("hunter2"));

            jail.set_env("VOICEPLANE_STORAGE__PATH_STYLE", "False");
            assert!(!load(jail, None)?.config.storage.path_style);
            jail.set_env("VOICEPLANE_STORAGE__PATH_STYLE", "1");
            assert!(load(jail, None)?.config.storage.path_style);
            jail.set_env("VOICEPLANE_STORAGE__PATH_STYLE", "maybe");
            let err = load_err(jail);
            assert!(
                err.starts_with("config error: storage.path_style: "),
                "{err}"
            );
            Ok(())
        });
    }
}
