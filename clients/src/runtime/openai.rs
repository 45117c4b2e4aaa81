//! Streamed chat completions with tools, from any OpenAI-compatible server.
//!
//! | ours | theirs |
//! |---|---|
//! | `chat(key, request)` | `POST {base}/v1/chat/completions` `{model, temperature?, stream: true, stream_options: {include_usage: true}, messages, tools?}`, `Authorization: Bearer` |
//! | `ChatMessage::System` / `User` | `{role: "system" \| "user", content}` |
//! | `ChatMessage::Assistant` | `{role: "assistant", content, tool_calls?: [{id, type: "function", function: {name, arguments}}]}` |
//! | `ChatMessage::Tool` | `{role: "tool", tool_call_id, content}` |
//! | `FunctionSpec` | `{type: "function", function: {name, description, parameters}}` |
//! | `ChatDelta::Text` | each chunk's `choices[0].delta.content` |
//! | `ChatDelta::ToolCall` | `choices[0].delta.tool_calls[]`, put together by `index` across chunks, emitted at `finish_reason` (or `[DONE]`) |
//! | `ChatDelta::Usage` | the last chunk's `usage.prompt_tokens`, `usage.completion_tokens` |

use std::collections::{BTreeMap, VecDeque};
use std::pin::Pin;

use async_trait::async_trait;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use reqwest::header::{ACCEPT, AUTHORIZATION};
use serde::Deserialize;
use serde_json::{Value, json};
use voiceplane_runtime::upstream::{
    ChatDelta, ChatMessage, ChatRequest, LanguageModel, ProviderKey, Streamed, ToolCall,
    UpstreamError,
};

use super::{
    RuntimeClientSettings, credential, http_base, send, streaming_client, transport_error,
};
use crate::{BuildError, openai_endpoint};

const WHAT: &str = "the chat request";

/// OpenAI-compatible streamed chat completions: [`LanguageModel`]. Cheap to clone.
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    client: reqwest::Client,
    settings: RuntimeClientSettings,
}

impl OpenAiChat {
    /// With the default settings.
    pub fn new() -> Result<Self, BuildError> {
        Self::with_settings(RuntimeClientSettings::default())
    }

    /// With `settings`.
    pub fn with_settings(settings: RuntimeClientSettings) -> Result<Self, BuildError> {
        Ok(Self {
            client: streaming_client(settings, "chat")?,
            settings,
        })
    }
}

/// The request body of `request`.
fn body(request: &ChatRequest) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(message).collect();
    let mut body = json!({
        "model": request.model,
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": messages,
    });
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if !request.functions.is_empty() {
        let tools: Vec<Value> = request
            .functions
            .iter()
            .map(|f| {
                json!({"type": "function", "function": {
                    "name": f.name, "description": f.description, "parameters": f.parameters,
                }})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    body
}

fn message(m: &ChatMessage) -> Value {
    match m {
        ChatMessage::System(text) => json!({"role": "system", "content": text}),
        ChatMessage::User(text) => json!({"role": "user", "content": text}),
        ChatMessage::Assistant { text, tool_calls } => {
            // A turn that only called tools has no content, which servers want as null.
            let content = if text.is_empty() && !tool_calls.is_empty() {
                Value::Null
            } else {
                json!(text)
            };
            let mut m = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                m["tool_calls"] = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": c.arguments}})
                    })
                    .collect();
            }
            m
        }
        ChatMessage::Tool { call_id, content } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: u64,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// A tool call whose pieces are still arriving.
#[derive(Default)]
struct Partial {
    id: String,
    name: String,
    arguments: String,
}

type Events = Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// The reader of one reply: the events, and what they have said so far.
struct Reply {
    events: Events,
    provider: String,
    settings: RuntimeClientSettings,
    ready: VecDeque<Result<ChatDelta, UpstreamError>>,
    calls: BTreeMap<u64, Partial>,
    finished: bool,
    done: bool,
}

impl Reply {
    /// The next delta, reading events until one is ready.
    async fn next(mut self) -> Option<(Result<ChatDelta, UpstreamError>, Self)> {
        loop {
            if let Some(delta) = self.ready.pop_front() {
                return Some((delta, self));
            }
            if self.done {
                return None;
            }
            match self.events.next().await {
                Some(Ok(event)) => self.read(&event.data),
                Some(Err(e)) => self.fail(e),
                None => {
                    // A clean end without `[DONE]` is a reply only if the model said it was
                    // finished; otherwise the server gave up half-way.
                    self.done = true;
                    if self.finished {
                        self.flush_calls();
                    } else {
                        self.ready.push_back(Err(UpstreamError(format!(
                            "{} ended the reply before finishing it",
                            self.provider
                        ))));
                    }
                }
            }
        }
    }

    fn read(&mut self, data: &str) {
        let data = data.trim();
        if data == "[DONE]" {
            self.flush_calls();
            self.done = true;
            return;
        }
        if data.is_empty() {
            return;
        }
        let chunk: Chunk = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(e) => {
                tracing::warn!(provider = %self.provider, error = %e, "malformed chat chunk");
                self.ready.push_back(Err(UpstreamError(format!(
                    "{} sent a malformed chunk",
                    self.provider
                ))));
                self.done = true;
                return;
            }
        };
        if let Some(choice) = chunk.choices.into_iter().next() {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    self.ready.push_back(Ok(ChatDelta::Text(text)));
                }
                for call in delta.tool_calls {
                    let partial = self.calls.entry(call.index).or_default();
                    if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                        partial.id = id;
                    }
                    if let Some(function) = call.function {
                        if let Some(name) = function.name {
                            partial.name.push_str(&name);
                        }
                        if let Some(arguments) = function.arguments {
                            partial.arguments.push_str(&arguments);
                        }
                    }
                }
            }
            if choice.finish_reason.is_some() {
                self.finished = true;
                self.flush_calls();
            }
        }
        if let Some(usage) = chunk.usage {
            self.ready.push_back(Ok(ChatDelta::Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
            }));
        }
    }

    /// The tool calls put together so far, in the model's order.
    fn flush_calls(&mut self) {
        for (index, call) in std::mem::take(&mut self.calls) {
            if call.name.is_empty() {
                tracing::warn!(provider = %self.provider, index, "tool call without a name dropped");
                continue;
            }
            let id = if call.id.is_empty() {
                format!("call_{index}")
            } else {
                call.id
            };
            let arguments = if call.arguments.trim().is_empty() {
                "{}".to_owned()
            } else {
                call.arguments
            };
            self.ready.push_back(Ok(ChatDelta::ToolCall(ToolCall {
                id,
                name: call.name,
                arguments,
            })));
        }
    }

    fn fail(&mut self, err: EventStreamError<reqwest::Error>) {
        let error = match err {
            EventStreamError::Transport(e) => {
                transport_error(&self.provider, WHAT, e, self.settings)
            }
            other => {
                tracing::warn!(provider = %self.provider, error = %other, "malformed event stream");
                UpstreamError(format!("{} sent a malformed event stream", self.provider))
            }
        };
        self.ready.push_back(Err(error));
        self.done = true;
    }
}

#[async_trait]
impl LanguageModel for OpenAiChat {
    async fn chat(
        &self,
        key: &ProviderKey,
        request: &ChatRequest,
    ) -> Result<Streamed<ChatDelta>, UpstreamError> {
        let base = http_base(key, self.settings.policy)?;
        let post = self
            .client
            .post(openai_endpoint(&base, &["chat", "completions"]))
            .header(AUTHORIZATION, credential(key, "Bearer")?)
            .header(ACCEPT, "text/event-stream")
            .json(&body(request));
        let response = send(post, &key.provider, WHAT, self.settings).await?;
        let reply = Reply {
            events: Box::pin(response.bytes_stream().eventsource()),
            provider: key.provider.clone(),
            settings: self.settings,
            ready: VecDeque::new(),
            calls: BTreeMap::new(),
            finished: false,
            done: false,
        };
        Ok(Box::pin(futures_util::stream::unfold(reply, Reply::next)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use voiceplane_runtime::upstream::FunctionSpec;

    #[test]
    fn requests_are_in_openai_format() {
        let request = ChatRequest {
            model: "gpt-4o-mini".into(),
            temperature: None,
            messages: vec![
                ChatMessage::System("Be brief.".into()),
                ChatMessage::User("Weather?".into()),
                ChatMessage::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "weather".into(),
                        arguments: "{\"city\":\"Paris\"}".into(),
                    }],
                },
                ChatMessage::Tool {
                    call_id: "c1".into(),
                    content: "{\"sky\":\"clear\"}".into(),
                },
            ],
            functions: vec![],
        };
        let b = body(&request);
        assert!(b.get("temperature").is_none());
        assert!(b.get("tools").is_none());
        assert_eq!(b["stream_options"], json!({"include_usage": true}));
        assert_eq!(b["messages"][2]["content"], Value::Null);
        assert_eq!(
            b["messages"][2]["tool_calls"][0],
            json!({"id": "c1", "type": "function",
                   "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}})
        );
        assert_eq!(
            b["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "{\"sky\":\"clear\"}"})
        );
        let request = ChatRequest {
            temperature: Some(0.5),
            functions: vec![FunctionSpec {
                name: "end_call".into(),
                description: "Hang up".into(),
                parameters: json!({"type": "object"}),
            }],
            ..request
        };
        let b = body(&request);
        assert_eq!(b["temperature"], json!(0.5));
        assert_eq!(b["tools"][0]["function"]["name"], "end_call");
    }
}
