//! Deserializers for booleans and numbers that may arrive as strings: environment variables
//! are always strings, TOML gives real booleans and integers, and both must be accepted.

use std::fmt;

use serde::de::{self, Deserializer, Unexpected, Visitor};

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
pub(super) fn deserialize_bool<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<bool, D::Error> {
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

pub(super) fn deserialize_usize<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<usize, D::Error> {
    let n = deserializer.deserialize_any(UnsignedVisitor)?;
    usize::try_from(n)
        .map_err(|_| de::Error::invalid_value(Unexpected::Unsigned(n), &"a smaller integer"))
}

pub(super) fn deserialize_opt_u32<'de, D: Deserializer<'de>>(
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
