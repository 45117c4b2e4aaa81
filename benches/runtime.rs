//! Benchmark (not a test) of the built-in runtime under many simultaneous calls, on SQLite,
//! over real HTTP and WebSockets on loopback, against fakes that answer at once (Deepgram,
//! the chat model, provider_one's speech; `tests/support/voice`): `CALLS` Twilio callers
//! (default 200) talk for `SECONDS` (default 60), each saying a phrase every 3 s and
//! hearing the answer, with audio both ways in real time (a frame every 20 ms).
//!
//! Reported:
//! - the runtime's own turn latency, as each call records it (`latency`: from the end of the
//!   caller's turn at the fake recognizer to the first agent frame sent), over all calls;
//! - the caller's view: from the end of its phrase to the first agent frame received (this
//!   adds up to one frame for the fake recognizer to see the phrase end, and loopback);
//! - outgoing frame jitter: the arrival gaps of an answer's frames minus 20 ms, p99;
//! - frames lost: answers whose audio did not all arrive;
//! - CPU seconds per call-second and resident memory per call (process-wide: server, fakes
//!   and callers together, so both are upper bounds).
//!
//! ```sh
//! cargo bench --bench runtime
//! VOICEPLANE_BENCH_CALLS=100 VOICEPLANE_BENCH_SECONDS=30 cargo bench --bench runtime
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use serde_json::json;
use voiceplane_core::Service;
use voiceplane_core::runtime::RuntimeSettings;
use voiceplane_core::telephony::signature::twilio_signature;
use voiceplane_runtime::{Runtime, RuntimeConfig};
use voiceplane_suite::sample::{cpu_seconds, percentile};
use voiceplane_suite::voice::*;
use voiceplane_suite::{ApiCaller, TestContext, TestServer, agent_body, http_client, twilio_body};

const SID: &str = "AC0123456789abcdef0123456789abcdef";
const TOKEN: &str = "bench-token";
const NUMBER: &str = "+14155550100";
const PHRASE: u8 = 0x11;
const ANSWER: &str = "We open at nine.";
const EVERY: Duration = Duration::from_secs(3);

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rss_kib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0)
}

fn ms(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort();
    if samples.is_empty() {
        return f64::NAN;
    }
    percentile(samples, p).as_secs_f64() * 1000.0
}

/// What one caller measured.
#[derive(Default)]
struct Measured {
    turn: Vec<Duration>,
    jitter: Vec<Duration>,
    answers: usize,
    short_answers: usize,
    /// Whether the runtime closed the stream before the caller hung up.
    closed: bool,
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let calls = env_usize("VOICEPLANE_BENCH_CALLS", 200);
    let seconds = env_usize("VOICEPLANE_BENCH_SECONDS", 60);
    let ctx = TestContext::sqlite().await;
    let stt = FakeDeepgram::start("dg").await;
    stt.script(PHRASE, "when do you open");
    let llm = FakeChat::start("oa").await;
    llm.otherwise(|_| ChatAnswer::text(ANSWER).with_usage(50, 5));
    let tts = FakeSpeech::provider_one("p1").await;
    let upstreams = upstreams((&stt, "dg"), (&llm, "oa"), (&tts, "p1"));
    let server = TestServer::start_built(
        &ctx,
        |s, base| {
            Service::clone(&s)
                .with_telephony_gateway(
                    voiceplane_suite::telephony("http://127.0.0.1:9"),
                    voiceplane_http::Api::telephony_webhooks(base),
                )
                .with_runtime(RuntimeSettings::from_secret(true, b"bench"))
        },
        move |api| {
            let runtime = Runtime::new(
                api.service().clone(),
                upstreams,
                RuntimeConfig {
                    max_calls: 10_000,
                    ..RuntimeConfig::default()
                },
            );
            api.with_media(Arc::new(runtime))
        },
    )
    .await;
    let c = ApiCaller::bootstrap(&ctx, &server, "Bench").await;
    let integration = c
        .create("/api/integrations", twilio_body("Twilio", SID, TOKEN))
        .await;
    let integration_id = integration["integration_id"].as_str().unwrap().to_owned();
    let mut agent = agent_body("Bench");
    agent["recording_enabled"] = json!(false);
    let agent = c.create("/api/agents", agent).await;
    c.create(
        "/api/phone-numbers",
        json!({"phone_number": NUMBER, "integration_id": integration_id,
               "assigned_agent_id": agent["agent_id"]}),
    )
    .await;
    let voice_url = server.url(&format!("/telephony/twilio/{integration_id}/voice"));
    let expected = FakeSpeech::audio_for(ANSWER).len().div_ceil(160) * 160;

    let rss_before = rss_kib();
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let end = started + Duration::from_secs(seconds as u64);
    let mut set = tokio::task::JoinSet::new();
    for i in 0..calls {
        let voice_url = voice_url.clone();
        set.spawn(async move {
            let provider_call = format!("CA{i:032x}");
            let params = vec![
                ("CallSid".to_owned(), provider_call.clone()),
                ("From".to_owned(), "+33612345678".to_owned()),
                ("To".to_owned(), NUMBER.to_owned()),
            ];
            let signature = twilio_signature(TOKEN, &voice_url, &params);
            let twiml = http_client()
                .post(&voice_url)
                .header("x-twilio-signature", signature)
                .form(&params)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            let attr = |before: &str| {
                twiml
                    .split(before)
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .to_owned()
            };
            let url = attr("<Stream url=\"");
            let token = attr("name=\"token\" value=\"");
            let caller = MediaCaller::twilio(
                &url,
                TwilioStart::new(&provider_call).parameter("token", &token),
                Pacing::RealTime,
            )
            .await
            .unwrap();
            // Spread the callers' phrases over the period.
            tokio::time::sleep(EVERY.mul_f64(i as f64 / calls as f64)).await;
            let mut ends = Vec::new();
            while Instant::now() + EVERY < end && !caller.view().closed {
                caller.say(PHRASE, Duration::from_millis(400)).await;
                ends.push(Instant::now());
                caller.silence(EVERY - Duration::from_millis(400)).await;
            }
            let view = caller.view();
            caller.hang_up().await;
            let mut m = Measured {
                closed: view.closed,
                ..Measured::default()
            };
            for (k, said) in ends.iter().enumerate() {
                let until = ends.get(k + 1).copied().unwrap_or(end + EVERY);
                let frames: Vec<(Instant, usize)> = view
                    .media
                    .iter()
                    .copied()
                    .filter(|(at, _)| at > said && *at < until)
                    .collect();
                let Some((first, _)) = frames.first() else {
                    m.short_answers += 1;
                    continue;
                };
                m.answers += 1;
                m.turn.push(first.duration_since(*said));
                let bytes: usize = frames.iter().map(|(_, b)| b).sum();
                if bytes < expected {
                    m.short_answers += 1;
                }
                for pair in frames.windows(2) {
                    let gap = pair[1].0.duration_since(pair[0].0);
                    m.jitter.push(if gap > Duration::from_millis(20) {
                        gap - Duration::from_millis(20)
                    } else {
                        Duration::from_millis(20) - gap
                    });
                }
            }
            (m, rss_kib())
        });
    }
    let mut turn = Vec::new();
    let mut jitter = Vec::new();
    let (mut answers, mut short, mut closed, mut rss_peak) = (0, 0, 0, 0.0f64);
    while let Some(done) = set.join_next().await {
        let (m, rss) = done.unwrap();
        turn.extend(m.turn);
        jitter.extend(m.jitter);
        answers += m.answers;
        short += m.short_answers;
        closed += usize::from(m.closed);
        rss_peak = rss_peak.max(rss);
    }
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_before;
    // The runtime's own measure, as each call recorded it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (_, listed) = c.get("/api/calls?limit=100").await;
    let mut p50s = Vec::new();
    let mut maxes = Vec::new();
    let mut reasons = std::collections::BTreeMap::<String, usize>::new();
    let mut cursor = listed["pagination"]["next_cursor"]
        .as_str()
        .map(str::to_owned);
    let mut page = listed["data"].as_array().cloned().unwrap_or_default();
    loop {
        for call in &page {
            *reasons
                .entry(call["end_reason"].as_str().unwrap_or("-").to_owned())
                .or_default() += 1;
            if let Some(p50) = call["latency"]["p50_ms"].as_f64() {
                p50s.push(Duration::from_secs_f64(p50 / 1000.0));
                maxes.push(Duration::from_secs_f64(
                    call["latency"]["max_ms"].as_f64().unwrap_or(0.0) / 1000.0,
                ));
            }
        }
        let Some(next) = cursor.take() else { break };
        let (_, more) = c.get(&format!("/api/calls?limit=100&cursor={next}")).await;
        cursor = more["pagination"]["next_cursor"]
            .as_str()
            .map(str::to_owned);
        page = more["data"].as_array().cloned().unwrap_or_default();
    }
    println!(
        "runtime: {calls} simultaneous calls for {seconds} s, audio both ways, fakes answering at once"
    );
    println!(
        "  runtime's turn latency (per call, as recorded): median of p50s {:.1} ms, p99 of p50s {:.1} ms, max of maxes {:.1} ms ({} calls)",
        ms(&mut p50s, 0.5),
        ms(&mut p50s, 0.99),
        ms(&mut maxes, 1.0),
        p50s.len()
    );
    println!(
        "  caller's end of phrase → first agent frame: p50 {:.1} ms, p99 {:.1} ms over {} answers",
        ms(&mut turn, 0.5),
        ms(&mut turn, 0.99),
        turn.len()
    );
    println!(
        "  frame jitter |gap − 20 ms|: p50 {:.2} ms, p99 {:.2} ms over {} gaps",
        ms(&mut jitter, 0.5),
        ms(&mut jitter, 0.99),
        jitter.len()
    );
    println!(
        "  answers short of frames or missing: {short} of {}",
        answers + short
    );
    println!("  calls the runtime closed early: {closed}; end reasons {reasons:?}");
    println!(
        "  CPU {:.3} s per call-second ({cpu:.1} s over {wall:.1} s); RSS {:.0} KiB per call ({rss_before:.0} → {rss_peak:.0} KiB, process-wide)",
        cpu / (calls as f64 * wall),
        (rss_peak - rss_before) / calls as f64
    );
    ctx.cleanup().await;
}
