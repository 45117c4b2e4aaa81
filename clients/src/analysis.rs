//! [`HttpChatCompletions`], the [`ChatCompletions`] of post-call analysis: any
//! OpenAI-compatible chat-completions endpoint, named per agent by its owner.
//!
//! | ours | theirs |
//! |---|---|
//! | `complete(request)` | `POST {base_url}/v1/chat/completions` with the request's body, `Authorization: Bearer <api_key>` when the agent has a key |
//! | the answer's text | `choices[0].message.content` |
//!
//! The server is chosen by an API user, so requests go through a pool of their own that follows
//! the webhook target policy (no private addresses unless allowed, checked after resolution;
//! no redirects; no proxy). Every failure is an [`Error::Upstream`] naming "the analysis
//! model", never its body, the URL or the key.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderValue};
use serde::Deserialize;
use voiceplane_core::analysis::{ChatCompletions, CompletionRequest};
use voiceplane_core::webhooks::TargetPolicy;
use voiceplane_core::{Error, Result};

use crate::guarded::{allowed_literal, guarded};
use crate::{BuildError, Call, openai_endpoint};

const PROVIDER: &str = "the analysis model";

const COMPLETE: Call = Call {
    provider: PROVIDER,
    what: "the analysis request",
    invalid: None,
    not_found: None,
    check: "the agent's analysis.base_url and analysis.model",
    refused: "the agent's analysis.api_key",
};

/// Settings of [`HttpChatCompletions`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnalysisSettings {
    /// `analysis.timeout_secs`: the longest wait for one answer. Default 60 s.
    pub timeout: Duration,
    /// Which addresses the servers may have (the webhooks' policy).
    pub policy: TargetPolicy,
    /// The largest answer read. Default 1 MiB.
    pub max_response_bytes: usize,
}

impl Default for AnalysisSettings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            policy: TargetPolicy::default(),
            max_response_bytes: 1024 * 1024,
        }
    }
}

/// OpenAI-compatible chat completions over HTTP, with a pool of its own; cheap to clone.
#[derive(Debug, Clone)]
pub struct HttpChatCompletions {
    client: reqwest::Client,
    settings: AnalysisSettings,
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    content: Option<String>,
}

/// `…/v1/chat/completions` under `base`, whether or not `base` already ends in `/v1`.
fn completions_url(base: &Url) -> Url {
    openai_endpoint(base, &["chat", "completions"])
}

impl HttpChatCompletions {
    /// The client and its pool; fails when the pool cannot be built or the timeout is zero.
    pub fn new(settings: AnalysisSettings) -> Result<Self, BuildError> {
        if settings.timeout.is_zero() {
            return Err(BuildError::new(
                "analysis.timeout_secs: must be more than zero",
            ));
        }
        let client = guarded(settings.policy)
            .user_agent(concat!("voiceplane-analysis/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| BuildError::new(format!("cannot build the analysis client: {e}")))?;
        Ok(Self { client, settings })
    }
}

#[async_trait]
impl ChatCompletions for HttpChatCompletions {
    async fn complete(&self, request: &CompletionRequest) -> Result<String> {
        let base = Url::parse(request.base_url.trim())
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && !u.cannot_be_a_base())
            .ok_or_else(|| {
                Error::Upstream("the agent's analysis.base_url is not an http(s) URL".to_owned())
            })?;
        allowed_literal(self.settings.policy, &base).map_err(|why| {
            Error::Upstream(format!("the analysis model is not reachable: {why}"))
        })?;
        let mut post = self
            .client
            .post(completions_url(&base))
            .header(ACCEPT, "application/json")
            .json(&request.body);
        if let Some(key) = &request.api_key {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", key.trim())).map_err(|_| {
                    Error::Upstream(
                        "the agent's analysis.api_key holds characters not allowed in a header"
                            .to_owned(),
                    )
                })?;
            value.set_sensitive(true);
            post = post.header(AUTHORIZATION, value);
        }
        let answer: Completion = COMPLETE
            .json_within(
                post,
                self.settings.timeout,
                self.settings.max_response_bytes,
            )
            .await?;
        answer
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .ok_or_else(|| {
                Error::Upstream("the analysis model answered without a message".to_owned())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_follows_the_base() {
        for (base, url) in [
            (
                "https://api.openai.com",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "https://api.openai.com/v1/",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "http://127.0.0.1:8000/llm",
                "http://127.0.0.1:8000/llm/v1/chat/completions",
            ),
        ] {
            assert_eq!(completions_url(&Url::parse(base).unwrap()).as_str(), url);
        }
    }
}
