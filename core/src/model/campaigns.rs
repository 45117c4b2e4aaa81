//! Campaigns: outbound calls paced through a list of recipients, within windows in each
//! recipient's time zone, retried on the outcomes the campaign names.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::page::empty_as_none;
use crate::time::Timestamp;

/// Where a campaign stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CampaignStatus {
    /// Being prepared; dials no one.
    Draft,
    /// Dialing its due recipients.
    Running,
    /// Stopped by a caller (or by a problem every dial would hit); can be started again.
    Paused,
    /// Nothing left to do.
    Completed,
    /// Stopped for good; its pending recipients were canceled.
    Canceled,
}

impl CampaignStatus {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Completed => "completed",
            Self::Canceled => "canceled",
        }
    }

    /// The status of a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Draft,
            Self::Running,
            Self::Paused,
            Self::Completed,
            Self::Canceled,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }

    /// The 409 of adding recipients to a campaign in this status, `None` when it may take
    /// them (it has not finished).
    pub fn refuses_recipients(self, campaign_id: &str) -> Option<crate::Error> {
        matches!(self, Self::Completed | Self::Canceled).then(|| {
            crate::Error::Conflict(format!(
                "campaign {campaign_id} is {}; recipients can only be added to a campaign that \
                 has not finished",
                self.as_str()
            ))
        })
    }
}

/// Where a recipient stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RecipientStatus {
    /// Waiting for its (next) attempt.
    Pending,
    /// Its call is queued, ringing or connected.
    InProgress,
    /// Its call was answered and ended.
    Completed,
    /// Out of attempts.
    Failed,
    /// On the suppression list when its turn came: never dialed.
    Suppressed,
    /// The campaign was canceled (or ended) before it was called.
    Canceled,
}

impl RecipientStatus {
    /// Every status, in the order of a campaign's counts.
    pub const ALL: [Self; 6] = [
        Self::Pending,
        Self::InProgress,
        Self::Completed,
        Self::Failed,
        Self::Suppressed,
        Self::Canceled,
    ];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Suppressed => "suppressed",
            Self::Canceled => "canceled",
        }
    }

    /// The status of a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// A weekly window in which a campaign may ring its recipients.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CampaignWindow {
    /// The days it opens: `mon` … `sun`.
    pub days: Vec<String>,
    /// First minute calls may ring, `HH:MM` (24 h).
    pub start: String,
    /// First minute they may not, `HH:MM`; before `start`, the window runs over midnight.
    pub end: String,
}

/// Outcome of a call that makes a recipient worth another attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RetryOn {
    /// The line was busy.
    Busy,
    /// Nobody answered.
    NoAnswer,
    /// The call failed.
    Failed,
}

/// When a recipient is called again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct RetryPolicy {
    /// Attempts in all, 1–10.
    pub max_attempts: u32,
    /// Seconds between an attempt's end and the next, at least 60.
    pub delay_secs: u32,
    /// The outcomes that are tried again.
    pub on: Vec<RetryOn>,
}

/// `retry` of a campaign's create or update; what is left out takes its default.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewRetryPolicy {
    /// Attempts in all, 1–10; 1 by default.
    #[serde(default)]
    pub max_attempts: Option<u32>,
    /// Seconds between an attempt's end and the next, at least 60; 3600 by default.
    #[serde(default)]
    pub delay_secs: Option<u32>,
    /// The outcomes that are tried again; none by default.
    #[serde(default)]
    pub on: Option<Vec<RetryOn>>,
}

impl From<NewRetryPolicy> for RetryPolicy {
    fn from(input: NewRetryPolicy) -> Self {
        let default = Self::default();
        Self {
            max_attempts: input.max_attempts.unwrap_or(default.max_attempts),
            delay_secs: input.delay_secs.unwrap_or(default.delay_secs),
            on: input.on.unwrap_or_default(),
        }
    }
}

impl RetryPolicy {
    /// Where a recipient stands once `call`, its `attempts`-th, ended at `now`, in a
    /// campaign that is `campaign`: reached, due again after the delay, or done with; with
    /// when it is due.
    pub fn after_call(
        &self,
        campaign: CampaignStatus,
        attempts: u32,
        call: &crate::model::Call,
        now: Timestamp,
    ) -> (RecipientStatus, Option<Timestamp>) {
        use crate::model::CallStatus;
        if call.ended_provisionally() {
            return (RecipientStatus::Failed, None);
        }
        let outcome = match call.status {
            CallStatus::Completed => return (RecipientStatus::Completed, None),
            CallStatus::Busy => Some(RetryOn::Busy),
            CallStatus::NoAnswer => Some(RetryOn::NoAnswer),
            CallStatus::Failed => Some(RetryOn::Failed),
            _ => None,
        };
        let again = outcome.is_some_and(|o| self.on.contains(&o)) && attempts < self.max_attempts;
        match (again, campaign) {
            (true, CampaignStatus::Canceled | CampaignStatus::Completed) => {
                (RecipientStatus::Canceled, None)
            }
            (true, _) => (
                RecipientStatus::Pending,
                Some(now.add_seconds(i64::from(self.delay_secs))),
            ),
            (false, _) => (RecipientStatus::Failed, None),
        }
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 1,
            delay_secs: 3600,
            on: Vec::new(),
        }
    }
}

/// How many recipients of a campaign are in each status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct CampaignCounts {
    /// Every recipient.
    pub total: u64,
    /// Waiting for an attempt.
    pub pending: u64,
    /// With a call under way.
    pub in_progress: u64,
    /// Reached.
    pub completed: u64,
    /// Out of attempts.
    pub failed: u64,
    /// Never dialed: on the suppression list.
    pub suppressed: u64,
    /// Never dialed: the campaign stopped first.
    pub canceled: u64,
}

impl CampaignCounts {
    /// Adds `n` recipients in `status`.
    pub fn add(&mut self, status: RecipientStatus, n: u64) {
        self.total += n;
        let slot = match status {
            RecipientStatus::Pending => &mut self.pending,
            RecipientStatus::InProgress => &mut self.in_progress,
            RecipientStatus::Completed => &mut self.completed,
            RecipientStatus::Failed => &mut self.failed,
            RecipientStatus::Suppressed => &mut self.suppressed,
            RecipientStatus::Canceled => &mut self.canceled,
        };
        *slot += n;
    }
}

/// A campaign.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Campaign {
    /// `cmp_` + 12 hex digits.
    pub campaign_id: String,
    /// The id of the organization it belongs to.
    #[serde(rename = "client_id")]
    pub organization_id: String,
    /// Its name.
    pub name: String,
    /// The agent that talks to every recipient.
    pub agent_id: String,
    /// The numbers it calls from, in turn.
    pub from_phone_number_ids: Vec<String>,
    /// Most of its calls in flight at once.
    pub max_concurrency: u32,
    /// The time zone of its windows for recipients without their own.
    pub timezone: String,
    /// When it may ring; always when empty.
    pub windows: Vec<CampaignWindow>,
    /// When a recipient is called again.
    pub retry: RetryPolicy,
    /// It dials no one before this.
    pub starts_at: Option<Timestamp>,
    /// It dials no one after this; the recipients still pending then are canceled.
    pub ends_at: Option<Timestamp>,
    /// Variables of every call, under each recipient's own.
    pub dynamic_variables: BTreeMap<String, String>,
    /// Where it stands.
    pub status: CampaignStatus,
    /// Why the system paused it, when it did (a dial that no call could pass).
    pub paused_reason: Option<String>,
    /// Its recipients by status (not stored: counted when it is read).
    pub counts: CampaignCounts,
    /// Calls it has placed: the next goes from number `dials % len` (not serialized).
    #[serde(skip_serializing)]
    #[cfg_attr(feature = "openapi", schemars(skip))]
    pub dials: u64,
    /// No longer raised: a call's end hurries the pacer's job instead, without writing the
    /// campaign's row (not serialized).
    #[serde(skip_serializing)]
    #[cfg_attr(feature = "openapi", schemars(skip))]
    pub nudges: u64,
    /// When it was created.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// Body of `POST /api/campaigns`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewCampaign {
    /// Its name, at most 200 characters.
    pub name: String,
    /// The agent that talks to every recipient (`supports_outbound`).
    pub agent_id: String,
    /// 1 to 20 of the organization's numbers that place calls, used in turn.
    pub from_phone_number_ids: Vec<String>,
    /// Most calls in flight at once, 1–100; 1 by default.
    #[serde(default)]
    pub max_concurrency: Option<u32>,
    /// IANA time zone of the windows for recipients without one; `UTC` by default.
    #[serde(default)]
    pub timezone: Option<String>,
    /// When it may ring, in each recipient's zone; always by default.
    #[serde(default)]
    pub windows: Option<Vec<CampaignWindow>>,
    /// When a recipient is called again; once by default.
    #[serde(default)]
    pub retry: Option<NewRetryPolicy>,
    /// It dials no one before this.
    #[serde(default)]
    pub starts_at: Option<Timestamp>,
    /// It dials no one after this.
    #[serde(default)]
    pub ends_at: Option<Timestamp>,
    /// Variables of every call.
    #[serde(default)]
    pub dynamic_variables: Option<BTreeMap<String, String>>,
}

/// Body of `PATCH /api/campaigns/{campaign_id}`: the fields to change (`null` clears
/// `starts_at`, `ends_at` and `windows`).
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CampaignUpdate {
    /// Its name.
    #[serde(default)]
    pub name: Option<String>,
    /// The agent.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// The numbers it calls from.
    #[serde(default)]
    pub from_phone_number_ids: Option<Vec<String>>,
    /// Most calls in flight at once.
    #[serde(default)]
    pub max_concurrency: Option<u32>,
    /// The time zone of its windows.
    #[serde(default)]
    pub timezone: Option<String>,
    /// When it may ring.
    #[serde(default, deserialize_with = "super::phone_numbers::nullable")]
    pub windows: Option<Option<Vec<CampaignWindow>>>,
    /// When a recipient is called again (what is left out takes its default).
    #[serde(default)]
    pub retry: Option<NewRetryPolicy>,
    /// It dials no one before this.
    #[serde(default, deserialize_with = "super::phone_numbers::nullable")]
    pub starts_at: Option<Option<Timestamp>>,
    /// It dials no one after this.
    #[serde(default, deserialize_with = "super::phone_numbers::nullable")]
    pub ends_at: Option<Option<Timestamp>>,
    /// Variables of every call.
    #[serde(default)]
    pub dynamic_variables: Option<BTreeMap<String, String>>,
}

/// The filter of `GET /api/campaigns`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct CampaignFilter {
    /// Only campaigns in this status.
    #[serde(default, deserialize_with = "empty_as_none")]
    pub status: Option<String>,
}

/// Someone a campaign calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Recipient {
    /// `rcp_` + 16 hex digits.
    pub recipient_id: String,
    /// The campaign.
    pub campaign_id: String,
    /// The number called, E.164.
    pub to_number: String,
    /// Their IANA time zone; the campaign's when `null`.
    pub timezone: Option<String>,
    /// Variables of their calls, over the campaign's.
    pub dynamic_variables: BTreeMap<String, String>,
    /// Where they stand.
    pub status: RecipientStatus,
    /// Calls placed to them so far.
    pub attempts: u32,
    /// Their latest call.
    pub last_call_sid: Option<String>,
    /// When they are due next (an attempt after a retry's delay, or the next opening of a
    /// window); `null` when due now or done.
    pub next_attempt_at: Option<Timestamp>,
    /// How their latest call ended (`completed`, `busy`, `no_answer`, …).
    pub last_outcome: Option<String>,
    /// When they were added.
    pub created_at: Timestamp,
}

/// A recipient in `POST /api/campaigns/{campaign_id}/recipients`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewRecipient {
    /// The number to call, E.164.
    pub to_number: String,
    /// Their IANA time zone.
    #[serde(default)]
    pub timezone: Option<String>,
    /// Variables of their calls.
    #[serde(default)]
    pub dynamic_variables: Option<BTreeMap<String, String>>,
}

/// JSON body of `POST /api/campaigns/{campaign_id}/recipients` (a `text/csv` body is the
/// other form).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewRecipients {
    /// 1 to 1000 recipients.
    pub recipients: Vec<NewRecipient>,
}

/// The answer of an upload of recipients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct RecipientsAdded {
    /// Recipients added.
    pub added: u64,
    /// Rows whose number the campaign already had (or that repeated one of the upload).
    pub duplicates: u64,
}

/// The filter of `GET /api/campaigns/{campaign_id}/recipients`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct RecipientFilter {
    /// Only recipients in this status.
    #[serde(default, deserialize_with = "empty_as_none")]
    pub status: Option<String>,
}
