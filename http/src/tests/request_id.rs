//! `X-Request-Id`: a sane caller id is echoed on every response, success or error; a missing
//! or unacceptable one is replaced by a fresh generated id. Every response seen here also
//! carries `X-Content-Type-Options: nosniff`.

use bytes::Bytes;
use http::{HeaderValue, Method, Request, StatusCode};
use http_body_util::Full;

use super::{Fixture, empty, with_json};
use crate::{Api, MAX_REQUEST_ID_LEN, REQUEST_ID_HEADER};

async fn request_id(api: &Api, req: Request<Full<Bytes>>) -> (StatusCode, Option<String>) {
    let res = api.handle(req).await;
    assert_eq!(
        res.headers()
            .get(http::header::X_CONTENT_TYPE_OPTIONS)
            .map(|v| v.as_bytes()),
        Some(&b"nosniff"[..]),
        "{}",
        res.status()
    );
    let id = res.headers().get(REQUEST_ID_HEADER).map(|v| {
        assert_eq!(
            res.headers().get_all(REQUEST_ID_HEADER).iter().count(),
            1,
            "exactly one X-Request-Id"
        );
        v.to_str().unwrap().to_owned()
    });
    (res.status(), id)
}

fn is_generated(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[tokio::test]
async fn a_sane_caller_id_is_echoed_on_success_and_error() {
    let fx = Fixture::new().await;
    let api = &fx.api;
    let sent = "req-7f3a:trace/01~ABC";
    let (s, id) = request_id(
        api,
        empty(Request::get("/healthz").header("x-request-id", sent)),
    )
    .await;
    assert_eq!((s, id.as_deref()), (StatusCode::OK, Some(sent)));

    // Errors carry it too: no route, no credentials, bad body.
    let (s, id) = request_id(
        api,
        empty(Request::get("/nope").header("X-Request-Id", sent)),
    )
    .await;
    assert_eq!((s, id.as_deref()), (StatusCode::NOT_FOUND, Some(sent)));
    let (s, id) = request_id(
        api,
        empty(Request::get("/api/calls").header("x-request-id", sent)),
    )
    .await;
    assert_eq!((s, id.as_deref()), (StatusCode::UNAUTHORIZED, Some(sent)));
    let (s, id) = request_id(
        api,
        with_json(
            fx.authed(Method::POST, "/api/tools")
                .header("x-request-id", sent),
            "{",
        ),
    )
    .await;
    assert_eq!((s, id.as_deref()), (StatusCode::BAD_REQUEST, Some(sent)));

    let longest = "x".repeat(MAX_REQUEST_ID_LEN);
    let (_, id) = request_id(
        api,
        empty(Request::get("/healthz").header("x-request-id", &longest)),
    )
    .await;
    assert_eq!(id.as_deref(), Some(longest.as_str()));
}

#[tokio::test]
async fn a_missing_id_is_generated_fresh_for_each_request() {
    let fx = Fixture::new().await;
    let (_, first) = request_id(&fx.api, empty(Request::get("/healthz"))).await;
    let (_, second) = request_id(&fx.api, empty(Request::get("/nope"))).await;
    let (first, second) = (first.unwrap(), second.unwrap());
    assert!(is_generated(&first), "{first}");
    assert!(is_generated(&second), "{second}");
    assert_ne!(first, second);
}

#[tokio::test]
async fn an_unacceptable_id_is_replaced() {
    let fx = Fixture::new().await;
    let too_long = "x".repeat(MAX_REQUEST_ID_LEN + 1);
    let with_space = "abc def";
    let non_ascii = HeaderValue::from_bytes("caf\u{e9}".as_bytes()).unwrap();
    for value in [
        HeaderValue::from_str(&too_long).unwrap(),
        HeaderValue::from_static(""),
        HeaderValue::from_static(with_space),
        HeaderValue::from_static("tab\there"),
        non_ascii,
    ] {
        let (_, id) = request_id(
            &fx.api,
            empty(Request::get("/healthz").header("x-request-id", value.clone())),
        )
        .await;
        let id = id.unwrap();
        assert!(is_generated(&id), "{value:?} gave {id}");
    }

    // Sent twice: neither is trusted.
    let (_, id) = request_id(
        &fx.api,
        empty(
            Request::get("/healthz")
                .header("x-request-id", "one")
                .header("x-request-id", "two"),
        ),
    )
    .await;
    assert!(is_generated(&id.unwrap()));
}
