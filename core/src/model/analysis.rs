//! Post-call analysis: what an agent asks a language model about each of its completed calls
//! (a summary, whether it succeeded, fields to extract), and what the call then holds.

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// The type of an extracted field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AnalysisFieldType {
    /// Text.
    String,
    /// A number.
    Number,
    /// True or false.
    Boolean,
    /// One of `choices`.
    Enum,
}

/// A field to extract from a call, as the agent shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct AnalysisField {
    /// `snake_case`, unique in the agent.
    pub name: String,
    /// `string`, `number`, `boolean` or `enum`.
    #[serde(rename = "type")]
    pub field_type: AnalysisFieldType,
    /// What the model should put in it.
    pub description: String,
    /// The values of an `enum` field; `null` for the other types.
    pub choices: Option<Vec<String>>,
    /// Whether the model must give a value (else it may answer `null`).
    pub required: bool,
}

/// A field to extract, as an agent's body gives it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewAnalysisField {
    /// `snake_case` (a lower-case letter, then lower-case letters, digits or `_`; at most 64),
    /// unique in the agent.
    pub name: String,
    /// `string`, `number`, `boolean` or `enum`.
    #[serde(rename = "type")]
    pub field_type: AnalysisFieldType,
    /// What the model should put in it, 1–500 characters.
    pub description: String,
    /// For `enum` only: 1–50 distinct values of 1–100 characters.
    #[serde(default)]
    pub choices: Option<Vec<String>>,
    /// Whether the model must give a value; `false` by default.
    #[serde(default)]
    pub required: bool,
}

/// Default of [`AgentAnalysis::max_transcript_chars`].
pub const DEFAULT_MAX_TRANSCRIPT_CHARS: i64 = 60_000;

/// An agent's post-call analysis, as the agent shows it (the API key never is).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct AgentAnalysis {
    /// Whether the model writes a summary of the call.
    pub summary: bool,
    /// What makes a call successful; the model says whether each call was. `null`: not asked.
    pub success_criteria: Option<String>,
    /// The fields to extract, at most 20.
    pub fields: Vec<AnalysisField>,
    /// The OpenAI-compatible server (`https://api.openai.com`, or its root ending in `/v1`).
    pub base_url: String,
    /// The model asked.
    pub model: String,
    /// Whether an API key is stored (sent as `Authorization: Bearer`; never shown).
    pub api_key_set: bool,
    /// Longer transcripts are cut in the middle, with a marker, to this many characters.
    pub max_transcript_chars: i64,
}

/// An agent's post-call analysis, as an agent's body gives it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewAgentAnalysis {
    /// Whether the model writes a summary of the call; `true` by default.
    #[serde(default = "yes")]
    pub summary: bool,
    /// What makes a call successful (at most 2,000 characters).
    #[serde(default)]
    pub success_criteria: Option<String>,
    /// The fields to extract, at most 20.
    #[serde(default)]
    pub fields: Vec<NewAnalysisField>,
    /// An absolute `http(s)://` URL of an OpenAI-compatible server.
    pub base_url: String,
    /// Its API key (at most 500 characters). Stored encrypted and never shown; absent in a
    /// PATCH keeps the one stored.
    #[serde(default)]
    pub api_key: Option<String>,
    /// The model, 1–200 characters.
    pub model: String,
    /// 1,000–1,000,000; 60,000 by default.
    #[serde(default)]
    pub max_transcript_chars: Option<i64>,
}

fn yes() -> bool {
    true
}

/// Where a call's analysis stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AnalysisStatus {
    /// Waiting for, or being answered by, the model.
    Pending,
    /// `analysis` holds the answer.
    Completed,
    /// Given up after retries; `analysis_error` says why.
    Failed,
}

impl AnalysisStatus {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }
}

/// What the model said about a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct CallAnalysis {
    /// The summary, when the agent asks for one.
    pub summary: Option<String>,
    /// Whether the call succeeded by the agent's `success_criteria`, when it has them.
    pub successful: Option<bool>,
    /// The extracted fields by name (`null` where the model found no value).
    pub fields: serde_json::Map<String, serde_json::Value>,
    /// The model that answered.
    pub model: String,
    /// When the answer was stored.
    pub analyzed_at: Timestamp,
}

/// The durable job that analyses a call.
pub const CALL_ANALYZE: &str = "call.analyze";

/// Attempts of a [`CALL_ANALYZE`] job before the analysis is `failed`.
pub const ANALYZE_ATTEMPTS: u32 = 4;

/// The unique key of a call's analysis job: one queued or running per call.
pub fn analyze_key(call_sid: &str) -> String {
    format!("{CALL_ANALYZE}:{call_sid}")
}

/// The job that analyses `call_sid`, due at `now`.
pub fn analyze_job(organization_id: &str, call_sid: &str, now: Timestamp) -> crate::jobs::NewJob {
    crate::jobs::NewJob {
        job_id: crate::jobs::new_job_id(),
        kind: CALL_ANALYZE.to_owned(),
        payload: serde_json::json!({"organization_id": organization_id, "call_sid": call_sid}),
        run_at: now,
        max_attempts: ANALYZE_ATTEMPTS,
        unique_key: Some(analyze_key(call_sid)),
    }
}
