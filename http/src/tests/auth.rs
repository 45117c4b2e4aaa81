//! Authentication and authorization: missing, malformed and unknown credentials, the wrong
//! organization, a role too low, and authentication before any body check.

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::Full;
use serde_json::json;

use super::{Fixture, empty, send};

#[tokio::test]
async fn authentication_failures() {
    let fx = Fixture::new().await;
    let (s, h, v) = send(&fx.api, empty(Request::get("/api/tools"))).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("missing credentials")
    );
    assert_eq!(h[header::CACHE_CONTROL], "no-store");

    let req = Request::get("/api/tools")
        .header(header::AUTHORIZATION, "Basic dXNlcjpwYXNz")
        .header("x-organization-id", &fx.org);
    let (s, _, v) = send(&fx.api, empty(req)).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(
        v,
        json!({"detail": "Authorization header must use the Bearer scheme"})
    );

    let unknown = "vpk_ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ";
    let req = fx.with_key(unknown, Method::GET, "/api/tools");
    let (s, _, v) = send(&fx.api, empty(req)).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert!(
        !v.to_string().contains(unknown),
        "credentials are not echoed"
    );

    // The admin key of one organization, sent for another: unknown, or existing.
    let req = Request::get("/api/tools")
        .header("x-api-key", &fx.admin_key)
        .header("x-organization-id", "org_fedcba9876543210");
    let (s, _, _) = send(&fx.api, empty(req)).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let other = fx
        .service()
        .organization_bootstrap(voiceplane_core::BootstrapInput {
            org_name: "Other".to_owned(),
            admin_email: "other@example.com".to_owned(),
            admin_name: None,
        })
        .await
        .unwrap();
    let req = Request::get("/api/tools")
        .header("x-api-key", &fx.admin_key)
        .header("x-organization-id", &other.organization_id);
    let (s, _, _) = send(&fx.api, empty(req)).await;
    assert_eq!(s, StatusCode::FORBIDDEN);

    let req = Request::get("/api/tools").header("x-api-key", &fx.admin_key);
    let (s, _, _) = send(&fx.api, empty(req)).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "X-Organization-Id is required");
}

#[tokio::test]
async fn authentication_comes_before_body_checks() {
    let fx = Fixture::new().await;
    let req = Request::post("/api/agents").body(Full::default()).unwrap();
    let (s, _, _) = send(&fx.api, req).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn forbidden_for_a_lower_role() {
    let fx = Fixture::new().await;
    let user_key = fx.key_with_role("user").await;
    let req = fx
        .with_key(&user_key, Method::POST, "/api/api-keys")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from_static(
            br#"{"name": "x", "role": "admin"}"#,
        )))
        .unwrap();
    let (s, _, _) = send(&fx.api, req).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
}
