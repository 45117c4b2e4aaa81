//! HTTP-level suite: a real listener on port 0, requests with reqwest, on SQLite and Postgres.
//!
//! Run on SQLite only: `cargo test --test http`; add `VOICEPLANE_TEST_POSTGRES_URL` for both.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_suite::{
    ApiCaller, TestContext, TestServer, db_tests, fields, http_client, jwt_for, keys, read_json,
};

const API_KEY_FIELDS: &[&str] = &[
    "key_id",
    "name",
    "role",
    "prefix",
    "client_id",
    "user_id",
    "status",
    "created_at",
    "last_used_at",
    "expires_at",
];
const CALL_FIELDS: &[&str] = &[
    "call_sid",
    "to_number",
    "from_number",
    "agent_id",
    "agent_name",
    "client_id",
    "call_type",
    "status",
    "recording_enabled",
    "total_cost",
    "duration_seconds",
    "turn_count",
    "created_at",
    "updated_at",
    "start_time",
    "end_time",
    "end_reason",
    "billing_status",
];
const TOOL_SUMMARY_FIELDS: &[&str] = &[
    "tool_id",
    "tool_name",
    "tool_description",
    "http_method",
    "timeout_seconds",
    "created_at",
    "updated_at",
];
const DOCUMENT_FIELDS: &[&str] = &[
    "documentation_id",
    "name",
    "type",
    "client_id",
    "storage_key",
    "storage_uri",
    "content_type",
    "size",
    "filename",
    "processing_status",
    "page_count",
    "vector_count",
    "last_processed_at",
    "created_at",
    "updated_at",
];
const AGENT_FIELDS: &[&str] = &[
    "agent_id",
    "agent_name",
    "language",
    "stt_provider",
    "tts_provider",
    "tts_voice",
    "llm_provider",
    "llm_model",
    "system_prompt",
    "speak_first",
    "end_call_tool",
    "llm_temperature",
    "recording_enabled",
    "voicemail_detection",
    "voicemail_response_delay",
    "custom_tools",
    "kb_document_ids",
    "assigned_phone_number_ids",
    "created_at",
    "updated_at",
];
const PHONE_FIELDS: &[&str] = &[
    "phone_number_id",
    "phone_number",
    "client_id",
    "provider",
    "status",
    "supports_inbound",
    "supports_outbound",
    "assigned_agent_id",
    "integration_id",
    "created_at",
    "updated_at",
];
const INVITATION_FIELDS: &[&str] = &[
    "invite_id",
    "email",
    "client_id",
    "role",
    "invited_by",
    "status",
    "created_at",
    "expires_at",
];
const MEMBER_FIELDS: &[&str] = &[
    "membership_id",
    "user_id",
    "email",
    "name",
    "role",
    "status",
    "joined_at",
    "last_login",
];

fn agent_body(name: &str) -> Value {
    json!({
        "agent_name": name, "language": "en", "stt_provider": "deepgram",
        "tts_provider": "provider_one", "tts_voice": "v1", "llm_provider": "openai",
        "llm_model": "gpt-4o", "system_prompt": "Be brief."
    })
}

async fn health_endpoints_need_no_credentials(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let http = http_client();
    let (status, v) = read_json(http.get(server.url("/healthz")).send().await.unwrap()).await;
    assert_eq!((status, v), (StatusCode::OK, json!({"status": "ok"})));
    let (status, _) = read_json(http.get(server.url("/readyz")).send().await.unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    server.stop().await;
}

async fn agent_round_trip_with_the_bootstrap_key(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let caller = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let created = caller.create("/api/agents", agent_body("Front desk")).await;
    assert_eq!(keys(&created), fields(AGENT_FIELDS));
    let id = created["agent_id"].as_str().unwrap();
    let (status, v) = caller.get(&format!("/api/agents/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v, json!({"success": true, "data": created}));
    assert_eq!(v["data"]["language"], "EN");
    assert_eq!(v["data"]["assigned_phone_number_ids"], json!([]));
    server.stop().await;
}

async fn every_route_answers_with_the_spec_shapes(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;

    // API keys
    let key = c
        .create("/api/api-keys", json!({"name": "ci", "role": "user"}))
        .await;
    let mut expected = fields(API_KEY_FIELDS);
    expected.insert("api_key".into());
    assert_eq!(keys(&key), expected);
    let secret = key["api_key"].as_str().unwrap().to_owned();
    assert_eq!(key["prefix"].as_str().unwrap(), &secret[..12]);
    let (status, v) = c.get("/api/api-keys").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["data"].as_array().unwrap().len(), 2);
    for k in v["data"].as_array().unwrap() {
        assert_eq!(keys(k), fields(API_KEY_FIELDS));
    }
    assert_eq!(
        keys(&v["pagination"]),
        fields(&["next_cursor", "has_more", "page_size"])
    );
    assert!(!v.to_string().contains(&secret), "secrets are never listed");

    // Agents, tools, documents, phone numbers
    let agent = c.create("/api/agents", agent_body("Sales")).await;
    let agent_id = agent["agent_id"].as_str().unwrap();
    let tool = c
        .create(
            "/api/tools",
            json!({"tool_name": "lookup", "tool_description": "Finds orders",
                   "url": "https://shop.example.com/api", "http_method": "POST"}),
        )
        .await;
    assert!(tool["tool_id"].as_str().unwrap().starts_with("tool_"));
    assert_eq!(
        tool["parameters"],
        json!({"type": "object", "properties": {}})
    );
    let (status, v) = c.get("/api/tools?limit=10").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(keys(&v["data"][0]), fields(TOOL_SUMMARY_FIELDS));
    assert_eq!(
        v["pagination"],
        json!({"next_cursor": null, "has_more": false, "page_size": 1, "total_count": 1})
    );

    let doc = c
        .create(
            "/api/knowledge-base",
            json!({"name": "FAQ", "text": "We open at 9."}),
        )
        .await;
    assert_eq!(keys(&doc), fields(DOCUMENT_FIELDS));
    assert_eq!(doc["type"], "text");
    let (status, v) = c
        .get(&format!(
            "/api/knowledge-base/{}",
            doc["documentation_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!((status, &v["data"]), (StatusCode::OK, &doc));

    let number = c
        .create(
            "/api/phone-numbers",
            json!({"phone_number": "+14155550123", "provider": "twilio", "assigned_agent_id": agent_id}),
        )
        .await;
    assert_eq!(keys(&number), fields(PHONE_FIELDS));
    assert_eq!(number["status"], "assigned");
    let (status, v) = c
        .get(&format!(
            "/api/phone-numbers/{}",
            number["phone_number_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!((status, &v["data"]), (StatusCode::OK, &number));
    let (_, v) = c.get(&format!("/api/agents/{agent_id}")).await;
    assert_eq!(
        v["data"]["assigned_phone_number_ids"],
        json!([number["phone_number_id"]])
    );

    // Calls
    let call = c
        .create(
            "/api/calls",
            json!({"agent_id": agent_id, "to_number": "+14155550100", "call_type": "inbound"}),
        )
        .await;
    assert_eq!(keys(&call), fields(CALL_FIELDS));
    let sid = call["call_sid"].as_str().unwrap();
    let (status, v) = c
        .send(
            Method::PATCH,
            &format!("/api/calls/{sid}"),
            Some(json!({"status": "in_progress", "start_time": "2026-03-01T12:00:00Z"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["data"]["status"], "in_progress");
    assert_eq!(v["data"]["start_time"], "2026-03-01T12:00:00.000000Z");
    let (status, v) = c.get(&format!("/api/calls/{sid}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["data"]["status"], "in_progress");
    let (status, v) = c.get("/api/calls").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(keys(&v["data"][0]), fields(CALL_FIELDS));
    assert_eq!(
        v["pagination"],
        json!({"next_cursor": null, "has_more": false, "page_size": 1})
    );

    // Invitations and members: their own shapes, no envelope.
    let inv = c
        .create(
            "/api/auth/organizations/invitations",
            json!({"email": "new@example.com", "role": "user"}),
        )
        .await;
    assert_eq!(keys(&inv), fields(INVITATION_FIELDS));
    let (status, v) = c.get("/api/auth/organizations/invitations").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v, json!({"invitations": [inv]}));
    let (status, v) = c.get("/api/auth/organizations/members").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(keys(&v), fields(&["members"]));
    assert_eq!(keys(&v["members"][0]), fields(MEMBER_FIELDS));
    assert_eq!(v["members"][0]["role"], "admin");
    server.stop().await;
}

async fn call_cursor_walk_over_http(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let agent = c.create("/api/agents", agent_body("Dialer")).await;
    let mut created = Vec::new();
    for _ in 0..121 {
        let call = c
            .create("/api/calls", json!({"agent_id": agent["agent_id"], "to_number": "+14155550100", "call_type": "outbound"}))
            .await;
        created.push(call["call_sid"].as_str().unwrap().to_owned());
    }
    let mut seen = Vec::new();
    let mut path = "/api/calls?limit=40".to_owned();
    let mut pages = 0;
    loop {
        let (status, v) = c.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{v}");
        pages += 1;
        let data = v["data"].as_array().unwrap();
        let p = &v["pagination"];
        assert_eq!(p["page_size"], data.len());
        seen.extend(
            data.iter()
                .map(|c| c["call_sid"].as_str().unwrap().to_owned()),
        );
        if p["has_more"] == false {
            assert_eq!(p["next_cursor"], Value::Null);
            assert_eq!(data.len(), 1);
            break;
        }
        assert_eq!(data.len(), 40);
        path = format!(
            "/api/calls?limit=40&cursor={}",
            p["next_cursor"].as_str().unwrap()
        );
    }
    assert_eq!(pages, 4);
    created.reverse();
    assert_eq!(seen, created);
    server.stop().await;
}

async fn bad_list_parameters_are_400(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    for q in [
        "limit=0",
        "limit=101",
        "limit=abc",
        "limit=-1",
        "cursor=%%%garbage",
        "cursor=bm90LWEtY3Vyc29y",
    ] {
        for path in ["/api/calls", "/api/tools"] {
            let (status, v) = c.get(&format!("{path}?{q}")).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{path}?{q}: {v}");
        }
    }
    server.stop().await;
}

async fn credentials_map_to_401_and_403(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let other = ctx.bootstrap("Other").await;
    let agent = c.create("/api/agents", agent_body("A")).await;
    let path = format!("/api/agents/{}", agent["agent_id"].as_str().unwrap());

    let anonymous = ApiCaller {
        key: None,
        ..c.clone()
    };
    // Missing credentials.
    let (status, _) = anonymous.get(&path).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Unknown key, malformed key, non-Bearer Authorization, expired JWT.
    for (name, value) in [
        ("X-API-Key", format!("vpk_{}", "x".repeat(40))),
        ("X-API-Key", "letmein".to_owned()),
        ("Authorization", "Basic dXNlcjpwYXNz".to_owned()),
        (
            "Authorization",
            format!("Bearer {}", jwt_for("user_0123456789abcdef", None, -600)),
        ),
    ] {
        let (status, v) = read_json(
            anonymous
                .request(Method::GET, &path)
                .header(name, value)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}: {v}");
    }
    // Expired key.
    let expires_at = ctx.clock.peek().add_seconds(600).to_rfc3339();
    let short = c
        .create(
            "/api/api-keys",
            json!({"name": "short", "role": "user", "expires_at": expires_at}),
        )
        .await;
    let short_caller = c.with_key(short["api_key"].as_str().unwrap());
    assert_eq!(short_caller.get(&path).await.0, StatusCode::OK);
    ctx.clock.advance(3600);
    let (status, v) = short_caller.get(&path).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(v["detail"].as_str().unwrap().contains("expired"));

    // A valid key used for another organization: 403.
    let mismatched = ApiCaller::new(&server, &other.organization_id, c.key.as_deref().unwrap());
    assert_eq!(mismatched.get(&path).await.0, StatusCode::FORBIDDEN);

    // A member's JWT works; the same user's JWT in a foreign org is 403.
    let members = c.get("/api/auth/organizations/members").await.1;
    let user_id = members["members"][0]["user_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let jwt_caller = c.with_bearer(&jwt_for(&user_id, None, 600));
    let (status, v) = jwt_caller.get(&path).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let foreign = ApiCaller {
        org: Some(other.organization_id.clone()),
        ..jwt_caller
    };
    assert_eq!(foreign.get(&path).await.0, StatusCode::FORBIDDEN);

    // The other organization's admin sees a 404, as for an unknown id.
    let outsider = ApiCaller::new(&server, &other.organization_id, &other.api_key);
    assert_eq!(outsider.get(&path).await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        outsider.get("/api/agents/agent_ffffffffffffffff").await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        outsider.get("/api/agents/not-an-id").await.0,
        StatusCode::BAD_REQUEST
    );
    server.stop().await;
}

async fn user_role_gets_403_on_create(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let admin = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let key = admin
        .create("/api/api-keys", json!({"name": "viewer", "role": "user"}))
        .await;
    let user = admin.with_key(key["api_key"].as_str().unwrap());
    let agent = admin.create("/api/agents", agent_body("A")).await;
    for (path, body) in [
        ("/api/agents", agent_body("B")),
        (
            "/api/tools",
            json!({"tool_name": "t", "tool_description": "d", "url": "https://x.example"}),
        ),
        (
            "/api/calls",
            json!({"agent_id": agent["agent_id"], "to_number": "+14155550100", "call_type": "preview"}),
        ),
        (
            "/api/phone-numbers",
            json!({"phone_number": "+14155550100", "provider": "twilio"}),
        ),
        ("/api/knowledge-base", json!({"name": "n", "text": "t"})),
        ("/api/api-keys", json!({"name": "k", "role": "user"})),
        (
            "/api/auth/organizations/invitations",
            json!({"email": "a@example.com", "role": "user"}),
        ),
    ] {
        let (status, v) = user.post(path, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {v}");
    }
    let (status, _) = user
        .get(&format!(
            "/api/agents/{}",
            agent["agent_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    server.stop().await;
}

async fn malformed_requests_get_clear_4xx(ctx: &TestContext) {
    let server = TestServer::start_with(
        ctx,
        voiceplane_http::HttpConfig {
            max_body_bytes: 4096,
            ..Default::default()
        },
    )
    .await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    // Unknown route and wrong method.
    assert_eq!(c.get("/api/nothing-here").await.0, StatusCode::NOT_FOUND);
    let resp = c
        .request(Method::DELETE, "/api/tools")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(resp.headers().get("allow").is_some());
    // Not JSON, invalid JSON, unknown field, missing field, wrong content type, too large.
    let (status, _) = read_json(
        c.request(Method::POST, "/api/agents")
            .header("content-type", "application/json")
            .body("{nope")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let mut body = agent_body("x");
    body["favourite_colour"] = json!("blue");
    let (status, v) = c.post("/api/agents", body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        v["detail"].as_str().unwrap().contains("favourite_colour"),
        "{v}"
    );
    let (status, v) = c.post("/api/agents", json!({"agent_name": "x"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(v["detail"].as_str().unwrap().contains("language"), "{v}");
    let (status, _) = read_json(
        c.request(Method::POST, "/api/agents")
            .header("content-type", "text/plain")
            .body(agent_body("x").to_string())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let (status, _) = c
        .post(
            "/api/knowledge-base",
            json!({"name": "big", "text": "x".repeat(10_000)}),
        )
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let (status, _) = c.post("/api/agents", json!({"agent_name": "x", "language": "en", "stt_provider": "s", "tts_provider": "provider_9", "tts_voice": "v", "llm_provider": "l", "llm_model": "m"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // Duplicate pending invitation: 409.
    c.create(
        "/api/auth/organizations/invitations",
        json!({"email": "dup@example.com", "role": "user"}),
    )
    .await;
    let (status, _) = c
        .post(
            "/api/auth/organizations/invitations",
            json!({"email": "dup@example.com", "role": "user"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    server.stop().await;
}

async fn database_down_is_503_with_a_plain_detail(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    // Closing the pool makes every query fail as an unreachable database would.
    ctx.repo.connection().clone().close().await.unwrap();
    let (status, v) = read_json(
        http_client()
            .get(server.url("/readyz"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{v}");
    let (status, v) = c.get("/api/calls").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{v}");
    let detail = v["detail"].as_str().unwrap();
    assert!(detail.contains("database"), "{detail}");
    assert!(
        !detail.contains("pool") && !detail.contains("sqlx"),
        "no internals: {detail}"
    );
    server.stop().await;
}

db_tests!(
    health_endpoints_need_no_credentials,
    agent_round_trip_with_the_bootstrap_key,
    every_route_answers_with_the_spec_shapes,
    call_cursor_walk_over_http,
    bad_list_parameters_are_400,
    credentials_map_to_401_and_403,
    user_role_gets_403_on_create,
    malformed_requests_get_clear_4xx,
    database_down_is_503_with_a_plain_detail,
);
