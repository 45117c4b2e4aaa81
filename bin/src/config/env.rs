//! [`EnvLayer`]: the `VOICEPLANE_*` environment variables as a figment provider, kept as
//! strings, with `KEY_FILE` variables read and unknown variables turned into warnings.

use std::collections::BTreeMap;

use figment::providers::Env;
use figment::value::{Dict, Map, Value};
use figment::{Metadata, Profile, Provider};

use super::{ConfigError, ENV_PREFIX, ENV_SEPARATOR, ENV_SOURCE_NAME, KEYS, Secret};

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
                layer.values.insert(key, Secret::new(value));
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
                layer.values.insert(base.to_owned(), Secret::new(contents));
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
    use std::path::PathBuf;

    use figment::Jail;

    use super::super::testing::{load, load_err};
    use super::super::{Secret, StorageBackend};
    use super::*;

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
            assert!(c.jwt_verifier(None).map_err(|e| e.to_string())?.is_some());

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
    fn a_jwks_url_is_an_http_url_without_a_pem_key() {
        Jail::expect_with(|jail| {
            jail.set_env("VOICEPLANE_AUTH__JWKS_URL", "https://idp.example/certs");
            jail.set_env("VOICEPLANE_AUTH__JWT_SECRET", "s");
            let c = load(jail, None)?.config;
            assert_eq!(
                c.auth.jwks_url.as_deref(),
                Some("https://idp.example/certs")
            );

            jail.set_env("VOICEPLANE_AUTH__JWKS_URL", "idp.example/certs");
            assert!(
                load_err(jail).starts_with("config error: auth.jwks_url: "),
                "{}",
                load_err(jail)
            );

            jail.set_env("VOICEPLANE_AUTH__JWKS_URL", "https://idp.example/certs");
            jail.set_env(
                "VOICEPLANE_AUTH__JWT_PUBLIC_KEY_PEM",
                "-----BEGIN PUBLIC KEY-----",
            );
            assert!(
                load_err(jail).starts_with(
                    "config error: auth.jwks_url: cannot be combined with auth.jwt_public_key_pem"
                ),
                "{}",
                load_err(jail)
            );
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
                    | "http.max_upload_bytes"
                    | "http.csv_read_timeout_secs"
                    | "events.retention_days"
                    | "audit.retention_days"
                    | "jobs.lease_secs"
                    | "retention.sweep_interval_secs"
                    | "embeddings.batch_size"
                    | "embeddings.timeout_secs"
                    | "knowledge.max_bytes"
                    | "knowledge.max_pages"
                    | "knowledge.timeout_secs"
                    | "database.connect_timeout_ms"
                    | "database.acquire_timeout_secs"
                    | "rate_limit.per_second"
                    | "rate_limit.burst"
                    | "rate_limit.auth_failures_per_minute"
                    | "telephony.ring_timeout_secs"
                    | "telephony.dial_attempts" => "5",
                    "telephony.reconcile_secs"
                    | "telephony.dial_deadline_secs"
                    | "runtime.max_call_secs"
                    | "runtime.max_calls"
                    | "runtime.silence_prompt_secs"
                    | "runtime.silence_end_secs"
                    | "jobs.lanes.telephony" => "20",
                    "http.trusted_proxies" => "10.0.0.0/8, 127.0.0.1",
                    "storage.backend" => "s3",
                    "storage.path_style"
                    | "webhooks.allow_private_targets"
                    | "metrics.enabled"
                    | "runtime.enabled"
                    | "console.enabled" => "false",
                    "webhooks.retry_schedule" => "1,2",
                    "http.cors_allowed_origins" => "https://app.test",
                    "log.format" => "json",
                    "secrets.master_key" => "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
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
            assert_eq!(c.telephony.dial_attempts, 5);
            assert_eq!(c.embeddings.base_url.as_deref(), Some("https://x.test"));
            assert_eq!(c.embeddings.model, "v");
            assert_eq!(c.knowledge.max_pages, 5);
            assert_eq!(c.retention.sweep_interval_secs, 5);
            assert_eq!(c.log.format, super::super::LogFormat::Json);
            assert!(!c.metrics.enabled);
            assert!(!c.console.enabled);
            assert_eq!(c.database.connect_timeout_ms, 5);
            assert_eq!(c.database.acquire_timeout_secs, 5);
            Ok(())
        });
    }
}
