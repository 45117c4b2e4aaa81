//! Request-body errors: 415 for the wrong media type, 400 for missing, malformed or unknown
//! JSON and for a multipart body without its file, 413 above the configured limit.

use bytes::Bytes;
use http::{Method, StatusCode, header};
use http_body_util::Full;
use serde_json::json;

use super::{Fixture, empty, send, with_json};
use crate::HttpConfig;

#[tokio::test]
async fn body_errors() {
    let fx = Fixture::new().await;
    let api = &fx.api;
    // No Content-Type.
    let req = fx
        .authed(Method::POST, "/api/tools")
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap();
    let (s, _, v) = send(api, req).await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(
        v,
        json!({"detail": "Content-Type must be application/json"})
    );

    // The knowledge base takes JSON or multipart, and says so.
    let req = fx
        .authed(Method::POST, "/api/knowledge-base")
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Full::new(Bytes::from_static(b"hello")))
        .unwrap();
    let (s, _, v) = send(api, req).await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("multipart/form-data")
    );
    let req = fx
        .authed(Method::POST, "/api/knowledge-base")
        .header(header::CONTENT_TYPE, "multipart/form-data; boundary=x")
        .body(Full::new(Bytes::from_static(b"--x--\r\n")))
        .unwrap();
    let (s, _, v) = send(api, req).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(v["detail"].as_str().unwrap().contains("`file`"), "{v}");

    let (s, _, v) = send(api, with_json(fx.authed(Method::POST, "/api/tools"), "")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(v, json!({"detail": "request body is required"}));

    let (s, _, v) = send(api, with_json(fx.authed(Method::POST, "/api/tools"), "{")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .starts_with("request body is not valid JSON: ")
    );

    let (s, _, v) = send(
        api,
        with_json(
            fx.authed(Method::PATCH, "/api/calls/call_abc"),
            r#"{"bogus": 1}"#,
        ),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("unknown field `bogus`")
    );

    let small = api.clone().with_config(HttpConfig {
        max_body_bytes: 16,
        ..Default::default()
    });
    let body = format!(r#"{{"name": "{}", "text": "x"}}"#, "n".repeat(64));
    let (s, _, v) = send(
        &small,
        with_json(fx.authed(Method::POST, "/api/knowledge-base"), &body),
    )
    .await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        v,
        json!({"detail": "request body exceeds the limit of 16 bytes"})
    );
    let (s, _, v) = send(api, empty(fx.authed(Method::GET, "/api/knowledge-base"))).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["data"], json!([]), "the refused requests stored nothing");
}
