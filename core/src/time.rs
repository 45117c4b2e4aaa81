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

    /// The current wall-clock time. Read from `SystemTime` directly: chrono's `Utc::now`
    /// works out the calendar date, which the microseconds do not need (240 → 60
    /// instructions, once per authenticated request).
    pub fn now() -> Self {
        let micros = |d: std::time::Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            Ok(after) => Self(micros(after)),
            Err(before) => Self(-micros(before.duration())),
        }
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
        self.with_rfc3339(str::to_owned)
    }

    /// `f` of the RFC 3339 form, written without allocating for the years 0 to 9999.
    fn with_rfc3339<R>(self, f: impl FnOnce(&str) -> R) -> R {
        match self.rfc3339_digits() {
            // ASCII digits and separators, so always UTF-8.
            Some(digits) => f(std::str::from_utf8(&digits).unwrap_or_default()),
            None => f(&self.to_rfc3339_by_chrono()),
        }
    }

    fn to_rfc3339_by_chrono(self) -> String {
        DateTime::<Utc>::from_timestamp_micros(self.0)
            .unwrap_or_default()
            .to_rfc3339_opts(SecondsFormat::Micros, true)
    }

    /// [`to_rfc3339`](Self::to_rfc3339) without an allocation or the formatting machinery,
    /// for the years 0 to 9999 (chrono writes the others, signed): timestamps are written
    /// several times per call of every page.
    fn rfc3339_digits(self) -> Option<[u8; 27]> {
        use chrono::{Datelike as _, Timelike as _};
        fn put(slot: &mut [u8], mut n: u32) {
            for digit in slot.iter_mut().rev() {
                // A digit, so the cast cannot truncate.
                #[allow(clippy::cast_possible_truncation)]
                let d = (n % 10) as u8;
                *digit = b'0' + d;
                n /= 10;
            }
        }
        let t = DateTime::<Utc>::from_timestamp_micros(self.0)?;
        let year = u32::try_from(t.year()).ok().filter(|y| *y <= 9999)?;
        let mut out = *b"0000-00-00T00:00:00.000000Z";
        put(&mut out[0..4], year);
        put(&mut out[5..7], t.month());
        put(&mut out[8..10], t.day());
        put(&mut out[11..13], t.hour());
        put(&mut out[14..16], t.minute());
        put(&mut out[17..19], t.second());
        put(&mut out[20..26], t.timestamp_subsec_micros());
        Some(out)
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.with_rfc3339(|s| f.write_str(s))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.with_rfc3339(|t| s.serialize_str(t))
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

    /// The clock read without chrono reads the same microseconds as chrono's.
    #[test]
    fn now_is_chronos_now() {
        let before = Utc::now().timestamp_micros();
        let now = Timestamp::now().as_micros();
        let after = Utc::now().timestamp_micros();
        assert!((before..=after).contains(&now), "{before} {now} {after}");
    }

    /// The digits written by hand are chrono's, across the years they cover, at their edges
    /// and beyond them (where chrono writes the signed forms).
    #[test]
    fn rfc3339_is_chronos() {
        let mut micros: Vec<i64> = vec![
            0,
            -1,
            1,
            999_999,
            -62_167_219_200_000_000, // 0000-01-01T00:00:00Z
            -62_167_219_200_000_001, // the microsecond before: year -1
            253_402_300_799_999_999, // 9999-12-31T23:59:59.999999Z
            253_402_300_800_000_000, // 10000-01-01
            951_782_400_000_000,     // 2000-02-29
            1_764_000_000_123_456,
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            micros.push((x % 400_000_000_000_000_000) as i64 - 70_000_000_000_000_000);
        }
        for m in micros {
            let t = Timestamp::from_micros(m);
            let chrono = t.to_rfc3339_by_chrono();
            assert_eq!(t.to_rfc3339(), chrono, "{m}");
            assert_eq!(t.to_string(), chrono, "{m}");
            assert_eq!(
                serde_json::to_string(&t).unwrap(),
                format!("\"{chrono}\""),
                "{m}"
            );
        }
    }

    #[test]
    fn round_trips_through_rfc3339() {
        let t = Timestamp::from_micros(1_790_000_000_123_456);
        let s = t.to_rfc3339();
        assert_eq!(s, "2026-09-21T14:13:20.123456Z");
        assert_eq!(Timestamp::parse_rfc3339(&s, "x").unwrap(), t);
        assert!(Timestamp::parse_rfc3339("yesterday", "expires_at").is_err());
    }
}
