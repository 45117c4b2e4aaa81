//! `/healthz` and `/readyz`: answered without credentials, and a database that is down is a
//! 503 with a plain detail from readiness and from the API, while liveness still answers.

use reqwest::StatusCode;
use serde_json::json;
use voiceplane_suite::*;

async fn health_endpoints_need_no_credentials(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let http = http_client();
    let resp = http.get(server.url("/healthz")).send().await.unwrap();
    // Probes are not API answers: nothing forbids caching them.
    assert!(resp.headers().get("cache-control").is_none());
    let (status, v) = read_json(resp).await;
    assert_eq!((status, v), (StatusCode::OK, json!({"status": "ok"})));
    let (status, v) = read_json(http.get(server.url("/readyz")).send().await.unwrap()).await;
    assert_eq!((status, v), (StatusCode::OK, json!({"status": "ready"})));
    server.stop().await;
}

async fn database_down_is_503_with_a_plain_detail(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    // Closing the pool makes every query fail as an unreachable database would.
    ctx.repo.connection().clone().close().await.unwrap();
    let resp = http_client()
        .get(server.url("/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.headers()["retry-after"],
        "5",
        "every 503 says when to retry"
    );
    let (status, v) = read_json(resp).await;
    assert_eq!(
        (status, v),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"detail": "the database is unavailable"})
        )
    );
    // Liveness does not depend on the database: the process is fine, only not ready.
    let (status, _) = read_json(
        http_client()
            .get(server.url("/healthz"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let resp = c
        .request(reqwest::Method::GET, "/api/calls")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["retry-after"], "5");
    let (status, v) = read_json(resp).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{v}");
    let detail = v["detail"].as_str().unwrap();
    assert!(detail.contains("database"), "{detail}");
    assert!(
        !detail.contains("pool") && !detail.contains("sqlx"),
        "no internals: {detail}"
    );
    server.stop().await;
}

db_tests!(
    health_endpoints_need_no_credentials,
    database_down_is_503_with_a_plain_detail,
);
