//! The shapes of answers: every route's `{success, data}` envelope with the documented
//! fields, CRUD answers, clear 4xx details for malformed requests and unknown routes, and a
//! 500 that names nothing of the server.

use reqwest::{Method, StatusCode};
use serde_json::json;
use voiceplane_suite::*;

use crate::shapes::*;

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
    // Unknown routes name the method and path, never the query; only the API's answers
    // forbid caching.
    let resp = c
        .request(Method::GET, "/api/nothing-here?x=secret")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let (status, v) = read_json(resp).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(v["detail"], "no route for GET /api/nothing-here");
    let resp = c
        .request(Method::GET, "/nope?x=secret")
        .send()
        .await
        .unwrap();
    assert!(resp.headers().get("cache-control").is_none());
    let (status, v) = read_json(resp).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(v["detail"], "no route for GET /nope");
    // A wrong method: the allowed ones, and the one refused.
    let resp = c
        .request(Method::DELETE, "/api/tools")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["allow"], "POST, GET, HEAD");
    let (status, v) = read_json(resp).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(v["detail"].as_str().unwrap().contains("DELETE"), "{v}");
    // No body, no Content-Type, invalid JSON, unknown field, missing field, wrong content
    // type, too large.
    let json_body = |body: &'static str| {
        c.request(Method::POST, "/api/agents")
            .header("content-type", "application/json")
            .body(body)
    };
    let (status, v) = read_json(json_body("").send().await.unwrap()).await;
    assert_eq!(
        (status, v),
        (
            StatusCode::BAD_REQUEST,
            json!({"detail": "request body is required"})
        )
    );
    let (status, v) = read_json(
        c.request(Method::POST, "/api/agents")
            .body(agent_body("x").to_string())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, v),
        (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            json!({"detail": "Content-Type must be application/json"})
        )
    );
    let (status, v) = read_json(json_body("{nope").send().await.unwrap()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let detail = v["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("request body is not valid JSON: "),
        "{detail}"
    );
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
    // The knowledge base takes JSON or a multipart upload with its file, and says so.
    let (status, v) = read_json(
        c.request(Method::POST, "/api/knowledge-base")
            .header("content-type", "text/plain")
            .body("hello")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("multipart/form-data"),
        "{v}"
    );
    let (status, v) = read_json(
        c.request(Method::POST, "/api/knowledge-base")
            .header("content-type", "multipart/form-data; boundary=x")
            .body("--x--\r\n")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(v["detail"].as_str().unwrap().contains("`file`"), "{v}");
    let (status, v) = c
        .post(
            "/api/knowledge-base",
            json!({"name": "big", "text": "x".repeat(10_000)}),
        )
        .await;
    assert_eq!(
        (status, v),
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            json!({"detail": "request body exceeds the limit of 4096 bytes"})
        )
    );
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
    // None of the refused requests stored anything.
    for list in ["/api/agents", "/api/knowledge-base"] {
        let (status, v) = c.get(list).await;
        assert_eq!((status, &v["data"]), (StatusCode::OK, &json!([])), "{list}");
    }
    server.stop().await;
}

/// A stored row the repository cannot read is a 500 that says no more: what the repository
/// says about it (here a value that looks like a database URL with its password) stays in
/// the log.
async fn an_unreadable_row_is_a_500_that_names_nothing(ctx: &TestContext) {
    use sea_orm::ConnectionTrait;
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let agent = c.create("/api/agents", agent_body("Receptionist")).await;
    let path = format!("/api/agents/{}", agent["agent_id"].as_str().unwrap());
    // Not read before the damage: a read would keep the agent in the instance's cache, which
    // on Postgres learns of a change made past the repository only when its notification
    // arrives.
    ctx.repo
        .connection()
        .execute_unprepared(&format!(
            "UPDATE agents SET tts_provider = 'postgres://voice:hunter2@db/voice' \
             WHERE agent_id = '{}'",
            agent["agent_id"].as_str().unwrap()
        ))
        .await
        .unwrap();
    let (status, v) = c.get(&path).await;
    assert_eq!(
        (status, v),
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"detail": "internal server error"})
        )
    );
    // An unknown id of the right kind is a 404 naming it.
    let (status, v) = c.get("/api/agents/agent_0123456789abcdef").await;
    assert_eq!(
        (status, v),
        (
            StatusCode::NOT_FOUND,
            json!({"detail": "agent agent_0123456789abcdef not found"})
        )
    );
    server.stop().await;
}

db_tests!(
    every_route_answers_with_the_spec_shapes,
    crud_routes_answer_with_envelopes,
    malformed_requests_get_clear_4xx,
    an_unreadable_row_is_a_500_that_names_nothing,
);
