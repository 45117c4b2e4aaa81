//! `X-Request-Id` over a real connection: echoed when the caller sends a sane one, generated
//! otherwise, on successes and errors alike. Every answer seen here also carries
//! `X-Content-Type-Options: nosniff`.
//!
//! Runs on SQLite only: the header does not depend on the database.

use reqwest::header::HeaderValue;
use reqwest::{Method, StatusCode};
use voiceplane_http::MAX_REQUEST_ID_LEN;
use voiceplane_suite::{ApiCaller, TestContext, TestServer, http_client};

fn is_generated(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn request_id(res: &reqwest::Response) -> String {
    assert_eq!(res.headers()["x-content-type-options"], "nosniff");
    let all: Vec<_> = res.headers().get_all("x-request-id").iter().collect();
    assert_eq!(all.len(), 1, "exactly one X-Request-Id");
    all[0].to_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_carries_a_request_id() {
    let ctx = TestContext::sqlite().await;
    let org = ctx.bootstrap("Request ids").await;
    let server = TestServer::start(&ctx).await;
    let client = http_client();

    // Echoed, on a success and on errors: no route, no credentials, a bad body.
    let caller = ApiCaller::new(&server, &org.organization_id, &org.api_key);
    let res = caller
        .request(Method::GET, "/api/api-keys")
        .header("X-Request-Id", "client-abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(request_id(&res), "client-abc-123");
    let res = caller
        .request(Method::POST, "/api/tools")
        .header("X-Request-Id", "req-7f3a:trace/01~ABC")
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert_eq!(request_id(&res), "req-7f3a:trace/01~ABC");
    for (path, status) in [
        ("/api/calls", StatusCode::UNAUTHORIZED),
        ("/nope", StatusCode::NOT_FOUND),
    ] {
        let res = client
            .get(server.url(path))
            .header("X-Request-Id", "client-err-9")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), status, "{path}");
        assert_eq!(request_id(&res), "client-err-9", "{path}");
    }

    // Generated when absent, fresh each time.
    let first = request_id(&client.get(server.url("/healthz")).send().await.unwrap());
    let second = request_id(&client.get(server.url("/healthz")).send().await.unwrap());
    assert!(is_generated(&first), "{first}");
    assert!(is_generated(&second), "{second}");
    assert_ne!(first, second);

    // Kept up to the longest allowed; replaced when not sane: too long, empty, or not
    // visible ASCII.
    let longest = "x".repeat(MAX_REQUEST_ID_LEN);
    let res = client
        .get(server.url("/healthz"))
        .header("X-Request-Id", &longest)
        .send()
        .await
        .unwrap();
    assert_eq!(request_id(&res), longest);
    for sent in [
        HeaderValue::from_str(&"x".repeat(MAX_REQUEST_ID_LEN + 1)).unwrap(),
        HeaderValue::from_static(""),
        HeaderValue::from_static("has space"),
        HeaderValue::from_static("tab\there"),
        HeaderValue::from_bytes("caf\u{e9}".as_bytes()).unwrap(),
    ] {
        let res = client
            .get(server.url("/healthz"))
            .header("X-Request-Id", sent.clone())
            .send()
            .await
            .unwrap();
        let id = request_id(&res);
        assert!(is_generated(&id), "{sent:?} gave {id}");
    }
    // Sent twice: neither is trusted.
    let res = client
        .get(server.url("/healthz"))
        .header("X-Request-Id", "one")
        .header("X-Request-Id", "two")
        .send()
        .await
        .unwrap();
    let id = request_id(&res);
    assert!(is_generated(&id), "{id}");

    server.stop().await;
    ctx.cleanup().await;
}
