//! No secret ever leaves: API key secrets (beyond the one response that creates them) and
//! stored integration credentials appear in no response body and no log line, at debug level,
//! and credentials are not stored in plain text. No response body names the server's
//! internals either: the object store's root folder, or the database's URL, file or schema. Runs on SQLite, and on Postgres when
//! `VOICEPLANE_TEST_POSTGRES_URL` is set.

use std::io::Write;
use std::sync::{Arc, Mutex};

use reqwest::Method;
use serde_json::{Value, json};
use voiceplane_storage::{BlobConfig, OpendalBlobStore};
use voiceplane_suite::{
    ApiCaller, TestContext, TestServer, jwt_for, multipart_document, telephony,
};
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
    /// Server internals: the object store's root, the database's names. The log may name
    /// them; a response may not.
    internals: Vec<String>,
}

async fn scenario(ctx: &TestContext, bodies: &mut Bodies) {
    let provider = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true})))
        .mount(&provider)
        .await;
    let validator = telephony(&provider.uri());
    // Files go to a folder of the `fs` backend, whose path must never be shown.
    let root = ctx.folder().join("blobs");
    let blobs = Arc::new(
        OpendalBlobStore::new(BlobConfig::Fs { root: root.clone() }).expect("fs store opens"),
    );
    bodies.internals.push(root.display().to_string());
    bodies.internals.extend(ctx.database_names());
    let server =
        TestServer::start_configured(ctx, |s| s.with_telephony(validator).with_blobs(blobs)).await;
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

    // Files: knowledge-base documents and a recording, their views, lists and error paths.
    let (status, text) = c
        .send(
            Method::POST,
            "/api/knowledge-base",
            Some(json!({"name": "faq", "text": "Refunds take five days."})),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{text}");
    let (content_type, upload) = multipart_document(
        Some("policy"),
        "policy.md",
        "text/markdown",
        b"# Policy\nBe kind.",
    );
    let resp = c
        .request(Method::POST, "/api/knowledge-base")
        .header("Content-Type", content_type)
        .body(upload)
        .send()
        .await
        .unwrap();
    let file: Value = resp.json().await.unwrap();
    let uri = file["data"]["storage_uri"].as_str().unwrap_or_default();
    assert!(uri.starts_with("voiceplane://"), "{file}");
    record(text.clone());
    record(file.clone());
    for doc in [&text, &file] {
        let id = doc["data"]["documentation_id"].as_str().unwrap();
        record(c.get(&format!("/api/knowledge-base/{id}")).await.1);
    }
    record(c.get("/api/knowledge-base").await.1);
    let (_, agent) = c
        .send(Method::POST, "/api/agents", Some(json!({
            "agent_name": "A", "language": "en", "stt_provider": "s", "tts_provider": "provider_one",
            "tts_voice": "v", "llm_provider": "l", "llm_model": "m"
        })))
        .await;
    let (_, call) = c
        .send(
            Method::POST,
            "/api/calls",
            Some(json!({
                "agent_id": agent["data"]["agent_id"], "to_number": "+14155550123",
                "from_number": "+14155550100", "call_type": "outbound"
            })),
        )
        .await;
    let sid = call["data"]["call_sid"].as_str().unwrap();
    let mut wav = b"RIFF\x24\x00\x00\x00WAVEfmt ".to_vec();
    wav.resize(64, 0);
    for (content_type, bytes) in [
        ("audio/wav", wav),
        ("application/octet-stream", b"not audio".to_vec()),
    ] {
        let resp = c
            .request(Method::PUT, &format!("/api/calls/{sid}/recording"))
            .header("Content-Type", content_type)
            .body(bytes)
            .send()
            .await
            .unwrap();
        record(resp.json().await.unwrap_or(Value::Null));
    }
    record(c.get(&format!("/api/calls/{sid}")).await.1);
    record(c.get(&format!("/api/calls/{sid}/recording/stream")).await.1);
    record(
        c.send(Method::DELETE, &format!("/api/calls/{sid}/recording"), None)
            .await
            .1,
    );
    record(c.get(&format!("/api/calls/{sid}/recording/stream")).await.1);
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
        internals: Vec::new(),
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
    assert!(bodies.internals.len() >= 3);
    for internal in &bodies.internals {
        for body in &bodies.seen {
            assert!(
                !body.contains(internal.as_str()),
                "a server internal ({internal}) is in a response: {body}"
            );
        }
    }
}
