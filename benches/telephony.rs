//! Benchmark (not a test) of calls that happen, over real HTTP on loopback, on SQLite and,
//! when `VOICEPLANE_TEST_POSTGRES_URL` is set, on Postgres:
//!
//! 1. inbound answer latency: 100 signed Twilio voice requests for new calls arriving at once
//!    (each verified, recorded with its event, answered with TwiML), five rounds, p50 and p99;
//!    beside it, in the same run, `/healthz` under the same 100 concurrent requests (the
//!    reference: the HTTP stack alone);
//! 2. status callbacks applied per second (`in-progress` then `completed` for every call of
//!    step 1), 16 at a time;
//! 3. dials per second: 500 `POST /api/calls/dial`, then one job runner sending them to a
//!    local fake Twilio until every call has the provider's id;
//! 4. dial send latency (from the dial's 201 to the fake Twilio's request), 50 dials one at a
//!    time, with the runner idle (the reference) and then with its general lane full of slow
//!    jobs of another kind (3 s each, 40 of them, as analyses are), p50 and p99.
//!
//! ```sh
//! cargo bench --bench telephony
//! VOICEPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test cargo bench --bench telephony
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use serde_json::json;
use voiceplane_core::Service;
use voiceplane_core::jobs::{Done, Job, JobError, JobHandler, JobRepository, NewJob, RunnerConfig};
use voiceplane_core::telephony::signature::twilio_signature;
use voiceplane_suite::sample::{cpu_seconds, percentile};
use voiceplane_suite::{ApiCaller, TestContext, TestServer, agent_body, http_client, twilio_body};

const SID: &str = "AC0123456789abcdef0123456789abcdef";
const TOKEN: &str = "bench-token";
const NUMBER: &str = "+14155550100";
const AT_ONCE: usize = 100;
const ROUNDS: usize = 5;
const DIALS: usize = 500;

/// A fake Twilio that creates calls as fast as it is asked, counting them.
async fn fake_twilio() -> (String, Arc<AtomicUsize>) {
    let created = Arc::new(AtomicUsize::new(0));
    let counter = created.clone();
    let app = Router::new().route(
        "/2010-04-01/Accounts/{sid}/Calls.json",
        post(move || {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            async move {
                (
                    axum::http::StatusCode::CREATED,
                    [("content-type", "application/json")],
                    json!({"sid": format!("CA{n:032x}")}).to_string(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, created)
}

fn telephony(service: &Service, provider: &str, base: &str) -> Service {
    Service::clone(service).with_telephony_gateway(
        voiceplane_suite::telephony(provider),
        voiceplane_http::Api::telephony_webhooks(base),
    )
}

/// `p50 / p99` of `samples`, in milliseconds.
fn summary(samples: &mut [Duration]) -> String {
    samples.sort();
    format!(
        "p50 {:.1} ms, p99 {:.1} ms",
        percentile(samples, 0.5).as_secs_f64() * 1000.0,
        percentile(samples, 0.99).as_secs_f64() * 1000.0
    )
}

/// Latencies of `AT_ONCE` requests made by `request` sent at once, `ROUNDS` times.
async fn at_once(request: impl Fn(usize) -> reqwest::RequestBuilder) -> Vec<Duration> {
    let mut samples = Vec::new();
    for round in 0..ROUNDS {
        let mut set = tokio::task::JoinSet::new();
        for i in 0..AT_ONCE {
            let req = request(round * AT_ONCE + i);
            set.spawn(async move {
                let start = Instant::now();
                let resp = req.send().await.unwrap();
                assert!(resp.status().is_success(), "{}", resp.status());
                resp.bytes().await.unwrap();
                start.elapsed()
            });
        }
        while let Some(took) = set.join_next().await {
            samples.push(took.unwrap());
        }
    }
    samples
}

async fn run(ctx: &TestContext, name: &str) {
    let (provider, created) = fake_twilio().await;
    let mut service = None;
    let server = TestServer::start_at(ctx, Default::default(), |s, base| {
        let s = telephony(&s, &provider, base);
        service = Some(s.clone());
        s
    })
    .await;
    let service = service.unwrap();
    let c = ApiCaller::bootstrap(ctx, &server, "Bench").await;
    c.send(
        reqwest::Method::PATCH,
        "/api/organization/settings",
        Some(json!({"runtime_stream_url": "wss://rt.example.com/media"})),
    )
    .await;
    let integration = c
        .create("/api/integrations", twilio_body("Twilio", SID, TOKEN))
        .await;
    let integration_id = integration["integration_id"].as_str().unwrap().to_owned();
    let agent = c.create("/api/agents", agent_body("Bench")).await;
    let agent_id = agent["agent_id"].as_str().unwrap().to_owned();
    let number = c
        .create(
            "/api/phone-numbers",
            json!({"phone_number": NUMBER, "integration_id": integration_id,
                   "assigned_agent_id": agent_id}),
        )
        .await;
    let number_id = number["phone_number_id"].as_str().unwrap().to_owned();
    let client = http_client();
    let signed = |hook: &str, params: Vec<(String, String)>| {
        let url = server.url(&format!("/telephony/twilio/{integration_id}/{hook}"));
        let signature = twilio_signature(TOKEN, &url, &params);
        client
            .post(url)
            .header("x-twilio-signature", signature)
            .form(&params)
    };
    let call_sid = |i: usize| format!("CA{i:032x}");

    // 1. Inbound answers one at a time, then 100 at once beside /healthz under the same load.
    let mut alone = Vec::new();
    for i in 0..200 {
        let req = signed(
            "voice",
            vec![
                ("CallSid".into(), format!("CB{i:032x}")),
                ("From".into(), "+33612345678".into()),
                ("To".into(), NUMBER.into()),
            ],
        );
        let start = Instant::now();
        let resp = req.send().await.unwrap();
        assert!(resp.status().is_success());
        resp.bytes().await.unwrap();
        alone.push(start.elapsed());
    }
    println!(
        "{name}: signed voice webhook → TwiML one at a time: {}",
        summary(&mut alone)
    );
    let mut health = at_once(|_| client.get(server.url("/healthz"))).await;
    let cpu_before = cpu_seconds();
    let wall = Instant::now();
    let mut answers = at_once(|i| {
        signed(
            "voice",
            vec![
                ("CallSid".into(), call_sid(i)),
                ("From".into(), "+33612345678".into()),
                ("To".into(), NUMBER.into()),
            ],
        )
    })
    .await;
    let (cpu, wall) = (cpu_seconds() - cpu_before, wall.elapsed().as_secs_f64());
    println!(
        "{name}: {AT_ONCE} at once × {ROUNDS}: /healthz {} | signed voice webhook → TwiML {} \
         ({:.0} % of a core busy in this process while answering)",
        summary(&mut health),
        summary(&mut answers),
        cpu / wall * 100.0
    );

    // 2. Status callbacks applied per second.
    let reports: Vec<(String, &str)> = (0..AT_ONCE * ROUNDS)
        .flat_map(|i| [(call_sid(i), "in-progress"), (call_sid(i), "completed")])
        .collect();
    let start = Instant::now();
    for chunk in reports.chunks(16) {
        let mut set = tokio::task::JoinSet::new();
        for (sid, status) in chunk {
            let req = signed(
                "status",
                vec![
                    ("CallSid".into(), sid.clone()),
                    ("CallStatus".into(), (*status).into()),
                    ("CallDuration".into(), "30".into()),
                ],
            );
            set.spawn(async move { req.send().await.unwrap().status() });
        }
        while let Some(status) = set.join_next().await {
            assert!(status.unwrap().is_success());
        }
    }
    let took = start.elapsed();
    println!(
        "{name}: {} status callbacks applied in {:.2} s: {:.0}/s",
        reports.len(),
        took.as_secs_f64(),
        reports.len() as f64 / took.as_secs_f64()
    );

    // 3. Dials sent per second by one runner.
    for _ in 0..DIALS {
        let (status, body) = c
            .post(
                "/api/calls/dial",
                json!({"agent_id": agent_id, "to_number": "+14155550199",
                       "from_phone_number_id": number_id}),
            )
            .await;
        assert_eq!(status, reqwest::StatusCode::CREATED, "{body}");
    }
    let runner = service.job_runner(RunnerConfig {
        concurrency: 16,
        idle_check: Duration::from_millis(50),
        ..RunnerConfig::default()
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let start = Instant::now();
    let task = tokio::spawn(runner.run(async move {
        let _ = stopped.await;
    }));
    while created.load(Ordering::SeqCst) < DIALS {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let took = start.elapsed();
    println!(
        "{name}: {DIALS} dials sent to the fake Twilio by one runner (16 at a time) in {:.2} s: {:.0}/s",
        took.as_secs_f64(),
        DIALS as f64 / took.as_secs_f64()
    );
    stop.send(()).unwrap();
    task.await.unwrap();

    // 4. Dial send latency, the runner idle, then busy with slow jobs of another kind.
    let runner = service
        .job_runner(RunnerConfig {
            concurrency: 4,
            idle_check: Duration::from_millis(50),
            ..RunnerConfig::default()
        })
        .with_handler(SLOW, Arc::new(Slow));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(runner.run(async move {
        let _ = stopped.await;
    }));
    let send_latency = || async {
        let mut samples = Vec::new();
        for _ in 0..50 {
            let before = created.load(Ordering::SeqCst);
            let (status, body) = c
                .post(
                    "/api/calls/dial",
                    json!({"agent_id": agent_id, "to_number": "+14155550199",
                           "from_phone_number_id": number_id}),
                )
                .await;
            assert_eq!(status, reqwest::StatusCode::CREATED, "{body}");
            let start = Instant::now();
            while created.load(Ordering::SeqCst) == before {
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "a dial was never sent"
                );
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
            samples.push(start.elapsed());
        }
        samples
    };
    let mut idle = send_latency().await;
    let now = ctx.clock.peek();
    for i in 0..40 {
        ctx.repo
            .job_enqueue(&NewJob {
                job_id: format!("job_slow{i:012}"),
                kind: SLOW.into(),
                payload: json!({}),
                run_at: now,
                max_attempts: 1,
                unique_key: None,
            })
            .await
            .unwrap();
    }
    service.job_waker().wake();
    let mut busy = send_latency().await;
    println!(
        "{name}: dial send latency, 50 one at a time: runner idle {} | general lane full of \
         3 s jobs {}",
        summary(&mut idle),
        summary(&mut busy)
    );
    stop.send(()).unwrap();
    task.await.unwrap();
    server.stop().await;
}

/// The kind of the slow jobs of step 4.
const SLOW: &str = "bench.slow";

/// A job as slow as a post-call analysis waiting on its model.
struct Slow;

#[async_trait::async_trait]
impl JobHandler for Slow {
    async fn run(&self, _job: &Job) -> Result<Done, JobError> {
        tokio::time::sleep(Duration::from_secs(3)).await;
        Ok(Done::Finished)
    }
}

#[tokio::main]
async fn main() {
    voiceplane_clients::install_crypto_provider();
    let sqlite = TestContext::sqlite().await;
    run(&sqlite, "sqlite").await;
    sqlite.cleanup().await;
    if let Some(pg) = TestContext::postgres("bench_telephony").await {
        run(&pg, "postgres").await;
        pg.cleanup().await;
    }
}
