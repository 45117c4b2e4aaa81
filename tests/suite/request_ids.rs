//! `X-Request-Id` over a real connection: echoed when the caller sends a sane one, generated
//! otherwise, on successes and errors alike.
//!
//! Runs on SQLite only: the header does not depend on the database.

use reqwest::{Method, StatusCode};
use voiceplane_suite::{ApiCaller, TestContext, TestServer, http_client};

fn is_generated(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn request_id(res: &reqwest::Response) -> String {
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

    // Echoed, on a success and on errors.
    let res = ApiCaller::new(&server, &org.organization_id, &org.api_key)
        .request(Method::GET, "/api/api-keys")
        .header("X-Request-Id", "client-abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(request_id(&res), "client-abc-123");
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

    // Replaced when not sane: too long, or not visible ASCII.
    for sent in ["x".repeat(129), "has space".to_owned()] {
        let res = client
            .get(server.url("/healthz"))
            .header("X-Request-Id", &sent)
            .send()
            .await
            .unwrap();
        let id = request_id(&res);
        assert!(is_generated(&id), "{sent:?} gave {id}");
    }

    server.stop().await;
    ctx.cleanup().await;
}
