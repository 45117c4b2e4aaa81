//! Resource builders: the JSON bodies of new agents, tools, calls, phone numbers and
//! integrations with sensible defaults (a test states only what it is about, through
//! [`merged`]), typed through [`body`] for the `Service` tests, and the organizations and
//! actors a test acts as ([`TestContext::admin`], [`TestContext::key_with_role`]).

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use voiceplane_core::Error;
use voiceplane_core::auth::{Actor, Credentials};
use voiceplane_core::model::{CreatedApiKey, NewAgent, NewApiKey, NewCall, NewTool};
use voiceplane_core::role::Role;

use crate::TestContext;

/// `value` as the input type `T` of a `Service` operation, as the HTTP adapter would read it.
pub fn body<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("the body reads as the operation's input")
}

/// `base` with the fields of `changes` set (both JSON objects).
pub fn merged(mut base: Value, changes: Value) -> Value {
    let fields = base.as_object_mut().expect("base is an object");
    for (name, value) in changes.as_object().expect("changes are an object") {
        fields.insert(name.clone(), value.clone());
    }
    base
}

/// A new agent named `name`: the required fields and a prompt.
pub fn agent_body(name: &str) -> Value {
    json!({
        "agent_name": name, "language": "en", "stt_provider": "deepgram",
        "tts_provider": "provider_one", "tts_voice": "v1", "llm_provider": "openai",
        "llm_model": "gpt-4o", "system_prompt": "Be brief."
    })
}

/// A new tool named `name`: the required fields only.
pub fn tool_body(name: &str) -> Value {
    json!({"tool_name": name, "tool_description": "d", "url": "https://x.example/api"})
}

/// A new outbound call by the agent `agent_id`.
pub fn call_body(agent_id: &str) -> Value {
    json!({
        "agent_id": agent_id,
        "to_number": "+14155550123",
        "from_number": "+14155550100",
        "call_type": "outbound"
    })
}

/// A new phone number `number` at twilio.
pub fn phone_number_body(number: &str) -> Value {
    json!({"phone_number": number, "provider": "twilio"})
}

/// A new twilio integration named `name` with the account `sid` and its `token`.
pub fn twilio_body(name: &str, sid: &str, token: &str) -> Value {
    json!({
        "name": name, "provider": "twilio", "category": "telephony",
        "credentials": {"account_sid": sid, "auth_token": token}
    })
}

impl TestContext {
    /// Bootstraps the organization `org_name` and returns its admin, acting with the
    /// bootstrap key.
    pub async fn admin(&self, org_name: &str) -> Actor {
        let boot = self.bootstrap(org_name).await;
        self.actor(&boot.organization_id, &boot.api_key).await
    }

    /// A queued call of a new agent "Caller" in `admin`'s organization.
    pub async fn call_of_new_agent(&self, admin: &Actor) -> voiceplane_core::model::Call {
        let agent = self
            .service
            .agent_create(admin, new_agent("Caller"))
            .await
            .expect("the agent is created");
        self.service
            .call_create(admin, new_call(&agent.agent_id))
            .await
            .expect("the call is created")
    }

    /// A new key `k` of `role` in `admin`'s organization, created by `admin`, and the actor
    /// behind it.
    pub async fn key_with_role(&self, admin: &Actor, role: Role) -> (CreatedApiKey, Actor) {
        let created = self
            .service
            .api_key_create(
                admin,
                NewApiKey {
                    name: "k".into(),
                    role,
                    expires_at: None,
                    scopes: None,
                },
            )
            .await
            .expect("an admin creates keys");
        let actor = self.actor(&admin.organization_id, &created.api_key).await;
        (created, actor)
    }

    /// What authenticating with the API key `secret` in `org` gives: the actor, or why not.
    pub async fn authenticate_key(&self, org: &str, secret: &str) -> Result<Actor, Error> {
        self.service
            .authenticate(&Credentials {
                api_key: Some(secret.to_owned()),
                organization_id: Some(org.to_owned()),
                bearer: None,
            })
            .await
    }
}

/// A new agent named `name` as the `Service` tests create it: language `en-us`, a prompt,
/// speaking first and recording.
pub fn new_agent(name: &str) -> NewAgent {
    body(merged(
        agent_body(name),
        json!({
            "language": "en-us",
            "tts_provider": "provider_two",
            "tts_voice": "voice_123",
            "llm_model": "gpt-4o-mini",
            "system_prompt": "You are helpful.",
            "speak_first": true,
            "recording_enabled": true
        }),
    ))
}

/// A new tool named `name` with a method, headers, parameters and a timeout.
pub fn new_tool(name: &str) -> NewTool {
    body(json!({
        "tool_name": name,
        "tool_description": "Looks up an order",
        "http_method": "get",
        "url": "https://api.example.com/orders",
        "headers": {"X-Shop": "1"},
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        "timeout_seconds": 10
    }))
}

/// A new outbound call by the agent `agent_id`.
pub fn new_call(agent_id: &str) -> NewCall {
    body(call_body(agent_id))
}

/// A knowledge-base upload as `multipart/form-data`: an optional `name` part, then the `file`
/// part. Returns the `Content-Type` to send and the body.
pub fn multipart_document(
    name: Option<&str>,
    filename: &str,
    content_type: &str,
    bytes: &[u8],
) -> (String, Vec<u8>) {
    multipart_parts(name, true, filename, content_type, bytes)
}

/// A knowledge-base upload with the `file` part first and the `name` part after it, as many
/// generated clients send it.
pub fn multipart_document_name_last(
    name: &str,
    filename: &str,
    content_type: &str,
    bytes: &[u8],
) -> (String, Vec<u8>) {
    multipart_parts(Some(name), false, filename, content_type, bytes)
}

fn multipart_parts(
    name: Option<&str>,
    name_first: bool,
    filename: &str,
    content_type: &str,
    bytes: &[u8],
) -> (String, Vec<u8>) {
    let boundary = "voiceplane-test-boundary-7MA4YWxkTrZu0gW";
    let name_part = name.map(|name| {
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n{name}\r\n")
    });
    let mut body = Vec::new();
    if name_first && let Some(part) = &name_part {
        body.extend_from_slice(part.as_bytes());
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n\
             Content-Type: {content_type}\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(b"\r\n");
    if !name_first && let Some(part) = &name_part {
        body.extend_from_slice(part.as_bytes());
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}
