//! The suppression (do-not-call) list: numbers no outbound call may ring, checked in the dial's
//! own transaction.

use serde::{Deserialize, Serialize};

use crate::page::empty_as_none;
use crate::time::Timestamp;

/// A number on the organization's suppression list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Suppression {
    /// `sup_…`
    pub suppression_id: String,
    /// The id of the organization it belongs to.
    #[serde(rename = "client_id")]
    pub organization_id: String,
    /// The suppressed number, E.164.
    pub phone_number: String,
    /// Why, in the caller's words (an opt-out, a complaint).
    pub reason: Option<String>,
    /// When the suppression lapses; `null` keeps it until it is deleted.
    pub expires_at: Option<Timestamp>,
    /// When the number was first suppressed.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

impl Suppression {
    /// Whether it stops a call at `now`.
    pub fn active_at(&self, now: Timestamp) -> bool {
        self.expires_at.is_none_or(|end| end > now)
    }
}

/// Body of `POST /api/suppressions`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewSuppression {
    /// The number never to call, E.164.
    pub phone_number: String,
    /// Why, at most 500 characters.
    #[serde(default)]
    pub reason: Option<String>,
    /// When the suppression lapses (RFC 3339, in the future); never by default.
    #[serde(default)]
    pub expires_at: Option<Timestamp>,
}

/// The filter of `GET /api/suppressions`, beside the page parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct SuppressionFilter {
    /// Only this number (send `+` as `%2B`).
    #[serde(default, deserialize_with = "empty_as_none")]
    pub phone_number: Option<String>,
}
