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
    /// What a language model is asked about each completed call with a transcript; `null`:
    /// calls are not analysed. Not part of a published version: it judges calls, whatever
    /// version ran them.
    pub analysis: Option<super::AgentAnalysis>,
    /// The analysis server's API key, sealed with the master key (never serialized).
    #[serde(skip_serializing)]
    #[cfg_attr(feature = "openapi", schemars(skip))]
    pub analysis_key: Option<String>,
    /// The latest published version; `null` before the first publish (calls then run the
    /// draft, these fields).
    pub published_version: Option<i64>,
    /// The published versions calls run with, by weight (summing to 100); empty before the
    /// first publish.
    pub deployment: Vec<DeploymentEntry>,
    /// When it was created.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// A published version's share of an agent's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DeploymentEntry {
    /// A published version of the agent.
    pub version: i64,
    /// Its share of the calls, 1–100; the weights of a deployment sum to 100.
    pub weight: u32,
}

/// What an agent runs with: its fields but its identity, numbers, versions and times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct AgentConfig {
    /// Name.
    pub agent_name: String,
    /// Language code.
    pub language: String,
    /// Speech-to-text provider.
    pub stt_provider: String,
    /// Text-to-speech provider.
    pub tts_provider: TtsProvider,
    /// Voice id.
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
    /// Sampling temperature.
    pub llm_temperature: f64,
    /// Whether calls are recorded.
    pub recording_enabled: bool,
    /// Whether voicemail is detected.
    pub voicemail_detection: bool,
    /// Seconds to wait before speaking to voicemail.
    pub voicemail_response_delay: f64,
    /// Ids of the tools.
    pub custom_tools: Vec<String>,
    /// Ids of the knowledge-base documents.
    pub kb_document_ids: Vec<String>,
    /// The agent's own stream URL, if any.
    pub runtime_stream_url: Option<String>,
}

impl Agent {
    /// The configuration the agent has now (its draft).
    pub fn config(&self) -> AgentConfig {
        AgentConfig {
            agent_name: self.agent_name.clone(),
            language: self.language.clone(),
            stt_provider: self.stt_provider.clone(),
            tts_provider: self.tts_provider,
            tts_voice: self.tts_voice.clone(),
            llm_provider: self.llm_provider.clone(),
            llm_model: self.llm_model.clone(),
            system_prompt: self.system_prompt.clone(),
            speak_first: self.speak_first,
            end_call_tool: self.end_call_tool,
            llm_temperature: self.llm_temperature,
            recording_enabled: self.recording_enabled,
            voicemail_detection: self.voicemail_detection,
            voicemail_response_delay: self.voicemail_response_delay,
            custom_tools: self.custom_tools.clone(),
            kb_document_ids: self.kb_document_ids.clone(),
            runtime_stream_url: self.runtime_stream_url.clone(),
        }
    }

    /// This agent as it was configured in `config` (a published version).
    pub fn with_config(&self, config: AgentConfig) -> Self {
        Self {
            agent_name: config.agent_name,
            language: config.language,
            stt_provider: config.stt_provider,
            tts_provider: config.tts_provider,
            tts_voice: config.tts_voice,
            llm_provider: config.llm_provider,
            llm_model: config.llm_model,
            system_prompt: config.system_prompt,
            speak_first: config.speak_first,
            end_call_tool: config.end_call_tool,
            llm_temperature: config.llm_temperature,
            recording_enabled: config.recording_enabled,
            voicemail_detection: config.voicemail_detection,
            voicemail_response_delay: config.voicemail_response_delay,
            custom_tools: config.custom_tools,
            kb_document_ids: config.kb_document_ids,
            runtime_stream_url: config.runtime_stream_url,
            ..self.clone()
        }
    }

    /// The deployed version a call `call_sid` runs with, chosen by weight from a hash of its
    /// id (the same call always gets the same version); `None` before the first publish.
    pub fn version_for(&self, call_sid: &str) -> Option<i64> {
        use sha2::{Digest, Sha256};
        if self.deployment.is_empty() {
            return None;
        }
        let digest = Sha256::digest(call_sid.as_bytes());
        let mut head = [0u8; 8];
        head.copy_from_slice(&digest[..8]);
        let total: u64 = self.deployment.iter().map(|d| u64::from(d.weight)).sum();
        let mut point = u64::from_be_bytes(head) % total.max(1);
        for entry in &self.deployment {
            let weight = u64::from(entry.weight);
            if point < weight {
                return Some(entry.version);
            }
            point -= weight;
        }
        self.deployment.last().map(|d| d.version)
    }
}

/// A published version of an agent: its configuration when it was published, never changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct AgentVersion {
    /// The agent.
    pub agent_id: String,
    /// 1, 2, … in the order published.
    pub version: i64,
    /// What the publisher said of it.
    pub description: Option<String>,
    /// When it was published.
    pub published_at: Timestamp,
    /// The agent's configuration as published.
    pub config: AgentConfig,
}

/// Body of `POST /api/agents/{agent_id}/publish`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PublishAgent {
    /// What changed, at most 1000 characters.
    #[serde(default)]
    pub description: Option<String>,
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
    /// Post-call analysis of the agent's calls by a language model.
    #[serde(default)]
    pub analysis: Option<super::NewAgentAnalysis>,
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
    /// Replaces the post-call analysis (an absent `api_key` keeps the stored one); `null`
    /// stops analysing calls and forgets the key.
    #[serde(default, deserialize_with = "super::phone_numbers::nullable")]
    pub analysis: Option<Option<super::NewAgentAnalysis>>,
    /// Which published versions calls run with, by weight (1–100 each, summing to 100); a
    /// deployment of an older version is a rollback.
    #[serde(default)]
    pub deployment: Option<Vec<DeploymentEntry>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(deployment: Vec<DeploymentEntry>) -> Agent {
        Agent {
            agent_id: "agent_1".into(),
            organization_id: "org_1".into(),
            agent_name: "A".into(),
            language: "EN".into(),
            stt_provider: "s".into(),
            tts_provider: TtsProvider::ProviderOne,
            tts_voice: "v".into(),
            llm_provider: "l".into(),
            llm_model: "m".into(),
            system_prompt: String::new(),
            speak_first: false,
            end_call_tool: false,
            llm_temperature: 0.7,
            recording_enabled: false,
            voicemail_detection: false,
            voicemail_response_delay: 0.0,
            custom_tools: Vec::new(),
            kb_document_ids: Vec::new(),
            assigned_phone_number_ids: Vec::new(),
            runtime_stream_url: None,
            analysis: None,
            analysis_key: None,
            published_version: deployment.iter().map(|d| d.version).max(),
            deployment,
            created_at: Timestamp::from_micros(0),
            updated_at: Timestamp::from_micros(0),
        }
    }

    #[test]
    fn calls_are_drawn_by_weight_and_always_the_same() {
        assert_eq!(agent(Vec::new()).version_for("call_1"), None);
        let split = agent(vec![
            DeploymentEntry {
                version: 1,
                weight: 90,
            },
            DeploymentEntry {
                version: 2,
                weight: 10,
            },
        ]);
        let ids: Vec<String> = (0..10_000).map(|i| format!("call_{i:024x}")).collect();
        let twos = ids
            .iter()
            .filter(|id| split.version_for(id) == Some(2))
            .count();
        assert!((800..=1200).contains(&twos), "{twos} of 10,000 at 10 %");
        for id in ids.iter().take(100) {
            assert_eq!(split.version_for(id), split.version_for(id));
        }
    }

    #[test]
    fn a_version_applies_its_configuration_and_keeps_the_identity() {
        let draft = agent(Vec::new());
        let mut config = draft.config();
        config.system_prompt = "Published.".into();
        let ran = draft.with_config(config.clone());
        assert_eq!(ran.system_prompt, "Published.");
        assert_eq!(ran.agent_id, draft.agent_id);
        assert_eq!(ran.config(), config);
    }
}
