//! Calls: the recorded call, its type and status, and the create and update bodies; beside
//! them, a call's transcript (`transcripts`), its recording (`recordings`), and the list's
//! filters and the statistics (`queries`).

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use crate::telephony::TelephonyProvider;
use crate::telephony::progress::AnsweredBy;
use crate::time::Timestamp;

mod queries;
mod recordings;
mod transcripts;

pub use queries::*;
pub use recordings::*;
pub use transcripts::*;

/// Direction or purpose of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CallType {
    /// Someone called one of the organization's numbers.
    Inbound,
    /// The agent called out.
    Outbound,
    /// A test call from the dashboard.
    Preview,
}

impl CallType {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Inbound => "inbound",
            Self::Outbound => "outbound",
            Self::Preview => "preview",
        }
    }
}

/// Where a call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// Waiting to be placed.
    Queued,
    /// Ringing.
    Ringing,
    /// Connected.
    InProgress,
    /// Ended normally.
    Completed,
    /// Could not be connected or broke down.
    Failed,
    /// The callee was busy.
    Busy,
    /// Nobody answered.
    NoAnswer,
    /// Cancelled before it connected.
    Canceled,
}

impl CallStatus {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Ringing => "ringing",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Busy => "busy",
            Self::NoAnswer => "no_answer",
            Self::Canceled => "canceled",
        }
    }
}

/// The `end_reason` of a dial whose outcome is unknown: the one terminal state a later
/// report still moves, and never retried by a campaign (the person may have been rung).
pub const DIAL_OUTCOME_UNKNOWN: &str = "dial_outcome_unknown";

/// The `end_reason` of a call the provider no longer knows, or has ended without a report
/// reaching voiceplane: like [`DIAL_OUTCOME_UNKNOWN`], a later report still moves it.
pub const PROVIDER_LOST: &str = "provider_lost";

/// Why an outbound call was never sent: the `end_reason` of a dial stopped by the checks made
/// as it was about to be sent (DESIGN §23).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsent {
    /// Not sent within `telephony.dial_deadline_secs` of its request (`dial_expired`).
    Expired,
    /// The number was put on the suppression list meanwhile (`suppressed`).
    Suppressed,
    /// Outside the calling hours in the callee's zone by then (`outside_calling_hours`).
    OutsideCallingHours,
    /// The month's credits reached the organization's limit meanwhile (`credit_limit`).
    OutOfCredit,
    /// Its campaign was paused meanwhile (`campaign_paused`).
    CampaignPaused,
    /// Its campaign was canceled or ended meanwhile (`campaign_canceled`).
    CampaignCanceled,
}

impl Unsent {
    /// Every reason, for reading one back.
    pub const ALL: [Unsent; 6] = [
        Self::Expired,
        Self::Suppressed,
        Self::OutsideCallingHours,
        Self::OutOfCredit,
        Self::CampaignPaused,
        Self::CampaignCanceled,
    ];

    /// The call's `end_reason`.
    pub fn end_reason(self) -> &'static str {
        match self {
            Self::Expired => "dial_expired",
            Self::Suppressed => "suppressed",
            Self::OutsideCallingHours => "outside_calling_hours",
            Self::OutOfCredit => "credit_limit",
            Self::CampaignPaused => "campaign_paused",
            Self::CampaignCanceled => "campaign_canceled",
        }
    }

    /// The call's status: a dial its campaign took back is `canceled`, any other `failed`.
    pub fn status(self) -> CallStatus {
        match self {
            Self::CampaignPaused | Self::CampaignCanceled => CallStatus::Canceled,
            _ => CallStatus::Failed,
        }
    }

    /// Where a campaign's recipient goes when its call was not sent for this reason: not an
    /// attempt, so back to `pending`, unless the number is now suppressed or the campaign
    /// canceled.
    pub fn recipient_status(self) -> crate::model::RecipientStatus {
        use crate::model::RecipientStatus;
        match self {
            Self::Suppressed => RecipientStatus::Suppressed,
            Self::CampaignCanceled => RecipientStatus::Canceled,
            _ => RecipientStatus::Pending,
        }
    }

    /// The reason a call that was never sent ended with, if it is one.
    pub fn of(call: &Call) -> Option<Self> {
        if call.dial_started_at.is_some() || call.provider_call_id.is_some() {
            return None;
        }
        let reason = call.end_reason.as_deref()?;
        Self::ALL.into_iter().find(|u| u.end_reason() == reason)
    }
}

/// A call already written as its JSON representation (exactly the bytes `Call` serializes to),
/// with the keys of its place in the list: what a page of the call list is made of, so that a
/// repository that can write rows straight to JSON skips building `Call`s.
#[derive(Debug, Clone, PartialEq)]
pub struct CallJson {
    /// The call's `created_at`.
    pub created_at: Timestamp,
    /// The call's id.
    pub call_sid: String,
    /// The call as JSON.
    pub json: String,
}

impl CallJson {
    /// `call` serialized.
    pub fn of(call: &Call) -> crate::error::Result<Self> {
        Ok(Self {
            created_at: call.created_at,
            call_sid: call.call_sid.clone(),
            json: serde_json::to_string(call)
                .map_err(|e| crate::error::Error::Internal(format!("encoding a call: {e}")))?,
        })
    }

    /// Every one of `calls` serialized: a page read as `Call`s.
    pub fn of_all(calls: &[Call]) -> crate::error::Result<Vec<Self>> {
        calls.iter().map(Self::of).collect()
    }
}

/// A call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Call {
    /// `call_` + alphanumerics.
    pub call_sid: String,
    /// Callee, E.164.
    pub to_number: String,
    /// Caller, E.164.
    pub from_number: Option<String>,
    /// The agent that handled the call.
    pub agent_id: String,
    /// The agent's name when the call was recorded.
    pub agent_name: Option<String>,
    /// The id of the organization it belongs to.
    #[serde(rename = "client_id")]
    pub organization_id: String,
    /// `inbound`, `outbound` or `preview`.
    pub call_type: CallType,
    /// Current status.
    pub status: CallStatus,
    /// Whether the call is recorded.
    pub recording_enabled: bool,
    /// Cost in credits: the sum of `cost_breakdown` once the call has usage, else as recorded.
    pub total_cost: f64,
    /// The call's usage items, each priced when it was recorded; empty without usage.
    pub cost_breakdown: Vec<super::UsageCharge>,
    /// Duration in seconds.
    pub duration_seconds: Option<f64>,
    /// Conversation turns.
    pub turn_count: i64,
    /// When the call was recorded.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
    /// When the call connected.
    pub start_time: Option<Timestamp>,
    /// When the call ended.
    pub end_time: Option<Timestamp>,
    /// Why it ended, e.g. `user_hangup`.
    pub end_reason: Option<String>,
    /// e.g. `billed`.
    pub billing_status: Option<String>,
    /// The telephony provider that carries the call; `null` for a call recorded through the
    /// API.
    pub provider: Option<TelephonyProvider>,
    /// The provider's id of the call (Twilio `CallSid`, Telnyx `call_control_id`): one call
    /// per provider call id.
    pub provider_call_id: Option<String>,
    /// The organization's number the call came in on or went out from.
    pub phone_number_id: Option<String>,
    /// Who answered an outbound call, as the provider's machine detection tells.
    pub answered_by: Option<AnsweredBy>,
    /// Values the runtime fills into the agent's prompt, set by the dial.
    pub dynamic_variables: BTreeMap<String, String>,
    /// The caller's own data about the call, set by the dial.
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// Why the provider refused the call, when it did.
    pub provider_error: Option<ProviderError>,
    /// The version of the agent the call runs with.
    pub agent_version: Option<i64>,
    /// The callee's IANA time zone, when the dial named one.
    pub timezone: Option<String>,
    /// Where the post-call analysis stands; `null` when the call is not analysed.
    pub analysis_status: Option<super::AnalysisStatus>,
    /// What the language model said about the call, once it has.
    pub analysis: Option<super::CallAnalysis>,
    /// Why the analysis `failed`.
    pub analysis_error: Option<String>,
    /// How fast the built-in runtime answered, once it ran the call: from the end of each
    /// caller turn to the first frame of the agent's answer sent.
    pub latency: Option<CallLatency>,
    /// When the dial was handed to the provider: marked before the request is sent, so that
    /// a dial whose outcome is unknown is never sent twice (not serialized).
    #[serde(skip_serializing)]
    #[cfg_attr(feature = "openapi", schemars(skip))]
    pub dial_started_at: Option<Timestamp>,
    /// The campaign that placed it, if one did (not serialized: its recipient's
    /// `last_call_sid` names the call).
    #[serde(skip_serializing)]
    #[cfg_attr(feature = "openapi", schemars(skip))]
    pub campaign_id: Option<String>,
    /// The campaign's recipient it called (not serialized).
    #[serde(skip_serializing)]
    #[cfg_attr(feature = "openapi", schemars(skip))]
    pub recipient_id: Option<String>,
    /// The stored recording, if one was uploaded (not serialized: the call's JSON has no
    /// recording field).
    #[serde(skip_serializing)]
    #[cfg_attr(feature = "openapi", schemars(skip))]
    pub recording: Option<Recording>,
    /// The SHA-256 of the token its media stream must present to the built-in runtime
    /// (DESIGN §24), when the built-in runtime runs it (not serialized).
    #[serde(skip_serializing)]
    #[cfg_attr(feature = "openapi", schemars(skip))]
    pub runtime_token: Option<String>,
}

/// The turn latency of a call the built-in runtime ran: from the end of each caller turn (the
/// speech recognizer's end of speech) to the first frame of the agent's answer sent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct CallLatency {
    /// Turns answered.
    pub turns: u32,
    /// Median, in milliseconds.
    pub p50_ms: f64,
    /// 95th percentile, in milliseconds.
    pub p95_ms: f64,
    /// Slowest, in milliseconds.
    pub max_ms: f64,
}

impl CallLatency {
    /// The summary of `samples_ms` (nearest-rank percentiles); `None` for no samples.
    pub fn of(samples_ms: &[f64]) -> Option<Self> {
        if samples_ms.is_empty() {
            return None;
        }
        let mut sorted = samples_ms.to_vec();
        sorted.sort_by(f64::total_cmp);
        let rank = |p: f64| {
            let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
            (sorted[i] * 1000.0).round() / 1000.0
        };
        Some(Self {
            turns: u32::try_from(sorted.len()).unwrap_or(u32::MAX),
            p50_ms: rank(0.5),
            p95_ms: rank(0.95),
            max_ms: rank(1.0),
        })
    }
}

impl Call {
    /// A new call `call_sid` of `agent` (none for a call refused before any agent took it) in
    /// the organization, to `to_number`, recorded `now`: `queued`, recorded as the agent
    /// records, and nothing else known yet (the caller sets the `agent_version` it drew).
    pub fn new(
        call_sid: String,
        organization_id: &str,
        agent: Option<&crate::model::Agent>,
        call_type: CallType,
        to_number: String,
        now: Timestamp,
    ) -> Self {
        Self {
            call_sid,
            to_number,
            from_number: None,
            agent_id: agent.map(|a| a.agent_id.clone()).unwrap_or_default(),
            agent_name: agent.map(|a| a.agent_name.clone()),
            organization_id: organization_id.to_owned(),
            call_type,
            status: CallStatus::Queued,
            recording_enabled: agent.is_some_and(|a| a.recording_enabled),
            total_cost: 0.0,
            cost_breakdown: Vec::new(),
            duration_seconds: None,
            turn_count: 0,
            created_at: now,
            updated_at: now,
            start_time: None,
            end_time: None,
            end_reason: None,
            billing_status: None,
            provider: None,
            provider_call_id: None,
            phone_number_id: None,
            answered_by: None,
            dynamic_variables: BTreeMap::new(),
            metadata: serde_json::Map::new(),
            provider_error: None,
            agent_version: None,
            timezone: None,
            analysis_status: None,
            analysis: None,
            analysis_error: None,
            latency: None,
            dial_started_at: None,
            campaign_id: None,
            recipient_id: None,
            recording: None,
            runtime_token: None,
        }
    }

    /// Whether this is a dial of unknown outcome ([`DIAL_OUTCOME_UNKNOWN`]): failed, yet a
    /// later report still moves it.
    pub fn dial_outcome_unknown(&self) -> bool {
        self.status == CallStatus::Failed
            && self.end_reason.as_deref() == Some(DIAL_OUTCOME_UNKNOWN)
    }

    /// Whether this call ended without knowing how (a dial of unknown outcome, or a call
    /// the provider lost): failed, yet a later report still moves it.
    pub fn ended_provisionally(&self) -> bool {
        self.status == CallStatus::Failed
            && matches!(
                self.end_reason.as_deref(),
                Some(DIAL_OUTCOME_UNKNOWN | PROVIDER_LOST)
            )
    }
}

/// A provider's refusal of a call: its error code and message (never a credential).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ProviderError {
    /// The provider's code (`21211`, `10015`, …), or the HTTP status.
    pub code: String,
    /// The provider's message, shortened.
    pub message: String,
}

/// Body of `POST /api/calls/dial`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Dial {
    /// The agent that talks; must exist in the organization.
    pub agent_id: String,
    /// Whom to call, E.164.
    pub to_number: String,
    /// The organization's number to call from; it must support outbound calls and have an
    /// integration.
    pub from_phone_number_id: String,
    /// Values the runtime fills into the agent's prompt: names of letters, digits and `_`
    /// (at most 64 characters) to strings (at most 1,000), at most 50 of them.
    #[serde(default)]
    pub dynamic_variables: Option<BTreeMap<String, String>>,
    /// The caller's own data about the call, returned with it (at most 16 KiB of JSON).
    #[serde(default)]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
    /// The callee's IANA time zone (`Europe/Paris`).
    #[serde(default)]
    pub timezone: Option<String>,
    /// The published version of the agent to use instead of its deployment.
    #[serde(default)]
    pub agent_version: Option<i64>,
}

/// Body of `POST /api/calls`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewCall {
    /// The agent handling the call; must exist in the organization.
    pub agent_id: String,
    /// Callee, E.164.
    pub to_number: String,
    /// Caller, E.164.
    #[serde(default)]
    pub from_number: Option<String>,
    /// `inbound`, `outbound` or `preview`.
    pub call_type: CallType,
    /// Initial status; `queued` by default.
    #[serde(default)]
    pub status: Option<CallStatus>,
    /// Defaults to the agent's `recording_enabled`.
    #[serde(default)]
    pub recording_enabled: Option<bool>,
    /// When the call happened, for imports: `admin` only, not in the future; now by default.
    /// Retention counts a call's age from it.
    #[serde(default)]
    pub created_at: Option<Timestamp>,
}

/// Body of `PATCH /api/calls/{call_sid}`: every field optional, absent fields unchanged.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CallUpdate {
    /// New status.
    #[serde(default)]
    pub status: Option<CallStatus>,
    /// Why it ended.
    #[serde(default)]
    pub end_reason: Option<String>,
    /// When it connected.
    #[serde(default)]
    pub start_time: Option<Timestamp>,
    /// When it ended.
    #[serde(default)]
    pub end_time: Option<Timestamp>,
    /// Duration; computed from the times when both are known and this is absent.
    #[serde(default)]
    pub duration_seconds: Option<f64>,
    /// Cost in credits, ≥ 0; once the call has usage its total is derived (409).
    #[serde(default)]
    pub total_cost: Option<f64>,
    /// Conversation turns, ≥ 0.
    #[serde(default)]
    pub turn_count: Option<i64>,
    /// e.g. `billed`.
    #[serde(default)]
    pub billing_status: Option<String>,
}
