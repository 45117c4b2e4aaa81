//! Organizations and users: the tenant every resource belongs to, and the people who sign in.

use serde::Serialize;

use crate::time::Timestamp;

/// An organization: the tenant every other resource belongs to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Organization {
    /// `org_…`
    pub organization_id: String,
    /// Display name.
    pub name: String,
    /// When it was created.
    pub created_at: Timestamp,
}

/// A person who can sign in with a JWT; `user_id` is the token's `sub`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct User {
    /// `user_…`
    pub user_id: String,
    /// E-mail address, unique.
    pub email: String,
    /// Display name.
    pub name: Option<String>,
    /// When the user was first seen.
    pub created_at: Timestamp,
    /// Last time the user authenticated with a JWT.
    pub last_login: Option<Timestamp>,
}

/// Longest retention period accepted, in days (a hundred years).
pub const MAX_RETENTION_DAYS: i64 = 36_500;

/// An organization's settings: its retention policy (how many days recordings, transcripts and
/// calls are kept, counted from the call's `created_at`; `null` keeps them forever) and where
/// its calls' media streams go.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct OrganizationSettings {
    /// Days a call's recording is kept; `null` = forever.
    pub recording_retention_days: Option<i64>,
    /// Days a call's transcript is kept; `null` = forever.
    pub transcript_retention_days: Option<i64>,
    /// Days a call (with its transcript and recording) is kept; `null` = forever.
    pub call_retention_days: Option<i64>,
    /// Where calls stream their media (`{url}/{call_sid}`) unless their agent says otherwise:
    /// the user's voice runtime. `null` until set; calls cannot be placed or answered without.
    pub runtime_stream_url: Option<String>,
    /// When outbound calls may ring, in the callee's time zone; `null`: at any hour.
    pub calling_hours: Option<CallingHours>,
    /// The organization's IANA time zone: the callee's when nothing tells it. `UTC` by default.
    pub timezone: String,
    /// Most outbound calls `queued`, `ringing` or `in_progress` at once, across instances;
    /// `null`: no limit.
    pub max_concurrent_calls: Option<i64>,
    /// Credits the calls created in one calendar month (UTC) may use; once their usage
    /// reaches it, dials are refused (422) until the next month. `null`: no limit.
    pub monthly_credit_limit: Option<f64>,
}

/// A daily window of local time, `HH:MM` to `HH:MM`; one whose end is before its start runs
/// over midnight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CallingHours {
    /// First minute calls may ring, `HH:MM` (24 h).
    pub start: String,
    /// First minute they may not, `HH:MM` (24 h).
    pub end: String,
}

impl OrganizationSettings {
    /// Whether any period is set.
    pub fn has_policy(&self) -> bool {
        self.recording_retention_days.is_some()
            || self.transcript_retention_days.is_some()
            || self.call_retention_days.is_some()
    }
}

/// Body of `PATCH /api/organization/settings`: absent fields are unchanged, `null` clears one
/// (keep forever).
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct OrganizationSettingsUpdate {
    /// Days, 1 to 36500, or `null`.
    #[serde(default, deserialize_with = "super::phone_numbers::nullable")]
    pub recording_retention_days: Option<Option<i64>>,
    /// Days, 1 to 36500, or `null`.
    #[serde(default, deserialize_with = "super::phone_numbers::nullable")]
    pub transcript_retention_days: Option<Option<i64>>,
    /// Days, 1 to 36500, or `null`.
    #[serde(default, deserialize_with = "super::phone_numbers::nullable")]
    pub call_retention_days: Option<Option<i64>>,
    /// A `wss://` URL (`ws://` only to a loopback host) without query string, or `null`.
    #[serde(default, deserialize_with = "super::phone_numbers::nullable")]
    pub runtime_stream_url: Option<Option<String>>,
    /// `{start, end}` (`HH:MM`, different), or `null` for any hour.
    #[serde(default, deserialize_with = "super::phone_numbers::nullable")]
    pub calling_hours: Option<Option<CallingHours>>,
    /// An IANA time zone (`Europe/Paris`).
    #[serde(default)]
    pub timezone: Option<String>,
    /// 1 to 10000, or `null` for no limit.
    #[serde(default, deserialize_with = "super::phone_numbers::nullable")]
    pub max_concurrent_calls: Option<Option<i64>>,
    /// Credits, > 0, or `null` for no limit.
    #[serde(default, deserialize_with = "super::phone_numbers::nullable")]
    pub monthly_credit_limit: Option<Option<f64>>,
}
