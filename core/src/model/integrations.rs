//! Telephony integrations: stored provider credentials (never the credentials themselves), their
//! status, and the create and update bodies.

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// Status of a stored telephony integration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum IntegrationStatus {
    /// The last validation succeeded (or none ran yet).
    Active,
    /// The last validation failed.
    Invalid,
}

/// The filters of `GET /api/integrations`, beside the page parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct IntegrationFilter {
    /// Only integrations with this status.
    pub status: Option<IntegrationStatus>,
}

/// Stored telephony provider credentials; the credentials are never part of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Integration {
    /// `intg_` + 12 hex digits.
    pub integration_id: String,
    /// The id of the organization it belongs to.
    #[serde(rename = "client_id")]
    pub organization_id: String,
    /// Name.
    pub name: String,
    /// `twilio` or `telnyx`.
    pub provider: String,
    /// e.g. `telephony`.
    pub category: String,
    /// `active` or `invalid`.
    pub status: IntegrationStatus,
    /// When it was created.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// Body of `POST /api/integrations`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewIntegration {
    /// Name, 1–200 characters.
    pub name: String,
    /// `twilio` or `telnyx`.
    pub provider: String,
    /// e.g. `telephony`.
    pub category: String,
    /// Provider credentials: `{account_sid, auth_token}` for twilio, `{api_key}` for telnyx.
    pub credentials: serde_json::Value,
}

/// Body of `PATCH /api/integrations/{integration_id}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct IntegrationUpdate {
    /// New name.
    #[serde(default)]
    pub name: Option<String>,
    /// New category.
    #[serde(default)]
    pub category: Option<String>,
    /// Replacement credentials for the same provider; the status returns to `active` until
    /// validated again.
    #[serde(default)]
    pub credentials: Option<serde_json::Value>,
}
