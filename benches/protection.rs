//! Benchmark (not a test) of the protections' cost, measured through `Api::handle` in-process
//! (no sockets, so the adapter's own work is what differs), on SQLite and, when
//! `VOICEPLANE_TEST_POSTGRES_URL` is set, on Postgres, side by side in one run:
//!
//! 1. the hot read path, `GET /api/agents/{id}`, without rate limits and with them (a limit
//!    high enough never to refuse: the cost of the GCRA check and the `RateLimit-*` headers);
//!    a GET is never touched by idempotency;
//! 2. `POST /api/agents`, without a key, with rate limits, and with a fresh `Idempotency-Key`
//!    on every request (the cost of claiming the key and storing the answer), and a replay of
//!    a stored answer.
//!
//! Requests run one after another; the table gives p50, p99 and the mean per request.
//!
//! ```sh
//! cargo bench --bench protection
//! VOICEPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test cargo bench --bench protection
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::Full;
use voiceplane_http::{Api, RateLimits};
use voiceplane_suite::sample::{ms, percentile};
use voiceplane_suite::{TestContext, agent_body};

const READS: usize = 2_000;
const WRITES: usize = 500;

struct Caller {
    org: String,
    key: String,
}

impl Caller {
    fn request(&self, method: Method, path: &str, body: Option<&str>) -> Request<Full<Bytes>> {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header("x-organization-id", &self.org)
            .header("x-api-key", &self.key);
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        req.body(Full::new(Bytes::from(body.unwrap_or_default().to_owned())))
            .unwrap()
    }
}

/// Runs `n` requests made by `make(i)` on `api`, each expected to answer `status`; returns
/// the sorted latencies.
async fn run(
    api: &Api,
    n: usize,
    status: StatusCode,
    make: impl Fn(usize) -> Request<Full<Bytes>>,
) -> Vec<Duration> {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let req = make(i);
        let start = Instant::now();
        let resp = api.handle(req).await;
        times.push(start.elapsed());
        assert_eq!(resp.status(), status);
    }
    times.sort();
    times
}

fn row(name: &str, times: &[Duration]) {
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    println!(
        "| {name} | {} | {} | {} |",
        ms(percentile(times, 0.5)),
        ms(percentile(times, 0.99)),
        ms(mean)
    );
}

async fn bench(ctx: &TestContext, label: &str) {
    let boot = ctx.bootstrap("Bench").await;
    let caller = Caller {
        org: boot.organization_id.clone(),
        key: boot.api_key.clone(),
    };
    let plain = Api::new(ctx.service.clone());
    let limited = Api::new(ctx.service.clone()).with_rate_limits(RateLimits {
        per_second: 1_000_000,
        burst: 1_000_000,
        ..RateLimits::default()
    });
    let body = agent_body("Bench agent").to_string();
    let created = plain
        .handle(caller.request(Method::POST, "/api/agents", Some(&body)))
        .await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let bytes = http_body_util::BodyExt::collect(created.into_body())
        .await
        .unwrap()
        .to_bytes();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let path = format!("/api/agents/{}", v["data"]["agent_id"].as_str().unwrap());

    // Warm the pool and caches.
    run(&plain, 200, StatusCode::OK, |_| {
        caller.request(Method::GET, &path, None)
    })
    .await;

    println!("\n### {label}\n");
    println!("| request | p50 | p99 | mean |\n|---|---|---|---|");
    let read = |_| caller.request(Method::GET, &path, None);
    // Interleaved halves, so that drift in the machine's load hits both sides alike.
    let mut off = Vec::new();
    let mut on = Vec::new();
    for _ in 0..2 {
        off.extend(run(&plain, READS / 2, StatusCode::OK, read).await);
        on.extend(run(&limited, READS / 2, StatusCode::OK, read).await);
    }
    off.sort();
    on.sort();
    row(&format!("GET {} (no limits)", "/api/agents/{id}"), &off);
    row(&format!("GET {} (rate limited)", "/api/agents/{id}"), &on);

    let post = |_| caller.request(Method::POST, "/api/agents", Some(&body));
    row(
        "POST /api/agents (no limits, no key)",
        &run(&plain, WRITES, StatusCode::CREATED, post).await,
    );
    row(
        "POST /api/agents (rate limited, no key)",
        &run(&limited, WRITES, StatusCode::CREATED, post).await,
    );
    let keyed = |i: usize| {
        let mut req = caller.request(Method::POST, "/api/agents", Some(&body));
        req.headers_mut().insert(
            "idempotency-key",
            format!("{label}-bench-{i}").parse().unwrap(),
        );
        req
    };
    row(
        "POST /api/agents (fresh Idempotency-Key)",
        &run(&plain, WRITES, StatusCode::CREATED, keyed).await,
    );
    row(
        "POST /api/agents (replayed Idempotency-Key)",
        &run(&plain, WRITES, StatusCode::CREATED, keyed).await,
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let sqlite = TestContext::sqlite().await;
    bench(&sqlite, "SQLite").await;
    sqlite.cleanup().await;
    if let Some(pg) = TestContext::postgres("bench_protection").await {
        bench(&pg, "Postgres").await;
        pg.cleanup().await;
    }
}
