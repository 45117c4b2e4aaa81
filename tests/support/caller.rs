//! Calling the API as a client does: [`ApiCaller`] sends requests with an organization and a
//! credential, and [`read_json`] checks what every JSON answer must be (its Content-Type, and
//! an error body that is exactly `{detail}`); [`keys`] and [`fields`] compare field sets.

use std::collections::BTreeSet;

use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::{TestContext, TestServer, http_client};

/// The names of a JSON object's fields.
pub fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().expect("an object").keys().cloned().collect()
}

/// A list of field names as a set, to compare with [`keys`].
pub fn fields(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Status and JSON body of an answer of the API, checked: every JSON answer says so in its
/// Content-Type, and an error body is exactly `{detail}` with a sentence.
pub async fn read_json(resp: reqwest::Response) -> (StatusCode, Value) {
    let status = resp.status();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let text = resp.text().await.expect("body");
    assert!(
        ct.starts_with("application/json"),
        "{status} has content-type {ct:?}: {text}"
    );
    let v: Value = serde_json::from_str(&text).expect("JSON body");
    if !status.is_success() {
        assert_eq!(
            keys(&v),
            fields(&["detail"]),
            "error body is {{detail}}: {v}"
        );
        assert!(
            v["detail"].as_str().is_some_and(|d| d.len() > 10),
            "detail is a sentence: {v}"
        );
    }
    (status, v)
}

/// A further check a test suite applies to every answer [`ApiCaller::send`] reads, after
/// those of [`read_json`]: status, headers and JSON body.
pub type AnswerCheck = fn(StatusCode, &HeaderMap, &Value);

/// A caller of the HTTP API: base URL, organization and credential, sent with every request.
#[derive(Clone, Debug)]
pub struct ApiCaller {
    /// The client (from [`http_client`]).
    pub http: reqwest::Client,
    /// `http://127.0.0.1:PORT`, to which request paths are appended.
    pub base: String,
    /// Sent as `X-Organization-Id` when set.
    pub org: Option<String>,
    /// Sent as `X-API-Key` when set.
    pub key: Option<String>,
    /// Sent as `Authorization: Bearer …` when set.
    pub bearer: Option<String>,
    /// Run by [`send`](Self::send) on every answer, when set.
    pub check: Option<AnswerCheck>,
}

impl ApiCaller {
    /// A caller of `server` for organization `org` with the API key `key`.
    pub fn new(server: &TestServer, org: &str, key: &str) -> Self {
        Self::at(&server.base, org, key)
    }

    /// A caller of the API served at `base` for organization `org` with the API key `key`.
    pub fn at(base: &str, org: &str, key: &str) -> Self {
        Self {
            http: http_client(),
            base: base.to_owned(),
            org: Some(org.to_owned()),
            key: Some(key.to_owned()),
            bearer: None,
            check: None,
        }
    }

    /// Bootstraps the organization `org_name` and returns a caller with its admin's key.
    pub async fn bootstrap(ctx: &TestContext, server: &TestServer, org_name: &str) -> Self {
        let boot = ctx.bootstrap(org_name).await;
        Self::new(server, &boot.organization_id, &boot.api_key)
    }

    /// The same caller with the API key `key` instead of its credential.
    pub fn with_key(&self, key: &str) -> Self {
        Self {
            key: Some(key.to_owned()),
            bearer: None,
            ..self.clone()
        }
    }

    /// The same caller with the bearer token `token` instead of its credential.
    pub fn with_bearer(&self, token: &str) -> Self {
        Self {
            key: None,
            bearer: Some(token.to_owned()),
            ..self.clone()
        }
    }

    /// A request to `base` + `path` with the organization and credential headers.
    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(org) = &self.org {
            req = req.header("X-Organization-Id", org);
        }
        if let Some(key) = &self.key {
            req = req.header("X-API-Key", key);
        }
        if let Some(token) = &self.bearer {
            req = req.bearer_auth(token);
        }
        req
    }

    /// Sends a request with `body` as JSON, if any; returns the answer as [`read_json`] reads
    /// it, after [`check`](Self::check).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self.request(method, path);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.expect("request is answered");
        let headers = resp.headers().clone();
        let (status, v) = read_json(resp).await;
        if let Some(check) = self.check {
            check(status, &headers, &v);
        }
        (status, v)
    }

    /// `GET path`.
    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(Method::GET, path, None).await
    }

    /// `POST path` with the JSON `body`.
    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(Method::POST, path, Some(body)).await
    }

    /// POST that must answer 201 with `success: true`; returns `data`.
    pub async fn create(&self, path: &str, body: Value) -> Value {
        let (status, v) = self.post(path, body).await;
        assert_eq!(status, StatusCode::CREATED, "POST {path}: {v}");
        assert_eq!(v["success"], true);
        v["data"].clone()
    }
}

/// One of each resource that has a view and can be changed, created through `c`; the paths
/// of their views.
#[derive(Debug, Clone)]
pub struct OneOfEach {
    /// The agent's id (the call is of this agent).
    pub agent_id: String,
    /// `/api/agents/{agent_id}`
    pub agent: String,
    /// `/api/calls/{call_sid}`
    pub call: String,
    /// `/api/tools/{tool_id}`
    pub tool: String,
    /// `/api/knowledge-base/{documentation_id}`
    pub document: String,
    /// `/api/integrations/{integration_id}` (Twilio)
    pub integration: String,
    /// `/api/phone-numbers/{phone_number_id}` (no integration, no agent)
    pub number: String,
    /// `/api/webhooks/{webhook_id}`
    pub webhook: String,
}

impl OneOfEach {
    /// Creates them in `c`'s organization.
    pub async fn create(c: &ApiCaller) -> Self {
        use crate::builders::{agent_body, call_body, phone_number_body, tool_body, twilio_body};
        let id = |v: Value, field: &str| v[field].as_str().expect("an id").to_owned();
        let agent_id = id(
            c.create("/api/agents", agent_body("Desk")).await,
            "agent_id",
        );
        let call = id(
            c.create("/api/calls", call_body(&agent_id)).await,
            "call_sid",
        );
        let tool = id(c.create("/api/tools", tool_body("lookup")).await, "tool_id");
        let document = c
            .create(
                "/api/knowledge-base",
                serde_json::json!({"name": "FAQ", "text": "Nine."}),
            )
            .await;
        let integration = c
            .create(
                "/api/integrations",
                twilio_body("Main", "AC00000000000000000000000000000001", "token"),
            )
            .await;
        let number = c
            .create("/api/phone-numbers", phone_number_body("+14155550100"))
            .await;
        let webhook = c
            .create(
                "/api/webhooks",
                serde_json::json!({"url": "https://hooks.example.com/vp", "events": ["*"]}),
            )
            .await;
        Self {
            agent: format!("/api/agents/{agent_id}"),
            agent_id,
            call: format!("/api/calls/{call}"),
            tool: format!("/api/tools/{tool}"),
            document: format!("/api/knowledge-base/{}", id(document, "documentation_id")),
            integration: format!("/api/integrations/{}", id(integration, "integration_id")),
            number: format!("/api/phone-numbers/{}", id(number, "phone_number_id")),
            webhook: format!("/api/webhooks/{}", id(webhook, "webhook_id")),
        }
    }
}
