//! Phone numbers: the number, whether it is bound to an agent, and the create and update bodies.

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// Whether a phone number is bound to an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PhoneNumberStatus {
    /// Bound to an agent.
    Assigned,
    /// Not bound to any agent.
    Unassigned,
}

/// The filters of `GET /api/phone-numbers`, beside the page parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct PhoneNumberFilter {
    /// Only the numbers assigned to this agent (`agent_…`).
    pub agent_id: Option<String>,
}

/// A phone number.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct PhoneNumber {
    /// `phon_…`
    pub phone_number_id: String,
    /// E.164.
    pub phone_number: String,
    /// The id of the organization it belongs to.
    #[serde(rename = "client_id")]
    pub organization_id: String,
    /// Telephony provider, e.g. `twilio`.
    pub provider: String,
    /// `assigned` or `unassigned`.
    pub status: PhoneNumberStatus,
    /// Accepts inbound calls.
    pub supports_inbound: bool,
    /// Can place outbound calls.
    pub supports_outbound: bool,
    /// The agent answering this number.
    pub assigned_agent_id: Option<String>,
    /// The integration whose account owns the number.
    pub integration_id: Option<String>,
    /// The provider's id of the number (Twilio `PN…`, Telnyx's numeric id), once connected.
    pub provider_number_id: Option<String>,
    /// When `POST /api/phone-numbers/{id}/connect` last pointed the number at voiceplane.
    pub connected_at: Option<Timestamp>,
    /// When it was created.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// Body of `POST /api/phone-numbers`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewPhoneNumber {
    /// E.164, unique in the organization.
    pub phone_number: String,
    /// Provider; taken from the integration when one is given.
    #[serde(default)]
    pub provider: Option<String>,
    /// Integration of this organization.
    #[serde(default)]
    pub integration_id: Option<String>,
    /// Agent of this organization to answer the number.
    #[serde(default)]
    pub assigned_agent_id: Option<String>,
    /// Default true.
    #[serde(default)]
    pub supports_inbound: Option<bool>,
    /// Default true.
    #[serde(default)]
    pub supports_outbound: Option<bool>,
}

/// Deserializes a field that distinguishes "absent" (`None`) from `null` (`Some(None)`), for
/// partial updates that can clear a value.
pub(super) fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Body of `PATCH /api/phone-numbers/{phone_number_id}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PhoneNumberUpdate {
    /// Agent to answer the number; `null` unassigns it.
    #[serde(default, deserialize_with = "nullable")]
    pub assigned_agent_id: Option<Option<String>>,
    /// Integration owning the number; `null` detaches it.
    #[serde(default, deserialize_with = "nullable")]
    pub integration_id: Option<Option<String>>,
    /// New provider (only without an integration).
    #[serde(default)]
    pub provider: Option<String>,
    /// New inbound flag.
    #[serde(default)]
    pub supports_inbound: Option<bool>,
    /// New outbound flag.
    #[serde(default)]
    pub supports_outbound: Option<bool>,
}
