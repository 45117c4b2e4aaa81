//! The keys of the binary's HTTP side and logging: `http.*` ([`HttpSettings`], with
//! `http.cors_allowed_origins` read into [`CorsOrigins`]), `rate_limit.*`
//! ([`RateLimitSettings`]), `metrics.*` ([`MetricsSettings`]), `console.*` ([`ConsoleSettings`])
//! and `log.format`
//! ([`LogSettings`]).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use super::error::truncate;
use super::lenient::{deserialize_bool, deserialize_usize};

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
    /// `http.csv_read_timeout_secs`: how long a CSV upload of recipients may take to arrive
    /// (408 beyond; nothing is added).
    #[serde(deserialize_with = "deserialize_usize")]
    pub csv_read_timeout_secs: usize,
    /// `http.cors_allowed_origins`: the browser origins allowed to call the API,
    /// comma-separated, or `*` for any (read by [`HttpSettings::cors_origins`]). Unset: no
    /// CORS headers at all.
    pub cors_allowed_origins: Option<String>,
    /// `http.trusted_proxies`: comma-separated IPs or CIDR blocks of the proxies whose
    /// `X-Forwarded-For` names the client (for the per-IP limit of failed authentications).
    pub trusted_proxies: String,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            max_body_bytes: voiceplane_http::DEFAULT_MAX_BODY_BYTES,
            max_upload_bytes: voiceplane_http::DEFAULT_MAX_UPLOAD_BYTES as usize,
            csv_read_timeout_secs: voiceplane_http::DEFAULT_CSV_READ_TIMEOUT.as_secs() as usize,
            cors_allowed_origins: None,
            trusted_proxies: String::new(),
        }
    }
}

impl HttpSettings {
    /// The parsed `http.trusted_proxies`, or the first entry that is not an IP or CIDR block.
    pub fn trusted_proxies(&self) -> Result<Vec<voiceplane_http::IpNetwork>, String> {
        self.trusted_proxies
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::parse)
            .collect()
    }
}

/// `rate_limit.*`: limits kept in each instance's memory, so N instances behind a load
/// balancer allow up to N times these rates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimitSettings {
    /// `rate_limit.per_second`: sustained requests per second per credential (API key, or
    /// user for a JWT); `0` disables.
    #[serde(deserialize_with = "deserialize_usize")]
    pub per_second: usize,
    /// `rate_limit.burst`: requests a credential may send at once.
    #[serde(deserialize_with = "deserialize_usize")]
    pub burst: usize,
    /// `rate_limit.auth_failures_per_minute`: failed authentications per client IP per
    /// minute (also the burst); `0` disables.
    #[serde(deserialize_with = "deserialize_usize")]
    pub auth_failures_per_minute: usize,
}

impl Default for RateLimitSettings {
    fn default() -> Self {
        Self {
            per_second: voiceplane_http::DEFAULT_PER_SECOND as usize,
            burst: voiceplane_http::DEFAULT_BURST as usize,
            auth_failures_per_minute: voiceplane_http::DEFAULT_AUTH_FAILURES_PER_MINUTE as usize,
        }
    }
}

/// `metrics.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSettings {
    /// `metrics.enabled`: whether `GET /metrics` answers (Prometheus text format); when off,
    /// no recorder is installed and the path is a 404.
    #[serde(deserialize_with = "deserialize_bool")]
    pub enabled: bool,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        Self { enabled: true }
    }
}

/// `console.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConsoleSettings {
    /// `console.enabled`: whether the web console answers under `/console/`; when off, its
    /// paths are the API's 404.
    #[serde(deserialize_with = "deserialize_bool")]
    pub enabled: bool,
}

impl Default for ConsoleSettings {
    fn default() -> Self {
        Self { enabled: true }
    }
}

/// `log.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    /// `log.format`: `text` (default) or `json`.
    pub format: LogFormat,
}

/// `log.format`: how log lines are written on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines, coloured on a terminal.
    #[default]
    Text,
    /// One JSON object per line, with the fields of the request span (`request_id`,
    /// `operation`, `status`, `latency_ms`, …), for log collectors.
    Json,
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Text => "text",
            Self::Json => "json",
        })
    }
}

/// Which browser origins may call the API (`http.cors_allowed_origins`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorsOrigins {
    /// `*`: every origin, without credentials.
    Any,
    /// These origins (`scheme://host[:port]`, lower case), with credentials.
    List(Vec<String>),
}

impl HttpSettings {
    /// `http.cors_allowed_origins` read: `None` when unset or blank (no CORS headers at all),
    /// else `*` alone or a comma-separated list of `http(s)://host[:port]` origins. Scheme and
    /// host are lowered, as browsers send them.
    pub fn cors_origins(&self) -> Result<Option<CorsOrigins>, ConfigError> {
        const KEY: &str = "http.cors_allowed_origins";
        let Some(raw) = self.cors_allowed_origins.as_deref() else {
            return Ok(None);
        };
        let entries: Vec<&str> = raw
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        if entries.is_empty() {
            return Ok(None);
        }
        if entries.contains(&"*") {
            if entries.len() > 1 {
                return Err(ConfigError::new(
                    KEY,
                    "`*` allows every origin and must be the only entry",
                ));
            }
            return Ok(Some(CorsOrigins::Any));
        }
        let mut origins = Vec::with_capacity(entries.len());
        for entry in entries {
            let origin = entry.to_ascii_lowercase();
            if !is_origin(&origin) {
                return Err(ConfigError::new(
                    KEY,
                    format!(
                        "\"{}\" is not an origin: write scheme://host[:port] without a path, e.g. https://app.example.com, or `*` for any origin",
                        truncate(entry, 100)
                    ),
                ));
            }
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        Ok(Some(CorsOrigins::List(origins)))
    }
}

/// `http://` or `https://`, then a host (ASCII: browsers send IDNs as punycode) and an
/// optional port; no user, path, query or fragment.
fn is_origin(s: &str) -> bool {
    let Some(rest) = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
    else {
        return false;
    };
    let (host, port) = match rest.rsplit_once(':') {
        // An IPv6 literal (`[::1]`) has colons of its own.
        Some((host, port)) if !port.contains(']') => (host, Some(port)),
        _ => (rest, None),
    };
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(ipv6) => ipv6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        }
    };
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|p| p > 0));
    host_ok && port_ok
}

#[cfg(test)]
#[allow(clippy::result_large_err)] // figment's `Jail` closures return `figment::Result`.
mod tests {
    use figment::Jail;

    use super::super::testing::{load, load_err};
    use super::*;

    fn origins(value: &str) -> Result<Option<CorsOrigins>, String> {
        HttpSettings {
            cors_allowed_origins: Some(value.to_owned()),
            ..HttpSettings::default()
        }
        .cors_origins()
        .map_err(|e| e.to_string())
    }

    #[test]
    fn cors_origins_are_read_and_checked() {
        assert_eq!(HttpSettings::default().cors_origins(), Ok(None));
        assert_eq!(origins(" , "), Ok(None));
        assert_eq!(origins("*"), Ok(Some(CorsOrigins::Any)));
        assert_eq!(
            origins(
                "https://App.example.com, http://localhost:3000,https://app.example.com,http://[::1]:8080"
            ),
            Ok(Some(CorsOrigins::List(vec![
                "https://app.example.com".into(),
                "http://localhost:3000".into(),
                "http://[::1]:8080".into(),
            ])))
        );
        assert_eq!(
            origins("*, https://a.example"),
            Err(
                "http.cors_allowed_origins: `*` allows every origin and must be the only entry"
                    .into()
            )
        );
        for bad in [
            "https://app.example.com/",
            "app.example.com",
            "https://app.example.com/path",
            "ftp://app.example.com",
            "https://user@app.example.com",
            "https://app.example.com:0",
            "https://app.example.com:99999",
            "null",
            "https://",
            "https://a:b:80",
            "http://[nope]",
        ] {
            let err = origins(bad).expect_err(bad);
            assert_eq!(
                err,
                format!(
                    "http.cors_allowed_origins: \"{bad}\" is not an origin: write scheme://host[:port] without a path, e.g. https://app.example.com, or `*` for any origin"
                )
            );
        }
    }

    #[test]
    fn the_keys_load_from_the_environment_and_are_validated() {
        Jail::expect_with(|jail| {
            let c = load(jail, None)?.config;
            assert_eq!(c.log.format, LogFormat::Text);
            assert_eq!(c.http.cors_allowed_origins, None);

            jail.set_env("VOICEPLANE_LOG__FORMAT", "json");
            jail.set_env(
                "VOICEPLANE_HTTP__CORS_ALLOWED_ORIGINS",
                "https://app.example.com",
            );
            let c = load(jail, None)?.config;
            assert_eq!(c.log.format, LogFormat::Json);
            assert_eq!(
                c.http.cors_origins().map_err(|e| e.to_string())?,
                Some(CorsOrigins::List(vec!["https://app.example.com".into()]))
            );

            jail.set_env("VOICEPLANE_HTTP__CORS_ALLOWED_ORIGINS", "app.example.com");
            let err = load_err(jail);
            assert!(
                err.starts_with(
                    "config error: http.cors_allowed_origins: \"app.example.com\" is not an origin"
                ),
                "{err}"
            );
            jail.set_env("VOICEPLANE_HTTP__CORS_ALLOWED_ORIGINS", "");
            jail.set_env("VOICEPLANE_LOG__FORMAT", "xml");
            let err = load_err(jail);
            assert!(
                err.starts_with("config error: log.format: \"xml\" is not one of: text, json"),
                "{err}"
            );
            Ok(())
        });
    }
}
