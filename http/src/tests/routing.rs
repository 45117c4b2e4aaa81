//! Health and readiness, routing errors, and `Api` as a tower service.

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use serde_json::json;

use super::{Fixture, empty, send};

#[tokio::test]
async fn health_endpoints_need_no_auth() {
    let fx = Fixture::new().await;
    let (s, h, v) = send(&fx.api, empty(Request::get("/healthz"))).await;
    assert_eq!((s, v), (StatusCode::OK, json!({"status": "ok"})));
    assert!(h.get(header::CACHE_CONTROL).is_none());

    let (s, _, v) = send(&fx.api, empty(Request::get("/readyz"))).await;
    assert_eq!((s, v), (StatusCode::OK, json!({"status": "ready"})));

    // A closed pool is a database that no longer answers.
    fx.repo.connection().close_by_ref().await.unwrap();
    let (s, _, v) = send(&fx.api, empty(Request::get("/readyz"))).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(v, json!({"detail": "the database is unavailable"}));

    // Liveness does not depend on the database.
    let (s, _, v) = send(&fx.api, empty(Request::get("/healthz"))).await;
    assert_eq!((s, v), (StatusCode::OK, json!({"status": "ok"})));
}

#[tokio::test]
async fn routing_errors() {
    let fx = Fixture::new().await;
    let (s, h, v) = send(&fx.api, empty(Request::get("/nope?x=secret"))).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v, json!({"detail": "no route for GET /nope"}));
    assert!(h.get(header::CACHE_CONTROL).is_none());

    let (s, h, v) = send(&fx.api, empty(Request::get("/api/nope"))).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v["detail"], "no route for GET /api/nope");
    assert_eq!(h[header::CACHE_CONTROL], "no-store");

    let (s, h, v) = send(&fx.api, empty(Request::delete("/api/tools"))).await;
    assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(h[header::ALLOW], "POST, GET, HEAD");
    assert!(v["detail"].as_str().unwrap().contains("DELETE"));
}

/// `HEAD` answers through `Api::handle` itself, so that a server mounting the adapter gets it
/// too: the GET's status and headers, `Content-Length` included, and no body.
#[tokio::test]
async fn head_is_get_without_the_body() {
    let fx = Fixture::new().await;
    for path in [
        "/api/tools",
        "/api/organization/settings",
        "/api/openapi.json",
    ] {
        let get = fx.api.handle(empty(fx.authed(Method::GET, path))).await;
        let head = fx.api.handle(empty(fx.authed(Method::HEAD, path))).await;
        assert_eq!(head.status(), get.status(), "{path}");
        let get_etag = get.headers().get(header::ETAG).cloned();
        assert_eq!(
            head.headers().get(header::ETAG).cloned(),
            get_etag,
            "{path}"
        );
        let get_len = get.into_body().collect().await.unwrap().to_bytes().len();
        assert_eq!(
            head.headers()[header::CONTENT_LENGTH],
            get_len.to_string().as_str(),
            "{path}"
        );
        assert!(
            head.into_body()
                .collect()
                .await
                .unwrap()
                .to_bytes()
                .is_empty()
        );
    }
    let missing = fx
        .api
        .handle(empty(
            fx.authed(Method::HEAD, "/api/tools/tool_0000000000000000"),
        ))
        .await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(
        missing
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .is_empty()
    );
}

#[tokio::test]
async fn works_as_a_tower_service() {
    use tower_service::Service as _;
    let mut svc = Fixture::new().await.api;
    std::future::poll_fn(|cx| {
        tower_service::Service::<Request<Full<Bytes>>>::poll_ready(&mut svc, cx)
    })
    .await
    .unwrap();
    let res = svc.call(empty(Request::get("/healthz"))).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);

    fn assert_mountable<S: Clone + Send + Sync + 'static>(_: &S) {}
    assert_mountable(&svc);
}
