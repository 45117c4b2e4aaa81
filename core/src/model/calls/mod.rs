//! Calls: the recorded call, its type and status, and the create and update bodies; beside
//! them, a call's transcript (`transcripts`), its recording (`recordings`), and the list's
//! filters and the statistics (`queries`).

use serde::{Deserialize, Serialize};

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
    /// Cost in credits.
    pub total_cost: f64,
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
    /// The stored recording, if one was uploaded (not serialized: the call's JSON has no
    /// recording field).
    #[serde(skip_serializing)]
    #[cfg_attr(feature = "openapi", schemars(skip))]
    pub recording: Option<Recording>,
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
    /// Cost in credits, ≥ 0.
    #[serde(default)]
    pub total_cost: Option<f64>,
    /// Conversation turns, ≥ 0.
    #[serde(default)]
    pub turn_count: Option<i64>,
    /// e.g. `billed`.
    #[serde(default)]
    pub billing_status: Option<String>,
}
