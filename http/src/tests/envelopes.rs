//! Success envelopes (lists with pagination, creations with 201, the bare member and
//! invitation lists), query-string errors, and the not-found and internal-error bodies.

use http::{Method, StatusCode, header};
use sea_orm::ConnectionTrait;
use serde_json::json;

use super::{Fixture, empty, from_json, send, with_json};

#[tokio::test]
async fn lists_and_envelopes() {
    let fx = Fixture::new().await;
    let (s, h, v) = send(&fx.api, empty(fx.authed(Method::GET, "/api/tools?limit=5"))).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(h[header::CACHE_CONTROL], "no-store");
    assert_eq!(
        v,
        json!({"success": true, "data": [], "pagination":
            {"next_cursor": null, "has_more": false, "page_size": 0, "total_count": 0}})
    );

    // Tools count the whole collection, not the page.
    for i in 0..7 {
        let tool = from_json(json!({
            "tool_name": format!("tool_{i}"),
            "tool_description": "looks things up",
            "url": "https://example.com/hook",
        }));
        fx.service().tool_create(&fx.admin, tool).await.unwrap();
    }
    let (s, _, v) = send(&fx.api, empty(fx.authed(Method::GET, "/api/tools?limit=5"))).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["success"], true);
    assert_eq!(v["data"].as_array().unwrap().len(), 5);
    let pagination = &v["pagination"];
    assert!(pagination["next_cursor"].is_string(), "{pagination}");
    assert_eq!(
        (
            &pagination["has_more"],
            &pagination["page_size"],
            &pagination["total_count"]
        ),
        (&json!(true), &json!(5), &json!(7))
    );

    let (s, _, v) = send(&fx.api, empty(fx.authed(Method::GET, "/api/calls"))).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        v["pagination"],
        json!({"next_cursor": null, "has_more": false, "page_size": 0})
    );

    let (s, _, v) = send(&fx.api, empty(fx.authed(Method::GET, "/api/api-keys"))).await;
    assert_eq!((s, v["success"].clone()), (StatusCode::OK, json!(true)));

    let (s, _, v) = send(
        &fx.api,
        empty(fx.authed(Method::GET, "/api/auth/organizations/invitations")),
    )
    .await;
    assert_eq!((s, v), (StatusCode::OK, json!({"invitations": []})));

    let (s, _, v) = send(
        &fx.api,
        empty(fx.authed(Method::GET, "/api/auth/organizations/members")),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert!(v.get("success").is_none());
    let members = fx.service().member_list(&fx.admin).await.unwrap();
    assert_eq!(v["members"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["members"][0]["membership_id"], members[0].membership_id);
    assert_eq!(v["members"][0]["user_id"], fx.admin.user_id);
    assert_eq!(v["members"][0]["email"], "admin@example.com");
}

#[tokio::test]
async fn query_errors() {
    let fx = Fixture::new().await;
    let get = |uri: &str| empty(fx.authed(Method::GET, uri));
    let (s, _, v) = send(&fx.api, get("/api/calls?limit=abc")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(
        v,
        json!({"detail": "limit must be an integer between 1 and 100"})
    );
    let (s, _, _) = send(&fx.api, get("/api/calls?limit=101")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _, _) = send(&fx.api, get("/api/calls?cursor=%%%")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _, _) = send(&fx.api, get("/api/calls?foo=bar")).await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test]
async fn creates_answer_201_with_the_envelope() {
    let fx = Fixture::new().await;
    let req = with_json(
        fx.authed(Method::POST, "/api/auth/organizations/invitations"),
        r#"{"email": "New@Example.com", "role": "user"}"#,
    );
    let (s, _, v) = send(&fx.api, req).await;
    assert_eq!(s, StatusCode::CREATED);
    assert_eq!(v["success"], true);
    assert!(v["data"]["invite_id"].as_str().unwrap().starts_with("inv_"));

    let req = with_json(
        fx.authed(Method::POST, "/api/api-keys"),
        r#"{"name": "ci", "role": "agent_manager"}"#,
    );
    let (s, _, v) = send(&fx.api, req).await;
    assert_eq!(s, StatusCode::CREATED);
    assert!(v["data"]["api_key"].as_str().unwrap().starts_with("vpk_"));
    assert!(v["data"]["key_id"].as_str().unwrap().starts_with("apikey_"));

    let req = with_json(
        fx.authed(Method::POST, "/api/knowledge-base"),
        r#"{"name": "faq", "text": "hello"}"#,
    );
    let (s, _, v) = send(&fx.api, req).await;
    assert_eq!(s, StatusCode::CREATED);
    assert_eq!(v["data"]["type"], "text");

    // What was created is stored: the pending invitation is listed.
    let (_, _, v) = send(
        &fx.api,
        empty(fx.authed(Method::GET, "/api/auth/organizations/invitations")),
    )
    .await;
    assert_eq!(v["invitations"][0]["email"], "new@example.com", "{v}");
}

#[tokio::test]
async fn not_found_and_internal_errors() {
    let fx = Fixture::new().await;
    let (s, _, v) = send(
        &fx.api,
        empty(fx.authed(Method::GET, "/api/agents/agent_0123456789abcdef")),
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(
        v,
        json!({"detail": "agent agent_0123456789abcdef not found"})
    );

    let (s, _, _) = send(
        &fx.api,
        empty(fx.authed(Method::GET, "/api/agents/nonsense")),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);

    // A stored agent whose row the repository cannot read is an internal error, and what the
    // repository says about it (here a value that looks like a database URL with its
    // password) stays in the log.
    let agent = from_json(json!({
        "agent_name": "Receptionist",
        "language": "en",
        "stt_provider": "stt",
        "tts_provider": "provider_one",
        "tts_voice": "voice",
        "llm_provider": "llm",
        "llm_model": "model",
    }));
    let agent = fx.service().agent_create(&fx.admin, agent).await.unwrap();
    let path = format!("/api/agents/{}", agent.agent_id);
    let (s, _, _) = send(&fx.api, empty(fx.authed(Method::GET, &path))).await;
    assert_eq!(s, StatusCode::OK, "the agent reads before it is corrupted");
    fx.repo
        .connection()
        .execute_unprepared(&format!(
            "UPDATE agents SET tts_provider = 'postgres://voice:hunter2@db/voice' \
             WHERE agent_id = '{}'",
            agent.agent_id
        ))
        .await
        .unwrap();
    let (s, _, v) = send(&fx.api, empty(fx.authed(Method::GET, &path))).await;
    assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(v, json!({"detail": "internal server error"}));
}
