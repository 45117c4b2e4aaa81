//! [`ConfigError`]: one line naming the key a problem concerns, with where its value came
//! from, and figment's errors reworded into that shape without echoing a secret.

use std::fmt;

use figment::Source;
use figment::error::{Actual, Kind};

use super::{ENV_SOURCE_NAME, SECRET_KEYS};

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

pub(super) fn truncate(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// Newlines and runs of whitespace become single spaces.
pub(crate) fn one_line(s: &str) -> String {
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

#[cfg(test)]
#[allow(clippy::result_large_err)] // figment's `Jail` closures return `figment::Result`.
mod tests {
    use figment::Jail;

    use super::super::testing::load_err;

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
}
