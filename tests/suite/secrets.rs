//! No secret ever leaves: API key secrets (beyond the one response that creates them) and
//! stored integration credentials appear in no response body and no log line, at debug level,
//! and credentials are not stored in plain text. Runs on SQLite, and on Postgres when
//! `VOICEPLANE_TEST_POSTGRES_URL` is set.

use std::io::Write;
use std::sync::{Arc, Mutex};

use reqwest::Method;
use serde_json::{Value, json};
use voiceplane_suite::{ApiCaller, TestContext, TestServer, jwt_for, telephony};
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

async fn scenario(ctx: &TestContext, bodies: &mut Bodies) {
    let provider = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true})))
        .mount(&provider)
        .await;
    let validator = telephony(&provider.uri());
    let server = TestServer::start_configured(ctx, |s| s.with_telephony(validator)).await;
    let boot = ctx.bootstrap("Acme").await;
    bodies.secrets.push(boot.api_key.clone());
    let c = ApiCaller::new(&server, &boot.organization_id, &boot.api_key);
    let mut record = |v: Value| bodies.seen.push(v.to_string());

    let created = c
        .send(
            Method::POST,
            "/api/api-keys",
            Some(json!({"name": "ci", "role": "user"})),
        )
        .await
        .1;
    let secret = created["data"]["api_key"].as_str().unwrap().to_owned();
    // The one response allowed to carry a secret: not recorded, but the secret is hunted.
    let key_id = created["data"]["key_id"].as_str().unwrap().to_owned();
    let as_ci = c.with_key(&secret);
    record(c.send(Method::GET, "/api/api-keys", None).await.1);
    record(as_ci.send(Method::GET, "/api/tools", None).await.1);
    record(
        c.send(Method::DELETE, &format!("/api/api-keys/{key_id}"), None)
            .await
            .1,
    );
    record(as_ci.send(Method::GET, "/api/tools", None).await.1);
    record(
        c.with_key("vpk_wrongwrongwrongwrongwrongwrongwrongwron")
            .send(Method::GET, "/api/tools", None)
            .await
            .1,
    );

    let mut integrations = Vec::new();
    for body in [
        json!({"name": "tw", "provider": "twilio", "category": "telephony", "credentials": {"account_sid": SID, "auth_token": AUTH_TOKEN}}),
        json!({"name": "tx", "provider": "telnyx", "category": "telephony", "credentials": {"api_key": TELNYX_KEY}}),
    ] {
        let v = c
            .send(Method::POST, "/api/integrations", Some(body))
            .await
            .1;
        integrations.push(v["data"]["integration_id"].as_str().unwrap().to_owned());
        record(v);
    }
    // Bad credential shapes echo nothing back.
    record(c.send(Method::POST, "/api/integrations", Some(json!({
        "name": "bad", "provider": "twilio", "category": "telephony", "credentials": {"account_sid": AUTH_TOKEN, "auth_token": AUTH_TOKEN}
    }))).await.1);
    record(c.send(Method::POST, "/api/integrations", Some(json!({
        "name": "bad", "provider": "telnyx", "category": "telephony", "credentials": {"api_key": TELNYX_KEY, "extra": AUTH_TOKEN}
    }))).await.1);
    for id in &integrations {
        record(
            c.send(
                Method::POST,
                &format!("/api/integrations/{id}/validate"),
                Some(json!({})),
            )
            .await
            .1,
        );
        record(
            c.send(Method::GET, &format!("/api/integrations/{id}"), None)
                .await
                .1,
        );
        record(
            c.send(
                Method::PATCH,
                &format!("/api/integrations/{id}"),
                Some(json!({"name": "renamed"})),
            )
            .await
            .1,
        );
    }
    record(
        c.send(
            Method::PATCH,
            &format!("/api/integrations/{}", integrations[1]),
            Some(json!({"credentials": {"api_key": TELNYX_KEY}})),
        )
        .await
        .1,
    );
    record(c.send(Method::GET, "/api/integrations", None).await.1);
    for id in &integrations {
        record(
            c.send(Method::DELETE, &format!("/api/integrations/{id}"), None)
                .await
                .1,
        );
    }
    // Bearer tokens are secrets too.
    let jwt = jwt_for(&boot.user_id, None, 600);
    bodies.secrets.push(jwt.clone());
    record(c.with_bearer(&jwt).get("/api/tools").await.1);
    record(c.with_bearer(&format!("{jwt}x")).get("/api/tools").await.1);
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
    // Each request's span carries its id, so log lines can be matched to responses.
    assert!(
        log.contains("request_id="),
        "the request span records the id: {log}"
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
