//! Benchmark (not a test) of usage and post-call analysis, on SQLite and, when
//! `VOICEPLANE_TEST_POSTGRES_URL` is set, on Postgres:
//!
//! 1. `GET /api/usage` (through the service) over `VOICEPLANE_BENCH_CALLS` calls (default
//!    1,000,000, 60 days, five agents) with three usage items each (stt seconds, llm tokens, tts
//!    characters), grouped by day over a 30-day month and over the whole range, and grouped by
//!    component: p50 and max of 10 runs, with the query plan (`EXPLAIN QUERY PLAN` on SQLite,
//!    `EXPLAIN` on Postgres);
//! 2. analysis jobs per second: `VOICEPLANE_BENCH_ANALYSES` completed calls (default 300) with
//!    a six-message transcript, analysed by the job runner against a local fake
//!    chat-completions server that answers at once, from the first completion to the last
//!    stored answer.
//!
//! ```sh
//! cargo bench --bench usage
//! VOICEPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test cargo bench --bench usage
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use sea_orm::ConnectionTrait;
use serde_json::json;
use voiceplane_clients::{AnalysisSettings, HttpChatCompletions};
use voiceplane_core::auth::Actor;
use voiceplane_core::jobs::RunnerConfig;
use voiceplane_core::model::{
    CallStatus, CallUpdate, MessageRole, NewAgentAnalysis, NewCall, NewMessage, NewMessages,
    UsageFilter, UsageGroupBy,
};
use voiceplane_core::time::Timestamp;
use voiceplane_core::webhooks::TargetPolicy;
use voiceplane_storage::usage::report_statement;
use voiceplane_suite::sample::{DAY, START, explain, ms, percentile, seed_calls};
use voiceplane_suite::{TestContext, body, new_agent};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const DEFAULT_CALLS: usize = 1_000_000;
const DEFAULT_ANALYSES: usize = 300;
const RUNS: usize = 10;

fn wanted(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Three items per seeded call, written by the database from the calls themselves.
async fn seed_usage(ctx: &TestContext, org: &str) {
    let db = ctx.repo.connection();
    for (component, provider, quantity, unit, price) in [
        ("stt", "deepgram", "duration_seconds", "seconds", 0.0043),
        (
            "llm",
            "openai",
            "duration_seconds * 40 + 100",
            "output_tokens",
            0.00001,
        ),
        (
            "tts",
            "elevenlabs",
            "duration_seconds * 15",
            "characters",
            0.0003,
        ),
    ] {
        db.execute_unprepared(&format!(
            "INSERT INTO call_usage (organization_id, call_sid, agent_id, call_created_at, \
             component, provider, model, quantity, unit, credits, created_at) \
             SELECT organization_id, call_sid, agent_id, created_at, '{component}', \
             '{provider}', NULL, {quantity} + 1, '{unit}', ({quantity} + 1) * {price}, \
             created_at FROM calls WHERE organization_id = '{org}'"
        ))
        .await
        .unwrap();
    }
    db.execute_unprepared("ANALYZE").await.unwrap();
}

async fn report(ctx: &TestContext, name: &str, admin: &Actor, label: &str, filter: UsageFilter) {
    let org = admin.organization_id.as_str();
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..RUNS {
        let started = Instant::now();
        last = Some(ctx.service.usage_report(admin, &filter).await.unwrap());
        times.push(started.elapsed());
    }
    times.sort();
    let last = last.unwrap();
    println!(
        "{name}: usage {label} ({} calls, {:.0} credits, {} groups): p50 {} max {}",
        last.totals.calls,
        last.totals.credits,
        last.groups.len(),
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 1.0)),
    );
    let backend = ctx.repo.connection().get_database_backend();
    println!(
        "{name}: plan of usage {label}:\n{}",
        explain(
            ctx.repo.connection(),
            report_statement(
                backend,
                org,
                filter.created_after,
                filter.created_before,
                filter.group_by
            )
        )
        .await
    );
}

async fn usage(ctx: &TestContext, name: &str) {
    let admin = ctx.admin("Usage bench").await;
    let org = admin.organization_id.clone();
    let mut agents = Vec::new();
    for i in 0..5 {
        let agent = ctx
            .service
            .agent_create(&admin, new_agent(&format!("Agent {i}")))
            .await
            .unwrap();
        agents.push(agent.agent_id);
    }
    let n = wanted("VOICEPLANE_BENCH_CALLS", DEFAULT_CALLS);
    let started = Instant::now();
    seed_calls(ctx.repo.connection(), &org, &agents, n).await;
    seed_usage(ctx, &org).await;
    println!(
        "{name}: seeded {n} calls with {} usage items in {:.1} s",
        3 * n,
        started.elapsed().as_secs_f64()
    );
    let month = UsageFilter {
        created_after: Some(Timestamp::from_micros(START + 10 * DAY)),
        created_before: Some(Timestamp::from_micros(START + 40 * DAY)),
        group_by: Some(UsageGroupBy::Day),
    };
    report(ctx, name, &admin, "of a 30-day month by day", month).await;
    let all = UsageFilter {
        group_by: Some(UsageGroupBy::Day),
        ..UsageFilter::default()
    };
    report(ctx, name, &admin, "of all 60 days by day", all).await;
    let components = UsageFilter {
        group_by: Some(UsageGroupBy::Component),
        ..UsageFilter::default()
    };
    report(ctx, name, &admin, "of all 60 days by component", components).await;
}

async fn analyses(ctx: &TestContext, name: &str) {
    let model = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"message": {"role": "assistant", "content":
                r#"{"summary": "A booking.", "successful": true, "fields": {"party_size": 4}}"#}}]
        })))
        .mount(&model)
        .await;
    let policy = TargetPolicy {
        allow_private: true,
    };
    let client = HttpChatCompletions::new(AnalysisSettings {
        policy,
        ..AnalysisSettings::default()
    })
    .unwrap();
    let service = ctx
        .service
        .as_ref()
        .clone()
        .with_analyzer(Arc::new(client), policy);
    let admin = ctx.admin("Analysis bench").await;
    let mut agent = new_agent("Host");
    agent.analysis = Some(body::<NewAgentAnalysis>(json!({
        "success_criteria": "The caller booked.",
        "fields": [{"name": "party_size", "type": "number", "description": "Guests",
                    "required": true}],
        "base_url": model.uri(), "api_key": "sk-bench", "model": "m"})));
    let agent = service.agent_create(&admin, agent).await.unwrap();
    let n = wanted("VOICEPLANE_BENCH_ANALYSES", DEFAULT_ANALYSES);
    let mut sids = Vec::with_capacity(n);
    for _ in 0..n {
        let mut call: NewCall = body(json!({"agent_id": agent.agent_id,
            "to_number": "+14155550100", "call_type": "inbound", "status": "in_progress"}));
        call.recording_enabled = Some(false);
        let call = service.call_create(&admin, call).await.unwrap();
        let messages = NewMessages {
            messages: (0..6)
                .map(|i: u32| NewMessage {
                    role: if i.is_multiple_of(2) {
                        MessageRole::Agent
                    } else {
                        MessageRole::User
                    },
                    text: "A table for four on Friday at eight, please.".to_owned(),
                    start_ms: None,
                    end_ms: None,
                    tool_name: None,
                    tool_arguments: None,
                    tool_result: None,
                    interrupted: None,
                })
                .collect(),
        };
        service
            .call_message_append(&admin, &call.call_sid, messages)
            .await
            .unwrap();
        sids.push(call.call_sid);
    }
    let runner = service.job_runner(RunnerConfig {
        idle_check: Duration::from_millis(20),
        concurrency: 8,
        ..RunnerConfig::default()
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(runner.run(async move {
        let _ = stopped.await;
    }));
    let started = Instant::now();
    for sid in &sids {
        service
            .call_update(
                &admin,
                sid,
                CallUpdate {
                    status: Some(CallStatus::Completed),
                    ..CallUpdate::default()
                },
            )
            .await
            .unwrap();
    }
    let completed = started.elapsed();
    let db = ctx.repo.connection();
    let sql = format!(
        "SELECT COUNT(*) FROM calls WHERE organization_id = '{}' AND analysis_status = 'completed'",
        admin.organization_id
    );
    loop {
        let row = db
            .query_one_raw(sea_orm::Statement::from_string(
                db.get_database_backend(),
                sql.clone(),
            ))
            .await
            .unwrap()
            .unwrap();
        let done: i64 = row.try_get_by_index(0).unwrap();
        if done as usize == n {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "{done} of {n} analysed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let elapsed = started.elapsed();
    let _ = stop.send(());
    task.await.unwrap();
    println!(
        "{name}: {n} analyses against a local fake: {:.0} jobs/s ({:.2} s from the first \
         completion to the last answer stored; the completions took {:.2} s), {} requests",
        n as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64(),
        completed.as_secs_f64(),
        model.received_requests().await.unwrap().len(),
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let ctx = TestContext::sqlite().await;
    analyses(&ctx, "sqlite").await;
    usage(&ctx, "sqlite").await;
    ctx.cleanup().await;
    if let Some(ctx) = TestContext::postgres("usage bench").await {
        analyses(&ctx, "postgres").await;
        usage(&ctx, "postgres").await;
        ctx.cleanup().await;
    }
}
