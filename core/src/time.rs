//! Timestamps: microseconds since the Unix epoch, shown as RFC 3339 in UTC.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

/// A point in time with microsecond precision. Stored as an integer so that ordering is exact
/// and identical on every database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The timestamp `micros` microseconds after the Unix epoch.
    pub const fn from_micros(micros: i64) -> Self {
        Self(micros)
    }

    /// Microseconds since the Unix epoch.
    pub const fn as_micros(self) -> i64 {
        self.0
    }

    /// The current wall-clock time.
    pub fn now() -> Self {
        Self(Utc::now().timestamp_micros())
    }

    /// This timestamp moved by `seconds` (negative moves back).
    pub fn add_seconds(self, seconds: i64) -> Self {
        Self(self.0.saturating_add(seconds.saturating_mul(1_000_000)))
    }

    /// This timestamp moved forward by `d`.
    pub fn plus(self, d: std::time::Duration) -> Self {
        Self(
            self.0
                .saturating_add(i64::try_from(d.as_micros()).unwrap_or(i64::MAX)),
        )
    }

    /// How long after `earlier` this is; zero when it is not after it.
    pub fn saturating_since(self, earlier: Timestamp) -> std::time::Duration {
        std::time::Duration::from_micros(u64::try_from(self.0 - earlier.0).unwrap_or(0))
    }

    /// Seconds from `self` to `later`, fractional.
    pub fn seconds_until(self, later: Timestamp) -> f64 {
        (later.0 - self.0) as f64 / 1_000_000.0
    }

    /// Parses an RFC 3339 timestamp such as `2026-01-31T12:00:00Z`; `field` names the input in
    /// the error.
    pub fn parse_rfc3339(s: &str, field: &str) -> Result<Self> {
        DateTime::parse_from_rfc3339(s)
            .map(|t| Self(t.with_timezone(&Utc).timestamp_micros()))
            .map_err(|_| {
                Error::invalid(format!(
                    "{field} must be an RFC 3339 timestamp such as 2026-01-31T12:00:00Z"
                ))
            })
    }

    /// RFC 3339 in UTC with microseconds, e.g. `2026-01-31T12:00:00.000000Z`.
    pub fn to_rfc3339(self) -> String {
        DateTime::<Utc>::from_timestamp_micros(self.0)
            .unwrap_or_default()
            .to_rfc3339_opts(SecondsFormat::Micros, true)
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        DateTime::parse_from_rfc3339(&s)
            .map(|t| Self(t.with_timezone(&Utc).timestamp_micros()))
            .map_err(|_| {
                serde::de::Error::custom(format!(
                    "`{s}` is not an RFC 3339 timestamp such as 2026-01-31T12:00:00Z"
                ))
            })
    }
}

/// The JSON Schema of the serialized form: an RFC 3339 string (`format: date-time`), inlined
/// wherever a timestamp appears.
#[cfg(feature = "openapi")]
impl schemars::JsonSchema for Timestamp {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "format": "date-time",
        })
    }
}

/// Where the current time comes from; tests substitute a controllable clock.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_rfc3339() {
        let t = Timestamp::from_micros(1_790_000_000_123_456);
        let s = t.to_rfc3339();
        assert_eq!(s, "2026-09-21T14:13:20.123456Z");
        assert_eq!(Timestamp::parse_rfc3339(&s, "x").unwrap(), t);
        assert!(Timestamp::parse_rfc3339("yesterday", "expires_at").is_err());
    }
}
