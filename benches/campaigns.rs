//! Benchmark (not a test) of campaigns, over real HTTP on loopback, on SQLite and, when
//! `VOICEPLANE_TEST_POSTGRES_URL` is set, on Postgres:
//!
//! 1. a 100,000-row CSV upload: its time, and the peak resident memory of this process (server,
//!    database client and the client holding the file) during it, beside its resident memory
//!    before; then the answer times of incoming calls (signed Twilio voice requests, one after
//!    another) during another 100,000-row upload streamed in 50 pieces 40 ms apart: while its
//!    body arrives, and while it is checked and inserted;
//! 2. the dials per second a campaign of 2,000 recipients sustains with `max_concurrency` 100,
//!    two job runners pacing it against a local fake Twilio whose every call is reported
//!    `completed` (signed) as soon as it is created, until the campaign completes by itself;
//! 3. the cost of the compliance checks per dial: 300 `POST /api/calls/dial` without calling
//!    hours, limit or suppression list, then 300 with calling hours, `max_concurrent_calls` and
//!    10,000 suppressed numbers, p50 and p99 of each.
//!
//! ```sh
//! cargo bench --bench campaigns
//! VOICEPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test cargo bench --bench campaigns
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use serde_json::json;
use tokio::sync::mpsc;
use voiceplane_core::Service;
use voiceplane_core::jobs::RunnerConfig;
use voiceplane_core::telephony::signature::twilio_signature;
use voiceplane_suite::sample::percentile;
use voiceplane_suite::{ApiCaller, TestContext, TestServer, agent_body, http_client, twilio_body};

const SID: &str = "AC0123456789abcdef0123456789abcdef";
const TOKEN: &str = "bench-token";
const NUMBER: &str = "+14155550100";
/// The number incoming calls ring during an upload.
const INBOUND_NUMBER: &str = "+14155550199";
const CSV_ROWS: usize = 100_000;
const RECIPIENTS: usize = 2_000;
const DIALS: usize = 300;

/// A fake Twilio that creates every call, and passes on its status URL to be reported.
async fn fake_twilio(created: mpsc::UnboundedSender<String>) -> String {
    let app = Router::new().route(
        "/2010-04-01/Accounts/{sid}/Calls.json",
        post(move |body: String| {
            let created = created.clone();
            async move {
                let form: Vec<(String, String)> = url::form_urlencoded::parse(body.as_bytes())
                    .into_owned()
                    .collect();
                let status_url = form
                    .iter()
                    .find(|(n, _)| n == "StatusCallback")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                let sid = format!("CA{:032x}", rand::random::<u128>());
                let _ = created.send(format!("{status_url} {sid}"));
                (
                    axum::http::StatusCode::CREATED,
                    [("content-type", "application/json")],
                    json!({"sid": sid}).to_string(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

fn telephony(service: &Service, provider: &str, base: &str) -> Service {
    Service::clone(service).with_telephony_gateway(
        voiceplane_suite::telephony(provider),
        voiceplane_http::Api::telephony_webhooks(base),
    )
}

/// A field of `/proc/self/status` in MiB (`VmRSS`, `VmHWM`).
fn memory_mib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

fn summary(samples: &mut [Duration]) -> String {
    samples.sort();
    format!(
        "p50 {:.2} ms, p99 {:.2} ms",
        percentile(samples, 0.5).as_secs_f64() * 1000.0,
        percentile(samples, 0.99).as_secs_f64() * 1000.0
    )
}

fn runner(
    service: &Service,
    worker: &str,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let runner = service.job_runner(RunnerConfig {
        worker: worker.to_owned(),
        concurrency: 16,
        idle_check: Duration::from_millis(50),
        ..RunnerConfig::default()
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(runner.run(async move {
        let _ = stopped.await;
    }));
    (stop, task)
}

async fn dial_latencies(c: &ApiCaller, agent_id: &str, number_id: &str) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(DIALS);
    for i in 0..DIALS {
        let start = Instant::now();
        let (status, body) = c
            .post(
                "/api/calls/dial",
                json!({"agent_id": agent_id, "to_number": format!("+1415666{i:04}"),
                       "from_phone_number_id": number_id}),
            )
            .await;
        samples.push(start.elapsed());
        assert_eq!(status, reqwest::StatusCode::CREATED, "{body}");
    }
    samples
}

/// A request body fed through a channel, so that the bench paces its pieces.
struct Pieces(mpsc::Receiver<Vec<u8>>);

impl futures_core::Stream for Pieces {
    type Item = Result<Vec<u8>, std::io::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|piece| piece.map(Ok))
    }
}

/// Incoming calls to [`INBOUND_NUMBER`], one after another, while a [`CSV_ROWS`]-row CSV is
/// uploaded to `path` in 50 pieces 40 ms apart, signed for the integration: their answer times while the body arrives,
/// and after its last piece (while it is checked and inserted), and how long the upload took.
async fn inbound_during_upload(
    c: &ApiCaller,
    server: &TestServer,
    integration_id: &str,
    path: &str,
) -> (Vec<Duration>, Vec<Duration>, Duration) {
    let mut csv = String::from("to_number,first_name,plan\n");
    for i in 0..CSV_ROWS {
        csv.push_str(&format!(
            "+1{:010},Person {i},basic\n",
            3_000_000_000u64 + i as u64
        ));
    }
    let size = csv.len().div_ceil(50);
    let pieces: Vec<Vec<u8>> = csv.into_bytes().chunks(size).map(<[u8]>::to_vec).collect();
    let (tx, rx) = mpsc::channel(1);
    let upload = c
        .request(reqwest::Method::POST, path)
        .header("content-type", "text/csv")
        .body(reqwest::Body::wrap_stream(Pieces(rx)));
    let started = Instant::now();
    let upload = tokio::spawn(async move {
        let resp = upload.send().await.unwrap();
        let status = resp.status();
        let body = resp.text().await.unwrap();
        assert!(status.is_success(), "{body}");
    });
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sender = {
        let sent = sent.clone();
        tokio::spawn(async move {
            let mut pace = tokio::time::interval(Duration::from_millis(40));
            for piece in pieces {
                pace.tick().await;
                tx.send(piece).await.unwrap();
            }
            sent.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };
    let client = http_client();
    let url = server.url(&format!("/telephony/twilio/{integration_id}/voice"));
    let (mut arriving, mut inserting) = (Vec::new(), Vec::new());
    let mut n = 0u64;
    while !upload.is_finished() {
        n += 1;
        let params = vec![
            ("CallSid".to_owned(), format!("CA{n:032}")),
            ("From".to_owned(), "+33612345678".to_owned()),
            ("To".to_owned(), INBOUND_NUMBER.to_owned()),
        ];
        let signature = twilio_signature(TOKEN, &url, &params);
        let after_body = sent.load(std::sync::atomic::Ordering::SeqCst);
        let start = Instant::now();
        let resp = client
            .post(&url)
            .header("x-twilio-signature", signature)
            .form(&params)
            .send()
            .await
            .unwrap();
        let took = start.elapsed();
        // A call refused while the upload holds the write lock is counted, not fatal: how
        // many there are is part of the answer.
        if resp.status() != reqwest::StatusCode::OK {
            eprintln!(
                "an incoming call answered {} after {took:?} ({} the body arrived)",
                resp.status(),
                if after_body { "after" } else { "before" }
            );
        }
        if after_body {
            inserting.push(took);
        } else {
            arriving.push(took);
        }
    }
    let upload_took = started.elapsed();
    upload.await.unwrap();
    sender.await.unwrap();
    (arriving, inserting, upload_took)
}

async fn run(ctx: &TestContext, name: &str) {
    let (created_tx, mut created) = mpsc::unbounded_channel();
    let provider = fake_twilio(created_tx).await;
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
            json!({"phone_number": NUMBER, "integration_id": integration_id}),
        )
        .await;
    let number_id = number["phone_number_id"].as_str().unwrap().to_owned();
    let campaign = |name: &str, concurrency: u32| {
        json!({"name": name, "agent_id": agent_id, "from_phone_number_ids": [number_id],
               "max_concurrency": concurrency})
    };

    // 1. A 100,000-row CSV.
    let big = c.create("/api/campaigns", campaign("Big", 1)).await;
    let mut csv = String::from("to_number,first_name,plan\n");
    for i in 0..CSV_ROWS {
        csv.push_str(&format!(
            "+1{:010},Person {i},basic\n",
            2_000_000_000u64 + i as u64
        ));
    }
    let size_mib = csv.len() as f64 / 1024.0 / 1024.0;
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = memory_mib("VmRSS");
    let start = Instant::now();
    let resp = c
        .request(
            reqwest::Method::POST,
            &format!(
                "/api/campaigns/{}/recipients",
                big["campaign_id"].as_str().unwrap()
            ),
        )
        .header("content-type", "text/csv")
        .body(csv)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let body = resp.text().await.unwrap();
    let took = start.elapsed();
    assert!(status.is_success(), "{body}");
    println!(
        "{name}: {CSV_ROWS}-row CSV ({size_mib:.1} MiB) uploaded in {:.2} s ({:.0} rows/s); \
         resident memory {before:.0} MiB before, peak {:.0} MiB during",
        took.as_secs_f64(),
        CSV_ROWS as f64 / took.as_secs_f64(),
        memory_mib("VmHWM")
    );

    // 1b. Incoming calls answered one after another during another 100,000-row upload, sent
    // in 50 pieces 40 ms apart (a client on a slow link), then inserted.
    let inbound = c
        .create(
            "/api/phone-numbers",
            json!({"phone_number": INBOUND_NUMBER, "integration_id": integration_id,
                   "assigned_agent_id": agent_id}),
        )
        .await;
    assert!(inbound["phone_number_id"].is_string(), "{inbound}");
    let other = c.create("/api/campaigns", campaign("Other", 1)).await;
    let (arriving, inserting, upload_took) = inbound_during_upload(
        &c,
        &server,
        &integration_id,
        &format!(
            "/api/campaigns/{}/recipients",
            other["campaign_id"].as_str().unwrap()
        ),
    )
    .await;
    let (mut arriving, mut inserting) = (arriving, inserting);
    println!(
        "{name}: incoming calls during a streamed {CSV_ROWS}-row upload ({:.2} s): while it \
         arrives {} calls, {}, max {:.2} ms; while it is checked and inserted {} calls, {}, max \
         {:.2} ms",
        upload_took.as_secs_f64(),
        arriving.len(),
        summary(&mut arriving),
        arriving.last().map_or(0.0, |d| d.as_secs_f64() * 1000.0),
        inserting.len(),
        if inserting.is_empty() {
            "none".to_owned()
        } else {
            summary(&mut inserting)
        },
        inserting.last().map_or(0.0, |d| d.as_secs_f64() * 1000.0),
    );

    // 2. A campaign at concurrency 100, every call completed as soon as it is created.
    let client = http_client();
    let reporter = {
        let server_base = server.base.clone();
        tokio::spawn(async move {
            let mut set = tokio::task::JoinSet::new();
            while let Some(line) = created.recv().await {
                let (url, sid) = line.split_once(' ').unwrap();
                let url = url.replace("http://localhost", &server_base);
                let params = vec![
                    ("CallSid".to_owned(), sid.to_owned()),
                    ("CallStatus".to_owned(), "completed".to_owned()),
                ];
                let signature = twilio_signature(TOKEN, url.as_str(), &params);
                let req = client
                    .post(url)
                    .header("x-twilio-signature", signature)
                    .form(&params);
                set.spawn(async move { req.send().await.map(|r| r.status()) });
                while set.try_join_next().is_some() {}
            }
        })
    };
    let paced = c.create("/api/campaigns", campaign("Paced", 100)).await;
    let path = format!("/api/campaigns/{}", paced["campaign_id"].as_str().unwrap());
    for chunk in (0..RECIPIENTS).collect::<Vec<_>>().chunks(1000) {
        let recipients: Vec<_> = chunk
            .iter()
            .map(|i| json!({"to_number": format!("+1415777{i:04}")}))
            .collect();
        let (status, body) = c
            .post(
                &format!("{path}/recipients"),
                json!({"recipients": recipients}),
            )
            .await;
        assert!(status.is_success(), "{body}");
    }
    let runners = [runner(&service, "pacer-a"), runner(&service, "pacer-b")];
    let start = Instant::now();
    let (status, body) = c.post(&format!("{path}/start"), json!({})).await;
    assert!(status.is_success(), "{body}");
    loop {
        let (_, body) = c.get(&path).await;
        if body["data"]["status"] == "completed" {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(600), "{body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let took = start.elapsed();
    println!(
        "{name}: a campaign of {RECIPIENTS} recipients at max_concurrency 100, paced by two \
         runners: completed in {:.2} s, {:.0} dials/s",
        took.as_secs_f64(),
        RECIPIENTS as f64 / took.as_secs_f64()
    );
    for (stop, task) in runners {
        stop.send(()).unwrap();
        task.await.unwrap();
    }
    reporter.abort();

    // 3. What the compliance checks cost a dial.
    let mut plain = dial_latencies(&c, &agent_id, &number_id).await;
    let (status, body) = c
        .send(
            reqwest::Method::PATCH,
            "/api/organization/settings",
            Some(json!({"calling_hours": {"start": "00:00", "end": "23:59"},
                        "max_concurrent_calls": 10000})),
        )
        .await;
    assert!(status.is_success(), "{body}");
    for i in 0..10_000 {
        let (status, body) = c
            .post(
                "/api/suppressions",
                json!({"phone_number": format!("+1415888{i:04}")}),
            )
            .await;
        assert!(status.is_success(), "{body}");
    }
    let mut checked = dial_latencies(&c, &agent_id, &number_id).await;
    println!(
        "{name}: POST /api/calls/dial ×{DIALS}: without rules {} | with calling hours, \
         max_concurrent_calls and 10,000 suppressed numbers {}",
        summary(&mut plain),
        summary(&mut checked)
    );
    server.stop().await;
}

#[tokio::main]
async fn main() {
    voiceplane_clients::install_crypto_provider();
    let sqlite = TestContext::sqlite().await;
    run(&sqlite, "sqlite").await;
    sqlite.cleanup().await;
    if let Some(pg) = TestContext::postgres("bench_campaigns").await {
        run(&pg, "postgres").await;
        pg.cleanup().await;
    }
}
