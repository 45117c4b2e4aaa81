//! The suppression (do-not-call) list (DESIGN §19): put (201 new, 200 changed), list and its
//! filter, delete, permissions, events, and bad input.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_suite::*;

async fn the_suppression_list_is_kept(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Dnc").await;
    let resp = c
        .request(Method::POST, "/api/suppressions")
        .json(&json!({"phone_number": "+14155550100", "reason": "asked not to be called"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    assert_eq!(
        resp.headers().get("location").unwrap(),
        "suppressions/%2B14155550100"
    );
    let (_, created) = read_json(resp).await;
    let entry = &created["data"];
    assert!(
        entry["suppression_id"]
            .as_str()
            .unwrap()
            .starts_with("sup_")
    );
    assert_eq!(entry["reason"], "asked not to be called");
    assert_eq!(entry["expires_at"], Value::Null);

    // Again: the same entry, changed.
    let (status, again) = c
        .post(
            "/api/suppressions",
            json!({"phone_number": "+14155550100", "reason": "complaint",
                   "expires_at": "2099-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["data"]["suppression_id"], entry["suppression_id"]);
    assert_eq!(again["data"]["reason"], "complaint");
    assert!(again["data"]["expires_at"].is_string());
    c.create("/api/suppressions", json!({"phone_number": "+14155550101"}))
        .await;

    let (_, all) = c.get("/api/suppressions?limit=1").await;
    assert_eq!(all["data"].as_array().unwrap().len(), 1);
    assert_eq!(all["data"][0]["phone_number"], "+14155550101");
    let cursor = all["pagination"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, rest) = c
        .get(&format!("/api/suppressions?limit=1&cursor={cursor}"))
        .await;
    assert_eq!(rest["data"][0]["phone_number"], "+14155550100");
    let (_, one) = c.get("/api/suppressions?phone_number=%2B14155550100").await;
    assert_eq!(one["data"].as_array().unwrap().len(), 1);

    for (body, needle) in [
        (json!({"phone_number": "0612"}), "phone_number"),
        (
            json!({"phone_number": "+14155550102", "expires_at": "2020-01-01T00:00:00Z"}),
            "expires_at",
        ),
        (
            json!({"phone_number": "+14155550102", "reason": "x".repeat(501)}),
            "reason",
        ),
    ] {
        let (status, v) = c.post("/api/suppressions", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
        assert!(v["detail"].as_str().unwrap().contains(needle), "{v}");
    }

    // Readers read; only agent managers and admins write.
    let (key, _) = ctx
        .key_with_role(
            &ctx.actor(&c.org.clone().unwrap(), c.key.as_deref().unwrap())
                .await,
            voiceplane_core::role::Role::User,
        )
        .await;
    let reader = c.with_key(&key.api_key);
    assert_eq!(reader.get("/api/suppressions").await.0, StatusCode::OK);
    let (status, _) = reader
        .post("/api/suppressions", json!({"phone_number": "+14155550103"}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let (status, deleted) = c
        .send(Method::DELETE, "/api/suppressions/%2B14155550100", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{deleted}");
    assert_eq!(deleted["data"]["phone_number"], "+14155550100");
    let (status, _) = c
        .send(Method::DELETE, "/api/suppressions/%2B14155550100", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (_, events) = c
        .get("/api/events?type=suppression.created&type=suppression.deleted")
        .await;
    let types: Vec<&str> = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "suppression.deleted",
            "suppression.created",
            "suppression.created",
            "suppression.created"
        ]
    );
    server.stop().await;
}

db_tests!(the_suppression_list_is_kept);
