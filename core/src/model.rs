//! The resources of the API, serialized with the field names of the spec.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::role::Role;
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

/// A user's role in one organization.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Membership {
    /// `mem_…`
    pub membership_id: String,
    /// The organization.
    pub organization_id: String,
    /// The member.
    pub user_id: String,
    /// Role in this organization.
    pub role: Role,
    /// `active`.
    pub status: MemberStatus,
    /// When the user joined.
    pub created_at: Timestamp,
}

/// Status of a membership.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MemberStatus {
    /// The member can act in the organization.
    Active,
}

/// A member as listed by `GET /api/auth/organizations/members` (spec §2.11).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Member {
    /// `mem_…`
    pub membership_id: String,
    /// `user_…`
    pub user_id: String,
    /// The user's e-mail.
    pub email: String,
    /// The user's display name.
    pub name: Option<String>,
    /// Role in this organization.
    pub role: Role,
    /// `active`.
    pub status: MemberStatus,
    /// When the membership was created.
    pub joined_at: Timestamp,
    /// Last JWT sign-in of the user.
    pub last_login: Option<Timestamp>,
}

/// Status of an API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApiKeyStatus {
    /// Usable.
    Active,
    /// Past its `expires_at`; no longer authenticates.
    Expired,
    /// Revoked; no longer authenticates.
    Revoked,
}

/// An API key (spec §2.1). The secret itself is never part of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ApiKey {
    /// `apikey_` + 12 hex digits.
    pub key_id: String,
    /// Human label.
    pub name: String,
    /// The role the key acts with.
    pub role: Role,
    /// First 12 characters of the secret, for recognising it.
    pub prefix: String,
    /// Owning organization.
    pub client_id: String,
    /// User who created the key.
    pub user_id: String,
    /// `active`, `expired` or `revoked`.
    pub status: ApiKeyStatus,
    /// When it was created.
    pub created_at: Timestamp,
    /// Last time it authenticated a request (updated at most once a minute).
    pub last_used_at: Option<Timestamp>,
    /// When it stops working, if ever.
    pub expires_at: Option<Timestamp>,
}

impl ApiKey {
    /// The status as seen at `now`: an active key past `expires_at` is `expired`.
    pub fn status_at(&self, now: Timestamp) -> ApiKeyStatus {
        match (self.status, self.expires_at) {
            (ApiKeyStatus::Active, Some(exp)) if exp <= now => ApiKeyStatus::Expired,
            (status, _) => status,
        }
    }
}

/// Body of `POST /api/api-keys`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewApiKey {
    /// Human label, 1–100 characters.
    pub name: String,
    /// Role of the key; not above the caller's.
    pub role: Role,
    /// Optional expiry, in the future.
    #[serde(default)]
    pub expires_at: Option<Timestamp>,
}

/// A new key and its secret, shown once.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct CreatedApiKey {
    /// The stored key.
    #[serde(flatten)]
    pub key: ApiKey,
    /// The full secret (`vpk_…`); never retrievable again.
    pub api_key: String,
}

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

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::String(s.to_owned())).ok()
    }
}

/// A call (spec §2.2).
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
    /// Organization id.
    pub client_id: String,
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
    /// The stored recording, if one was uploaded (not part of the spec's call shape).
    #[serde(skip_serializing)]
    #[cfg_attr(feature = "openapi", schemars(skip))]
    pub recording: Option<Recording>,
}

/// Where a call's recording is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    /// Blob key: `recordings/<organization_id>/<call_sid>.<ext>`.
    pub key: String,
    /// `audio/wav` or `audio/mpeg`.
    pub content_type: String,
    /// Size in bytes.
    pub size: i64,
}

/// The answer of `GET /api/calls/{call_sid}/recording/stream`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct RecordingLink {
    /// A URL that reads the recording without other credentials, with `Range` support.
    pub url: String,
    /// Seconds the URL stays valid (3600).
    pub expires_in: u64,
    /// `audio/wav` or `audio/mpeg`.
    pub content_type: String,
    /// A suggested file name.
    pub filename: String,
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

/// A custom HTTP tool an agent can call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Tool {
    /// `tool_…`
    pub tool_id: String,
    /// Organization id.
    pub client_id: String,
    /// Name the model calls it by: letters, digits, `_`, `-`.
    pub tool_name: String,
    /// What the tool does, for the model.
    pub tool_description: String,
    /// `GET`, `POST`, `PUT`, `PATCH` or `DELETE`.
    pub http_method: String,
    /// The endpoint the tool calls.
    pub url: String,
    /// Extra request headers.
    pub headers: BTreeMap<String, String>,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
    /// Request timeout.
    pub timeout_seconds: i32,
    /// When it was created.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// A tool as listed (spec §2.3).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ToolSummary {
    /// `tool_…`
    pub tool_id: String,
    /// Name.
    pub tool_name: String,
    /// Description.
    pub tool_description: String,
    /// HTTP method.
    pub http_method: String,
    /// Timeout.
    pub timeout_seconds: i32,
    /// When it was created.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

impl From<Tool> for ToolSummary {
    fn from(t: Tool) -> Self {
        Self {
            tool_id: t.tool_id,
            tool_name: t.tool_name,
            tool_description: t.tool_description,
            http_method: t.http_method,
            timeout_seconds: t.timeout_seconds,
            created_at: t.created_at,
            updated_at: t.updated_at,
        }
    }
}

/// Body of `POST /api/tools`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewTool {
    /// Name: 1–64 of `[A-Za-z0-9_-]`.
    pub tool_name: String,
    /// Description, non-empty.
    pub tool_description: String,
    /// HTTP method; `POST` by default.
    #[serde(default)]
    pub http_method: Option<String>,
    /// `http://` or `https://` URL.
    pub url: String,
    /// Extra request headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// JSON Schema object of the arguments; `{"type":"object","properties":{}}` by default.
    #[serde(default)]
    pub parameters: Option<serde_json::Value>,
    /// 1–120 seconds; 30 by default.
    #[serde(default)]
    pub timeout_seconds: Option<i32>,
}

/// Kind of knowledge-base document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum DocumentType {
    /// An uploaded file.
    File,
    /// Text given inline.
    Text,
}

/// Processing state of a knowledge-base document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ProcessingStatus {
    /// Waiting to be processed.
    Pending,
    /// Being processed.
    Processing,
    /// Ready.
    Completed,
    /// Processing failed.
    Failed,
}

/// A knowledge-base document (spec §2.4).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Document {
    /// `doc_…`
    pub documentation_id: String,
    /// Name.
    pub name: String,
    /// `file` or `text`.
    #[serde(rename = "type")]
    pub doc_type: DocumentType,
    /// Organization id.
    pub client_id: String,
    /// Object-storage key of the content, for files.
    pub storage_key: Option<String>,
    /// Object-storage URI of the content, for files.
    pub storage_uri: Option<String>,
    /// MIME type.
    pub content_type: String,
    /// Size in bytes.
    pub size: i64,
    /// Original file name, for files.
    pub filename: Option<String>,
    /// Processing state.
    pub processing_status: ProcessingStatus,
    /// Pages found by processing.
    pub page_count: Option<i64>,
    /// Vectors produced by processing.
    pub vector_count: Option<i64>,
    /// When processing last ran.
    pub last_processed_at: Option<Timestamp>,
    /// When it was created.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// JSON body of `POST /api/knowledge-base`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewTextDocument {
    /// Name, 1–200 characters.
    pub name: String,
    /// The text, non-empty.
    pub text: String,
}

/// Text-to-speech providers an agent can speak with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum TtsProvider {
    /// The first provider.
    ProviderOne,
    /// The second provider (also the shared voice library).
    ProviderTwo,
}

/// An AI voice agent (spec §2.7).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Agent {
    /// `agent_…`
    pub agent_id: String,
    /// Organization id (not part of the spec's agent shape, so not serialized).
    #[serde(skip_serializing)]
    pub client_id: String,
    /// Name.
    pub agent_name: String,
    /// Language code, upper case (e.g. `EN`).
    pub language: String,
    /// Speech-to-text provider.
    pub stt_provider: String,
    /// Text-to-speech provider.
    pub tts_provider: TtsProvider,
    /// Voice id at the TTS provider.
    pub tts_voice: String,
    /// LLM provider.
    pub llm_provider: String,
    /// LLM model.
    pub llm_model: String,
    /// System prompt.
    pub system_prompt: String,
    /// Whether the agent speaks first.
    pub speak_first: bool,
    /// Whether the agent may end the call.
    pub end_call_tool: bool,
    /// Sampling temperature, 0–2.
    pub llm_temperature: f64,
    /// Whether calls are recorded.
    pub recording_enabled: bool,
    /// Whether voicemail is detected.
    pub voicemail_detection: bool,
    /// Seconds to wait before speaking to voicemail.
    pub voicemail_response_delay: f64,
    /// Ids of the tools the agent may call.
    pub custom_tools: Vec<String>,
    /// Ids of the knowledge-base documents the agent uses.
    pub kb_document_ids: Vec<String>,
    /// Ids of the phone numbers assigned to the agent (derived from the numbers themselves).
    pub assigned_phone_number_ids: Vec<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// Body of `POST /api/agents`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewAgent {
    /// Name, 1–200 characters.
    pub agent_name: String,
    /// Language code, e.g. `en` or `en-US`; stored upper case.
    pub language: String,
    /// Speech-to-text provider, non-empty.
    pub stt_provider: String,
    /// `provider_one` or `provider_two`.
    pub tts_provider: TtsProvider,
    /// Voice id, non-empty.
    pub tts_voice: String,
    /// LLM provider, non-empty.
    pub llm_provider: String,
    /// LLM model, non-empty.
    pub llm_model: String,
    /// System prompt.
    #[serde(default)]
    pub system_prompt: String,
    /// Defaults to false.
    #[serde(default)]
    pub speak_first: bool,
    /// Defaults to false.
    #[serde(default)]
    pub end_call_tool: bool,
    /// 0–2, default 0.7.
    #[serde(default)]
    pub llm_temperature: Option<f64>,
    /// Defaults to false.
    #[serde(default)]
    pub recording_enabled: bool,
    /// Defaults to false.
    #[serde(default)]
    pub voicemail_detection: bool,
    /// ≥ 0 seconds, default 0.
    #[serde(default)]
    pub voicemail_response_delay: Option<f64>,
    /// Tool ids of this organization.
    #[serde(default)]
    pub custom_tools: Vec<String>,
    /// Document ids of this organization.
    #[serde(default)]
    pub kb_document_ids: Vec<String>,
    /// Phone number ids of this organization; they get assigned to the new agent.
    #[serde(default)]
    pub assigned_phone_number_ids: Vec<String>,
}

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

/// Stored telephony provider credentials (spec §2.8); the credentials are never part of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Integration {
    /// `intg_` + 12 hex digits.
    pub integration_id: String,
    /// Organization id.
    pub client_id: String,
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

/// A phone number (spec §2.9).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct PhoneNumber {
    /// `phon_…`
    pub phone_number_id: String,
    /// E.164.
    pub phone_number: String,
    /// Organization id.
    pub client_id: String,
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

/// State of an invitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum InvitationStatus {
    /// Waiting for the invitee.
    Pending,
    /// The invitee joined.
    Accepted,
    /// An admin withdrew it.
    Revoked,
    /// It was not accepted in time.
    Expired,
}

/// An invitation to join an organization (spec §2.10).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Invitation {
    /// `inv_…`
    pub invite_id: String,
    /// Invitee e-mail, lower case.
    pub email: String,
    /// Organization id.
    pub client_id: String,
    /// Role offered.
    pub role: Role,
    /// User id of the admin who invited.
    pub invited_by: String,
    /// `pending`, `accepted`, `revoked` or `expired`.
    pub status: InvitationStatus,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it can no longer be accepted.
    pub expires_at: Timestamp,
}

/// Body of `POST /api/auth/organizations/invitations`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewInvitation {
    /// Invitee e-mail.
    pub email: String,
    /// Role offered.
    pub role: Role,
}

/// Deserializes a field that distinguishes "absent" (`None`) from `null` (`Some(None)`), for
/// partial updates that can clear a value.
fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Body of `PATCH /api/tools/{tool_id}`: absent fields stay as they are.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ToolUpdate {
    /// New name.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// New description.
    #[serde(default)]
    pub tool_description: Option<String>,
    /// New HTTP method.
    #[serde(default)]
    pub http_method: Option<String>,
    /// New URL.
    #[serde(default)]
    pub url: Option<String>,
    /// New headers (replaces all).
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    /// New JSON Schema of the arguments.
    #[serde(default)]
    pub parameters: Option<serde_json::Value>,
    /// New timeout.
    #[serde(default)]
    pub timeout_seconds: Option<i32>,
}

/// Body of `PATCH /api/agents/{agent_id}`: absent fields stay as they are; the three id lists
/// replace the current ones when given.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AgentUpdate {
    /// New name.
    #[serde(default)]
    pub agent_name: Option<String>,
    /// New language code.
    #[serde(default)]
    pub language: Option<String>,
    /// New speech-to-text provider.
    #[serde(default)]
    pub stt_provider: Option<String>,
    /// New text-to-speech provider.
    #[serde(default)]
    pub tts_provider: Option<TtsProvider>,
    /// New voice id.
    #[serde(default)]
    pub tts_voice: Option<String>,
    /// New LLM provider.
    #[serde(default)]
    pub llm_provider: Option<String>,
    /// New LLM model.
    #[serde(default)]
    pub llm_model: Option<String>,
    /// New system prompt.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// New speak-first flag.
    #[serde(default)]
    pub speak_first: Option<bool>,
    /// New end-call flag.
    #[serde(default)]
    pub end_call_tool: Option<bool>,
    /// New temperature.
    #[serde(default)]
    pub llm_temperature: Option<f64>,
    /// New recording flag.
    #[serde(default)]
    pub recording_enabled: Option<bool>,
    /// New voicemail detection flag.
    #[serde(default)]
    pub voicemail_detection: Option<bool>,
    /// New voicemail delay.
    #[serde(default)]
    pub voicemail_response_delay: Option<f64>,
    /// Replaces the tool list.
    #[serde(default)]
    pub custom_tools: Option<Vec<String>>,
    /// Replaces the document list.
    #[serde(default)]
    pub kb_document_ids: Option<Vec<String>>,
    /// Replaces the assigned numbers: numbers left out are unassigned, new ones move here.
    #[serde(default)]
    pub assigned_phone_number_ids: Option<Vec<String>>,
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

/// Body of `PATCH /api/knowledge-base/{documentation_id}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DocumentUpdate {
    /// New name.
    #[serde(default)]
    pub name: Option<String>,
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

/// Body of `PATCH /api/auth/organizations/members/{membership_id}`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MemberUpdate {
    /// The new role.
    pub role: Role,
}

/// A state change's result and what to tell the caller about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome<T> {
    /// The resource after the change.
    pub data: T,
    /// A sentence for the response's `message`.
    pub message: String,
}
