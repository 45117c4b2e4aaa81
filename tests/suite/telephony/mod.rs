//! Telephony (DESIGN §18): where calls' media streams go.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_suite::*;

async fn patch(c: &ApiCaller, path: &str, body: Value) -> (StatusCode, Value) {
    c.send(Method::PATCH, path, Some(body)).await
}

/// The organization's `runtime_stream_url` and an agent's override: `wss://` (or `ws://` to a
/// loopback host) without query string, kept without a trailing slash, cleared by `null`;
/// anything else is a 400 naming the field, and nothing changes.
async fn runtime_stream_urls_are_validated_and_kept(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Runtime").await;

    let (status, body) = patch(
        &c,
        "/api/organization/settings",
        json!({"runtime_stream_url": "wss://rt.example.com/media/"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["data"]["runtime_stream_url"],
        "wss://rt.example.com/media"
    );
    for bad in [
        "ws://rt.example.com/media",
        "wss://rt.example.com/media?token=secret",
        "https://rt.example.com",
        "not a url",
    ] {
        let (status, body) = patch(
            &c,
            "/api/organization/settings",
            json!({"runtime_stream_url": bad}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.starts_with("runtime_stream_url"), "{detail}");
        assert!(!detail.contains("secret"), "{detail}");
    }
    let (_, settings) = c.get("/api/organization/settings").await;
    assert_eq!(
        settings["data"]["runtime_stream_url"],
        "wss://rt.example.com/media"
    );
    // Another setting leaves it alone; null clears it.
    let (_, body) = patch(
        &c,
        "/api/organization/settings",
        json!({"call_retention_days": 30}),
    )
    .await;
    assert_eq!(
        body["data"]["runtime_stream_url"],
        "wss://rt.example.com/media"
    );
    let (_, body) = patch(
        &c,
        "/api/organization/settings",
        json!({"runtime_stream_url": null}),
    )
    .await;
    assert_eq!(body["data"]["runtime_stream_url"], Value::Null);

    let mut agent = agent_body("Local");
    agent["runtime_stream_url"] = json!("ws://127.0.0.1:8765/stream");
    let created = c.create("/api/agents", agent).await;
    assert_eq!(created["runtime_stream_url"], "ws://127.0.0.1:8765/stream");
    let path = format!("/api/agents/{}", created["agent_id"].as_str().unwrap());
    let (status, body) = patch(&c, &path, json!({"runtime_stream_url": "ws://10.0.0.5/x"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        c.get(&path).await.1["data"]["runtime_stream_url"],
        "ws://127.0.0.1:8765/stream"
    );
    let (status, body) = patch(&c, &path, json!({"runtime_stream_url": null})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["runtime_stream_url"], Value::Null);
    let plain = c.create("/api/agents", agent_body("Plain")).await;
    assert_eq!(plain["runtime_stream_url"], Value::Null);
    server.stop().await;
}

db_tests!(runtime_stream_urls_are_validated_and_kept);
