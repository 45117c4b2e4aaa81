//! Rate limits over HTTP: a credential that sends more than its burst gets 429s with
//! `Retry-After` and the `RateLimit-*` headers while another credential is unaffected, and
//! recovers once `Retry-After` has passed; failed authentications from one client IP are
//! refused with 429 once over their budget, and `X-Forwarded-For` is believed only from a
//! trusted proxy.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_http::RateLimits;
use voiceplane_suite::*;

fn header(resp: &reqwest::Response, name: &str) -> Option<u64> {
    resp.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().parse().unwrap())
}

async fn a_credential_over_its_limit_gets_429_and_recovers(ctx: &TestContext) {
    let server = TestServer::start_api(ctx, |api| {
        api.with_rate_limits(RateLimits {
            per_second: 2,
            burst: 5,
            ..RateLimits::default()
        })
    })
    .await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    // A second key, made before the first spends its budget.
    let (status, key) = c
        .post("/api/api-keys", json!({"name": "other", "role": "admin"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{key}");
    let other = c.with_key(key["data"]["api_key"].as_str().unwrap());

    let mut statuses = Vec::new();
    let mut retry_after = 0;
    for _ in 0..30 {
        let resp = c.request(Method::GET, "/api/agents").send().await.unwrap();
        let status = resp.status();
        assert_eq!(header(&resp, "ratelimit-limit"), Some(5));
        let remaining = header(&resp, "ratelimit-remaining").unwrap();
        assert!(header(&resp, "ratelimit-reset").is_some());
        if status == StatusCode::TOO_MANY_REQUESTS {
            assert_eq!(remaining, 0);
            retry_after = header(&resp, "retry-after").expect("a 429 says when to retry");
            assert!((1..=5).contains(&retry_after), "{retry_after}");
            let v: Value = resp.json().await.unwrap();
            assert!(
                v["detail"]
                    .as_str()
                    .unwrap()
                    .starts_with("too many requests with this credential"),
                "{v}"
            );
        } else {
            assert_eq!(status, StatusCode::OK);
        }
        statuses.push(status);
    }
    let limited = statuses
        .iter()
        .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    // The burst of 5 plus what 2 per second refill during the loop.
    assert!(limited >= 20, "only {limited} of 30 were refused");
    // Making the second key spent one of the burst of 5.
    assert_eq!(statuses[..4], [StatusCode::OK; 4]);

    // Another key has its own budget.
    let resp = other
        .request(Method::GET, "/api/agents")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "ratelimit-remaining"), Some(4));

    // By Retry-After, the first key is let through again.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(retry_after + 5);
    loop {
        let resp = c.request(Method::GET, "/api/agents").send().await.unwrap();
        if resp.status() == StatusCode::OK {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still refused long after Retry-After"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Unauthenticated answers carry no budget.
    let resp = c
        .with_key("vpk_unknown")
        .request(Method::GET, "/api/agents")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert!(resp.headers().get("ratelimit-limit").is_none());
    server.stop().await;
}

async fn failed_authentications_are_limited_per_client_ip(ctx: &TestContext) {
    let server = TestServer::start_api(ctx, |api| {
        api.with_rate_limits(RateLimits {
            auth_failures_per_minute: 3,
            trusted_proxies: vec!["127.0.0.1".parse().unwrap()],
            ..RateLimits::default()
        })
    })
    .await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let wrong = c.with_key(&format!("vpk_{}", "x".repeat(40)));
    let from = |who: &ApiCaller, ip: &str| {
        who.request(Method::GET, "/api/agents")
            .header("X-Forwarded-For", ip)
    };
    for _ in 0..3 {
        let resp = from(&wrong, "203.0.113.1").send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    }
    // The fourth failure, and then anything from that client, is refused before any lookup.
    for who in [&wrong, &c] {
        let resp = from(who, "203.0.113.1").send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        let retry = header(&resp, "retry-after").unwrap();
        assert!((1..=60).contains(&retry), "{retry}");
        let v: Value = resp.json().await.unwrap();
        assert!(
            v["detail"]
                .as_str()
                .unwrap()
                .starts_with("too many failed authentications from this address"),
            "{v}"
        );
    }
    // Another client behind the same trusted proxy is not affected.
    let resp = from(&c, "203.0.113.2").send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers().get("ratelimit-limit").is_some());
    server.stop().await;

    // Without trusting the proxy, X-Forwarded-For is ignored: the client is the peer itself.
    let server = TestServer::start_api(ctx, |api| {
        api.with_rate_limits(RateLimits {
            auth_failures_per_minute: 2,
            ..RateLimits::default()
        })
    })
    .await;
    let wrong = ApiCaller {
        base: server.base.clone(),
        ..wrong
    };
    let mut last = StatusCode::OK;
    for i in 0..3 {
        last = from(&wrong, &format!("203.0.113.{i}"))
            .send()
            .await
            .unwrap()
            .status();
    }
    assert_eq!(last, StatusCode::TOO_MANY_REQUESTS);
    server.stop().await;
}

db_tests!(
    a_credential_over_its_limit_gets_429_and_recovers,
    failed_authentications_are_limited_per_client_ip,
);
