//! AI voice agents: the agent, the text-to-speech providers it speaks with, and the create and
//! update bodies.

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

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

/// An AI voice agent.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Agent {
    /// `agent_…`
    pub agent_id: String,
    /// Organization id (not serialized: the agent's JSON has no organization field).
    #[serde(skip_serializing)]
    pub organization_id: String,
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
    /// Where this agent's calls stream their media (`{url}/{call_sid}`), instead of the
    /// organization's `runtime_stream_url`; `null` uses the organization's.
    pub runtime_stream_url: Option<String>,
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
    /// A `wss://` URL (`ws://` only to a loopback host) without query string, overriding the
    /// organization's for this agent's calls.
    #[serde(default)]
    pub runtime_stream_url: Option<String>,
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
    /// New stream URL; `null` goes back to the organization's.
    #[serde(default, deserialize_with = "super::phone_numbers::nullable")]
    pub runtime_stream_url: Option<Option<String>>,
}
