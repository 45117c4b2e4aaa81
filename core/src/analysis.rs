//! Post-call analysis by a language model: the request sent to an OpenAI-compatible
//! chat-completions endpoint (the transcript, and a strict JSON-schema response format built
//! from the agent's fields), and the check of its answer against that schema.
//!
//! The schema follows OpenAI's strict mode: every property is listed in `required` and no
//! others are allowed; a field the agent does not require may be `null` instead. The answer is
//! checked against the same schema with the `jsonschema` crate, whatever the server claims to
//! enforce: an OpenAI-compatible server may ignore `response_format`.

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use crate::error::Result;
use crate::model::{AgentAnalysis, AnalysisFieldType, CallAnalysis, CallMessage};
use crate::time::Timestamp;

/// One chat-completions request: where, with which key, and its JSON body.
#[derive(Clone, PartialEq)]
pub struct CompletionRequest {
    /// The server: `https://api.openai.com`, or its API root ending in `/v1`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer`, when there is one.
    pub api_key: Option<String>,
    /// The body of `POST {base}/v1/chat/completions`.
    pub body: Value,
}

impl std::fmt::Debug for CompletionRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompletionRequest")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .finish_non_exhaustive()
    }
}

/// An OpenAI-compatible chat-completions endpoint.
#[async_trait]
pub trait ChatCompletions: Send + Sync {
    /// Sends `request` once and answers `choices[0].message.content`. Every failure is an
    /// [`Error::Upstream`](crate::Error::Upstream) whose sentence holds neither the key nor
    /// the server's body.
    async fn complete(&self, request: &CompletionRequest) -> Result<String>;
}

/// The JSON schema the answer must follow: `summary` when asked, `successful` when the
/// agent has success criteria, and `fields` with one property per field.
pub fn response_schema(analysis: &AgentAnalysis) -> Value {
    let mut properties = Map::new();
    if analysis.summary {
        properties.insert(
            "summary".into(),
            json!({"type": "string", "description": "A summary of the call in a few sentences."}),
        );
    }
    if analysis.success_criteria.is_some() {
        properties.insert(
            "successful".into(),
            json!({"type": "boolean",
                   "description": "Whether the call succeeded by the success criteria."}),
        );
    }
    let mut fields = Map::new();
    for field in &analysis.fields {
        let base = match field.field_type {
            AnalysisFieldType::String => "string",
            AnalysisFieldType::Number => "number",
            AnalysisFieldType::Boolean => "boolean",
            AnalysisFieldType::Enum => "string",
        };
        let mut schema = json!({"description": field.description});
        schema["type"] = if field.required {
            json!(base)
        } else {
            json!([base, "null"])
        };
        if let Some(choices) = &field.choices {
            let mut values: Vec<Value> = choices.iter().map(|c| json!(c)).collect();
            if !field.required {
                values.push(Value::Null);
            }
            schema["enum"] = Value::Array(values);
        }
        fields.insert(field.name.clone(), schema);
    }
    let field_names: Vec<&String> = fields.keys().collect();
    let fields_schema = json!({
        "type": "object",
        "properties": fields,
        "required": field_names,
        "additionalProperties": false,
    });
    properties.insert("fields".into(), fields_schema);
    let required: Vec<&String> = properties.keys().collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// The marker left where a long transcript was cut.
fn cut_marker(cut: usize) -> String {
    format!("\n[… {cut} characters of the middle of the call left out …]\n")
}

/// The transcript as the model reads it, one `role: text` line per message, cut in the middle
/// (with a marker) to at most `max_chars` characters.
pub fn transcript(messages: &[CallMessage], max_chars: usize) -> String {
    let mut text = String::new();
    for m in messages {
        let who = match &m.tool_name {
            Some(tool) => format!("{} ({tool})", m.role.as_str()),
            None => m.role.as_str().to_owned(),
        };
        text.push_str(&who);
        text.push_str(": ");
        text.push_str(m.text.trim());
        text.push('\n');
    }
    let total = text.chars().count();
    if total <= max_chars {
        return text;
    }
    let marker_len = cut_marker(total).chars().count();
    let keep = max_chars.saturating_sub(marker_len);
    let head = keep / 2;
    let tail = keep - head;
    let chars: Vec<char> = text.chars().collect();
    let mut out: String = chars[..head].iter().collect();
    out.push_str(&cut_marker(total - head - tail));
    out.extend(&chars[total - tail..]);
    out
}

/// The chat-completions body: the instructions, the transcript, and the strict response
/// format of `schema`.
pub fn request_body(analysis: &AgentAnalysis, schema: &Value, transcript: &str) -> Value {
    let mut instructions = String::from(
        "You analyse a phone call between an AI voice agent and a person, from its transcript \
         (`agent` is the voice agent, `user` the person). Answer with one JSON object that \
         follows the response schema, and nothing else.\n",
    );
    if analysis.summary {
        instructions.push_str("- summary: what happened in the call, in a few sentences.\n");
    }
    if let Some(criteria) = &analysis.success_criteria {
        instructions.push_str(&format!(
            "- successful: true if the call succeeded by these criteria, else false: {criteria}\n"
        ));
    }
    if !analysis.fields.is_empty() {
        instructions.push_str(
            "- fields: the value of each field from what was said; null where the call does \
             not tell it:\n",
        );
        for f in &analysis.fields {
            instructions.push_str(&format!("  - {}: {}\n", f.name, f.description));
        }
    }
    json!({
        "model": analysis.model,
        "messages": [
            {"role": "system", "content": instructions},
            {"role": "user", "content": format!("Transcript:\n{transcript}")},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "call_analysis", "strict": true, "schema": schema},
        },
    })
}

/// The model's `content` read as the call's analysis: JSON that validates against `schema`.
/// `Err`: what is wrong with it, in a sentence that quotes none of it.
pub fn read_answer(
    analysis: &AgentAnalysis,
    schema: &Value,
    content: &str,
    now: Timestamp,
) -> std::result::Result<CallAnalysis, String> {
    let answer: Value = serde_json::from_str(content.trim())
        .map_err(|_| "the model's answer is not JSON".to_owned())?;
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the analysis schema is invalid: {e}"))?;
    if let Some(error) = validator.iter_errors(&answer).next() {
        return Err(format!(
            "the model's answer does not follow the schema at `{}`",
            error.instance_path()
        ));
    }
    Ok(CallAnalysis {
        summary: answer["summary"].as_str().map(str::to_owned),
        successful: answer["successful"].as_bool(),
        fields: answer["fields"].as_object().cloned().unwrap_or_default(),
        model: analysis.model.clone(),
        analyzed_at: now,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AnalysisField, MessageRole};

    fn analysis() -> AgentAnalysis {
        AgentAnalysis {
            summary: true,
            success_criteria: Some("The caller booked a table.".into()),
            fields: vec![
                AnalysisField {
                    name: "party_size".into(),
                    field_type: AnalysisFieldType::Number,
                    description: "How many people".into(),
                    choices: None,
                    required: true,
                },
                AnalysisField {
                    name: "mood".into(),
                    field_type: AnalysisFieldType::Enum,
                    description: "The caller's mood".into(),
                    choices: Some(vec!["happy".into(), "angry".into()]),
                    required: false,
                },
            ],
            base_url: "http://127.0.0.1:1".into(),
            model: "m".into(),
            api_key_set: false,
            max_transcript_chars: 60_000,
        }
    }

    #[test]
    fn the_schema_is_strict_and_answers_are_checked_against_it() {
        let a = analysis();
        let schema = response_schema(&a);
        assert_eq!(
            schema["required"],
            json!(["fields", "successful", "summary"])
        );
        assert_eq!(
            schema["properties"]["fields"]["required"],
            json!(["mood", "party_size"])
        );
        assert_eq!(
            schema["properties"]["fields"]["properties"]["mood"]["enum"],
            json!(["happy", "angry", null])
        );
        let now = Timestamp::from_micros(0);
        let good = r#"{"summary": "Booked.", "successful": true,
                       "fields": {"party_size": 4, "mood": null}}"#;
        let read = read_answer(&a, &schema, good, now).unwrap();
        assert_eq!(read.successful, Some(true));
        assert_eq!(read.fields["party_size"], 4);
        for (bad, says) in [
            ("Sure! Here it is", "not JSON"),
            (
                r#"{"summary": "x", "successful": true, "fields": {"party_size": "four", "mood": null}}"#,
                "/fields/party_size",
            ),
            (
                r#"{"summary": "x", "successful": true, "fields": {"party_size": 2, "mood": "sad"}}"#,
                "/fields/mood",
            ),
            (
                r#"{"summary": "x", "fields": {"party_size": 2, "mood": null}}"#,
                "schema",
            ),
        ] {
            let err = read_answer(&a, &schema, bad, now).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn long_transcripts_are_cut_in_the_middle() {
        let message = |i: usize| CallMessage {
            call_sid: "call_1".into(),
            seq: i as i64,
            role: if i.is_multiple_of(2) {
                MessageRole::Agent
            } else {
                MessageRole::User
            },
            text: format!("message number {i:04}"),
            start_ms: None,
            end_ms: None,
            tool_name: None,
            tool_arguments: None,
            tool_result: None,
            created_at: Timestamp::from_micros(0),
            interrupted: None,
        };
        let messages: Vec<CallMessage> = (0..1000).map(message).collect();
        let whole = transcript(&messages, usize::MAX);
        assert!(whole.starts_with("agent: message number 0000\nuser: message number 0001\n"));
        let cut = transcript(&messages, 2000);
        assert!(cut.chars().count() <= 2000, "{}", cut.chars().count());
        assert!(cut.starts_with("agent: message number 0000"));
        assert!(cut.ends_with("user: message number 0999\n"));
        assert!(cut.contains("characters of the middle of the call left out"));
        assert_eq!(
            transcript(&messages[..3], 2000),
            transcript(&messages[..3], 60_000)
        );
    }
}
