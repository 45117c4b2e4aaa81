//! Call transcripts: the messages of a call, as appended and as listed.

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// Who said a transcript message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    /// The caller.
    User,
    /// The voice agent.
    Agent,
    /// A tool's call or answer.
    Tool,
    /// An instruction or note of the platform.
    System,
}

impl MessageRole {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Agent => "agent",
            Self::Tool => "tool",
            Self::System => "system",
        }
    }
}

/// One message of `POST /api/calls/{call_sid}/messages`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewMessage {
    /// `user`, `agent`, `tool` or `system`.
    pub role: MessageRole,
    /// What was said, at most 100,000 characters.
    pub text: String,
    /// Offset of its start from the start of the call, in milliseconds, ≥ 0.
    #[serde(default)]
    pub start_ms: Option<i64>,
    /// Offset of its end, in milliseconds, not before `start_ms`.
    #[serde(default)]
    pub end_ms: Option<i64>,
    /// The tool called, for tool messages; at most 200 characters.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// The tool's arguments: any JSON.
    #[serde(default)]
    pub tool_arguments: Option<serde_json::Value>,
    /// The tool's answer: any JSON.
    #[serde(default)]
    pub tool_result: Option<serde_json::Value>,
    /// An agent message the caller talked over: only what was heard is kept.
    #[serde(default)]
    pub interrupted: Option<bool>,
}

/// Body of `POST /api/calls/{call_sid}/messages`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewMessages {
    /// 1–100 messages, appended in this order.
    pub messages: Vec<NewMessage>,
}

/// A message of a call's transcript.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct CallMessage {
    /// The call it belongs to.
    pub call_sid: String,
    /// Its place in the conversation: 1, 2, … per call, without gaps.
    pub seq: i64,
    /// `user`, `agent`, `tool` or `system`.
    pub role: MessageRole,
    /// What was said.
    pub text: String,
    /// Offset of its start from the start of the call, in milliseconds.
    pub start_ms: Option<i64>,
    /// Offset of its end, in milliseconds.
    pub end_ms: Option<i64>,
    /// The tool called, for tool messages.
    pub tool_name: Option<String>,
    /// The tool's arguments.
    pub tool_arguments: Option<serde_json::Value>,
    /// The tool's answer.
    pub tool_result: Option<serde_json::Value>,
    /// When it was appended.
    pub created_at: Timestamp,
    /// `true` for an agent message the caller talked over (only what was heard is kept);
    /// `null` otherwise.
    pub interrupted: Option<bool>,
}
