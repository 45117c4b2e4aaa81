//! What a call asks of the voiceplane it runs in ([`CallHost`]: keep its transcript, usage and
//! recording, hang it up, record its end), and the tools its model calls ([`AgentTools`]),
//! both over the [`Service`].

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::io::AsyncReadExt;
use voiceplane_core::Service;
use voiceplane_core::model::{NewMessage, Tool, UsageItem};
use voiceplane_core::service::RuntimeEnd;
use voiceplane_core::telephony::progress::AnsweredBy;

use crate::engine::{END_CALL, SEARCH_KNOWLEDGE_BASE, Toolbox};
use crate::upstream::{FunctionSpec, HttpTools, ToolRequest};

/// What a live call asks of the platform. Failures are logged (never with a secret) and the
/// call goes on: what is kept is kept after the caller's experience, never before it.
#[async_trait]
pub trait CallHost: Send + Sync + 'static {
    /// Appends to the transcript.
    async fn messages(&self, org: &str, call_sid: &str, messages: Vec<NewMessage>);
    /// Charges usage.
    async fn usage(&self, org: &str, call_sid: &str, items: Vec<UsageItem>);
    /// Stores the WAV at `wav` as the recording.
    async fn recording(&self, org: &str, call_sid: &str, wav: &Path);
    /// Whether the provider said a machine answered; `None` while it has not said.
    async fn answered_by_machine(&self, org: &str, call_sid: &str) -> Option<bool>;
    /// Hangs the call up at its provider.
    async fn hang_up(&self, org: &str, call_sid: &str);
    /// Records how the call ended.
    async fn finish(&self, org: &str, call_sid: &str, end: RuntimeEnd);
}

/// The [`CallHost`] of a voiceplane [`Service`].
#[derive(Clone)]
pub struct ServiceHost(pub Arc<Service>);

fn logged(what: &str, call_sid: &str, done: voiceplane_core::error::Result<()>) {
    if let Err(e) = done {
        tracing::warn!(call_sid, error = %e, "the runtime could not {what}");
    }
}

#[async_trait]
impl CallHost for ServiceHost {
    async fn messages(&self, org: &str, call_sid: &str, messages: Vec<NewMessage>) {
        let done = self.0.runtime_messages(org, call_sid, messages).await;
        logged("keep the transcript", call_sid, done);
    }

    async fn usage(&self, org: &str, call_sid: &str, items: Vec<UsageItem>) {
        let done = self.0.runtime_usage(org, call_sid, items).await;
        logged("charge the call's usage", call_sid, done);
    }

    async fn recording(&self, org: &str, call_sid: &str, wav: &Path) {
        let bytes = match read_all(wav).await {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!(call_sid, error = %e, "the runtime could not read its recording");
                return;
            }
        };
        let done = self.0.runtime_recording(org, call_sid, bytes).await;
        logged("store the recording", call_sid, done);
    }

    async fn answered_by_machine(&self, org: &str, call_sid: &str) -> Option<bool> {
        match self.0.runtime_answered_by(org, call_sid).await {
            Ok(Some(AnsweredBy::Machine)) => Some(true),
            Ok(Some(_)) => Some(false),
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(call_sid, error = %e, "the runtime could not read the call");
                None
            }
        }
    }

    async fn hang_up(&self, org: &str, call_sid: &str) {
        let done = self.0.runtime_hang_up(org, call_sid).await;
        logged("hang the call up", call_sid, done);
    }

    async fn finish(&self, org: &str, call_sid: &str, end: RuntimeEnd) {
        let done = self.0.runtime_finish(org, call_sid, end).await;
        logged("record the call's end", call_sid, done);
    }
}

/// The whole file: a recording is read once, at the end of its call.
async fn read_all(path: &Path) -> std::io::Result<Bytes> {
    let mut file = tokio::fs::File::open(path).await?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).await?;
    Ok(Bytes::from(bytes))
}

/// The functions an agent's model is offered: its HTTP tools, `end_call` when its
/// `end_call_tool` is on, and `search_knowledge_base` when it has documents.
pub fn functions(tools: &[Tool], end_call: bool, has_documents: bool) -> Vec<FunctionSpec> {
    let mut functions: Vec<FunctionSpec> = tools
        .iter()
        .map(|tool| FunctionSpec {
            name: tool.tool_name.clone(),
            description: tool.tool_description.clone(),
            parameters: if tool.parameters.is_object() {
                tool.parameters.clone()
            } else {
                serde_json::json!({"type": "object", "properties": {}})
            },
        })
        .collect();
    if end_call {
        functions.push(FunctionSpec {
            name: END_CALL.to_owned(),
            description: "End the call, once you have said goodbye.".to_owned(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"reason": {"type": "string", "description": "Why the call ends."}},
                "required": ["reason"],
            }),
        });
    }
    if has_documents {
        functions.push(FunctionSpec {
            name: SEARCH_KNOWLEDGE_BASE.to_owned(),
            description: "Look up facts in the knowledge base before answering a question \
                          about them."
                .to_owned(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"query": {"type": "string", "description": "What to look for."}},
                "required": ["query"],
            }),
        });
    }
    functions
}

/// The tools of one agent in one organization.
pub struct AgentTools {
    /// The service its knowledge base is searched through.
    pub service: Arc<Service>,
    /// What calls HTTP tools.
    pub http: Arc<dyn HttpTools>,
    /// The organization.
    pub organization_id: String,
    /// Its HTTP tools, by name.
    pub tools: HashMap<String, Tool>,
    /// The agent's documents.
    pub documents: Vec<String>,
}

#[async_trait]
impl Toolbox for AgentTools {
    async fn call(&self, name: &str, arguments: &serde_json::Value) -> serde_json::Value {
        if name == SEARCH_KNOWLEDGE_BASE && !self.documents.is_empty() {
            let query = arguments["query"].as_str().unwrap_or_default();
            return match self
                .service
                .runtime_search(&self.organization_id, &self.documents, query)
                .await
            {
                Ok(hits) => serde_json::json!({
                    "results": hits
                        .into_iter()
                        .map(|h| serde_json::json!({"document_id": h.documentation_id, "text": h.text}))
                        .collect::<Vec<_>>(),
                }),
                Err(e) => serde_json::json!({"error": e.to_string()}),
            };
        }
        let Some(tool) = self.tools.get(name) else {
            return serde_json::json!({"error": format!("there is no tool named {name}")});
        };
        self.http
            .call(&ToolRequest {
                method: tool.http_method.clone(),
                url: tool.url.clone(),
                headers: tool.headers.clone(),
                arguments: arguments.clone(),
                timeout: Duration::from_secs(u64::try_from(tool.timeout_seconds).unwrap_or(10)),
            })
            .await
    }
}
