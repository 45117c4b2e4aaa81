//! The embeddings provider: any OpenAI-compatible embeddings endpoint (OpenAI, Ollama, vLLM,
//! LiteLLM, …), with `Authorization: Bearer <api_key>` when a key is set (servers on the
//! local network often need none).
//!
//! | ours | theirs |
//! |---|---|
//! | `embed(inputs)` | `POST {base_url}/v1/embeddings` `{"model": model, "input": [text, …]}`, one request per `batch_size` inputs, one after the other |
//! | the vectors, in the order of `inputs` | `data[].embedding`, placed by `data[].index` (the order of `data` is not relied on) |
//!
//! `base_url` may be the server (`https://api.openai.com`) or its API root ending in `/v1`
//! (`https://api.openai.com/v1`, as most OpenAI-compatible servers document it): both call
//! `…/v1/embeddings`, never `…/v1/v1/embeddings`. A trailing slash makes no difference.
//!
//! Every batch is a single attempt bounded by [`EmbeddingsSettings::timeout`]; the caller
//! retries. An answer that is not one finite, non-empty vector per input, all of one
//! dimension, is an [`Error::Upstream`], like the transport and status failures of the other
//! clients (a 400/422 included: it means the model or the configuration is wrong, not the
//! caller's input).

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderValue};
use serde::{Deserialize, Serialize};
use voiceplane_core::knowledge::Embedder;
use voiceplane_core::{Error, Result};

use crate::{BuildError, Call, HttpClient, base_url, non_empty, openai_endpoint};

const PROVIDER: &str = "the embeddings provider";

const EMBED: Call = Call {
    provider: PROVIDER,
    what: "the embeddings request",
    invalid: None,
    not_found: None,
    check: "embeddings.base_url and embeddings.model",
    refused: crate::API_KEY,
};

/// The answer allowed per input on top of the pool's `max_response_bytes`: a vector of 4096
/// dimensions written as pretty-printed JSON takes up to about 40 bytes a number.
const BYTES_PER_INPUT: usize = 160 * 1024;

/// Configuration of [`OpenAiEmbedder`]. [`Default`]: OpenAI's API without a key,
/// `text-embedding-3-small`, batches of 64, 10 s per request.
#[derive(Clone, PartialEq, Eq)]
pub struct EmbeddingsSettings {
    /// `embeddings.base_url`: the server (`https://api.openai.com`) or its API root ending in
    /// `/v1`.
    pub base_url: String,
    /// `embeddings.api_key`: sent as `Authorization: Bearer <api_key>`; nothing is sent
    /// without it.
    pub api_key: Option<String>,
    /// `embeddings.model`: the `model` of every request.
    pub model: String,
    /// `embeddings.batch_size`: the most inputs sent in one request (at least 1).
    pub batch_size: usize,
    /// `embeddings.timeout_secs`: the longest wait for one request, from connecting to the
    /// last byte of the answer; replaces the pool's request timeout for these requests.
    pub timeout: Duration,
}

impl Default for EmbeddingsSettings {
    fn default() -> Self {
        Self {
            base_url: "https://api.openai.com".to_owned(),
            api_key: None,
            model: "text-embedding-3-small".to_owned(),
            batch_size: 64,
            timeout: Duration::from_secs(10),
        }
    }
}

impl fmt::Debug for EmbeddingsSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddingsSettings")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("model", &self.model)
            .field("batch_size", &self.batch_size)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// An OpenAI-compatible embeddings endpoint over HTTP: [`Embedder`].
#[derive(Clone)]
pub struct OpenAiEmbedder {
    http: HttpClient,
    url: Url,
    authorization: Option<HeaderValue>,
    model: String,
    batch_size: usize,
    timeout: Duration,
}

impl fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("url", &self.url.as_str())
            .field("api_key", &self.authorization.as_ref().map(|_| "***"))
            .field("model", &self.model)
            .field("batch_size", &self.batch_size)
            .field("timeout", &self.timeout)
            .finish()
    }
}

#[derive(Serialize)]
struct EmbeddingsRequest<'a> {
    model: &'a str,
    input: &'a [String],
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<Embedding>,
}

#[derive(Deserialize)]
struct Embedding {
    index: usize,
    /// Read as `f64` and narrowed after the range check: how serde_json reads an `f32` that
    /// overflows depends on its features, which the embedding application decides.
    embedding: Vec<f64>,
}

/// `…/v1/embeddings` under `base`, whether or not `base` already ends in `/v1`.
fn embeddings_url(base: &Url) -> Url {
    openai_endpoint(base, &["embeddings"])
}

/// The vectors of one batch of `expected` inputs, in input order; `dimensions` is the
/// dimension every vector of the call must have, set by the first one. `Err`: what is wrong
/// with the answer, to follow "answered with".
fn in_order(
    expected: usize,
    data: Vec<Embedding>,
    dimensions: &mut Option<usize>,
) -> std::result::Result<Vec<Vec<f32>>, String> {
    if data.len() != expected {
        return Err(format!("{} embeddings for {expected} inputs", data.len()));
    }
    let mut slots: Vec<Option<Vec<f32>>> = (0..expected).map(|_| None).collect();
    for item in data {
        let slot = slots
            .get_mut(item.index)
            .ok_or_else(|| format!("index {} for {expected} inputs", item.index))?;
        if slot.is_some() {
            return Err(format!("index {} twice", item.index));
        }
        let len = item.embedding.len();
        if len == 0 {
            return Err("an empty embedding".to_owned());
        }
        match *dimensions {
            Some(d) if d != len => {
                return Err(format!("embeddings of {d} and {len} dimensions"));
            }
            Some(_) => {}
            None => *dimensions = Some(len),
        }
        if !item
            .embedding
            .iter()
            .all(|x| x.is_finite() && x.abs() <= f64::from(f32::MAX))
        {
            return Err("a number that is not finite".to_owned());
        }
        #[allow(clippy::cast_possible_truncation)] // in range, checked above
        let vector = item.embedding.iter().map(|x| *x as f32).collect();
        *slot = Some(vector);
    }
    // As many distinct indexes below `expected` as there are slots: every slot is filled.
    Ok(slots.into_iter().flatten().collect())
}

impl OpenAiEmbedder {
    /// The embeddings endpoint under `settings.base_url`, over `http`. Fails when the base
    /// URL is not an http(s) URL, the key cannot be sent in a header, the model is blank, or
    /// the batch size or timeout is zero (the error names the key, never its value).
    pub fn new(http: HttpClient, settings: EmbeddingsSettings) -> Result<Self, BuildError> {
        let base = base_url("embeddings.base_url", &settings.base_url)?;
        let authorization = non_empty(settings.api_key)
            .map(|key| {
                let mut value =
                    HeaderValue::from_str(&format!("Bearer {}", key.trim())).map_err(|_| {
                        BuildError::new(
                            "embeddings.api_key: contains characters not allowed in an HTTP header",
                        )
                    })?;
                value.set_sensitive(true);
                Ok::<_, BuildError>(value)
            })
            .transpose()?;
        let model = settings.model.trim();
        if model.is_empty() {
            return Err(BuildError::new("embeddings.model: must name a model"));
        }
        if settings.batch_size == 0 {
            return Err(BuildError::new("embeddings.batch_size: must be at least 1"));
        }
        if settings.timeout.is_zero() {
            return Err(BuildError::new(
                "embeddings.timeout_secs: must be more than zero",
            ));
        }
        Ok(Self {
            http,
            url: embeddings_url(&base),
            authorization,
            model: model.to_owned(),
            batch_size: settings.batch_size,
            timeout: settings.timeout,
        })
    }

    /// The vectors of one batch.
    async fn batch(
        &self,
        inputs: &[String],
        dimensions: &mut Option<usize>,
    ) -> Result<Vec<Vec<f32>>> {
        let mut request = self
            .http
            .client
            .post(self.url.clone())
            .header(ACCEPT, "application/json")
            .json(&EmbeddingsRequest {
                model: &self.model,
                input: inputs,
            });
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        let max_bytes = inputs
            .len()
            .saturating_mul(BYTES_PER_INPUT)
            .max(self.http.settings.max_response_bytes);
        let answer: EmbeddingsResponse =
            EMBED.json_within(request, self.timeout, max_bytes).await?;
        in_order(inputs.len(), answer.data, dimensions).map_err(|reason| {
            tracing::warn!(
                provider = PROVIDER,
                operation = EMBED.what,
                error = %reason,
                "unusable embeddings"
            );
            Error::Upstream(format!("{PROVIDER} answered with {reason}"))
        })
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    async fn embed(&self, inputs: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut vectors = Vec::with_capacity(inputs.len());
        let mut dimensions = None;
        for batch in inputs.chunks(self.batch_size) {
            vectors.extend(self.batch(batch, &mut dimensions).await?);
        }
        Ok(vectors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(index: usize, embedding: &[f32]) -> Embedding {
        Embedding {
            index,
            embedding: embedding.iter().map(|x| f64::from(*x)).collect(),
        }
    }

    #[test]
    fn a_base_ending_in_v1_is_not_doubled() {
        for (base, url) in [
            (
                "https://api.openai.com",
                "https://api.openai.com/v1/embeddings",
            ),
            (
                "https://api.openai.com/",
                "https://api.openai.com/v1/embeddings",
            ),
            (
                "https://api.openai.com/v1",
                "https://api.openai.com/v1/embeddings",
            ),
            (
                "https://api.openai.com/v1/",
                "https://api.openai.com/v1/embeddings",
            ),
            (
                "http://h:11434/proxy/V1",
                "http://h:11434/proxy/V1/embeddings",
            ),
            ("http://h/proxy?x=1", "http://h/proxy/v1/embeddings"),
            ("http://h/v1beta", "http://h/v1beta/v1/embeddings"),
        ] {
            let base = base_url("embeddings.base_url", base).unwrap();
            assert_eq!(embeddings_url(&base).as_str(), url);
        }
    }

    #[test]
    fn answers_are_put_in_input_order_and_checked() {
        let mut dims = None;
        let vectors = in_order(
            3,
            vec![
                item(2, &[3.0, 0.0]),
                item(0, &[1.0, 0.0]),
                item(1, &[2.0, 0.0]),
            ],
            &mut dims,
        )
        .unwrap();
        assert_eq!(vectors, [[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]]);
        assert_eq!(dims, Some(2));

        let wrong: [(Vec<Embedding>, &str); 6] = [
            (vec![item(0, &[1.0, 0.0])], "1 embeddings for 2 inputs"),
            (
                vec![item(0, &[1.0, 0.0]), item(2, &[1.0, 0.0])],
                "index 2 for 2 inputs",
            ),
            (
                vec![item(1, &[1.0, 0.0]), item(1, &[1.0, 0.0])],
                "index 1 twice",
            ),
            (
                vec![item(0, &[1.0, 0.0]), item(1, &[])],
                "an empty embedding",
            ),
            (
                vec![item(0, &[1.0, 0.0]), item(1, &[1.0, 0.0, 0.0])],
                "embeddings of 2 and 3 dimensions",
            ),
            (
                vec![item(0, &[1.0, 0.0]), item(1, &[f32::INFINITY, 0.0])],
                "a number that is not finite",
            ),
        ];
        for (data, reason) in wrong {
            let mut dims = Some(2);
            assert_eq!(in_order(2, data, &mut dims).unwrap_err(), reason);
        }
    }
}
