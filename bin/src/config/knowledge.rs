//! The keys of knowledge-base processing: the optional embeddings provider (`embeddings.*`) and
//! the bounds of processing one document (`knowledge.*`).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use voiceplane_clients::EmbeddingsSettings;

use super::Secret;
use super::lenient::deserialize_usize;

/// `embeddings.*`: an OpenAI-compatible embeddings endpoint. Without `embeddings.base_url`
/// documents are indexed for lexical search only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddingsConfig {
    /// `embeddings.base_url`: the server (`https://api.openai.com`) or its API root ending in
    /// `/v1`; both call `…/v1/embeddings`. Unset: no embeddings.
    pub base_url: Option<String>,
    /// `embeddings.api_key`: sent as `Authorization: Bearer <api_key>`; unset, no
    /// `Authorization` is sent (for servers that need none).
    pub api_key: Option<Secret>,
    /// `embeddings.model`: the `model` of every request.
    pub model: String,
    /// `embeddings.batch_size`: the most inputs sent in one request, 1–2048.
    #[serde(deserialize_with = "deserialize_usize")]
    pub batch_size: usize,
    /// `embeddings.timeout_secs`: the longest wait for one request, in seconds.
    #[serde(deserialize_with = "deserialize_usize")]
    pub timeout_secs: usize,
}

impl Default for EmbeddingsConfig {
    fn default() -> Self {
        let client = EmbeddingsSettings::default();
        Self {
            base_url: None,
            api_key: None,
            model: client.model,
            batch_size: client.batch_size,
            timeout_secs: usize::try_from(client.timeout.as_secs()).unwrap_or(usize::MAX),
        }
    }
}

impl EmbeddingsConfig {
    /// The client's settings; `None` when `embeddings.base_url` is unset.
    pub fn client_settings(&self) -> Option<EmbeddingsSettings> {
        Some(EmbeddingsSettings {
            base_url: self.base_url.clone()?,
            api_key: self.api_key.as_ref().map(|k| k.expose().to_owned()),
            model: self.model.clone(),
            batch_size: self.batch_size,
            timeout: seconds(self.timeout_secs),
        })
    }
}

/// `knowledge.*`: the bounds of processing one knowledge-base document; a document beyond
/// them fails processing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KnowledgeConfig {
    /// `knowledge.max_bytes`: the largest document processed, in bytes.
    #[serde(deserialize_with = "deserialize_usize")]
    pub max_bytes: usize,
    /// `knowledge.max_pages`: the most pages of a PDF read.
    #[serde(deserialize_with = "deserialize_usize")]
    pub max_pages: usize,
    /// `knowledge.timeout_secs`: how long processing one document may take, in seconds.
    #[serde(deserialize_with = "deserialize_usize")]
    pub timeout_secs: usize,
}

impl Default for KnowledgeConfig {
    fn default() -> Self {
        Self {
            max_bytes: 50 * 1024 * 1024,
            max_pages: 2000,
            timeout_secs: 60,
        }
    }
}

impl KnowledgeConfig {
    /// `knowledge.timeout_secs` as a duration.
    pub fn timeout(&self) -> Duration {
        seconds(self.timeout_secs)
    }
}

/// `secs` seconds; a count beyond `u64` (not on 64-bit targets) saturates.
fn seconds(secs: usize) -> Duration {
    Duration::from_secs(u64::try_from(secs).unwrap_or(u64::MAX))
}

#[cfg(test)]
#[allow(clippy::result_large_err)] // figment's `Jail` closures return `figment::Result`.
mod tests {
    use figment::Jail;

    use super::super::testing::load;
    use super::*;

    #[test]
    fn embeddings_settings_reach_the_client() {
        Jail::expect_with(|jail| {
            jail.create_file(
                "voiceplane.toml",
                "[embeddings]\nbase_url = \"http://127.0.0.1:11434/v1\"\nmodel = \"nomic-embed-text\"\n\
                 batch_size = 16\ntimeout_secs = 3\n[knowledge]\nmax_pages = 10\n",
            )?;
            jail.set_env("VOICEPLANE_EMBEDDINGS__API_KEY", "emb-key-GGGG");
            let c = load(jail, None)?.config;
            let expected = EmbeddingsSettings {
                base_url: "http://127.0.0.1:11434/v1".into(),
                api_key: Some("emb-key-GGGG".into()),
                model: "nomic-embed-text".into(),
                batch_size: 16,
                timeout: Duration::from_secs(3),
            };
            assert_eq!(c.embeddings.client_settings(), Some(expected));
            assert_eq!(c.knowledge.max_pages, 10);
            assert_eq!(c.knowledge.max_bytes, 52_428_800, "untouched");
            assert!(c.warnings().iter().all(|w| !w.contains("embeddings")));

            // A key without a provider is allowed, and said to do nothing.
            jail.create_file("voiceplane.toml", "")?;
            let c = load(jail, None)?.config;
            assert_eq!(c.embeddings.client_settings(), None);
            assert!(c.warnings().contains(&"embeddings.api_key has no effect without embeddings.base_url: documents are indexed for lexical search only".to_owned()));
            Ok(())
        });
    }
}
