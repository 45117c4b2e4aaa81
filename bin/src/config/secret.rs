//! [`Secret`]: a configuration string that `Debug` prints as `***` and that a type error never
//! echoes.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

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

#[cfg(test)]
#[allow(clippy::result_large_err)] // figment's `Jail` closures return `figment::Result`.
mod tests {
    use figment::Jail;

    use super::super::testing::{load, load_err};

    #[test]
    fn secrets_of_the_wrong_type_are_not_echoed() {
        for (section, key) in [("auth", "jwt_secret"), ("embeddings", "api_key")] {
            Jail::expect_with(|jail| {
                jail.create_file(
                    "voiceplane.toml",
                    &format!("[{section}]\n{key} = 987654321\n"),
                )?;
                let line = load_err(jail);
                assert!(
                    line.starts_with(&format!("config error: {section}.{key}: ")),
                    "{line}"
                );
                assert!(!line.contains("987654321"), "{line}");
                Ok(())
            });
        }
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
                ("VOICEPLANE_EMBEDDINGS__API_KEY", "emb-key-FFFF"),
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
            for w in loaded.config.warnings() {
                for (_, value) in secrets {
                    assert!(!w.contains(value), "{value} leaked: {w}");
                }
            }
            Ok(())
        });
    }
}
