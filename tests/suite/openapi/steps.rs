//! Steps of the scenario (`scenario.rs`) kept apart to keep it short: the voice searches,
//! the views of one API key and one invitation, and conditional requests (`ETag`,
//! `If-None-Match` → 304, `If-Match` → 412) checked against the document like every answer.

use reqwest::Method as M;
use serde_json::json;

use super::checker::{Body, Checker};

/// The voice searches and the shared library, with an upstream failure (502) and an unknown
/// provider (400).
pub(super) async fn voices(c: &Checker) {
    c.expect(
        M::GET,
        "/api/voices/search?provider=provider_one&gender=male",
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::GET,
        "/api/voices/search?provider=provider_two&query=calm",
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::GET,
        "/api/voices/search?provider=provider_one&query=fail",
        Body::None,
        502,
    )
    .await;
    c.expect(
        M::GET,
        "/api/voices/search?provider=provider_three",
        Body::None,
        400,
    )
    .await;
    c.expect(
        M::GET,
        "/api/voices/provider_two/library?use_cases=news&use_cases=audiobook&page=0&page_size=10",
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::POST,
        "/api/voices/provider_two/library/add",
        Body::Json(json!({"public_owner_id": "own-1", "voice_id": "sh-1", "name": "Deep"})),
        200,
    )
    .await;
}

/// `GET /api/api-keys/{key_id}` (never the secret), a 304 for its own tag, and a DELETE whose
/// `If-Match` is stale (412, the key unchanged).
pub(super) async fn api_key_view_and_conditions(c: &Checker, key_id: &str) {
    let path = format!("/api/api-keys/{key_id}");
    let viewed = c.send(M::GET, &path, Body::None).await;
    assert_eq!(viewed.status.as_u16(), 200, "{}", viewed.json);
    assert!(viewed.json["data"].get("api_key").is_none());
    let etag = viewed
        .headers
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .expect("a view carries its ETag")
        .to_owned();
    let unchanged = c
        .send_with(M::GET, &path, Body::None, &[("if-none-match", &etag)])
        .await;
    assert_eq!(unchanged.status.as_u16(), 304);
    assert!(unchanged.bytes.is_empty());
    let stale = c
        .send_with(M::DELETE, &path, Body::None, &[("if-match", "\"stale\"")])
        .await;
    assert_eq!(stale.status.as_u16(), 412, "{}", stale.json);
    let after = c.expect(M::GET, &path, Body::None, 200).await;
    assert_eq!(after, viewed.json, "a failed precondition changes nothing");
}

/// `GET /api/auth/organizations/invitations/{invite_id}`, whatever the invitation's status.
pub(super) async fn invitation_view(c: &Checker, invite_id: &str) {
    let path = format!("/api/auth/organizations/invitations/{invite_id}");
    let invitation = c.expect(M::GET, &path, Body::None, 200).await;
    assert_eq!(invitation["data"]["invite_id"], invite_id);
}
