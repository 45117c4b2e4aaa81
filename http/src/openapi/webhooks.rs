//! The document's top-level `webhooks` section: for every event type, the request a
//! subscribed endpoint receives (the event as the JSON body, the Standard Webhooks headers) and
//! what its answer means.

use serde_json::{Map, Value, json};
use voiceplane_core::model::{
    Agent, AgentVersion, ApiKey, Call, Campaign, Document, EventType, Integration, Invitation,
    Member, PhoneNumber, RecordingReady, Suppression, Tool,
};

use super::Schemas;

/// The schema of `data` for events of `event_type`: the resource as the API returns it.
fn data_schema(event_type: EventType, schemas: &mut Schemas) -> Value {
    let name = event_type.as_str();
    let area = name.split('.').next().unwrap_or_default();
    match (area, name) {
        (_, "recording.ready") => schemas.out::<RecordingReady>(),
        (_, "recording.deleted") => json!({
            "type": "object",
            "required": ["call_sid"],
            "properties": {"call_sid": {"type": "string"}},
        }),
        (_, "agent.published") => schemas.out::<AgentVersion>(),
        ("call", _) => schemas.out::<Call>(),
        ("document", _) => schemas.out::<Document>(),
        ("agent", _) => schemas.out::<Agent>(),
        ("tool", _) => schemas.out::<Tool>(),
        ("phone_number", _) => schemas.out::<PhoneNumber>(),
        ("integration", _) => schemas.out::<Integration>(),
        ("api_key", _) => schemas.out::<ApiKey>(),
        ("member", _) => schemas.out::<Member>(),
        ("invitation", _) => schemas.out::<Invitation>(),
        ("suppression", _) => schemas.out::<Suppression>(),
        ("campaign", _) => schemas.out::<Campaign>(),
        ("webhook", _) => json!({
            "type": "object",
            "required": ["webhook_id"],
            "properties": {"webhook_id": {"type": "string", "pattern": "^whk_"}},
        }),
        _ => json!({"type": "object"}),
    }
}

/// The description of each event type, from its doc comment in the `EventType` schema.
fn descriptions(schemas: &mut Schemas) -> Map<String, Value> {
    let schema = schemas.inline_out::<EventType>();
    let mut out = Map::new();
    for variant in schema["oneOf"].as_array().into_iter().flatten() {
        if let (Some(name), Some(description)) =
            (variant["const"].as_str(), variant["description"].as_str())
        {
            out.insert(name.to_owned(), json!(description));
        }
    }
    out
}

fn header(name: &str, description: &str) -> Value {
    json!({
        "name": name,
        "in": "header",
        "required": true,
        "description": description,
        "schema": {"type": "string"},
    })
}

/// The `webhooks` object: one `POST` per event type.
pub(super) fn webhooks(schemas: &mut Schemas) -> Map<String, Value> {
    let descriptions = descriptions(schemas);
    let mut out = Map::new();
    for &event_type in EventType::ALL {
        let name = event_type.as_str();
        let body = json!({
            "type": "object",
            "required": ["event_id", "type", "created_at", "data"],
            "properties": {
                "event_id": {"type": "string", "pattern": "^evt_"},
                "type": {"type": "string", "const": name},
                "created_at": {"type": "string", "format": "date-time"},
                "data": data_schema(event_type, schemas),
            },
        });
        let operation = json!({
            "operationId": format!("event_{}", name.replace('.', "_")),
            "summary": descriptions.get(name).cloned().unwrap_or_else(|| json!(name)),
            "tags": ["webhooks"],
            "parameters": [
                header("webhook-id", "The event id: the same on every attempt; deduplicate by it."),
                header("webhook-timestamp", "Unix seconds of this attempt."),
                header(
                    "webhook-signature",
                    "Space-separated `v1,<base64 HMAC-SHA256>` of `{webhook-id}.{webhook-timestamp}.{body}`, one per valid secret.",
                ),
            ],
            "requestBody": {"required": true, "content": {"application/json": {"schema": body}}},
            "responses": {
                "2XX": {"description": "Received. Any other answer, or none within 10 s, is retried on the schedule."},
            },
        });
        out.insert(name.to_owned(), json!({"post": operation}));
    }
    out
}
