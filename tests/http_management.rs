//! The management endpoints over HTTP: statuses, details and envelopes of revoke,
//! integrations (validated against a fake provider on loopback), CRUD, members and
//! invitations, on SQLite and Postgres.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_clients::{HttpClient, HttpSettings, HttpTelephonyValidator, TelephonySettings};
use voiceplane_suite::{ApiCaller, TestContext, TestServer, db_tests, jwt_for};
use wiremock::matchers::{basic_auth, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const GOOD_SID: &str = "AC00000000000000000000000000000001";
const BAD_SID: &str = "AC00000000000000000000000000000002";
const TOKEN: &str = "auth-token-for-tests";

fn integration(sid: &str) -> Value {
    json!({"name": "Main", "provider": "twilio", "category": "telephony",
           "credentials": {"account_sid": sid, "auth_token": TOKEN}})
}

async fn revoke_over_http(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let (_, key) = c
        .send(
            Method::POST,
            "/api/api-keys",
            Some(json!({"name": "u", "role": "user"})),
        )
        .await;
    let key_id = key["data"]["key_id"].as_str().unwrap();
    let user = c.with_key(key["data"]["api_key"].as_str().unwrap());

    let (status, v) = user
        .send(Method::DELETE, &format!("/api/api-keys/{key_id}"), None)
        .await;
    assert_eq!(
        (status, v),
        (
            StatusCode::FORBIDDEN,
            json!({"detail": "only admins and agent managers can revoke API keys"})
        )
    );
    let (status, v) = c
        .send(Method::DELETE, "/api/api-keys/apikey_ffffffffffff", None)
        .await;
    assert_eq!(
        (status, v),
        (
            StatusCode::NOT_FOUND,
            json!({"detail": "key not found or not in this organization"})
        )
    );
    let (status, v) = c
        .send(Method::DELETE, "/api/api-keys/apikey_nothex", None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");

    let (status, v) = c
        .send(Method::DELETE, &format!("/api/api-keys/{key_id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["success"], true);
    assert_eq!(v["message"], "API key revoked");
    assert_eq!(v["data"]["status"], "revoked");
    assert_eq!(v["data"]["key_id"], key_id);
    let (status, _) = user.send(Method::GET, "/api/tools", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "revoked at once");
    // Another instance on the same database sees the revocation at once: nothing is cached.
    let (_, key2) = c
        .send(
            Method::POST,
            "/api/api-keys",
            Some(json!({"name": "u2", "role": "user"})),
        )
        .await;
    let second = TestServer::start_configured(ctx, |s| s).await;
    let on_second = ApiCaller {
        base: second.base.clone(),
        ..c.with_key(key2["data"]["api_key"].as_str().unwrap())
    };
    assert_eq!(
        on_second.send(Method::GET, "/api/tools", None).await.0,
        StatusCode::OK
    );
    let id2 = key2["data"]["key_id"].as_str().unwrap();
    assert_eq!(
        c.send(Method::DELETE, &format!("/api/api-keys/{id2}"), None)
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(
        on_second.send(Method::GET, "/api/tools", None).await.0,
        StatusCode::UNAUTHORIZED
    );
    second.stop().await;
    server.stop().await;
}

async fn integration_validate_against_a_fake_provider(ctx: &TestContext) {
    let provider = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/2010-04-01/Accounts/{GOOD_SID}.json")))
        .and(basic_auth(GOOD_SID, TOKEN))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"sid": GOOD_SID, "status": "active"})),
        )
        .mount(&provider)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/2010-04-01/Accounts/{BAD_SID}.json")))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({"message": "Authenticate"})))
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
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;

    for (sid, expected) in [(GOOD_SID, "active"), (BAD_SID, "invalid")] {
        let (status, created) = c
            .send(Method::POST, "/api/integrations", Some(integration(sid)))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        assert!(!created.to_string().contains(TOKEN));
        let id = created["data"]["integration_id"].as_str().unwrap();
        // JSON is required.
        let resp = c
            .request(Method::POST, &format!("/api/integrations/{id}/validate"))
            .header("Content-Type", "text/plain")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let (status, v) = c
            .send(
                Method::POST,
                &format!("/api/integrations/{id}/validate"),
                Some(json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{v}");
        assert_eq!(v["success"], true);
        assert!(v["message"].is_string());
        assert_eq!(v["data"]["status"], expected, "{v}");
        assert_ne!(
            v["data"]["updated_at"], created["data"]["updated_at"],
            "updated_at changes"
        );
        assert!(!v.to_string().contains(TOKEN));
        let (_, viewed) = c
            .send(Method::GET, &format!("/api/integrations/{id}"), None)
            .await;
        assert_eq!(viewed["data"]["status"], expected);
    }
    server.stop().await;

    // A probe that cannot reach the provider marks the integration invalid too.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let unreachable = HttpTelephonyValidator::new(
        HttpClient::new(HttpSettings::default()).unwrap(),
        TelephonySettings {
            twilio_base_url: closed.clone(),
            telnyx_base_url: closed,
        },
    )
    .unwrap();
    let server =
        TestServer::start_configured(ctx, |s| s.with_telephony(Arc::new(unreachable))).await;
    let c = ApiCaller {
        base: server.base.clone(),
        ..c
    };
    let (_, created) = c
        .send(
            Method::POST,
            "/api/integrations",
            Some(integration(GOOD_SID)),
        )
        .await;
    let id = created["data"]["integration_id"].as_str().unwrap();
    let (status, v) = c
        .send(
            Method::POST,
            &format!("/api/integrations/{id}/validate"),
            Some(json!({})),
        )
        .await;
    assert_eq!(
        (status, &v["data"]["status"]),
        (StatusCode::OK, &json!("invalid")),
        "{v}"
    );
    server.stop().await;
}

async fn integration_delete_conflict_over_http(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let (_, created) = c
        .send(
            Method::POST,
            "/api/integrations",
            Some(integration(GOOD_SID)),
        )
        .await;
    let id = created["data"]["integration_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, number) = c
        .send(
            Method::POST,
            "/api/phone-numbers",
            Some(json!({"phone_number": "+14155550123", "integration_id": id})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{number}");
    let (status, v) = c
        .send(Method::DELETE, &format!("/api/integrations/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let detail = v["detail"].as_str().unwrap();
    assert!(
        detail.contains("+14155550123") && detail.contains("remove or reassign them first"),
        "{detail}"
    );
    let nid = number["data"]["phone_number_id"].as_str().unwrap();
    let (status, v) = c
        .send(Method::DELETE, &format!("/api/phone-numbers/{nid}"), None)
        .await;
    assert_eq!(
        (status, &v["message"]),
        (StatusCode::OK, &json!("phone number deleted"))
    );
    let (status, v) = c
        .send(Method::DELETE, &format!("/api/integrations/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["data"]["integration_id"], id.as_str());
    assert!(v["message"].is_string());
    let (status, _) = c
        .send(Method::GET, &format!("/api/integrations/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.stop().await;
}

async fn crud_routes_answer_with_envelopes(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let (_, tool) = c
        .send(
            Method::POST,
            "/api/tools",
            Some(json!({"tool_name": "t", "tool_description": "d", "url": "https://x.example"})),
        )
        .await;
    let tool_id = tool["data"]["tool_id"].as_str().unwrap().to_owned();
    let (_, agent) = c.send(Method::POST, "/api/agents", Some(json!({
        "agent_name": "A", "language": "en", "stt_provider": "s", "tts_provider": "provider_two",
        "tts_voice": "v", "llm_provider": "l", "llm_model": "m", "custom_tools": [tool_id]
    }))).await;
    let agent_id = agent["data"]["agent_id"].as_str().unwrap().to_owned();
    let (_, doc) = c
        .send(
            Method::POST,
            "/api/knowledge-base",
            Some(json!({"name": "n", "text": "t"})),
        )
        .await;
    let doc_id = doc["data"]["documentation_id"].as_str().unwrap().to_owned();

    for list in [
        "/api/agents",
        "/api/phone-numbers",
        "/api/integrations",
        "/api/knowledge-base",
        "/api/tools",
    ] {
        let (status, v) = c.send(Method::GET, list, None).await;
        assert_eq!(status, StatusCode::OK, "{list}: {v}");
        assert!(
            v["data"].is_array() && v["pagination"]["has_more"].is_boolean(),
            "{list}: {v}"
        );
    }
    let (status, v) = c
        .send(Method::GET, &format!("/api/tools/{tool_id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["data"]["url"], "https://x.example");
    for (path, patch) in [
        (
            format!("/api/tools/{tool_id}"),
            json!({"tool_description": "new"}),
        ),
        (
            format!("/api/agents/{agent_id}"),
            json!({"system_prompt": "new"}),
        ),
        (
            format!("/api/knowledge-base/{doc_id}"),
            json!({"name": "new"}),
        ),
    ] {
        let (status, v) = c.send(Method::PATCH, &path, Some(patch)).await;
        assert_eq!(status, StatusCode::OK, "{path}: {v}");
        let (status, v) = c
            .send(Method::PATCH, &path, Some(json!({"no_such_field": 1})))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {v}");
        assert!(v["detail"].as_str().unwrap().contains("no_such_field"));
    }
    for path in [
        format!("/api/tools/{tool_id}"),
        format!("/api/knowledge-base/{doc_id}"),
        format!("/api/agents/{agent_id}"),
    ] {
        let (status, v) = c.send(Method::DELETE, &path, None).await;
        assert_eq!(status, StatusCode::OK, "{path}: {v}");
        assert_eq!(v["success"], true);
        let (status, _) = c.send(Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
    }
    server.stop().await;
}

async fn members_and_invitations_over_http(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let (status, inv) = c
        .send(
            Method::POST,
            "/api/auth/organizations/invitations",
            Some(json!({"email": "kim@example.com", "role": "user"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let invite_id = inv["data"]["invite_id"].as_str().unwrap();
    // Accept: the invitee's JWT, no organization header.
    let token = jwt_for("user_kim0000000000000001", Some("kim@example.com"), 600);
    let invitee = ApiCaller {
        org: None,
        ..c.with_bearer(&token)
    };
    let resp = invitee
        .request(
            Method::POST,
            &format!("/api/auth/invitations/{invite_id}/accept"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let accepted: Value = resp.json().await.unwrap();
    assert_eq!(accepted["success"], true);
    assert_eq!(accepted["data"]["role"], "user");
    let kim = accepted["data"]["membership_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let (_, members) = c
        .send(Method::GET, "/api/auth/organizations/members", None)
        .await;
    let me = members["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "admin")
        .unwrap()["membership_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, v) = c
        .send(
            Method::PATCH,
            &format!("/api/auth/organizations/members/{me}"),
            Some(json!({"role": "user"})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{v}");
    let (status, v) = c
        .send(
            Method::DELETE,
            &format!("/api/auth/organizations/members/{me}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{v}");
    let (status, v) = c
        .send(
            Method::PATCH,
            &format!("/api/auth/organizations/members/{kim}"),
            Some(json!({"role": "agent_manager"})),
        )
        .await;
    assert_eq!(
        (status, &v["data"]["role"]),
        (StatusCode::OK, &json!("agent_manager")),
        "{v}"
    );
    let (status, v) = c
        .send(
            Method::DELETE,
            &format!("/api/auth/organizations/members/{kim}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let (status, _) = c
        .send(
            Method::DELETE,
            &format!("/api/auth/organizations/members/{kim}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (_, inv) = c
        .send(
            Method::POST,
            "/api/auth/organizations/invitations",
            Some(json!({"email": "lee@example.com", "role": "user"})),
        )
        .await;
    let invite_id = inv["data"]["invite_id"].as_str().unwrap();
    let (status, v) = c
        .send(
            Method::DELETE,
            &format!("/api/auth/organizations/invitations/{invite_id}"),
            None,
        )
        .await;
    assert_eq!(
        (status, &v["data"]["status"]),
        (StatusCode::OK, &json!("revoked")),
        "{v}"
    );
    let (_, v) = c
        .send(Method::GET, "/api/auth/organizations/invitations", None)
        .await;
    assert_eq!(v, json!({"invitations": []}));
    server.stop().await;
}

db_tests!(
    revoke_over_http,
    integration_validate_against_a_fake_provider,
    integration_delete_conflict_over_http,
    crud_routes_answer_with_envelopes,
    members_and_invitations_over_http,
);
