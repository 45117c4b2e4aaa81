//! Benchmark (not a test) of events and webhook deliveries, on SQLite and, when
//! `VOICEPLANE_TEST_POSTGRES_URL` is set, on Postgres:
//!
//! 1. the write path: tool creations per second (each records one event) with the fan-out to
//!    0 (the reference, run side by side), 1 and 10 subscribed endpoints;
//! 2. deliveries per second from one runner to a fast local receiver;
//! 3. delivery latency when idle: from the commit of a change to the receipt of its event.
//!
//! ```sh
//! cargo bench --bench webhooks
//! VOICEPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test cargo bench --bench webhooks
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use voiceplane_clients::{HttpWebhookSender, WebhookSenderSettings};
use voiceplane_core::Service;
use voiceplane_core::jobs::RunnerConfig;
use voiceplane_core::model::NewWebhook;
use voiceplane_core::webhooks::TargetPolicy;
use voiceplane_suite::sample::percentile;
use voiceplane_suite::{TestContext, new_tool};

const WRITES: usize = 300;
const LATENCY_SAMPLES: usize = 100;

/// A receiver on loopback that answers 200 and reports each arrival.
async fn receiver() -> (String, tokio::sync::mpsc::UnboundedReceiver<Instant>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let app = Router::new().route(
        "/",
        post(move || {
            let tx = tx.clone();
            async move {
                let _ = tx.send(Instant::now());
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

fn delivering(ctx: &TestContext) -> Arc<Service> {
    let policy = TargetPolicy {
        allow_private: true,
    };
    let sender = HttpWebhookSender::new(WebhookSenderSettings {
        policy,
        ..Default::default()
    })
    .unwrap();
    Arc::new(Service::clone(&ctx.service).with_webhooks(
        Arc::new(sender),
        policy,
        vec![Duration::from_secs(1); 3],
    ))
}

async fn run(ctx: &TestContext, name: &str) {
    let service = delivering(ctx);
    let (url, mut arrivals) = receiver().await;

    // 1. The write path, with 0, 1 and 10 endpoints, side by side.
    let mut pending = 0usize;
    let mut reference = 0.0;
    for endpoints in [0usize, 1, 10] {
        let admin = ctx.admin(&format!("Bench {endpoints}")).await;
        for _ in 0..endpoints {
            service
                .webhook_create(
                    &admin,
                    NewWebhook {
                        url: url.clone(),
                        events: vec!["tool.created".into()],
                        description: None,
                    },
                )
                .await
                .unwrap();
        }
        let start = Instant::now();
        for i in 0..WRITES {
            service
                .tool_create(&admin, new_tool(&format!("t{i}")))
                .await
                .unwrap();
        }
        let per_sec = WRITES as f64 / start.elapsed().as_secs_f64();
        if endpoints == 0 {
            reference = per_sec;
        }
        pending += WRITES * endpoints;
        println!(
            "{name}: events recorded with {endpoints:>2} endpoint(s): {per_sec:>7.0}/s ({:.0} % of 0 endpoints)",
            per_sec / reference * 100.0
        );
    }

    // 2. Deliveries per second: one runner works off the backlog of step 1.
    let runner = service.job_runner(RunnerConfig {
        concurrency: 16,
        idle_check: Duration::from_millis(100),
        ..RunnerConfig::default()
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(runner.run(async move {
        let _ = stopped.await;
    }));
    let start = Instant::now();
    for _ in 0..pending {
        arrivals.recv().await.unwrap();
    }
    println!(
        "{name}: {pending} deliveries in {:.2} s: {:.0}/s",
        start.elapsed().as_secs_f64(),
        pending as f64 / start.elapsed().as_secs_f64()
    );

    // 3. Latency from commit to receipt, the runner idle between samples.
    let admin = ctx.admin("Latency").await;
    service
        .webhook_create(
            &admin,
            NewWebhook {
                url,
                events: vec!["tool.created".into()],
                description: None,
            },
        )
        .await
        .unwrap();
    let mut samples = Vec::new();
    for i in 0..LATENCY_SAMPLES {
        tokio::time::sleep(Duration::from_millis(20)).await;
        service
            .tool_create(&admin, new_tool(&format!("l{i}")))
            .await
            .unwrap();
        let committed = Instant::now();
        let arrived = arrivals.recv().await.unwrap();
        samples.push(arrived.saturating_duration_since(committed));
    }
    samples.sort();
    println!(
        "{name}: latency commit → receipt over {LATENCY_SAMPLES} idle samples: p50 {:.1} ms, p99 {:.1} ms",
        percentile(&samples, 0.5).as_secs_f64() * 1000.0,
        percentile(&samples, 0.99).as_secs_f64() * 1000.0
    );
    stop.send(()).unwrap();
    task.await.unwrap();
}

#[tokio::main]
async fn main() {
    voiceplane_clients::install_crypto_provider();
    let sqlite = TestContext::sqlite().await;
    run(&sqlite, "sqlite").await;
    sqlite.cleanup().await;
    if let Some(pg) = TestContext::postgres("bench_webhooks").await {
        run(&pg, "postgres").await;
        pg.cleanup().await;
    }
}
