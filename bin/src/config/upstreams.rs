//! The keys of the providers the server calls: the voice providers (`providers.*`) and the
//! telephony providers that integrations are validated against (`telephony.*`).

use serde::{Deserialize, Serialize};

use super::Secret;

/// `providers.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProvidersConfig {
    /// `providers.provider_one.*`.
    pub provider_one: ProviderOneConfig,
    /// `providers.provider_two.*`.
    pub provider_two: ProviderTwoConfig,
    /// `providers.deepgram.*`: speech to text for the built-in runtime.
    pub deepgram: KeyedProviderConfig,
    /// `providers.openai.*`: the chat-completions model of the built-in runtime (any
    /// OpenAI-compatible server).
    pub openai: KeyedProviderConfig,
}

/// A provider reached at a base URL with a key (`providers.deepgram.*`,
/// `providers.openai.*`). An organization's integration of the provider overrides it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KeyedProviderConfig {
    /// Its base URL; the provider's own when absent.
    pub base_url: Option<String>,
    /// Its key.
    pub api_key: Option<Secret>,
}

/// `providers.provider_one.*` (Cartesia's API).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderOneConfig {
    /// `providers.provider_one.base_url`.
    pub base_url: String,
    /// `providers.provider_one.api_key`.
    pub api_key: Option<Secret>,
    /// `providers.provider_one.version`: the `Cartesia-Version` header.
    pub version: String,
}

impl Default for ProviderOneConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.cartesia.ai".to_owned(),
            api_key: None,
            version: "2024-06-10".to_owned(),
        }
    }
}

/// `providers.provider_two.*` (ElevenLabs' API).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderTwoConfig {
    /// `providers.provider_two.base_url`.
    pub base_url: String,
    /// `providers.provider_two.api_key`.
    pub api_key: Option<Secret>,
}

impl Default for ProviderTwoConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.elevenlabs.io".to_owned(),
            api_key: None,
        }
    }
}

/// `telephony.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelephonyConfig {
    /// `telephony.twilio.*`.
    pub twilio: TelephonyProviderConfig,
    /// `telephony.telnyx.*`.
    pub telnyx: TelephonyProviderConfig,
    /// `telephony.ring_timeout_secs`: how long an outbound call may ring (default 30).
    #[serde(deserialize_with = "super::lenient::deserialize_usize")]
    pub ring_timeout_secs: usize,
    /// `telephony.dial_attempts`: how many times a dial is sent when the provider certainly
    /// created nothing (unreachable, 429, 5xx) (default 3).
    #[serde(deserialize_with = "super::lenient::deserialize_usize")]
    pub dial_attempts: usize,
    /// `telephony.reconcile_secs`: how long the provider is asked for the call a dial of
    /// unclear outcome may have made before it ends `dial_outcome_unknown` (default 300).
    #[serde(deserialize_with = "super::lenient::deserialize_usize")]
    pub reconcile_secs: usize,
    /// `telephony.dial_deadline_secs`: a dial not sent within this many seconds of its
    /// request is never sent, `dial_expired` (default 60).
    #[serde(deserialize_with = "super::lenient::deserialize_usize")]
    pub dial_deadline_secs: usize,
}

/// `runtime.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RuntimeConfig {
    /// `runtime.enabled`: whether calls whose agent and organization name no
    /// `runtime_stream_url` are run by the built-in runtime (default true).
    #[serde(deserialize_with = "super::lenient::deserialize_bool")]
    pub enabled: bool,
    /// `runtime.max_call_secs`: the longest a call runs; one reported `in_progress` for a
    /// minute longer is asked about at its provider (default 1800).
    #[serde(deserialize_with = "super::lenient::deserialize_usize")]
    pub max_call_secs: usize,
    /// `runtime.max_calls`: calls one instance runs at once (default 500).
    #[serde(deserialize_with = "super::lenient::deserialize_usize")]
    pub max_calls: usize,
    /// `runtime.silence_prompt_secs`: caller silence after which the agent re-engages
    /// (default 10).
    #[serde(deserialize_with = "super::lenient::deserialize_usize")]
    pub silence_prompt_secs: usize,
    /// `runtime.silence_end_secs`: caller silence after which the call ends (default 30).
    #[serde(deserialize_with = "super::lenient::deserialize_usize")]
    pub silence_end_secs: usize,
    /// `runtime.stt_model`: Deepgram's model (default `nova-3`).
    pub stt_model: String,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_call_secs: 1800,
            max_calls: 500,
            silence_prompt_secs: 10,
            silence_end_secs: 30,
            stt_model: "nova-3".to_owned(),
        }
    }
}

impl Default for TelephonyConfig {
    fn default() -> Self {
        Self {
            ring_timeout_secs: 30,
            dial_attempts: 3,
            reconcile_secs: 300,
            dial_deadline_secs: 60,
            twilio: TelephonyProviderConfig {
                base_url: "https://api.twilio.com".to_owned(),
            },
            telnyx: TelephonyProviderConfig {
                base_url: "https://api.telnyx.com".to_owned(),
            },
        }
    }
}

/// `telephony.<provider>.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelephonyProviderConfig {
    /// `telephony.<provider>.base_url`.
    pub base_url: String,
}
