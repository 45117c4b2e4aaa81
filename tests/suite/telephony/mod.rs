//! Telephony (DESIGN §18): where calls' media streams go, and numbers connected at their
//! provider (against a fake Twilio and Telnyx that record every request).

mod campaigns;
mod charges;
mod dial;
mod faults;
mod inbound;
pub(crate) mod line;
mod runtime_example;
mod signatures;
mod uploads;
mod voice;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_core::role::Role;
use voiceplane_suite::*;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const SID: &str = "AC0123456789abcdef0123456789abcdef";
/// A real-looking Ed25519 public key (32 bytes, base64).
const TELNYX_PUBLIC_KEY: &str = "C7yKRyfTfCGtgXw0nqJoklVkqpVpOsaHW+BNjwfPAHM=";

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

/// A server whose numbers connect through the fake provider at `provider`.
async fn server_with_provider(ctx: &TestContext, provider: &MockServer) -> TestServer {
    let gateway = telephony(&provider.uri());
    TestServer::start_at(ctx, Default::default(), |s, base| {
        s.with_telephony_gateway(gateway, voiceplane_http::Api::telephony_webhooks(base))
    })
    .await
}

/// `POST /api/phone-numbers/{id}/connect` on Twilio: the exact number among the search's
/// loose matches is pointed at this server's voice and status webhooks, and the number keeps
/// the provider's id and when it was connected; again, harmlessly. Without an integration, or
/// when the account lacks the number, 422; an outage is a 502 that records nothing.
async fn twilio_numbers_are_connected(ctx: &TestContext) {
    let provider = MockServer::start().await;
    let server = server_with_provider(ctx, &provider).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Connect").await;
    let integration = c
        .create(
            "/api/integrations",
            twilio_body("Main", SID, "twilio-token"),
        )
        .await;
    let integration_id = integration["integration_id"].as_str().unwrap();
    let mut body = phone_number_body("+14155550123");
    body["integration_id"] = json!(integration_id);
    let number = c.create("/api/phone-numbers", body).await;
    let connect = format!(
        "/api/phone-numbers/{}/connect",
        number["phone_number_id"].as_str().unwrap()
    );

    mount_twilio_numbers(
        &provider,
        SID,
        &[
            ("PN0000000000000000000000000000aaaa", "+141555501234"),
            ("PN0000000000000000000000000000bbbb", "+14155550123"),
        ],
    )
    .await;
    let (status, body) = c.post(&connect, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let connected = &body["data"];
    assert_eq!(
        connected["provider_number_id"],
        "PN0000000000000000000000000000bbbb"
    );
    assert!(connected["connected_at"].is_string(), "{connected}");
    let requests = provider.received_requests().await.unwrap();
    let update = requests
        .iter()
        .find(|r| r.method.as_str() == "POST")
        .unwrap();
    let form: Vec<(String, String)> = url::form_urlencoded::parse(&update.body)
        .into_owned()
        .collect();
    let sent = |name: &str| {
        form.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert_eq!(
        sent("VoiceUrl"),
        format!("{}/telephony/twilio/{integration_id}/voice", server.base)
    );
    assert_eq!(
        sent("StatusCallback"),
        format!("{}/telephony/twilio/{integration_id}/status", server.base)
    );
    // Again: the same configuration, a new `connected_at`.
    let (status, again) = c.post(&connect, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(
        again["data"]["provider_number_id"],
        connected["provider_number_id"]
    );

    // Not on the account (only loose matches): 422, nothing recorded.
    let mut other = phone_number_body("+1415555012");
    other["integration_id"] = json!(integration_id);
    let other = c.create("/api/phone-numbers", other).await;
    let other_path = format!(
        "/api/phone-numbers/{}",
        other["phone_number_id"].as_str().unwrap()
    );
    let (status, body) = c.post(&format!("{other_path}/connect"), json!({})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("+1415555012"),
        "{body}"
    );
    assert_eq!(
        c.get(&other_path).await.1["data"]["connected_at"],
        Value::Null
    );

    // No integration: 422 saying so.
    let bare = c
        .create("/api/phone-numbers", phone_number_body("+14155550199"))
        .await;
    let (status, body) = c
        .post(
            &format!(
                "/api/phone-numbers/{}/connect",
                bare["phone_number_id"].as_str().unwrap()
            ),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("integration"),
        "{body}"
    );

    // The provider is down: 502, the number as it was, the token nowhere.
    provider.reset().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503).set_body_string("twilio-token"))
        .mount(&provider)
        .await;
    let (status, body) = c.post(&connect, json!({})).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(!body.to_string().contains("twilio-token"), "{body}");
    let number_path = connect.trim_end_matches("/connect");
    assert_eq!(
        c.get(number_path).await.1["data"]["connected_at"],
        again["data"]["connected_at"]
    );

    // Connecting is a write: a `user` key may not.
    let admin = ctx
        .actor(c.org.as_deref().unwrap(), c.key.as_deref().unwrap())
        .await;
    let (key, _) = ctx.key_with_role(&admin, Role::User).await;
    let (status, _) = c.with_key(&key.api_key).post(&connect, json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    server.stop().await;
}

/// On Telnyx the integration needs its `connection_id` and `public_key` first (422 naming the
/// missing one); then the number joins the connection and the connection's Call Control
/// application sends its events to this server.
async fn telnyx_numbers_are_connected(ctx: &TestContext) {
    let provider = MockServer::start().await;
    let server = server_with_provider(ctx, &provider).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Telnyx").await;
    let integration = c
        .create(
            "/api/integrations",
            json!({"name": "Telnyx", "provider": "telnyx", "category": "telephony",
                   "credentials": {"api_key": "KEY-telnyx"}}),
        )
        .await;
    let integration_id = integration["integration_id"].as_str().unwrap();
    let mut body = phone_number_body("+14155550123");
    body["provider"] = json!("telnyx");
    body["integration_id"] = json!(integration_id);
    let number = c.create("/api/phone-numbers", body).await;
    let connect = format!(
        "/api/phone-numbers/{}/connect",
        number["phone_number_id"].as_str().unwrap()
    );
    let (status, body) = c.post(&connect, json!({})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("connection_id"),
        "{body}"
    );
    assert!(provider.received_requests().await.unwrap().is_empty());

    let (status, body) = c
        .send(
            Method::PATCH,
            &format!("/api/integrations/{integration_id}"),
            Some(json!({"credentials": {"api_key": "KEY-telnyx", "connection_id": "1494404757140276705",
                                        "public_key": TELNYX_PUBLIC_KEY}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    Mock::given(method("GET"))
        .and(path("/v2/phone_numbers"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [{"id": "1293384261075731499", "phone_number": "+14155550123"}]
        })))
        .mount(&provider)
        .await;
    Mock::given(method("PATCH"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": {}})))
        .mount(&provider)
        .await;
    let (status, body) = c.post(&connect, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["provider_number_id"], "1293384261075731499");
    let requests = provider.received_requests().await.unwrap();
    assert_eq!(
        requests[0].url.query(),
        Some("filter%5Bphone_number%5D=14155550123")
    );
    let application = requests
        .iter()
        .find(|r| r.url.path() == "/v2/call_control_applications/1494404757140276705")
        .expect("the Call Control application is configured");
    assert_eq!(
        application.body_json::<Value>().unwrap(),
        json!({"webhook_event_url": format!("{}/telephony/telnyx/{integration_id}/events", server.base)})
    );
    server.stop().await;
}

db_tests!(
    runtime_stream_urls_are_validated_and_kept,
    twilio_numbers_are_connected,
    telnyx_numbers_are_connected,
);
