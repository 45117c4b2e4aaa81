//! Sending the scenario's requests and checking each answer against the document: the
//! request body against the documented request schema, the status among the documented ones,
//! required headers, the Content-Type, and the JSON body against the documented schema.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_http::ops::resolve;
use voiceplane_suite::{
    ApiCaller, agent_body, merged, mount_twilio_account, mount_twilio_numbers,
    mount_voice_catalogue,
};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::schema::Schemas;
use super::{deref, document};

pub(super) const TWILIO_SID: &str = "AC00000000000000000000000000000001";
pub(super) const TWILIO_TOKEN: &str = "auth-token-for-tests";

/// What a request carries as its body.
pub(super) enum Body {
    None,
    /// JSON that must itself match the documented request schema.
    Json(Value),
    /// JSON sent as it is (for requests meant to fail).
    Unchecked(Value),
    /// Raw bytes with a `Content-Type`.
    Raw(String, Vec<u8>),
}

/// A decoded answer.
pub(super) struct Answer {
    pub(super) status: StatusCode,
    pub(super) json: Value,
    pub(super) bytes: Vec<u8>,
    pub(super) headers: reqwest::header::HeaderMap,
}

/// Sends requests and checks each answer against the document.
pub(super) struct Checker {
    pub(super) api: ApiCaller,
    /// `METHOD template status` of every checked answer.
    pub(super) seen: Arc<Mutex<BTreeSet<String>>>,
}

impl Checker {
    /// The same checker (and record of answers) for another caller.
    pub(super) fn as_caller(&self, api: ApiCaller) -> Self {
        Self {
            api,
            seen: self.seen.clone(),
        }
    }

    pub(super) fn with_key(&self, key: Option<&str>) -> Self {
        self.as_caller(ApiCaller {
            key: key.map(str::to_owned),
            bearer: None,
            ..self.api.clone()
        })
    }

    pub(super) fn with_bearer(&self, token: &str) -> Self {
        self.as_caller(ApiCaller {
            org: None,
            ..self.api.with_bearer(token)
        })
    }

    pub(super) async fn send(&self, m: Method, path_and_query: &str, body: Body) -> Answer {
        self.send_with(m, path_and_query, body, &[]).await
    }

    pub(super) async fn send_with(
        &self,
        m: Method,
        path_and_query: &str,
        body: Body,
        headers: &[(&str, &str)],
    ) -> Answer {
        let doc = document();
        let v = Schemas::of(doc);
        let path = path_and_query.split('?').next().unwrap();
        let (operation, _) = resolve(&m, path).unwrap_or_else(|e| panic!("{m} {path}: {e:?}"));
        let template = operation.template;
        let op = &doc["paths"][template][m.as_str().to_ascii_lowercase()];
        assert!(op.is_object(), "{m} {template} is not documented");

        let mut req = self.api.request(m.clone(), path_and_query);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        req = match body {
            Body::None => req,
            Body::Json(value) => {
                let schema = &op["requestBody"]["content"]["application/json"]["schema"];
                assert!(
                    schema.is_object() || schema.is_boolean(),
                    "{m} {template} takes no JSON"
                );
                let errors = v.errors(schema, &value);
                assert!(
                    errors.is_empty(),
                    "request to {m} {template} does not match its documented schema: {errors:#?}\n{value}"
                );
                req.json(&value)
            }
            Body::Unchecked(value) => req.json(&value),
            Body::Raw(content_type, bytes) => req.header("content-type", content_type).body(bytes),
        };
        let resp = req.send().await.expect("request is answered");
        let status = resp.status();
        let resp_headers = resp.headers().clone();
        let bytes = resp.bytes().await.expect("body").to_vec();
        let here = format!("{m} {template} {}", status.as_u16());

        let documented = op["responses"].get(status.as_str()).unwrap_or_else(|| {
            panic!(
                "{m} {path_and_query} answered {status}, which the document does not list for \
                 {m} {template}: {}",
                String::from_utf8_lossy(&bytes)
            )
        });
        let documented = deref(doc, documented);
        for (name, header) in documented["headers"].as_object().into_iter().flatten() {
            if deref(doc, header)["required"] == true {
                assert!(
                    resp_headers.contains_key(name.as_str()),
                    "{here}: no {name} header"
                );
            }
        }
        let content_type = resp_headers
            .get("content-type")
            .and_then(|c| c.to_str().ok())
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap()
            .trim()
            .to_owned();
        let Some(content) = documented["content"].as_object() else {
            // A documented answer without content (304) has no body.
            assert!(
                bytes.is_empty(),
                "{here}: a body where the document has none"
            );
            self.seen.lock().unwrap().insert(here);
            return Answer {
                status,
                json: Value::Null,
                bytes,
                headers: resp_headers,
            };
        };
        assert!(
            content.contains_key(&content_type),
            "{here}: Content-Type {content_type:?} is not one of {:?}",
            content.keys().collect::<Vec<_>>()
        );
        let mut json = Value::Null;
        if content_type == "application/json" {
            json = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{here}: {e}"));
            let errors = v.errors(&content[&content_type]["schema"], &json);
            assert!(
                errors.is_empty(),
                "{m} {path_and_query} answered {status} with a body that does not match the \
                 documented schema: {errors:#?}\n{json:#}"
            );
        }
        self.seen.lock().unwrap().insert(here);
        Answer {
            status,
            json,
            bytes,
            headers: resp_headers,
        }
    }

    /// Sends and requires `expected`; returns the JSON body.
    pub(super) async fn expect(&self, m: Method, path: &str, body: Body, expected: u16) -> Value {
        let answer = self.send(m.clone(), path, body).await;
        assert_eq!(
            answer.status.as_u16(),
            expected,
            "{m} {path}: {}",
            answer.json
        );
        answer.json
    }
}

/// An agent that records its calls.
pub(super) fn recording_agent(name: &str) -> Value {
    merged(agent_body(name), json!({"recording_enabled": true}))
}

/// The API keys of the voice providers the scenario configures.
pub(super) const VOICE_KEYS: (&str, &str) = ("p1-key", "p2-key");

/// The Twilio id of the scenario's number, `+14155550100`.
pub(super) const TWILIO_NUMBER_SID: &str = "PN0000000000000000000000000000c100";

/// Fake upstreams on one server: twilio's account probe and numbers, both voice providers.
pub(super) async fn fake_upstreams() -> MockServer {
    let upstream = MockServer::start().await;
    mount_twilio_account(&upstream, TWILIO_SID, TWILIO_TOKEN).await;
    mount_twilio_numbers(
        &upstream,
        TWILIO_SID,
        &[(TWILIO_NUMBER_SID, "+14155550100")],
    )
    .await;
    mount_voice_catalogue(&upstream, VOICE_KEYS).await;
    Mock::given(method("POST"))
        .and(path(format!(
            "/2010-04-01/Accounts/{TWILIO_SID}/Calls.json"
        )))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"sid": TWILIO_CALL_SID})))
        .mount(&upstream)
        .await;
    upstream
}

/// The Twilio id of the scenario's dialed call.
pub(super) const TWILIO_CALL_SID: &str = "CA0123456789abcdef0123456789abcdef";

/// A few bytes of a WAV file.
pub(super) fn wav_bytes() -> Vec<u8> {
    let mut bytes = b"RIFF\x24\x00\x00\x00WAVEfmt ".to_vec();
    bytes.extend_from_slice(&[0u8; 32]);
    bytes
}

pub(super) fn str_of<'v>(v: &'v Value, field: &str) -> &'v str {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("no string `{field}` in {v}"))
}
