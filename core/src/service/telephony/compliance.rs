//! What every outbound call is checked against before it is written, besides the suppression
//! list (read in the dial's own transaction by the repository): the organization's calling
//! hours in the callee's time zone; and for a campaign's calls, its weekly windows, with when
//! both next allow a call.

use std::collections::HashMap;
use std::sync::LazyLock;

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Timelike};
use chrono_tz::Tz;

use crate::error::{Error, Result};
use crate::model::{CallingHours, CampaignWindow};
use crate::time::Timestamp;
use crate::validate;

/// The days of a window, by the names the API takes, Monday first.
const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// A weekly window in minutes after midnight, its days by `Weekday::num_days_from_monday`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::service) struct Window {
    days: [bool; 7],
    start: u32,
    end: u32,
}

impl Window {
    /// Checks `window` (the field `field` of the input) and reads it.
    pub(in crate::service) fn parse(field: &str, window: &CampaignWindow) -> Result<Self> {
        let start = validate::time_of_day(&format!("{field}.start"), &window.start)?;
        let end = validate::time_of_day(&format!("{field}.end"), &window.end)?;
        if start == end {
            return Err(Error::invalid(format!(
                "{field}: start and end are both {}; a window needs some time in it",
                window.start
            )));
        }
        if window.days.is_empty() {
            return Err(Error::invalid(format!(
                "{field}.days must name at least one day"
            )));
        }
        let mut days = [false; 7];
        for day in &window.days {
            let i = DAYS.iter().position(|d| d == day).ok_or_else(|| {
                Error::invalid(format!(
                    "{field}.days: `{}` is not one of mon, tue, wed, thu, fri, sat, sun",
                    crate::ids::truncate(day, 20)
                ))
            })?;
            days[i] = true;
        }
        Ok(Self { days, start, end })
    }

    /// The organization's calling hours, as a window of every day.
    fn calling_hours(hours: &CallingHours) -> Result<Self> {
        Ok(Self {
            days: [true; 7],
            start: validate::time_of_day("calling_hours.start", &hours.start)?,
            end: validate::time_of_day("calling_hours.end", &hours.end)?,
        })
    }

    /// Whether the local time `at` is inside: a window that runs over midnight belongs to
    /// the day it opens.
    fn holds(&self, at: &DateTime<Tz>) -> bool {
        let minute = at.hour() * 60 + at.minute();
        let today = at.weekday().num_days_from_monday() as usize;
        if self.start < self.end {
            return self.days[today] && (self.start..self.end).contains(&minute);
        }
        let yesterday = (today + 6) % 7;
        (self.days[today] && minute >= self.start) || (self.days[yesterday] && minute < self.end)
    }
}

/// When a campaign may ring a callee: inside one of its windows (any time when it has none)
/// and inside the organization's calling hours.
pub(in crate::service) struct Schedule {
    windows: Vec<Window>,
    hours: Option<Window>,
}

impl Schedule {
    /// The schedule of `windows` (checked when the campaign was written) and the
    /// organization's calling `hours`.
    pub(in crate::service) fn new(
        windows: &[CampaignWindow],
        hours: Option<&CallingHours>,
    ) -> Result<Self> {
        let windows = windows
            .iter()
            .map(|w| Window::parse("windows", w))
            .collect::<Result<Vec<_>>>()?;
        let hours = hours.map(Window::calling_hours).transpose()?;
        Ok(Self { windows, hours })
    }

    /// Whether a call may ring at `at` (UTC micros): inside a window in `windows_zone` and
    /// the calling hours in `hours_zone`.
    fn holds(&self, at: i64, windows_zone: Tz, hours_zone: Tz) -> bool {
        let local = |tz: Tz| tz.timestamp_micros(at).single();
        let in_windows = self.windows.is_empty()
            || local(windows_zone).is_some_and(|t| self.windows.iter().any(|w| w.holds(&t)));
        let in_hours = self
            .hours
            .is_none_or(|h| local(hours_zone).is_some_and(|t| h.holds(&t)));
        in_windows && in_hours
    }

    /// [`Self::wait_in`] for a callee whose calling hours are read in one zone.
    #[cfg(test)]
    fn wait(
        &self,
        windows_zone: &str,
        hours_zone: &str,
        now: Timestamp,
    ) -> Result<Option<Timestamp>> {
        self.wait_in(windows_zone, &[hours_zone], now)
    }

    /// `None` when a call may ring at `now`, its windows read in `windows_zone` (the
    /// recipient's, else the campaign's) and the calling hours in each of `hours_zones` (the
    /// callee's, [`callee_zones`]); else the first moment in the coming eight days when one
    /// may (or a day later, to look again, when none does).
    pub(in crate::service) fn wait_in(
        &self,
        windows_zone: &str,
        hours_zones: &[&str],
        now: Timestamp,
    ) -> Result<Option<Timestamp>> {
        let windows_tz = zone(windows_zone)?;
        let hours_tzs = hours_zones
            .iter()
            .map(|z| zone(z))
            .collect::<Result<Vec<_>>>()?;
        let holds = |at: i64| {
            hours_tzs
                .iter()
                .all(|hours_tz| self.holds(at, windows_tz, *hours_tz))
        };
        if holds(now.as_micros()) {
            return Ok(None);
        }
        // Every opening is a window's start in its zone, or the hours' start in theirs, on
        // some day: try them in order.
        let starts = self.windows.iter().map(|w| (w.start, windows_tz)).chain(
            self.hours
                .iter()
                .flat_map(|h| hours_tzs.iter().map(|tz| (h.start, *tz))),
        );
        let mut candidates: Vec<i64> = starts
            .flat_map(|(minute, tz)| openings(tz, minute, now))
            .filter(|at| *at > now.as_micros())
            .collect();
        candidates.sort_unstable();
        let next = candidates
            .into_iter()
            .find(|at| holds(*at))
            .map(Timestamp::from_micros)
            .unwrap_or_else(|| now.add_seconds(86_400));
        Ok(Some(next))
    }
}

fn zone(name: &str) -> Result<Tz> {
    name.parse()
        .map_err(|_| Error::Internal(format!("stored time zone {name} is unknown")))
}

/// The instants (UTC micros) of `minute` after local midnight in `tz` on the nine days from
/// `now`'s, a minute inside a spring-forward gap moved an hour on.
fn openings(tz: Tz, minute: u32, now: Timestamp) -> Vec<i64> {
    let Some(today) = tz
        .timestamp_micros(now.as_micros())
        .single()
        .map(|t| t.date_naive())
    else {
        return Vec::new();
    };
    (0..=8)
        .filter_map(|d| today.checked_add_signed(Duration::days(d)))
        .filter_map(|day: NaiveDate| {
            let at = day.and_hms_opt(minute / 60, minute % 60, 0)?;
            tz.from_local_datetime(&at)
                .earliest()
                .or_else(|| {
                    tz.from_local_datetime(&(at + Duration::hours(1)))
                        .earliest()
                })
                .map(|t: DateTime<Tz>| t.timestamp_micros())
        })
        .collect()
}

/// The tz database's table of countries and their zones (`zone.tab` of tzdata 2025b, public
/// domain): one row per country and zone.
const ZONE_TAB: &str = include_str!("../../../data/zone.tab");

/// The zones of the country of `number` (by libphonenumber's metadata), as the tz database
/// lists them: one for France or Japan, many for the United States.
fn country_zones(number: &str) -> Option<&'static [&'static str]> {
    static ZONES: LazyLock<HashMap<&'static str, Vec<&'static str>>> = LazyLock::new(|| {
        let mut zones: HashMap<&str, Vec<&str>> = HashMap::new();
        for line in ZONE_TAB.lines().filter(|l| !l.starts_with('#')) {
            let mut cols = line.split('\t');
            if let (Some(country), Some(_), Some(zone)) = (cols.next(), cols.next(), cols.next()) {
                zones.entry(country).or_default().push(zone);
            }
        }
        zones
    });
    let parsed = phonenumber::parse(None, number).ok()?;
    let country = parsed.country().id()?;
    ZONES.get(country.as_ref()).map(Vec::as_slice)
}

/// The zone of the country of `number`, when the tz database gives that country only one.
#[cfg(test)]
fn country_zone(number: &str) -> Option<&'static str> {
    country_zones(number).and_then(|z| (z.len() == 1).then(|| z[0]))
}

/// The zones a callee's calling hours are read in: the one the dial or recipient gives; else
/// their number's country's, all of them when it has several (the hours must hold in each, so
/// that a number in New York's country is never rung at 05:00 in Los Angeles); else the
/// organization's.
pub(in crate::service) fn callee_zones<'a>(
    given: Option<&'a str>,
    number: &str,
    organization: &'a str,
) -> Vec<&'a str> {
    if let Some(zone) = given {
        return vec![zone];
    }
    match country_zones(number) {
        Some(zones) if !zones.is_empty() => zones.to_vec(),
        _ => vec![organization],
    }
}

/// 422 naming the local time and zone when `now` is outside `hours` in one of `zones`.
pub(super) fn require_calling_hours_in(
    hours: Option<&CallingHours>,
    zones: &[&str],
    now: Timestamp,
) -> Result<()> {
    zones
        .iter()
        .try_for_each(|zone| require_calling_hours(hours, zone, now))
}

/// 422 naming the local time and zone when `now` in `zone` is outside `hours`.
fn require_calling_hours(hours: Option<&CallingHours>, zone: &str, now: Timestamp) -> Result<()> {
    let Some(hours) = hours else {
        return Ok(());
    };
    let local = self::zone(zone)?
        .timestamp_micros(now.as_micros())
        .single()
        .ok_or_else(|| Error::Internal("a timestamp out of chrono's range".into()))?;
    if Window::calling_hours(hours)?.holds(&local) {
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

    fn window(days: &[&str], start: &str, end: &str) -> CampaignWindow {
        CampaignWindow {
            days: days.iter().map(|d| (*d).to_owned()).collect(),
            start: start.into(),
            end: end.into(),
        }
    }

    #[test]
    fn a_campaign_waits_for_its_window_in_the_callees_zone() {
        // Thursday 2026-01-15, 12:00 UTC.
        let noon = Timestamp::from_micros(NOON_UTC);
        let weekdays = Schedule::new(
            &[window(
                &["mon", "tue", "wed", "thu", "fri"],
                "09:00",
                "17:00",
            )],
            None,
        )
        .unwrap();
        assert_eq!(weekdays.wait("UTC", "UTC", noon).unwrap(), None);
        // 21:00 in Tokyo: opens Friday 09:00 there, 00:00 UTC.
        let tokyo = weekdays
            .wait("Asia/Tokyo", "Asia/Tokyo", noon)
            .unwrap()
            .unwrap();
        assert_eq!(tokyo.to_rfc3339(), "2026-01-16T00:00:00.000000Z");
        // 04:00 in Los Angeles: opens at 09:00 PST, 17:00 UTC.
        let la = weekdays
            .wait("America/Los_Angeles", "America/Los_Angeles", noon)
            .unwrap()
            .unwrap();
        assert_eq!(la.to_rfc3339(), "2026-01-15T17:00:00.000000Z");
        // A weekend-only window waits for Saturday.
        let weekend = Schedule::new(&[window(&["sat", "sun"], "10:00", "12:00")], None).unwrap();
        let sat = weekend.wait("UTC", "UTC", noon).unwrap().unwrap();
        assert_eq!(sat.to_rfc3339(), "2026-01-17T10:00:00.000000Z");
        // Calling hours narrow a window: 09:00–17:00 and 13:00–20:00 open at 13:00.
        let hours = CallingHours {
            start: "13:00".into(),
            end: "20:00".into(),
        };
        let both = Schedule::new(
            &[window(
                &["mon", "tue", "wed", "thu", "fri"],
                "09:00",
                "17:00",
            )],
            Some(&hours),
        )
        .unwrap();
        let at = both.wait("UTC", "UTC", noon).unwrap().unwrap();
        assert_eq!(at.to_rfc3339(), "2026-01-15T13:00:00.000000Z");
        // Over midnight, the window belongs to the day it opens: Thursday 22:00–02:00 holds
        // at Friday 01:00 but not Saturday 01:00.
        let late = Schedule::new(&[window(&["thu"], "22:00", "02:00")], None).unwrap();
        let friday_one = Timestamp::from_micros(NOON_UTC + 13 * 3_600_000_000);
        assert_eq!(late.wait("UTC", "UTC", friday_one).unwrap(), None);
        let saturday_one = Timestamp::from_micros(NOON_UTC + 37 * 3_600_000_000);
        assert!(late.wait("UTC", "UTC", saturday_one).unwrap().is_some());
    }

    #[test]
    fn windows_and_hours_can_be_in_two_zones() {
        // Thursday 12:00 UTC: 13:00 in Paris (the campaign's windows), 21:00 in Tokyo (the
        // callee's calling hours 09:00–20:00): it waits for 09:00 in Tokyo, Friday 00:00 UTC,
        // which is 01:00 in Paris — outside a 09:00–18:00 window, so Friday 09:00 Paris.
        let noon = Timestamp::from_micros(NOON_UTC);
        let hours = CallingHours {
            start: "09:00".into(),
            end: "20:00".into(),
        };
        let days = ["mon", "tue", "wed", "thu", "fri"];
        let both = Schedule::new(&[window(&days, "09:00", "18:00")], Some(&hours)).unwrap();
        let at = both
            .wait("Europe/Paris", "Asia/Tokyo", noon)
            .unwrap()
            .unwrap();
        assert_eq!(at.to_rfc3339(), "2026-01-16T08:00:00.000000Z");
        assert_eq!(
            both.wait("Europe/Paris", "Europe/Paris", noon).unwrap(),
            None
        );
    }

    #[test]
    fn a_countrys_only_zone_comes_from_its_number() {
        assert_eq!(country_zone("+33612345678"), Some("Europe/Paris"));
        assert_eq!(country_zone("+81312345678"), Some("Asia/Tokyo"));
        assert_eq!(country_zone("+442071838750"), Some("Europe/London"));
        // Several zones: none is guessed.
        assert_eq!(country_zone("+14155550100"), None);
        assert_eq!(country_zone("+61212345678"), None);
        // Every zone of the table is one chrono-tz knows.
        for line in ZONE_TAB.lines().filter(|l| !l.starts_with('#')) {
            let zone = line.split('\t').nth(2).unwrap();
            assert!(zone.parse::<Tz>().is_ok(), "{zone}");
        }
    }

    #[test]
    fn windows_are_checked() {
        let bad = |w: CampaignWindow| Window::parse("windows[0]", &w).unwrap_err().to_string();
        assert!(bad(window(&["mon"], "09:00", "09:00")).contains("start and end"));
        assert!(bad(window(&["monday"], "09:00", "10:00")).contains("`monday`"));
        assert!(bad(window(&[], "09:00", "10:00")).contains("at least one day"));
        assert!(bad(window(&["mon"], "9:00", "10:00")).contains("windows[0].start"));
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
