//! No secret ever leaves: API key secrets (beyond the one response that creates them) and
//! stored integration credentials appear in no response body and no log line, at debug level,
//! and credentials are not stored in plain text. Runs on SQLite, and on Postgres when
//! `VOICEPLANE_TEST_POSTGRES_URL` is set.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use reqwest::Method;
use serde_json::{Value, json};
use voiceplane_clients::{HttpClient, HttpSettings, HttpTelephonyValidator, TelephonySettings};
use voiceplane_suite::{TestContext, TestServer, http_client, jwt_for};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const SID: &str = "AC5ec7e7000000000000000000000000aa";
const AUTH_TOKEN: &str = "twilio-token-SHOULD-NEVER-LEAK-1f9e";
const TELNYX_KEY: &str = "KEY-telnyx-SHOULD-NEVER-LEAK-77aa";

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every response body of the scenario, except the ones that must carry a new key's secret.
struct Bodies {
    seen: Vec<String>,
    secrets: Vec<String>,
}

async fn send(
    http: &reqwest::Client,
    base: &str,
    org: &str,
    key: &str,
    m: Method,
    path: &str,
    body: Option<Value>,
) -> Value {
    let mut req = http
        .request(m, format!("{base}{path}"))
        .header("X-Organization-Id", org)
        .header("X-API-Key", key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    req.send().await.unwrap().json().await.unwrap()
}

async fn scenario(ctx: &TestContext, bodies: &mut Bodies) {
    let provider = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true})))
        .mount(&provider)
        .await;
    let validator = HttpTelephonyValidator::new(
        HttpClient::new(HttpSettings::default()).unwrap(),
        TelephonySettings {
            twilio_base_url: provider.uri(),
            telnyx_base_url: provider.uri(),
        },
    )
    .unwrap();
    let server = TestServer::start_configured(ctx, |s| s.with_telephony(Arc::new(validator))).await;
    let boot = ctx.bootstrap("Acme").await;
    bodies.secrets.push(boot.api_key.clone());
    let http = http_client();
    let (base, org, key) = (
        server.base.as_str(),
        boot.organization_id.as_str(),
        boot.api_key.as_str(),
    );
    let mut record = |v: Value| bodies.seen.push(v.to_string());

    let created = send(
        &http,
        base,
        org,
        key,
        Method::POST,
        "/api/api-keys",
        Some(json!({"name": "ci", "role": "user"})),
    )
    .await;
    let secret = created["data"]["api_key"].as_str().unwrap().to_owned();
    // The one response allowed to carry a secret: not recorded, but the secret is hunted.
    let key_id = created["data"]["key_id"].as_str().unwrap().to_owned();
    record(send(&http, base, org, key, Method::GET, "/api/api-keys", None).await);
    record(send(&http, base, org, &secret, Method::GET, "/api/tools", None).await);
    record(
        send(
            &http,
            base,
            org,
            key,
            Method::DELETE,
            &format!("/api/api-keys/{key_id}"),
            None,
        )
        .await,
    );
    record(send(&http, base, org, &secret, Method::GET, "/api/tools", None).await);
    record(
        send(
            &http,
            base,
            org,
            "vpk_wrongwrongwrongwrongwrongwrongwrongwron",
            Method::GET,
            "/api/tools",
            None,
        )
        .await,
    );

    let mut integrations = Vec::new();
    for body in [
        json!({"name": "tw", "provider": "twilio", "category": "telephony", "credentials": {"account_sid": SID, "auth_token": AUTH_TOKEN}}),
        json!({"name": "tx", "provider": "telnyx", "category": "telephony", "credentials": {"api_key": TELNYX_KEY}}),
    ] {
        let v = send(
            &http,
            base,
            org,
            key,
            Method::POST,
            "/api/integrations",
            Some(body),
        )
        .await;
        integrations.push(v["data"]["integration_id"].as_str().unwrap().to_owned());
        record(v);
    }
    // Bad credential shapes echo nothing back.
    record(send(&http, base, org, key, Method::POST, "/api/integrations", Some(json!({
        "name": "bad", "provider": "twilio", "category": "telephony", "credentials": {"account_sid": AUTH_TOKEN, "auth_token": AUTH_TOKEN}
    }))).await);
    record(send(&http, base, org, key, Method::POST, "/api/integrations", Some(json!({
        "name": "bad", "provider": "telnyx", "category": "telephony", "credentials": {"api_key": TELNYX_KEY, "extra": AUTH_TOKEN}
    }))).await);
    for id in &integrations {
        record(
            send(
                &http,
                base,
                org,
                key,
                Method::POST,
                &format!("/api/integrations/{id}/validate"),
                Some(json!({})),
            )
            .await,
        );
        record(
            send(
                &http,
                base,
                org,
                key,
                Method::GET,
                &format!("/api/integrations/{id}"),
                None,
            )
            .await,
        );
        record(
            send(
                &http,
                base,
                org,
                key,
                Method::PATCH,
                &format!("/api/integrations/{id}"),
                Some(json!({"name": "renamed"})),
            )
            .await,
        );
    }
    record(
        send(
            &http,
            base,
            org,
            key,
            Method::PATCH,
            &format!("/api/integrations/{}", integrations[1]),
            Some(json!({"credentials": {"api_key": TELNYX_KEY}})),
        )
        .await,
    );
    record(
        send(
            &http,
            base,
            org,
            key,
            Method::GET,
            "/api/integrations",
            None,
        )
        .await,
    );
    for id in &integrations {
        record(
            send(
                &http,
                base,
                org,
                key,
                Method::DELETE,
                &format!("/api/integrations/{id}"),
                None,
            )
            .await,
        );
    }
    // Bearer tokens are secrets too.
    let jwt = jwt_for(&boot.user_id, None, 600);
    bodies.secrets.push(jwt.clone());
    let v: Value = http
        .get(format!("{base}/api/tools"))
        .header("X-Organization-Id", org)
        .bearer_auth(&jwt)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    record(v);
    let v: Value = http
        .get(format!("{base}/api/tools"))
        .header("X-Organization-Id", org)
        .bearer_auth(format!("{jwt}x"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    record(v);
    bodies.secrets.push(secret);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_a_response_or_the_log() {
    let logs = Captured::default();
    let writer = logs.clone();
    tracing_subscriber::fmt()
        .with_env_filter("debug")
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();

    let mut bodies = Bodies {
        seen: Vec::new(),
        secrets: vec![AUTH_TOKEN.to_owned(), TELNYX_KEY.to_owned()],
    };
    let sqlite = TestContext::sqlite().await;
    scenario(&sqlite, &mut bodies).await;
    sqlite.cleanup().await;
    if let Some(pg) = TestContext::postgres("no_secret_reaches_a_response_or_the_log").await {
        scenario(&pg, &mut bodies).await;
        pg.cleanup().await;
    }

    let log = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(
        log.contains("request completed"),
        "the log was captured: {log}"
    );
    assert!(bodies.seen.len() > 20);
    for secret in &bodies.secrets {
        assert!(!log.contains(secret.as_str()), "a secret is in the log");
        for body in &bodies.seen {
            assert!(
                !body.contains(secret.as_str()),
                "a secret is in a response: {body}"
            );
        }
    }
}
