//! What every outbound call is checked against before it is written, besides the suppression
//! list (read in the dial's own transaction by the repository): the organization's calling
//! hours in the callee's time zone.

use chrono::{TimeZone, Timelike};

use crate::error::{Error, Result};
use crate::model::CallingHours;
use crate::time::Timestamp;
use crate::validate;

/// Whether `minute` (after midnight) is inside `[start, end)`; a window whose end is before its
/// start runs over midnight.
fn inside(start: u32, end: u32, minute: u32) -> bool {
    if start <= end {
        (start..end).contains(&minute)
    } else {
        minute >= start || minute < end
    }
}

/// 422 naming the local time and zone when `now` in `zone` is outside `hours`.
pub(super) fn require_calling_hours(
    hours: Option<&CallingHours>,
    zone: &str,
    now: Timestamp,
) -> Result<()> {
    let Some(hours) = hours else {
        return Ok(());
    };
    let start = validate::time_of_day("calling_hours.start", &hours.start)?;
    let end = validate::time_of_day("calling_hours.end", &hours.end)?;
    let tz: chrono_tz::Tz = zone
        .parse()
        .map_err(|_| Error::Internal(format!("stored time zone {zone} is unknown")))?;
    let local = tz
        .timestamp_micros(now.as_micros())
        .single()
        .ok_or_else(|| Error::Internal("a timestamp out of chrono's range".into()))?;
    let minute = local.hour() * 60 + local.minute();
    if inside(start, end, minute) {
        return Ok(());
    }
    Err(Error::unprocessable(format!(
        "it is {:02}:{:02} in {zone}, outside the calling hours {}–{}; the call was not placed",
        local.hour(),
        local.minute(),
        hours.start,
        hours.end
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hours(start: &str, end: &str) -> CallingHours {
        CallingHours {
            start: start.into(),
            end: end.into(),
        }
    }

    /// 2026-01-15T12:00:00Z.
    const NOON_UTC: i64 = 1_768_478_400_000_000;

    #[test]
    fn calling_hours_hold_in_the_callees_zone() {
        let noon = Timestamp::from_micros(NOON_UTC);
        let day = hours("09:00", "20:00");
        assert!(require_calling_hours(Some(&day), "UTC", noon).is_ok());
        assert!(require_calling_hours(Some(&day), "Europe/Paris", noon).is_ok());
        // 21:00 in Tokyo.
        let err = require_calling_hours(Some(&day), "Asia/Tokyo", noon).unwrap_err();
        assert!(
            err.to_string().starts_with("it is 21:00 in Asia/Tokyo"),
            "{err}"
        );
        // 04:00 in Los Angeles (PST in January).
        assert!(require_calling_hours(Some(&day), "America/Los_Angeles", noon).is_err());
        assert!(require_calling_hours(None, "Asia/Tokyo", noon).is_ok());
        // Over midnight: 21:00–02:00 holds at 21:00 in Tokyo, not at noon in UTC.
        let night = hours("21:00", "02:00");
        assert!(require_calling_hours(Some(&night), "Asia/Tokyo", noon).is_ok());
        assert!(require_calling_hours(Some(&night), "UTC", noon).is_err());
    }

    #[test]
    fn summer_time_is_the_tz_databases() {
        // 2026-07-15T07:30:00Z is 09:30 in Paris (CEST), 08:30 in London (BST).
        let morning = Timestamp::from_micros(1_784_100_600_000_000);
        let nine = hours("09:00", "17:00");
        assert!(require_calling_hours(Some(&nine), "Europe/Paris", morning).is_ok());
        assert!(require_calling_hours(Some(&nine), "Europe/London", morning).is_err());
    }
}
