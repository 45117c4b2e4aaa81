//! The call list's filters and call statistics.

use serde::{Deserialize, Serialize};

use super::{CallStatus, CallType};
use crate::page::empty_as_none;
use crate::time::Timestamp;

/// The filters of `GET /api/calls` and `GET /api/calls/stats`; every one optional, all of
/// them combined.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct CallFilter {
    /// Only calls with this status.
    #[serde(default)]
    pub status: Option<CallStatus>,
    /// Only calls of this type.
    #[serde(default)]
    pub call_type: Option<CallType>,
    /// Only calls handled by this agent.
    #[serde(default, deserialize_with = "empty_as_none")]
    pub agent_id: Option<String>,
    /// Only calls to this E.164 number (send `+` as `%2B`).
    #[serde(default, deserialize_with = "empty_as_none")]
    pub to_number: Option<String>,
    /// Only calls from this E.164 number (send `+` as `%2B`).
    #[serde(default, deserialize_with = "empty_as_none")]
    pub from_number: Option<String>,
    /// Only calls that came in on or went out from this phone number (its id).
    #[serde(default, deserialize_with = "empty_as_none")]
    pub phone_number_id: Option<String>,
    /// Only calls that ran this published version of their agent.
    #[serde(default)]
    pub agent_version: Option<i64>,
    /// Only calls whose analysis found them successful (`true`) or not (`false`).
    #[serde(default)]
    pub successful: Option<bool>,
    /// Only calls created at or after this instant (RFC 3339).
    #[serde(default)]
    pub created_after: Option<Timestamp>,
    /// Only calls created before this instant (RFC 3339).
    #[serde(default)]
    pub created_before: Option<Timestamp>,
}

/// The full-text filter of `GET /api/calls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct CallSearch {
    /// Only calls with a transcript message that contains every word of `q` (any form of a
    /// word: `refunds` finds `refund`); punctuation is ignored.
    #[serde(default, deserialize_with = "empty_as_none")]
    pub q: Option<String>,
}

/// A validated [`CallFilter`] (plus the words of a [`CallSearch`]), as handed to a repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallQuery {
    /// Only this status.
    pub status: Option<CallStatus>,
    /// Only this type.
    pub call_type: Option<CallType>,
    /// Only this agent.
    pub agent_id: Option<String>,
    /// Only to this number.
    pub to_number: Option<String>,
    /// Only from this number.
    pub from_number: Option<String>,
    /// Only through this phone number of the organization.
    pub phone_number_id: Option<String>,
    /// Only calls that ran this version of their agent.
    pub agent_version: Option<i64>,
    /// Only calls analysed as successful, or not.
    pub successful: Option<bool>,
    /// `created_at >= created_after`.
    pub created_after: Option<Timestamp>,
    /// `created_at < created_before`.
    pub created_before: Option<Timestamp>,
    /// Only calls with a message containing every one of these words (letters and digits
    /// only, see [`crate::knowledge::search_terms`]); none when empty.
    pub terms: Vec<String>,
}

impl CallQuery {
    /// A short digest of the filters, empty when there are none: what binds a cursor to them
    /// (see [`crate::page::Cursor::encode_scoped`]).
    pub fn digest(&self) -> String {
        if *self == Self::default() {
            return String::new();
        }
        let micros = |t: Option<Timestamp>| t.map(|t| t.as_micros().to_string());
        let mut canonical = serde_json::json!([
            self.status.map(CallStatus::as_str),
            self.call_type.map(CallType::as_str),
            self.agent_id,
            self.to_number,
            self.from_number,
            micros(self.created_after),
            micros(self.created_before),
            self.terms,
        ]);
        // Appended only when given, so that cursors of the older filters stay valid.
        if let (Some(id), Some(list)) = (&self.phone_number_id, canonical.as_array_mut()) {
            list.push(serde_json::json!({ "phone_number_id": id }));
        }
        if let (Some(version), Some(list)) = (self.agent_version, canonical.as_array_mut()) {
            list.push(serde_json::json!({ "agent_version": version }));
        }
        if let (Some(successful), Some(list)) = (self.successful, canonical.as_array_mut()) {
            list.push(serde_json::json!({ "successful": successful }));
        }
        crate::page::filter_digest(&canonical)
    }
}

/// How `GET /api/calls/stats` groups the calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum StatsGroupBy {
    /// The UTC date of `created_at`, `YYYY-MM-DD`.
    Day,
    /// `agent_id`.
    Agent,
    /// `status`.
    Status,
    /// `end_reason` (`null` for calls without one).
    EndReason,
    /// `agent_version` (`null` for calls of agents never published).
    AgentVersion,
}

/// The grouping of `GET /api/calls/stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct StatsGrouping {
    /// Also count per `day`, `agent`, `status`, `end_reason` or `agent_version`; no groups when
    /// omitted.
    #[serde(default)]
    pub group_by: Option<StatsGroupBy>,
}

/// Totals over a set of calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct StatsTotals {
    /// How many calls.
    pub calls: i64,
    /// Sum of their `total_cost`.
    pub total_cost: f64,
    /// Sum of their `duration_seconds`.
    pub total_duration_seconds: f64,
    /// Mean `duration_seconds` of those that have one; `null` when none has.
    pub avg_duration_seconds: Option<f64>,
    /// The fraction (0–1) of the analysed calls (those with a `successful` verdict) that
    /// succeeded; `null` when none was analysed.
    pub success_rate: Option<f64>,
}

/// Totals over the calls of one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct StatsGroup {
    /// The day (`YYYY-MM-DD`, UTC), agent id, status, end reason or agent version; `null` for
    /// calls without an end reason or version.
    pub key: Option<String>,
    /// How many calls.
    pub calls: i64,
    /// Sum of their `total_cost`.
    pub total_cost: f64,
    /// Sum of their `duration_seconds`.
    pub total_duration_seconds: f64,
    /// Mean `duration_seconds` of those that have one; `null` when none has.
    pub avg_duration_seconds: Option<f64>,
    /// The fraction (0–1) of the analysed calls that succeeded; `null` when none was.
    pub success_rate: Option<f64>,
}

/// The answer of `GET /api/calls/stats`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct CallStats {
    /// Over every call the filters keep.
    pub totals: StatsTotals,
    /// One per key, in key order (`null` last); empty without `group_by`.
    pub groups: Vec<StatsGroup>,
}
