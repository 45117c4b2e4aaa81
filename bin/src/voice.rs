//! The built-in voice runtime of the binary (DESIGN §24): its upstream clients, the server's
//! keys for them (`providers.*`), and its limits (`runtime.*`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use voiceplane_clients::{
    DeepgramListener, GuardedHttpTools, OpenAiChat, ProviderOneSpeech, ProviderTwoSpeech,
    RuntimeClientSettings,
};
use voiceplane_core::Service;
use voiceplane_runtime::call::Limits;
use voiceplane_runtime::upstream::ProviderKey;
use voiceplane_runtime::{Runtime, RuntimeConfig, Upstreams};

use crate::Error;
use crate::config::{Config, Secret};

/// Deepgram's live API, when `providers.deepgram.base_url` names no other.
const DEEPGRAM: &str = "wss://api.deepgram.com";

/// OpenAI's API, when `providers.openai.base_url` names no other.
const OPENAI: &str = "https://api.openai.com";

/// The runtime over `service`, with the configured upstreams and limits.
pub fn runtime(service: Arc<Service>, config: &Config) -> Result<Runtime, Error> {
    let policy = voiceplane_core::webhooks::TargetPolicy {
        allow_private: config.webhooks.allow_private_targets,
    };
    let settings = RuntimeClientSettings {
        policy,
        ..RuntimeClientSettings::default()
    };
    let built = |e: voiceplane_clients::BuildError| Error::Runtime(e.to_string());
    let providers = &config.providers;
    let mut keys = HashMap::new();
    let mut key = |name: &str, base_url: &str, api_key: Option<&Secret>| {
        if let Some(api_key) = api_key {
            keys.insert(
                name.to_owned(),
                ProviderKey {
                    provider: name.to_owned(),
                    base_url: base_url.trim_end_matches('/').to_owned(),
                    api_key: api_key.expose().to_owned(),
                },
            );
        }
    };
    let deepgram = &providers.deepgram;
    key(
        "deepgram",
        deepgram.base_url.as_deref().unwrap_or(DEEPGRAM),
        deepgram.api_key.as_ref(),
    );
    let openai = &providers.openai;
    key(
        "openai",
        openai.base_url.as_deref().unwrap_or(OPENAI),
        openai.api_key.as_ref(),
    );
    let one = &providers.provider_one;
    key("provider_one", &one.base_url, one.api_key.as_ref());
    let two = &providers.provider_two;
    key("provider_two", &two.base_url, two.api_key.as_ref());
    let upstreams = Upstreams {
        stt: HashMap::from([(
            "deepgram".to_owned(),
            Arc::new(DeepgramListener::with_settings(settings).map_err(built)?) as _,
        )]),
        llm: HashMap::from([(
            "openai".to_owned(),
            Arc::new(OpenAiChat::with_settings(settings).map_err(built)?) as _,
        )]),
        tts: HashMap::from([
            (
                "provider_one".to_owned(),
                Arc::new(ProviderOneSpeech::with_settings(settings, &one.version).map_err(built)?)
                    as _,
            ),
            (
                "provider_two".to_owned(),
                Arc::new(ProviderTwoSpeech::with_settings(settings).map_err(built)?) as _,
            ),
        ]),
        http_tools: Some(Arc::new(GuardedHttpTools::new(policy).map_err(built)?)),
        keys,
    };
    let secs = |n: usize| Duration::from_secs(u64::try_from(n).unwrap_or(u64::MAX));
    let runtime = &config.runtime;
    Ok(Runtime::new(
        service,
        upstreams,
        RuntimeConfig {
            max_calls: runtime.max_calls,
            limits: Limits {
                silence_prompt: secs(runtime.silence_prompt_secs),
                silence_end: secs(runtime.silence_end_secs),
                max_call: secs(runtime.max_call_secs),
            },
            stt_model: runtime.stt_model.clone(),
            tts_models: HashMap::new(),
        },
    ))
}

/// The key stream tokens are derived from: the master key, which every instance shares, or
/// one for this process alone (a single instance, until it restarts).
pub fn token_settings(
    enabled: bool,
    master_key: Option<&[u8; 32]>,
) -> voiceplane_core::runtime::RuntimeSettings {
    let mut own = [0u8; 32];
    let secret = match master_key {
        Some(key) => key,
        None => {
            crate::rand_key(&mut own);
            &own
        }
    };
    voiceplane_core::runtime::RuntimeSettings::from_secret(enabled, secret)
}
