//! The stack's decisions request by request, through the real adapter on an in-memory
//! database: CORS on and off, preflights allowed and refused, security headers, and which
//! responses are compressed. (Compressed bytes, h2c and audio over a real listener are in
//! `bin/tests/http_stack.rs`.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use voiceplane_http::Api;

use bytes::Bytes;
use http_body_util::{Empty, Full};
use voiceplane_storage::{DatabaseOptions, SeaRepository};

use super::*;

async fn api() -> Api {
    let repo = SeaRepository::connect(&DatabaseOptions::new("sqlite::memory:"))
        .await
        .unwrap();
    repo.migrate().await.unwrap();
    Api::new(Arc::new(voiceplane_core::Service::new(Arc::new(repo))))
}

fn settings(origins: Option<&str>) -> HttpSettings {
    HttpSettings {
        cors_allowed_origins: origins.map(str::to_owned),
        ..HttpSettings::default()
    }
}

async fn send(
    origins: Option<&str>,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
) -> Response<StackBody> {
    let mut stack = layered::<_, Empty<Bytes>>(api().await, &settings(origins)).unwrap();
    let mut req = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    stack.call(req.body(Empty::new()).unwrap()).await.unwrap()
}

fn header<'a, B>(response: &'a Response<B>, name: &str) -> Option<&'a str> {
    response.headers().get(name).map(|v| v.to_str().unwrap())
}

const PREFLIGHT: [(&str, &str); 3] = [
    ("origin", "https://app.example.com"),
    ("access-control-request-method", "PATCH"),
    (
        "access-control-request-headers",
        "x-api-key,x-organization-id,if-match",
    ),
];

#[tokio::test]
async fn an_allowed_preflight_gets_204_with_the_rules() {
    let origins = Some("https://app.example.com, http://localhost:3000");
    let r = send(origins, Method::OPTIONS, "/api/agents/agent_x", &PREFLIGHT).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        header(&r, "access-control-allow-origin"),
        Some("https://app.example.com")
    );
    assert_eq!(header(&r, "access-control-allow-credentials"), Some("true"));
    assert_eq!(
        header(&r, "access-control-allow-methods"),
        Some("GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS")
    );
    assert_eq!(
        header(&r, "access-control-allow-headers"),
        Some(CORS_ALLOWED_HEADERS.join(",").as_str())
    );
    assert_eq!(header(&r, "access-control-max-age"), Some("7200"));
    assert!(header(&r, "vary").unwrap().contains("origin"));
    // The security headers are there too.
    assert_eq!(header(&r, "x-content-type-options"), Some("nosniff"));
}

#[tokio::test]
async fn a_preflight_from_another_origin_gets_no_allow_origin() {
    let mut headers = PREFLIGHT;
    headers[0].1 = "https://evil.example.net";
    let r = send(
        Some("https://app.example.com"),
        Method::OPTIONS,
        "/api/agents",
        &headers,
    )
    .await;
    assert_eq!(header(&r, "access-control-allow-origin"), None);
    assert_eq!(header(&r, "access-control-allow-credentials"), Some("true"));
}

#[tokio::test]
async fn any_origin_is_star_without_credentials() {
    let r = send(Some("*"), Method::OPTIONS, "/api/agents", &PREFLIGHT).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(header(&r, "access-control-allow-origin"), Some("*"));
    assert_eq!(header(&r, "access-control-allow-credentials"), None);
}

#[tokio::test]
async fn a_cross_origin_request_can_read_the_exposed_headers() {
    let origin = [("origin", "https://app.example.com")];
    let r = send(
        Some("https://app.example.com"),
        Method::GET,
        "/healthz",
        &origin,
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        header(&r, "access-control-allow-origin"),
        Some("https://app.example.com")
    );
    assert_eq!(
        header(&r, "access-control-expose-headers"),
        Some(CORS_EXPOSED_HEADERS.join(",").as_str())
    );
    assert!(header(&r, "x-request-id").is_some());
}

#[tokio::test]
async fn other_options_requests_and_unconfigured_cors_reach_the_adapter() {
    // Not a preflight (no Access-Control-Request-Method): the adapter's 405.
    let r = send(
        Some("https://app.example.com"),
        Method::OPTIONS,
        "/api/agents",
        &[("origin", "https://app.example.com")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(header(&r, "allow").is_some());

    // Without `http.cors_allowed_origins`: no CORS header at all, even on a preflight.
    let r = send(None, Method::OPTIONS, "/api/agents", &PREFLIGHT).await;
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(
        r.headers()
            .keys()
            .all(|k| !k.as_str().starts_with("access-control-")),
        "{:?}",
        r.headers()
    );
    let r = send(None, Method::GET, "/healthz", &PREFLIGHT[..1]).await;
    assert_eq!(header(&r, "access-control-allow-origin"), None);
    assert_eq!(header(&r, "vary"), None);
}

#[tokio::test]
async fn every_response_carries_the_security_headers() {
    for path in ["/healthz", "/api/agents", "/nowhere"] {
        let r = send(None, Method::GET, path, &[]).await;
        assert_eq!(
            header(&r, "x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(header(&r, "x-frame-options"), Some("DENY"), "{path}");
        assert_eq!(header(&r, "referrer-policy"), Some("no-referrer"), "{path}");
        assert_eq!(
            header(&r, "content-security-policy"),
            Some(CONTENT_SECURITY_POLICY),
            "{path}"
        );
    }
}

fn response(status: u16, content_type: &str, len: usize) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(Full::from(vec![b'x'; len]))
        .unwrap()
}

#[test]
fn only_json_and_text_of_some_size_are_compressed() {
    let compress = |r: Response<Full<Bytes>>| JsonOrText.should_compress(&r);
    assert!(compress(response(200, "application/json", 2000)));
    assert!(compress(response(
        404,
        "application/json; charset=utf-8",
        1024
    )));
    assert!(compress(response(200, "application/problem+json", 5000)));
    assert!(compress(response(200, "text/plain", 5000)));
    assert!(compress(response(200, "Text/CSV", 5000)));
    assert!(!compress(response(200, "application/json", 1023)), "small");
    assert!(
        !compress(response(206, "application/json", 5000)),
        "a range"
    );
    for kind in [
        "audio/wav",
        "audio/mpeg",
        "application/octet-stream",
        "application/gzip",
        "image/png",
        "text/event-stream",
    ] {
        assert!(!compress(response(200, kind, 50_000)), "{kind}");
    }
    let mut head = response(200, "application/json", 0);
    head.headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from_static("4096"));
    assert!(
        compress(head),
        "a HEAD answer is judged by its declared length"
    );
    let mut no_type = response(200, "x", 5000);
    no_type.headers_mut().remove(header::CONTENT_TYPE);
    assert!(!compress(no_type));
}

#[test]
fn an_encoded_or_partial_body_is_passed_as_it_is() {
    let finished = |name: HeaderName, value: &'static str| {
        let mut response = response(200, "application/json", 5000);
        response
            .headers_mut()
            .insert(name, HeaderValue::from_static(value));
        Seen::of(response.headers()).compress(&response)
    };
    assert!(!finished(header::CONTENT_ENCODING, "gzip"));
    assert!(!finished(header::CONTENT_RANGE, "bytes 0-4999/9000"));
    assert!(
        finished(header::CACHE_CONTROL, "no-store"),
        "another header"
    );
}

#[test]
fn audio_gets_no_content_security_policy() {
    let with = |content_type: &str| {
        let mut response = response(200, content_type, 0);
        secure(&mut response);
        response
            .headers()
            .get(header::CONTENT_SECURITY_POLICY)
            .cloned()
    };
    assert_eq!(
        with("application/json"),
        Some(HeaderValue::from_static(CONTENT_SECURITY_POLICY))
    );
    assert_eq!(with("audio/wav"), None);
    assert_eq!(with("Audio/MPEG"), None);
    // Told by its first bytes, whatever bytes (not UTF-8 here) its parameters hold.
    let mut named = response(200, "audio/wav", 0);
    named.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_bytes(b"audio/wav; title=caf\xe9").unwrap(),
    );
    secure(&mut named);
    assert_eq!(named.headers().get(header::CONTENT_SECURITY_POLICY), None);
}

#[test]
fn security_headers_a_response_sets_are_kept() {
    let mut response = response(200, "text/html", 0);
    let own = "default-src 'self'";
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(own),
    );
    response.headers_mut().insert(
        header::X_FRAME_OPTIONS,
        HeaderValue::from_static("SAMEORIGIN"),
    );
    secure(&mut response);
    let headers = response.headers();
    assert_eq!(headers[header::CONTENT_SECURITY_POLICY], own);
    assert_eq!(headers[header::X_FRAME_OPTIONS], "SAMEORIGIN");
    assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    assert_eq!(headers[header::REFERRER_POLICY], "no-referrer");
    assert_eq!(headers.get_all(header::X_FRAME_OPTIONS).iter().count(), 1);
}
