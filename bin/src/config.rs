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

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use figment::error::{Actual, Kind};
use figment::providers::{Env, Format, Serialized, Toml};
use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider, Source};
use serde::de::{self, Deserializer, Unexpected, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use voiceplane_core::auth::{JwtSettings, JwtVerifier};
use voiceplane_storage::{BlobConfig, DatabaseOptions, S3Settings, redact_url};

/// Prefix of the environment variables read as configuration.
pub const ENV_PREFIX: &str = "VOICEPLANE_";
/// Separator of nested keys in environment variable names (`VOICEPLANE_DATABASE__URL`).
pub const ENV_SEPARATOR: &str = "__";
/// The environment variable naming the configuration file.
pub const CONFIG_FILE_ENV: &str = "VOICEPLANE_CONFIG";
/// The configuration file read when present and no other is named.
pub const DEFAULT_CONFIG_FILE: &str = "voiceplane.toml";
/// Default of `http.max_body_bytes`: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

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
    "telephony.twilio.base_url",
    "telephony.telnyx.base_url",
    "http.max_body_bytes",
    "http.max_upload_bytes",
];

/// Keys whose values are secrets: never echoed, not even in type errors.
const SECRET_KEYS: &[&str] = &[
    "storage.secret_access_key",
    "auth.jwt_secret",
    "secrets.master_key",
    "providers.provider_one.api_key",
    "providers.provider_two.api_key",
];

const ENV_SOURCE_NAME: &str = "environment variable";

// ----- errors --------------------------------------------------------------------------------

/// A configuration problem: the key (or source) it concerns and one line saying what is wrong.
/// `Display` is `key: message`, on one line, with no secret in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    key: String,
    message: String,
}

impl ConfigError {
    /// An error about `key` (a dotted key such as `database.url`, or a source such as
    /// `--config`).
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: one_line(&message.into()),
        }
    }

    /// The key or source the error is about.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// What is wrong with it.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Turns a figment error (wrong type, unknown key, unparsable file) into one line naming
    /// the key and where the value came from.
    pub fn from_figment(error: figment::Error) -> Self {
        let more = error.count().saturating_sub(1);
        let Some(error) = error.into_iter().next() else {
            return Self::new("config", "invalid configuration");
        };
        let mut key = error.path.join(".");
        let secret = SECRET_KEYS.contains(&key.as_str());
        let message = match &error.kind {
            Kind::InvalidType(actual, expected) | Kind::InvalidValue(actual, expected) => {
                if secret {
                    format!("has the wrong type or value: expected {expected}")
                } else {
                    format!("expected {expected}, found {}", describe(actual))
                }
            }
            Kind::UnknownVariant(found, expected) => {
                format!("\"{found}\" is not one of: {}", expected.join(", "))
            }
            Kind::UnknownField(found, expected) => {
                // figment's path already ends with the unknown key.
                if key.is_empty() {
                    key = found.clone();
                }
                if expected.is_empty() {
                    "is not a known key".to_owned()
                } else {
                    format!(
                        "is not a known key (expected one of: {})",
                        expected.join(", ")
                    )
                }
            }
            Kind::Message(m) if key.is_empty() => summarize_parse_error(m),
            Kind::Message(m) if secret => {
                if m.contains("value not shown") {
                    m.clone()
                } else {
                    "is invalid (value not shown)".to_owned()
                }
            }
            other => other.to_string(),
        };
        let mut origin = String::new();
        if let Some(md) = &error.metadata {
            match &md.source {
                Some(Source::File(path)) => {
                    if key.is_empty() {
                        key = path.display().to_string();
                    } else {
                        origin = format!(" (in {})", path.display());
                    }
                }
                _ if md.name == ENV_SOURCE_NAME && !error.path.is_empty() => {
                    let profile = error.profile.clone().unwrap_or_default();
                    origin = format!(" (from {})", md.interpolate(&profile, &error.path));
                }
                _ => {}
            }
        }
        if key.is_empty() {
            key = "config".to_owned();
        }
        let tail = match more {
            0 => String::new(),
            1 => " (and 1 more error)".to_owned(),
            n => format!(" (and {n} more errors)"),
        };
        Self::new(key, format!("{message}{origin}{tail}"))
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

impl std::error::Error for ConfigError {}

fn describe(actual: &Actual) -> String {
    match actual {
        Actual::Str(s) => format!("{:?}", truncate(s, 80)),
        other => other.to_string(),
    }
}

fn truncate(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// Newlines and runs of whitespace become single spaces.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A TOML parse error is several lines with a snippet of the offending line, which may hold
/// a secret: keep the position (first line) and the reason (last line) only.
fn summarize_parse_error(message: &str) -> String {
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    match lines.as_slice() {
        [] => "cannot be parsed".to_owned(),
        [only] => (*only).to_owned(),
        [first, .., last] => format!("{first}: {last}"),
    }
}

// ----- secrets -------------------------------------------------------------------------------

/// A secret string. `Debug` prints `***`; it has no `Display`. Read it with
/// [`Secret::expose`] where it is used.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret value.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SecretVisitor;

        fn hidden<E: de::Error>() -> E {
            E::custom("expected a string (value not shown)")
        }

        impl Visitor<'_> for SecretVisitor {
            type Value = Secret;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Secret, E> {
                Ok(Secret(v.to_owned()))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Secret, E> {
                Ok(Secret(v))
            }

            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Secret, E> {
                Err(hidden())
            }

            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Secret, E> {
                Err(hidden())
            }

            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Secret, E> {
                Err(hidden())
            }

            fn visit_i128<E: de::Error>(self, _: i128) -> Result<Secret, E> {
                Err(hidden())
            }

            fn visit_u128<E: de::Error>(self, _: u128) -> Result<Secret, E> {
                Err(hidden())
            }

            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Secret, E> {
                Err(hidden())
            }
        }

        deserializer.deserialize_str(SecretVisitor)
    }
}

// ----- numbers that may arrive as strings ----------------------------------------------------

struct UnsignedVisitor;

impl Visitor<'_> for UnsignedVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-negative integer")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        v.trim()
            .parse()
            .map_err(|_| E::invalid_value(Unexpected::Str(v), &self))
    }
}

/// A boolean, or a string `true`/`false`/`1`/`0`/`yes`/`no`/`on`/`off` (any case), as
/// environment variables give it.
fn deserialize_bool<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    struct BoolVisitor;

    impl Visitor<'_> for BoolVisitor {
        type Value = bool;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("true or false")
        }

        fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
            Ok(v)
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
            match v.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Ok(true),
                "false" | "0" | "no" | "off" => Ok(false),
                _ => Err(E::invalid_value(Unexpected::Str(v), &self)),
            }
        }
    }

    deserializer.deserialize_any(BoolVisitor)
}

fn deserialize_usize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<usize, D::Error> {
    let n = deserializer.deserialize_any(UnsignedVisitor)?;
    usize::try_from(n)
        .map_err(|_| de::Error::invalid_value(Unexpected::Unsigned(n), &"a smaller integer"))
}

fn deserialize_opt_u32<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u32>, D::Error> {
    struct OptVisitor;

    impl<'de> Visitor<'de> for OptVisitor {
        type Value = Option<u64>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a non-negative integer")
        }

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(UnsignedVisitor).map(Some)
        }
    }

    match deserializer.deserialize_option(OptVisitor)? {
        None => Ok(None),
        Some(n) => u32::try_from(n).map(Some).map_err(|_| {
            de::Error::invalid_value(Unexpected::Unsigned(n), &"an integer below 2^32")
        }),
    }
}

// ----- the configuration ---------------------------------------------------------------------

/// The whole configuration. Field names are the pinned keys of DESIGN §2.
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
    /// `http.*`: limits of the HTTP adapter.
    pub http: HttpSettings,
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
            http: HttpSettings::default(),
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
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self {
            url: "sqlite://voiceplane.db?mode=rwc".to_owned(),
            max_connections: None,
        }
    }
}

impl fmt::Debug for DatabaseConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatabaseConfig")
            .field("url", &redact_url(&self.url))
            .field("max_connections", &self.max_connections)
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
    /// `auth.jwks_url`: not supported yet; setting it is an error.
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

/// `providers.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProvidersConfig {
    /// `providers.provider_one.*`.
    pub provider_one: ProviderOneConfig,
    /// `providers.provider_two.*`.
    pub provider_two: ProviderTwoConfig,
}

/// `providers.provider_one.*` (Cartesia's API).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderOneConfig {
    /// `providers.provider_one.base_url`.
    pub base_url: String,
    /// `providers.provider_one.api_key`.
    pub api_key: Option<Secret>,
    /// `providers.provider_one.version`: the `Cartesia-Version` header.
    pub version: String,
}

impl Default for ProviderOneConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.cartesia.ai".to_owned(),
            api_key: None,
            version: "2024-06-10".to_owned(),
        }
    }
}

/// `providers.provider_two.*` (ElevenLabs' API).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderTwoConfig {
    /// `providers.provider_two.base_url`.
    pub base_url: String,
    /// `providers.provider_two.api_key`.
    pub api_key: Option<Secret>,
}

impl Default for ProviderTwoConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.elevenlabs.io".to_owned(),
            api_key: None,
        }
    }
}

/// `telephony.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelephonyConfig {
    /// `telephony.twilio.*`.
    pub twilio: TelephonyProviderConfig,
    /// `telephony.telnyx.*`.
    pub telnyx: TelephonyProviderConfig,
}

impl Default for TelephonyConfig {
    fn default() -> Self {
        Self {
            twilio: TelephonyProviderConfig {
                base_url: "https://api.twilio.com".to_owned(),
            },
            telnyx: TelephonyProviderConfig {
                base_url: "https://api.telnyx.com".to_owned(),
            },
        }
    }
}

/// `telephony.<provider>.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelephonyProviderConfig {
    /// `telephony.<provider>.base_url`.
    pub base_url: String,
}

/// `http.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpSettings {
    /// `http.max_body_bytes`: largest JSON body accepted (413 beyond).
    #[serde(deserialize_with = "deserialize_usize")]
    pub max_body_bytes: usize,
    /// `http.max_upload_bytes`: largest recording or knowledge-base file (413 beyond).
    #[serde(deserialize_with = "deserialize_usize")]
    pub max_upload_bytes: usize,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_upload_bytes: voiceplane_http::DEFAULT_MAX_UPLOAD_BYTES as usize,
        }
    }
}

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
        let warnings = env.warnings.clone();
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
        if auth.jwks_url.is_some() {
            return Err(ConfigError::new(
                "auth.jwks_url",
                "is not supported yet; use auth.jwt_secret or auth.jwt_public_key_pem",
            ));
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
        self.jwt_verifier()?;

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
        check_http_url("telephony.twilio.base_url", &self.telephony.twilio.base_url)?;
        check_http_url("telephony.telnyx.base_url", &self.telephony.telnyx.base_url)?;

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
        if self.secrets.master_key.is_none() {
            out.push("secrets.master_key is not set: integrations with credentials cannot be stored (generate one with `openssl rand -base64 32`)".to_owned());
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

    /// The storage crate's database options.
    pub fn database_options(&self) -> DatabaseOptions {
        DatabaseOptions {
            url: self.database.url.clone(),
            schema: None,
            max_connections: self.database.max_connections,
        }
    }

    /// The core's JWT settings.
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
        }
    }

    /// The JWT verifier; `Ok(None)` when no key is configured.
    pub fn jwt_verifier(&self) -> Result<Option<JwtVerifier>, ConfigError> {
        JwtVerifier::new(&self.jwt_settings()).map_err(|e| {
            let message = e.to_string();
            let message = message
                .strip_prefix("auth.jwt_public_key_pem ")
                .unwrap_or(&message)
                .to_owned();
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

// ----- environment ---------------------------------------------------------------------------

/// The `VOICEPLANE_*` environment variables as a figment provider. Values stay strings;
/// unknown variables are collected as warnings; `KEY_FILE` variables are read.
#[derive(Debug, Clone, Default)]
pub struct EnvLayer {
    values: BTreeMap<String, Secret>,
    warnings: Vec<String>,
}

impl EnvLayer {
    /// Reads the process environment.
    pub fn from_process_env() -> Result<Self, ConfigError> {
        let env = Env::prefixed(ENV_PREFIX).split(ENV_SEPARATOR);
        Self::from_pairs(
            env.iter()
                .map(|(key, value)| (key.as_str().to_owned(), value)),
        )
    }

    /// Builds the layer from `(dotted lower-case key, value)` pairs, as figment's `Env`
    /// yields them (`VOICEPLANE_DATABASE__URL` is `database.url`).
    pub fn from_pairs(
        pairs: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut layer = Self::default();
        let mut from_file: BTreeMap<String, String> = BTreeMap::new();
        for (key, value) in pairs {
            // `VOICEPLANE_CONFIG` names the file; `VOICEPLANE_TEST_*` belong to the test suite.
            if key == "config" || key.starts_with("test_") {
                continue;
            }
            if value.is_empty() {
                continue;
            }
            if KEYS.contains(&key.as_str()) {
                if from_file.contains_key(&key) {
                    return Err(both_set(&key));
                }
                layer.values.insert(key, Secret(value));
            } else if let Some(base) = key.strip_suffix("_file").filter(|base| KEYS.contains(base))
            {
                if layer.values.contains_key(base) {
                    return Err(both_set(base));
                }
                let contents = std::fs::read_to_string(&value).map_err(|e| {
                    ConfigError::new(env_name(&key), format!("cannot read {value}: {e}"))
                })?;
                let contents = contents
                    .strip_suffix('\n')
                    .map(|c| c.strip_suffix('\r').unwrap_or(c))
                    .unwrap_or(&contents)
                    .to_owned();
                from_file.insert(base.to_owned(), value);
                layer.values.insert(base.to_owned(), Secret(contents));
            } else {
                layer.warnings.push(unknown_variable_warning(&key));
            }
        }
        Ok(layer)
    }

    /// Warnings about unknown variables, one line each.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

fn both_set(key: &str) -> ConfigError {
    let name = env_name(key);
    ConfigError::new(
        key,
        format!("both {name} and {name}_FILE are set; keep one"),
    )
}

/// `database.url` → `VOICEPLANE_DATABASE__URL`.
fn env_name(key: &str) -> String {
    format!(
        "{ENV_PREFIX}{}",
        key.split('.')
            .collect::<Vec<_>>()
            .join(ENV_SEPARATOR)
            .to_ascii_uppercase()
    )
}

fn unknown_variable_warning(key: &str) -> String {
    let squash = |k: &str| k.replace(['.', '_'], "");
    let wanted = squash(key.strip_suffix("_file").unwrap_or(key));
    let suggestion = KEYS.iter().find(|k| squash(k) == wanted);
    match suggestion {
        Some(known) => format!(
            "ignoring unknown environment variable {}; did you mean {}?",
            env_name(key),
            env_name(known)
        ),
        None => format!(
            "ignoring unknown environment variable {} (nested keys are separated by `__`, e.g. VOICEPLANE_DATABASE__URL)",
            env_name(key)
        ),
    }
}

impl Provider for EnvLayer {
    fn metadata(&self) -> Metadata {
        Metadata::named(ENV_SOURCE_NAME).interpolater(|_, keys| env_name(&keys.join(".")))
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        let mut dict = Dict::new();
        for (key, value) in &self.values {
            insert(&mut dict, key, Value::from(value.expose().to_owned()));
        }
        Ok(Profile::Default.collect(dict))
    }
}

fn insert(dict: &mut Dict, key: &str, value: Value) {
    match key.split_once('.') {
        None => {
            dict.insert(key.to_owned(), value);
        }
        Some((head, rest)) => {
            let entry = dict
                .entry(head.to_owned())
                .or_insert_with(|| Value::from(Dict::new()));
            if !matches!(entry, Value::Dict(..)) {
                *entry = Value::from(Dict::new());
            }
            if let Value::Dict(_, inner) = entry {
                insert(inner, rest, value);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::result_large_err)] // figment's `Jail` closures return `figment::Result`.
mod tests {
    use super::*;
    use figment::Jail;

    /// Loads as the binary does, inside a jail (its own folder and environment).
    fn load(jail: &Jail, explicit: Option<&str>) -> figment::Result<LoadedConfig> {
        try_load(jail, explicit).map_err(|e| figment::Error::from(e.to_string()))
    }

    fn try_load(jail: &Jail, explicit: Option<&str>) -> Result<LoadedConfig, ConfigError> {
        let _ = jail;
        Config::load(explicit.map(Path::new))
    }

    fn load_err(jail: &Jail) -> String {
        match try_load(jail, None) {
            Ok(loaded) => panic!("expected an error, got {:?}", loaded.config),
            Err(e) => format!("config error: {e}"),
        }
    }

    #[test]
    fn defaults_match_the_design() {
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
            assert!(c.jwt_verifier().map_err(|e| e.to_string())?.is_none());
            Ok(())
        });
    }

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
    fn env_overrides_toml_and_config_path_comes_from_env_or_flag() {
        Jail::expect_with(|jail| {
            jail.create_file(
                "other.toml",
                "listen = \"127.0.0.1:9000\"\n[http]\nmax_body_bytes = 10\n",
            )?;
            jail.set_env("VOICEPLANE_CONFIG", "other.toml");
            jail.set_env("VOICEPLANE_LISTEN", "127.0.0.1:9100");
            jail.set_env("VOICEPLANE_DATABASE__URL", "sqlite::memory:");
            jail.set_env("VOICEPLANE_DATABASE__MAX_CONNECTIONS", "3");
            jail.set_env("VOICEPLANE_STORAGE__BACKEND", "s3");
            jail.set_env("VOICEPLANE_STORAGE__BUCKET", "recordings");
            jail.set_env("VOICEPLANE_AUTH__JWT_SECRET", "000123");
            jail.set_env(
                "VOICEPLANE_PROVIDERS__PROVIDER_TWO__BASE_URL",
                "http://127.0.0.1:1",
            );
            jail.set_env(
                "VOICEPLANE_TELEPHONY__TELNYX__BASE_URL",
                "http://127.0.0.1:2",
            );
            jail.set_env("VOICEPLANE_PUBLIC_URL", ""); // empty counts as unset
            let loaded = load(jail, None)?;
            let c = &loaded.config;
            assert_eq!(loaded.file, Some(PathBuf::from("other.toml")));
            assert_eq!(c.listen, "127.0.0.1:9100");
            assert_eq!(c.public_url(), "http://127.0.0.1:9100");
            assert_eq!(c.http.max_body_bytes, 10);
            assert_eq!(c.database.url, "sqlite::memory:");
            assert_eq!(c.database.max_connections, Some(3));
            assert_eq!(c.storage.backend, StorageBackend::S3);
            assert_eq!(c.storage.bucket.as_deref(), Some("recordings"));
            // Kept as the string it is, not parsed as the number 123.
            assert_eq!(c.auth.jwt_secret, Some(Secret::new("000123")));
            assert_eq!(c.providers.provider_two.base_url, "http://127.0.0.1:1");
            assert_eq!(c.telephony.telnyx.base_url, "http://127.0.0.1:2");
            assert!(c.jwt_verifier().map_err(|e| e.to_string())?.is_some());

            // --config wins over VOICEPLANE_CONFIG.
            jail.create_file("flag.toml", "[http]\nmax_body_bytes = 20\n")?;
            let loaded = load(jail, Some("flag.toml"))?;
            assert_eq!(loaded.config.http.max_body_bytes, 20);
            Ok(())
        });
    }

    #[test]
    fn secrets_can_come_from_files() {
        Jail::expect_with(|jail| {
            jail.create_file("jwt", "from-a-file\n")?;
            jail.set_env("VOICEPLANE_AUTH__JWT_SECRET_FILE", "jwt");
            let c = load(jail, None)?.config;
            assert_eq!(c.auth.jwt_secret, Some(Secret::new("from-a-file")));

            jail.set_env("VOICEPLANE_AUTH__JWT_SECRET", "inline");
            assert_eq!(
                load_err(jail),
                "config error: auth.jwt_secret: both VOICEPLANE_AUTH__JWT_SECRET and VOICEPLANE_AUTH__JWT_SECRET_FILE are set; keep one"
            );
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
    fn a_wrong_type_names_the_key_on_one_line() {
        Jail::expect_with(|jail| {
            jail.set_env("VOICEPLANE_HTTP__MAX_BODY_BYTES", "abc");
            let line = load_err(jail);
            assert_eq!(
                line,
                r#"config error: http.max_body_bytes: expected a non-negative integer, found "abc" (from VOICEPLANE_HTTP__MAX_BODY_BYTES)"#
            );

            jail.set_env("VOICEPLANE_HTTP__MAX_BODY_BYTES", "");
            jail.create_file("voiceplane.toml", "[database]\nmax_connections = -1\n")?;
            let line = load_err(jail);
            assert!(
                line.starts_with("config error: database.max_connections: "),
                "{line}"
            );
            assert!(line.ends_with("(in voiceplane.toml)"), "{line}");
            assert!(!line.contains('\n'));
            Ok(())
        });
    }

    #[test]
    fn unknown_keys_and_bad_variants_are_one_line_errors() {
        Jail::expect_with(|jail| {
            jail.create_file("voiceplane.toml", "[databse]\nurl = \"x\"\n")?;
            let line = load_err(jail);
            assert!(
                line.starts_with("config error: databse: is not a known key"),
                "{line}"
            );
            assert!(!line.contains('\n'));

            jail.create_file("voiceplane.toml", "")?;
            jail.set_env("VOICEPLANE_STORAGE__BACKEND", "disk");
            assert_eq!(
                load_err(jail),
                r#"config error: storage.backend: "disk" is not one of: fs, memory, s3 (from VOICEPLANE_STORAGE__BACKEND)"#
            );
            Ok(())
        });
    }

    #[test]
    fn an_unparsable_file_is_one_line_without_the_offending_text() {
        Jail::expect_with(|jail| {
            jail.create_file(
                "voiceplane.toml",
                "[auth]\njwt_secret = \"s3cr3t-value\" oops\n",
            )?;
            let line = load_err(jail);
            assert!(line.starts_with("config error: "), "{line}");
            assert!(line.contains("voiceplane.toml"), "{line}");
            assert!(!line.contains('\n'), "{line}");
            assert!(!line.contains("s3cr3t-value"), "{line}");
            Ok(())
        });
    }

    #[test]
    fn secrets_of_the_wrong_type_are_not_echoed() {
        Jail::expect_with(|jail| {
            jail.create_file("voiceplane.toml", "[auth]\njwt_secret = 987654321\n")?;
            let line = load_err(jail);
            assert!(
                line.starts_with("config error: auth.jwt_secret: "),
                "{line}"
            );
            assert!(!line.contains("987654321"), "{line}");
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
                "https://idp/jwks",
                "auth.jwks_url: is not supported yet; use auth.jwt_secret or auth.jwt_public_key_pem",
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
                "VOICEPLANE_PROVIDERS__PROVIDER_ONE__BASE_URL",
                "api.cartesia.ai",
                r#"providers.provider_one.base_url: "api.cartesia.ai" is not an http:// or https:// URL"#,
            ),
            (
                "VOICEPLANE_STORAGE__ACCESS_KEY_ID",
                "AK",
                "storage.secret_access_key: is required when storage.access_key_id is set",
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
    fn a_pem_on_one_line_with_escaped_newlines_is_accepted() {
        Jail::expect_with(|jail| {
            jail.set_env(
                "VOICEPLANE_AUTH__JWT_PUBLIC_KEY_PEM",
                r"-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEBVAhqBnYweIzIaYtDXW4Dk9fDtVp\nWA/KuKqudyeMAS5FXgVlWHxOFWsXuQq5L6CUKKsVLDs2TRdBCIawgRME1g==\n-----END PUBLIC KEY-----\n",
            );
            let c = load(jail, None)?.config;
            assert!(c.jwt_verifier().map_err(|e| e.to_string())?.is_some());
            Ok(())
        });
    }

    #[test]
    fn secrets_never_appear_in_debug_output() {
        Jail::expect_with(|jail| {
            let secrets = [
                ("VOICEPLANE_AUTH__JWT_SECRET", "jwt-secret-AAAA"),
                ("VOICEPLANE_STORAGE__SECRET_ACCESS_KEY", "s3-secret-BBBB"),
                (
                    "VOICEPLANE_SECRETS__MASTER_KEY",
                    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
                ),
                ("VOICEPLANE_PROVIDERS__PROVIDER_ONE__API_KEY", "p1-key-CCCC"),
                ("VOICEPLANE_PROVIDERS__PROVIDER_TWO__API_KEY", "p2-key-DDDD"),
            ];
            for (var, value) in secrets {
                jail.set_env(var, value);
            }
            jail.set_env("VOICEPLANE_STORAGE__ACCESS_KEY_ID", "AKID");
            jail.set_env(
                "VOICEPLANE_DATABASE__URL",
                "postgres://app:db-pass-EEEE@db/vp",
            );
            let loaded = load(jail, None)?;
            let debug = format!("{:?} {:#?}", loaded.config, loaded);
            for (_, value) in secrets {
                assert!(!debug.contains(value), "{value} leaked: {debug}");
            }
            assert!(!debug.contains("db-pass-EEEE"), "{debug}");
            assert!(debug.contains("postgres://app:***@db/vp"));
            assert!(debug.contains("***"));
            for w in &loaded.warnings {
                assert!(!w.contains("jwt-secret-AAAA"));
            }
            Ok(())
        });
    }

    #[test]
    fn unknown_env_variables_are_warned_about() {
        Jail::expect_with(|jail| {
            jail.set_env("VOICEPLANE_DATABASE_URL", "sqlite::memory:");
            jail.set_env("VOICEPLANE_NOPE", "1");
            let loaded = load(jail, None)?;
            assert_eq!(
                loaded.config.database.url,
                "sqlite://voiceplane.db?mode=rwc"
            );
            assert!(loaded.warnings.contains(
                &"ignoring unknown environment variable VOICEPLANE_DATABASE_URL; did you mean VOICEPLANE_DATABASE__URL?".to_owned()
            ), "{:?}", loaded.warnings);
            assert!(
                loaded.warnings.iter().any(
                    |w| w.starts_with("ignoring unknown environment variable VOICEPLANE_NOPE ")
                ),
                "{:?}",
                loaded.warnings
            );
            Ok(())
        });
    }

    #[test]
    fn every_key_is_settable_from_the_environment() {
        Jail::expect_with(|jail| {
            for key in KEYS {
                let value = match *key {
                    "listen" => "127.0.0.1:1",
                    "database.url" => "sqlite::memory:",
                    "database.max_connections"
                    | "http.max_body_bytes"
                    | "http.max_upload_bytes" => "5",
                    "storage.backend" => "s3",
                    "storage.path_style" => "false",
                    "secrets.master_key" => "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
                    "auth.jwks_url" => continue,
                    "auth.jwt_public_key_pem" => continue,
                    k if k.ends_with("url") || k.ends_with("endpoint") => "https://x.test",
                    _ => "v",
                };
                jail.set_env(env_name(key), value);
            }
            let loaded = load(jail, None)?;
            assert!(
                loaded.warnings.iter().all(|w| !w.contains("unknown")),
                "{:?}",
                loaded.warnings
            );
            let c = loaded.config;
            assert_eq!(c.storage.region.as_deref(), Some("v"));
            assert!(!c.storage.path_style);
            assert_eq!(c.auth.audience.as_deref(), Some("v"));
            assert_eq!(c.telephony.twilio.base_url, "https://x.test");
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
