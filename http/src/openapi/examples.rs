//! Examples: every JSON request body and success response of the document gets an `example`,
//! and every object component an `examples` entry, so that documentation tools show a real
//! body and mock servers can answer one.
//!
//! They are not written per operation: each is built from the schema it illustrates, so it
//! follows the types as they change. A value is, in order of preference, the schema's own
//! `examples`, its `const`, its first `enum` value, the entry of [`FIELDS`] for the field it
//! fills (keyed `Type.field`, else `field`: the one table of example values), an id of the
//! kind the field names (`agent_id` → `agent_…`), or a value of the schema's type and format.
//! Envelopes, pages and lists are assembled from their parts the same way. The unit tests
//! and the workspace's suite validate every example against its schema.

use serde_json::{Map, Value, json};
use voiceplane_core::ids::IdKind;

/// Example values by field: `Type.field` (the component's name) or, for every type, `field`.
/// Ids need no entry (they follow the field's id kind); enums take their first value.
const FIELDS: &[(&str, &str)] = &[
    // People, names and labels.
    ("agent_name", r#""Front desk""#),
    (
        "system_prompt",
        r#""You are the front desk of Acme Dental: book, move and cancel appointments, and answer questions from the knowledge base.""#,
    ),
    ("language", r#""en-US""#),
    ("llm_provider", r#""openai""#),
    ("llm_model", r#""gpt-4o-mini""#),
    ("llm_temperature", "0.7"),
    ("stt_provider", r#""deepgram""#),
    ("tts_voice", r#""21m00Tcm4TlvDq8ikWAM""#),
    ("voicemail_response_delay", "2.5"),
    ("email", r#""ada@example.com""#),
    ("Member.name", r#""Ada Lovelace""#),
    ("ApiKey.name", r#""CRM sync""#),
    ("CreatedApiKey.name", r#""CRM sync""#),
    ("NewApiKey.name", r#""CRM sync""#),
    ("Document.name", r#""Opening hours""#),
    ("DocumentUpdate.name", r#""Opening hours (winter)""#),
    ("NewTextDocument.name", r#""Opening hours""#),
    ("Integration.name", r#""Main Twilio account""#),
    ("IntegrationUpdate.name", r#""Main Twilio account""#),
    ("NewTwilioIntegration.name", r#""Main Twilio account""#),
    ("NewTelnyxIntegration.name", r#""Telnyx backup""#),
    ("Voice.name", r#""Rachel""#),
    ("LibraryVoice.name", r#""Warm narrator""#),
    ("LibraryAddInput.name", r#""Warm narrator""#),
    ("name", r#""Example""#),
    ("category", r#""telephony""#),
    // Secrets and credentials (made up; the shapes are the real ones).
    (
        "CreatedApiKey.api_key",
        r#""vpk_Zt7qL2mXw9RkV4cN8pYb3HsJ6dFa1GeUo5TiQ0Ks""#,
    ),
    ("prefix", r#""vpk_Zt7qL2mX""#),
    (
        "secret",
        r#""whsec_MfKQ9r8GKYqXj5r3yWe7Hbo1Sg3nJw0eF3d9aZb2c4E=""#,
    ),
    ("account_sid", r#""AC0123456789abcdef0123456789abcdef""#),
    ("auth_token", r#""your-twilio-auth-token""#),
    (
        "TelnyxCredentials.api_key",
        r#""KEY0123456789ABCDEF_your-telnyx-key""#,
    ),
    // Calls and transcripts.
    ("to_number", r#""+14155550123""#),
    ("from_number", r#""+14155550199""#),
    ("phone_number", r#""+14155550100""#),
    ("PhoneNumber.provider", r#""twilio""#),
    ("NewPhoneNumber.provider", r#""twilio""#),
    ("PhoneNumberUpdate.provider", r#""twilio""#),
    ("end_reason", r#""customer_hung_up""#),
    ("Call.status", r#""completed""#),
    ("CallUpdate.status", r#""completed""#),
    ("start_time", r#""2026-01-31T11:56:56Z""#),
    ("end_time", r#""2026-01-31T12:00:00Z""#),
    ("billing_status", r#""billed""#),
    ("duration_seconds", "184.0"),
    ("total_cost", "0.42"),
    ("turn_count", "12"),
    ("seq", "1"),
    ("start_ms", "1200"),
    ("end_ms", "4350"),
    (
        "CallMessage.text",
        r#""Hi, I'd like to move my appointment to Friday.""#,
    ),
    (
        "NewMessage.text",
        r#""Hi, I'd like to move my appointment to Friday.""#,
    ),
    // A transcript line is the caller speaking; a tool's own fields show on tools.
    ("NewMessage.tool_name", "null"),
    ("NewMessage.tool_arguments", "null"),
    ("NewMessage.tool_result", "null"),
    ("CallMessage.tool_name", "null"),
    ("CallMessage.tool_arguments", "null"),
    ("CallMessage.tool_result", "null"),
    ("tool_name", r#""lookup_order""#),
    ("tool_arguments", r#"{"order_id": "A-1001"}"#),
    (
        "tool_result",
        r#"{"status": "shipped", "eta": "2026-02-03"}"#,
    ),
    // Tools.
    (
        "tool_description",
        r#""Looks an order up by its number and tells its status.""#,
    ),
    ("http_method", r#""POST""#),
    ("timeout_seconds", "10"),
    (
        "headers",
        r#"{"Authorization": "Bearer <token of your API>"}"#,
    ),
    (
        "parameters",
        r#"{"type": "object", "required": ["order_id"], "properties": {"order_id": {"type": "string"}}}"#,
    ),
    ("Tool.url", r#""https://api.example.com/orders/lookup""#),
    ("NewTool.url", r#""https://api.example.com/orders/lookup""#),
    (
        "ToolUpdate.url",
        r#""https://api.example.com/v2/orders/lookup""#,
    ),
    // Knowledge base.
    (
        "NewTextDocument.text",
        r#""We are open Monday to Friday, 8am to 6pm, and Saturday 9am to noon.""#,
    ),
    (
        "SearchHit.text",
        r#""We are open Monday to Friday, 8am to 6pm, and Saturday 9am to noon.""#,
    ),
    ("Document.content_type", r#""application/pdf""#),
    ("filename", r#""opening-hours.pdf""#),
    (
        "storage_key",
        r#""kb/org_7c1e9a3b5d2f4e6a/doc_0c2d4e6f8a0b1c2d.pdf""#,
    ),
    (
        "storage_uri",
        r#""voiceplane://kb/org_7c1e9a3b5d2f4e6a/doc_0c2d4e6f8a0b1c2d.pdf""#,
    ),
    ("processing_error", "null"),
    ("size", "48213"),
    ("page_count", "2"),
    ("vector_count", "6"),
    ("chunk_index", "0"),
    ("score", "0.83"),
    ("query", r#""when are you open on saturday""#),
    ("DocumentSearch.limit", "5"),
    // Recordings.
    (
        "RecordingLink.url",
        r#""https://voiceplane.example.com/recordings/org_7c1e9a3b5d2f4e6a/call_4e6a8b0c2d4e6f8a0b1c2d3e.wav?expires=1769864400&sig=8d0f4b6e2a9c""#,
    ),
    ("RecordingLink.content_type", r#""audio/wav""#),
    ("RecordingLink.filename", r#""recording_+14155550123.wav""#),
    ("RecordingReady.content_type", r#""audio/wav""#),
    (
        "sha256",
        r#""9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08""#,
    ),
    ("expires_in", "3600"),
    // Statistics.
    ("key", r#""2026-01-31""#),
    ("calls", "42"),
    ("total_duration_seconds", "4011.0"),
    ("avg_duration_seconds", "95.5"),
    // Voices.
    ("id", r#""21m00Tcm4TlvDq8ikWAM""#),
    ("voice_id", r#""21m00Tcm4TlvDq8ikWAM""#),
    ("public_owner_id", r#""63e8a4bd21f7c09e""#),
    ("Voice.description", r#""Calm, warm and clear.""#),
    ("gender", r#""female""#),
    ("Voice.language", r#""en""#),
    (
        "preview_url",
        r#""https://cdn.example.com/voices/21m00Tcm4TlvDq8ikWAM.mp3""#,
    ),
    // Webhooks and events.
    ("Webhook.url", r#""https://hooks.example.com/voiceplane""#),
    (
        "CreatedWebhook.url",
        r#""https://hooks.example.com/voiceplane""#,
    ),
    (
        "NewWebhook.url",
        r#""https://hooks.example.com/voiceplane""#,
    ),
    (
        "WebhookUpdate.url",
        r#""https://hooks.example.com/voiceplane/v2""#,
    ),
    ("description", r#""Calls and recordings for the CRM""#),
    (
        "events",
        r#"["call.created", "call.updated", "recording.ready"]"#,
    ),
    ("event_type", r#""call.updated""#),
    ("attempts", "1"),
    ("last_status_code", "500"),
    ("last_error", r#""the endpoint answered 500""#),
    (
        "Event.data",
        r#"{"call_sid": "call_4e6a8b0c2d4e6f8a0b1c2d3e", "status": "queued"}"#,
    ),
    // The audit log.
    ("AuditEntry.action", r#""agent.update""#),
    ("AuditFilter.action", r#""agent.update""#),
    ("resource_type", r#""agent""#),
    ("AuditEntry.resource_id", r#""agent_3f9a0c1d2e4b5a6c""#),
    ("AuditFilter.resource_id", r#""agent_3f9a0c1d2e4b5a6c""#),
    (
        "AuditEntry.changes",
        r#"{"agent_name": ["Front desk", "Reception"]}"#,
    ),
    ("request_id", r#""5f2b9c0d1e3a4b6c""#),
    ("ip", r#""203.0.113.7""#),
    ("actor_key_id", r#""apikey_0123456789ab""#),
    ("actor_user_id", r#""user_2b4d6f8a0c1e3f5a""#),
    // Lists.
    (
        "next_cursor",
        r#""MTc2OTg2MDgwMDAwMDAwMDpjYWxsXzdjMWU5YTNiNWQyZjRlNmE""#,
    ),
    ("has_more", "true"),
    ("page_size", "1"),
    ("total_count", "12"),
    // Settings.
    ("recording_retention_days", "90"),
    ("transcript_retention_days", "365"),
    ("call_retention_days", "730"),
    // This document.
    ("openapi", r#""3.1.0""#),
];

/// The one timestamp of the examples.
const TIMESTAMP: &str = "2026-01-31T12:00:00Z";

/// Ids that a field names without being the id kind's own field.
const ID_ALIASES: &[(&str, IdKind)] = &[
    ("client_id", IdKind::Organization),
    ("invited_by", IdKind::User),
    ("assigned_agent_id", IdKind::Agent),
    ("assigned_phone_number_ids", IdKind::PhoneNumber),
    ("custom_tools", IdKind::Tool),
    ("kb_document_ids", IdKind::Document),
    ("document_ids", IdKind::Document),
];

/// Deep enough for every type of the API; a cycle would stop here rather than loop.
const MAX_DEPTH: usize = 12;

/// Builds examples out of a document's component schemas.
pub(super) struct Examples<'d> {
    components: &'d Map<String, Value>,
}

impl<'d> Examples<'d> {
    pub(super) fn new(components: &'d Map<String, Value>) -> Self {
        Self { components }
    }

    /// An example of `schema`, a value filling `field` of `owner` when those are known.
    pub(super) fn of(&self, schema: &Value) -> Value {
        self.build(schema, None, None, 0)
    }

    fn build(
        &self,
        schema: &Value,
        owner: Option<&str>,
        field: Option<&str>,
        depth: usize,
    ) -> Value {
        if depth > MAX_DEPTH {
            return Value::Null;
        }
        if let Some(example) = schema.get("examples").and_then(|e| e.get(0)) {
            return example.clone();
        }
        if let Some(value) = schema.get("const") {
            return value.clone();
        }
        if let Some(values) = schema.get("enum").and_then(Value::as_array)
            && let Some(first) = values.iter().find(|v| !v.is_null())
        {
            return first.clone();
        }
        if let Some(field) = field
            && let Some(value) = field_example(owner, field)
        {
            return value;
        }
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let name = reference.rsplit('/').next().unwrap_or_default();
            return match self.components.get(name) {
                Some(target) => self.build(target, Some(name), None, depth + 1),
                None => Value::Null,
            };
        }
        for key in ["oneOf", "anyOf", "allOf"] {
            if let Some(alternatives) = schema.get(key).and_then(Value::as_array) {
                let chosen = alternatives
                    .iter()
                    .find(|a| a.get("type") != Some(&json!("null")))
                    .or(alternatives.first());
                if let Some(chosen) = chosen {
                    return self.build(chosen, owner, field, depth + 1);
                }
            }
        }
        match schema_type(schema) {
            Some("object") => self.object(schema, owner, depth),
            Some("array") => {
                let item = self.build(&schema["items"], owner, field, depth + 1);
                let count = schema["minItems"].as_u64().unwrap_or(1).max(1);
                Value::Array((0..count).map(|_| item.clone()).collect())
            }
            Some("string") => string(schema, field),
            Some("integer") => json!(schema["minimum"].as_i64().unwrap_or(0).max(1)),
            Some("number") => json!(1.5),
            Some("boolean") => json!(true),
            Some("null") => Value::Null,
            // Any JSON value.
            _ if schema.get("properties").is_some() => self.object(schema, owner, depth),
            _ => json!({}),
        }
    }

    /// Every property of an object schema (optional ones too: an example shows what may be
    /// sent), or one entry of a map.
    fn object(&self, schema: &Value, owner: Option<&str>, depth: usize) -> Value {
        let mut out = Map::new();
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                out.insert(
                    name.clone(),
                    self.build(property, owner, Some(name), depth + 1),
                );
            }
        } else if let Some(values) = schema.get("additionalProperties").filter(|v| v.is_object()) {
            out.insert("key".to_owned(), self.build(values, None, None, depth + 1));
        }
        Value::Object(out)
    }
}

/// The table's example of `field` of `owner`: `Owner.field`, else `field`.
fn field_example(owner: Option<&str>, field: &str) -> Option<Value> {
    let qualified = owner.map(|o| format!("{o}.{field}"));
    let find = |key: &str| FIELDS.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let text = qualified
        .as_deref()
        .and_then(find)
        .or_else(|| find(field))?;
    serde_json::from_str(text).ok()
}

/// The first non-null type of `schema` (`["string", "null"]` is a string).
fn schema_type(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(t) => Some(t),
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .or(Some("null")),
        _ => None,
    }
}

/// An example string: an id of the field's kind, or one of the schema's format.
fn string(schema: &Value, field: Option<&str>) -> Value {
    let kind = field.and_then(|f| {
        IdKind::ALL
            .iter()
            .copied()
            .find(|k| k.field() == f)
            .or_else(|| ID_ALIASES.iter().find(|(a, _)| *a == f).map(|(_, k)| *k))
    });
    if let Some(kind) = kind {
        return json!(example_id(kind));
    }
    let value = match schema["format"].as_str() {
        Some("date-time") => TIMESTAMP.to_owned(),
        Some("date") => TIMESTAMP[..10].to_owned(),
        Some("email") => "ada@example.com".to_owned(),
        Some("uri") => "https://example.com/".to_owned(),
        _ => match schema["pattern"].as_str() {
            // An id pattern: `^<prefix>`.
            Some(p) if p.starts_with('^') && p.ends_with('_') => {
                format!("{}3f9a0c1d2e4b", &p[1..])
            }
            _ => "example".to_owned(),
        },
    };
    json!(value)
}

/// A well-formed id of `kind`, the same for every example of it (so that they agree).
fn example_id(kind: IdKind) -> String {
    const HEX: &str = "7c1e9a3b5d2f4e6a8b0c2d4e6f8a0b1c2d3e4f5a6b7c8d9e";
    let digits = kind.generated_len().min(HEX.len());
    // Each kind starts at another place of the hex string, so ids of two kinds differ.
    let start = (kind as usize * 3) % (HEX.len() - digits + 1);
    format!("{}{}", kind.prefix(), &HEX[start..start + digits])
}

/// Adds the examples to `document`: `examples` on every object component and on every
/// webhook body, `example` on every JSON request body and success response.
pub(super) fn add(document: &mut Value) {
    let components = document["components"]["schemas"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let examples = Examples::new(&components);

    if let Some(schemas) = document["components"]["schemas"].as_object_mut() {
        for (name, schema) in schemas.iter_mut() {
            if schema.get("examples").is_some() {
                continue;
            }
            let example = examples.build(schema, Some(name), None, 0);
            if example.is_object() {
                schema["examples"] = json!([example]);
            }
        }
    }

    for section in ["paths", "webhooks"] {
        for item in document[section]
            .as_object_mut()
            .into_iter()
            .flat_map(|p| p.values_mut())
        {
            for op in item
                .as_object_mut()
                .into_iter()
                .flat_map(|o| o.values_mut())
            {
                if let Some(media) = op.pointer_mut("/requestBody/content/application~1json") {
                    media["example"] = examples.of(&media["schema"]);
                }
                for (status, response) in op["responses"]
                    .as_object_mut()
                    .into_iter()
                    .flat_map(|r| r.iter_mut())
                {
                    if !status.starts_with('2') {
                        continue;
                    }
                    if let Some(media) = response.pointer_mut("/content/application~1json") {
                        media["example"] = examples.of(&media["schema"]);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_their_kind_and_length() {
        for kind in IdKind::ALL {
            let id = example_id(kind);
            assert!(kind.matches(&id), "{id}");
        }
    }

    #[test]
    fn every_table_entry_is_json_and_names_a_real_field() {
        let document = super::super::document(crate::ops::AREAS);
        let schemas = document["components"]["schemas"].as_object().unwrap();
        let has_field = |owner: Option<&str>, field: &str| {
            schemas.iter().any(|(name, schema)| {
                owner.is_none_or(|o| o == name) && schema["properties"].get(field).is_some()
            }) || schemas.values().any(|s| {
                // Fields of the inline alternatives and of the OpenAPI document's schema.
                s.to_string().contains(&format!("\"{field}\""))
            }) || document["paths"]
                .to_string()
                .contains(&format!("\"{field}\""))
        };
        for (key, value) in FIELDS {
            assert!(
                serde_json::from_str::<Value>(value).is_ok(),
                "{key}: {value}"
            );
            let (owner, field) = match key.split_once('.') {
                Some((owner, field)) => (Some(owner), field),
                None => (None, *key),
            };
            assert!(
                has_field(owner, field),
                "the examples table has {key}, which no schema has"
            );
        }
    }

    #[test]
    fn an_envelope_is_assembled_from_its_parts() {
        let components = json!({
            "Thing": {
                "type": "object",
                "properties": {
                    "agent_id": {"type": "string"},
                    "created_at": {"type": "string", "format": "date-time"},
                    "status": {"type": "string", "enum": ["queued", "done"]},
                    "to_number": {"type": ["string", "null"]},
                },
            },
        });
        let examples = Examples::new(components.as_object().unwrap());
        let page = examples.of(&json!({
            "type": "object",
            "properties": {
                "success": {"type": "boolean", "const": true},
                "data": {"type": "array", "items": {"$ref": "#/components/schemas/Thing"}},
            },
        }));
        assert_eq!(
            page,
            json!({"success": true, "data": [{
                "agent_id": example_id(IdKind::Agent),
                "created_at": TIMESTAMP,
                "status": "queued",
                "to_number": "+14155550123",
            }]})
        );
    }
}
