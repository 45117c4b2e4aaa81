//! An organization's HTTP tools, called by the model during a call: the tool's method, URL,
//! headers and timeout, the model's arguments as the JSON body (or the query of a GET or
//! DELETE), under the webhook target policy. The model gets the tool's JSON, or its text as a
//! JSON string, at most [`MAX_TOOL_ANSWER_BYTES`]; or `{"error": …}` naming what went wrong,
//! never the URL (which may carry the tool's own token) or the tool's body.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{ACCEPT, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use serde_json::{Value, json};
use voiceplane_core::webhooks::TargetPolicy;
use voiceplane_runtime::upstream::{HttpTools, MAX_TOOL_ANSWER_BYTES, ToolRequest};

use crate::BuildError;
use crate::guarded::{allowed_literal, guarded, read_prefix, transport_sentence};

/// The timeout of a tool without one of its own.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Calls HTTP tools with a pool of its own (never shared with the provider clients) that
/// connects only to addresses its target policy allows, and follows no redirect. Cheap to
/// clone.
#[derive(Debug, Clone)]
pub struct GuardedHttpTools {
    client: reqwest::Client,
    policy: TargetPolicy,
}

impl GuardedHttpTools {
    /// The tools' pool under `policy` (the webhooks' policy).
    pub fn new(policy: TargetPolicy) -> Result<Self, BuildError> {
        let client = guarded(policy)
            .user_agent(concat!("voiceplane-tools/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| BuildError::new(format!("cannot build the tools client: {e}")))?;
        Ok(Self { client, policy })
    }

    async fn attempt(&self, request: &ToolRequest) -> Result<Value, String> {
        let method = Method::from_bytes(request.method.trim().to_ascii_uppercase().as_bytes())
            .ok()
            .filter(|m| {
                [
                    Method::GET,
                    Method::POST,
                    Method::PUT,
                    Method::PATCH,
                    Method::DELETE,
                ]
                .contains(m)
            })
            .ok_or("the tool's method is not GET, POST, PUT, PATCH or DELETE")?;
        let mut url = Url::parse(request.url.trim())
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .ok_or("the tool's URL is not an absolute http:// or https:// URL")?;
        allowed_literal(self.policy, &url).map_err(|refused| {
            format!(
                "the tool's address {} is private; private targets are not allowed",
                refused.0
            )
        })?;
        let in_query = method == Method::GET || method == Method::DELETE;
        if in_query {
            add_query(&mut url, &request.arguments);
        }
        let timeout = if request.timeout.is_zero() {
            DEFAULT_TIMEOUT
        } else {
            request.timeout
        };
        let mut call = self
            .client
            .request(method, url)
            .timeout(timeout)
            .header(ACCEPT, "application/json, text/plain;q=0.9, */*;q=0.8");
        for (name, value) in &request.headers {
            let name = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| "a header name of the tool is not valid".to_owned())?;
            let mut value = HeaderValue::from_str(value.trim())
                .map_err(|_| format!("the tool's header {name} holds characters not allowed"))?;
            // The tool's headers are its credentials more often than not.
            value.set_sensitive(true);
            call = call.header(name, value);
        }
        if !in_query {
            call = call.json(&request.arguments);
        }
        let mut response = call
            .send()
            .await
            .map_err(|e| transport_sentence(e, "the tool", timeout, "tool call"))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("the tool answered {}", status.as_u16()));
        }
        let (body, more) = read_prefix(&mut response, MAX_TOOL_ANSWER_BYTES).await;
        Ok(answer(body, more))
    }
}

/// The model's arguments as query parameters: an object's scalar members (strings as they
/// are, numbers and booleans as JSON writes them; nulls left out, anything nested as its JSON
/// text).
fn add_query(url: &mut Url, arguments: &Value) {
    let Some(members) = arguments.as_object().filter(|m| !m.is_empty()) else {
        return;
    };
    let mut query = url.query_pairs_mut();
    for (name, value) in members {
        match value {
            Value::Null => {}
            Value::String(s) => {
                query.append_pair(name, s);
            }
            other => {
                query.append_pair(name, &other.to_string());
            }
        }
    }
}

/// The tool's answer for the model: its JSON when the whole body is JSON, else its text (cut
/// to the limit on a character boundary) as a JSON string.
fn answer(body: Vec<u8>, truncated: bool) -> Value {
    if !truncated && let Ok(value) = serde_json::from_slice::<Value>(&body) {
        return value;
    }
    let mut text = String::from_utf8_lossy(&body).into_owned();
    // Lossy decoding may have grown the text (a cut character becomes U+FFFD).
    if text.len() > MAX_TOOL_ANSWER_BYTES {
        let mut end = MAX_TOOL_ANSWER_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    Value::String(text)
}

#[async_trait]
impl HttpTools for GuardedHttpTools {
    async fn call(&self, request: &ToolRequest) -> Value {
        match self.attempt(request).await {
            Ok(answer) => answer,
            Err(error) => json!({ "error": error }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_json_or_text() {
        assert_eq!(
            answer(br#"{"ok":true}"#.to_vec(), false),
            json!({"ok": true})
        );
        assert_eq!(answer(b"plain words".to_vec(), false), json!("plain words"));
        assert_eq!(answer(br#"{"ok":"#.to_vec(), true), json!(r#"{"ok":"#));
        // A multi-byte character cut at the limit does not push the text past it.
        let mut body = vec![b'a'; MAX_TOOL_ANSWER_BYTES - 1];
        body.push(0xC3);
        let Value::String(text) = answer(body, true) else {
            panic!("a string")
        };
        assert!(text.len() <= MAX_TOOL_ANSWER_BYTES);
    }

    #[test]
    fn arguments_become_a_query() {
        let mut url = Url::parse("https://tools.example/find?fixed=1").unwrap();
        add_query(
            &mut url,
            &json!({"city": "São Paulo", "days": 3, "metric": true, "none": null}),
        );
        assert_eq!(
            url.as_str(),
            "https://tools.example/find?fixed=1&city=S%C3%A3o+Paulo&days=3&metric=true"
        );
    }
}
