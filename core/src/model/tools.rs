//! HTTP tools an agent can call: the tool, its listed summary, and the create and update bodies.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// A custom HTTP tool an agent can call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Tool {
    /// `tool_…`
    pub tool_id: String,
    /// The id of the organization it belongs to.
    #[serde(rename = "client_id")]
    pub organization_id: String,
    /// Name the model calls it by: letters, digits, `_`, `-`.
    pub tool_name: String,
    /// What the tool does, for the model.
    pub tool_description: String,
    /// `GET`, `POST`, `PUT`, `PATCH` or `DELETE`.
    pub http_method: String,
    /// The endpoint the tool calls.
    pub url: String,
    /// Extra request headers.
    pub headers: BTreeMap<String, String>,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
    /// Request timeout.
    pub timeout_seconds: i32,
    /// When it was created.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// A tool as listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ToolSummary {
    /// `tool_…`
    pub tool_id: String,
    /// Name.
    pub tool_name: String,
    /// Description.
    pub tool_description: String,
    /// HTTP method.
    pub http_method: String,
    /// Timeout.
    pub timeout_seconds: i32,
    /// When it was created.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

impl From<Tool> for ToolSummary {
    fn from(t: Tool) -> Self {
        Self {
            tool_id: t.tool_id,
            tool_name: t.tool_name,
            tool_description: t.tool_description,
            http_method: t.http_method,
            timeout_seconds: t.timeout_seconds,
            created_at: t.created_at,
            updated_at: t.updated_at,
        }
    }
}

/// Body of `POST /api/tools`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewTool {
    /// Name: 1–64 of `[A-Za-z0-9_-]`.
    pub tool_name: String,
    /// Description, non-empty.
    pub tool_description: String,
    /// HTTP method; `POST` by default.
    #[serde(default)]
    pub http_method: Option<String>,
    /// `http://` or `https://` URL.
    pub url: String,
    /// Extra request headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// JSON Schema object of the arguments; `{"type":"object","properties":{}}` by default.
    #[serde(default)]
    pub parameters: Option<serde_json::Value>,
    /// 1–120 seconds; 30 by default.
    #[serde(default)]
    pub timeout_seconds: Option<i32>,
}

/// Body of `PATCH /api/tools/{tool_id}`: absent fields stay as they are.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ToolUpdate {
    /// New name.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// New description.
    #[serde(default)]
    pub tool_description: Option<String>,
    /// New HTTP method.
    #[serde(default)]
    pub http_method: Option<String>,
    /// New URL.
    #[serde(default)]
    pub url: Option<String>,
    /// New headers (replaces all).
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    /// New JSON Schema of the arguments.
    #[serde(default)]
    pub parameters: Option<serde_json::Value>,
    /// New timeout.
    #[serde(default)]
    pub timeout_seconds: Option<i32>,
}
