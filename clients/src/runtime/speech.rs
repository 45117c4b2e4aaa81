//! Streamed text to speech: the raw audio of one sentence, read as the provider makes it.
//!
//! | ours | provider_one | provider_two |
//! |---|---|---|
//! | request | `POST {base}/tts/bytes`, `Authorization: Bearer`, `Cartesia-Version` | `POST {base}/v1/text-to-speech/{voice}/stream?output_format=…`, `xi-api-key` |
//! | body | `{model_id, transcript, voice: {mode: "id", id}, output_format: {container: "raw", encoding, sample_rate}}` | `{text, model_id}` |
//! | `Mulaw8k` | `pcm_mulaw`, 8000 | `ulaw_8000` |
//! | `Linear16k` | `pcm_s16le`, 16000 | `pcm_16000` |

use async_trait::async_trait;
use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde_json::json;
use voiceplane_runtime::upstream::{
    AudioFormat, ProviderKey, SpeakRequest, Streamed, TextToSpeech, UpstreamError,
};

use super::{RuntimeClientSettings, body_stream, credential, http_base, send, streaming_client};
use crate::provider_one::DEFAULT_VERSION;
use crate::{BuildError, endpoint};

const WHAT: &str = "the speech request";

/// provider_one's model when the agent's configuration names none.
pub const PROVIDER_ONE_DEFAULT_MODEL: &str = "sonic-2";
/// provider_two's model when the agent's configuration names none: its low-latency one.
pub const PROVIDER_TWO_DEFAULT_MODEL: &str = "eleven_flash_v2_5";

/// provider_one's streamed speech: [`TextToSpeech`]. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ProviderOneSpeech {
    client: reqwest::Client,
    settings: RuntimeClientSettings,
    version: HeaderValue,
}

impl ProviderOneSpeech {
    /// With the default settings and `Cartesia-Version`.
    pub fn new() -> Result<Self, BuildError> {
        Self::with_settings(RuntimeClientSettings::default(), DEFAULT_VERSION)
    }

    /// With `settings` and the `Cartesia-Version` `version` (`providers.provider_one.version`;
    /// the default when empty).
    pub fn with_settings(
        settings: RuntimeClientSettings,
        version: &str,
    ) -> Result<Self, BuildError> {
        let version = match version.trim() {
            "" => DEFAULT_VERSION,
            v => v,
        };
        let version = HeaderValue::from_str(version).map_err(|_| {
            BuildError::new(
                "providers.provider_one.version: contains characters not allowed in an HTTP header",
            )
        })?;
        Ok(Self {
            client: streaming_client(settings, "speech")?,
            settings,
            version,
        })
    }
}

#[async_trait]
impl TextToSpeech for ProviderOneSpeech {
    async fn speak(
        &self,
        key: &ProviderKey,
        request: &SpeakRequest,
    ) -> Result<Streamed<Bytes>, UpstreamError> {
        let base = http_base(key, self.settings.policy)?;
        let (encoding, sample_rate) = match request.format {
            AudioFormat::Mulaw8k => ("pcm_mulaw", 8000),
            AudioFormat::Linear16k => ("pcm_s16le", 16000),
        };
        let body = json!({
            "model_id": request.model.as_deref().unwrap_or(PROVIDER_ONE_DEFAULT_MODEL),
            "transcript": request.text,
            "voice": {"mode": "id", "id": request.voice},
            "output_format": {"container": "raw", "encoding": encoding, "sample_rate": sample_rate},
        });
        let post = self
            .client
            .post(endpoint(&base, &["tts", "bytes"]))
            .header(AUTHORIZATION, credential(key, "Bearer")?)
            .header("cartesia-version", self.version.clone())
            .json(&body);
        let response = send(post, &key.provider, WHAT, self.settings).await?;
        Ok(body_stream(
            response,
            key.provider.clone(),
            WHAT,
            self.settings,
        ))
    }
}

/// provider_two's streamed speech: [`TextToSpeech`]. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ProviderTwoSpeech {
    client: reqwest::Client,
    settings: RuntimeClientSettings,
}

impl ProviderTwoSpeech {
    /// With the default settings.
    pub fn new() -> Result<Self, BuildError> {
        Self::with_settings(RuntimeClientSettings::default())
    }

    /// With `settings`.
    pub fn with_settings(settings: RuntimeClientSettings) -> Result<Self, BuildError> {
        Ok(Self {
            client: streaming_client(settings, "speech")?,
            settings,
        })
    }
}

#[async_trait]
impl TextToSpeech for ProviderTwoSpeech {
    async fn speak(
        &self,
        key: &ProviderKey,
        request: &SpeakRequest,
    ) -> Result<Streamed<Bytes>, UpstreamError> {
        let base = http_base(key, self.settings.policy)?;
        let format = match request.format {
            AudioFormat::Mulaw8k => "ulaw_8000",
            AudioFormat::Linear16k => "pcm_16000",
        };
        let mut url = endpoint(&base, &["v1", "text-to-speech", &request.voice, "stream"]);
        url.query_pairs_mut().append_pair("output_format", format);
        let body = json!({
            "text": request.text,
            "model_id": request.model.as_deref().unwrap_or(PROVIDER_TWO_DEFAULT_MODEL),
        });
        let post = self
            .client
            .post(url)
            .header("xi-api-key", credential(key, "")?)
            .json(&body);
        let response = send(post, &key.provider, WHAT, self.settings).await?;
        Ok(body_stream(
            response,
            key.provider.clone(),
            WHAT,
            self.settings,
        ))
    }
}
