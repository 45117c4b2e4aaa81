//! `GET /api/calls/stats`: totals and groups equal what this test computes from its calls,
//! and agree with each other while calls are being written.

use std::collections::BTreeMap;

use reqwest::StatusCode;
use voiceplane_core::model::*;
use voiceplane_suite::*;

use super::{Case, seed};

/// calls, total cost, total duration, mean of the known durations.
fn sums(calls: &[&Call]) -> (i64, f64, f64, Option<f64>) {
    let durations: Vec<f64> = calls.iter().filter_map(|c| c.duration_seconds).collect();
    let total_duration: f64 = durations.iter().sum();
    (
        calls.len() as i64,
        calls.iter().map(|c| c.total_cost).sum(),
        total_duration,
        (!durations.is_empty()).then(|| total_duration / durations.len() as f64),
    )
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

fn assert_sums(what: &str, got: (i64, f64, f64, Option<f64>), want: (i64, f64, f64, Option<f64>)) {
    assert_eq!(got.0, want.0, "{what}: calls");
    assert!(close(got.1, want.1), "{what}: total_cost {got:?} {want:?}");
    assert!(close(got.2, want.2), "{what}: duration {got:?} {want:?}");
    match (got.3, want.3) {
        (Some(a), Some(b)) => assert!(close(a, b), "{what}: avg {a} {b}"),
        (a, b) => assert_eq!(a, b, "{what}: avg"),
    }
}

fn key_of(by: StatsGroupBy, c: &Call) -> Option<String> {
    match by {
        StatsGroupBy::Day => Some(c.created_at.to_rfc3339()[..10].to_owned()),
        StatsGroupBy::Agent => Some(c.agent_id.clone()),
        StatsGroupBy::Status => Some(c.status.as_str().to_owned()),
        StatsGroupBy::EndReason => c.end_reason.clone(),
        StatsGroupBy::AgentVersion => c.agent_version.map(|v| v.to_string()),
    }
}

async fn stats_equal_the_sums_of_the_filtered_calls(ctx: &TestContext) {
    let s = seed(ctx).await;
    let after = s.calls[5].created_at;
    let before = s.calls[26].created_at;
    let filters: Vec<Case> = vec![
        (CallFilter::default(), Box::new(|_| true)),
        (
            CallFilter {
                created_after: Some(after),
                created_before: Some(before),
                ..Default::default()
            },
            Box::new(move |c| c.created_at >= after && c.created_at < before),
        ),
        (
            CallFilter {
                agent_id: Some(s.agents[1].clone()),
                status: Some(CallStatus::Completed),
                ..Default::default()
            },
            Box::new(|c| c.agent_id == s.agents[1] && c.status == CallStatus::Completed),
        ),
        (
            CallFilter {
                status: Some(CallStatus::Busy),
                ..Default::default()
            },
            Box::new(|_| false),
        ),
    ];
    let groupings = [
        None,
        Some(StatsGroupBy::Day),
        Some(StatsGroupBy::Agent),
        Some(StatsGroupBy::Status),
        Some(StatsGroupBy::EndReason),
        Some(StatsGroupBy::AgentVersion),
    ];
    for (filter, keep) in &filters {
        let kept: Vec<&Call> = s.calls.iter().filter(|c| keep(c)).collect();
        for group_by in groupings {
            let what = format!("{filter:?} by {group_by:?}");
            let stats = ctx
                .service
                .call_stats(&s.admin, filter, &StatsGrouping { group_by })
                .await
                .unwrap();
            let t = &stats.totals;
            assert_sums(
                &what,
                (
                    t.calls,
                    t.total_cost,
                    t.total_duration_seconds,
                    t.avg_duration_seconds,
                ),
                sums(&kept),
            );
            let Some(by) = group_by else {
                assert!(stats.groups.is_empty(), "{what}");
                continue;
            };
            let mut want: BTreeMap<(bool, Option<String>), Vec<&Call>> = BTreeMap::new();
            for c in &kept {
                let key = key_of(by, c);
                want.entry((key.is_none(), key)).or_default().push(c);
            }
            let keys: Vec<Option<String>> = stats.groups.iter().map(|g| g.key.clone()).collect();
            let want_keys: Vec<Option<String>> = want.keys().map(|(_, k)| k.clone()).collect();
            assert_eq!(keys, want_keys, "{what}: keys in order, null last");
            for g in &stats.groups {
                assert_sums(
                    &format!("{what} {:?}", g.key),
                    (
                        g.calls,
                        g.total_cost,
                        g.total_duration_seconds,
                        g.avg_duration_seconds,
                    ),
                    sums(&want[&(g.key.is_none(), g.key.clone())]),
                );
            }
            if by == StatsGroupBy::Day && kept.len() > 3 {
                assert!(
                    stats.groups.len() > 3,
                    "calls 7 h apart fall on several days"
                );
            }
        }
    }

    // The same over HTTP, where `stats` is not taken for a call id.
    let server = TestServer::start(ctx).await;
    let key = ctx
        .service
        .api_key_create(
            &s.admin,
            serde_json::from_value(serde_json::json!({"name": "http", "role": "user"})).unwrap(),
        )
        .await
        .unwrap();
    let api = ApiCaller::new(&server, &s.admin.organization_id, &key.api_key);
    let (status, v) = api.get("/api/calls/stats?group_by=status&q=ignored").await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["success"], true);
    assert_eq!(v["data"]["totals"]["calls"], 30);
    let groups = v["data"]["groups"].as_array().unwrap();
    let statuses: Vec<&str> = groups.iter().map(|g| g["key"].as_str().unwrap()).collect();
    assert_eq!(
        statuses,
        ["completed", "failed", "in_progress", "no_answer"]
    );
    assert_eq!(groups[0]["calls"], 12);
    let (status, v) = api.get("/api/calls/stats").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["data"]["groups"], serde_json::json!([]));
    server.stop().await;
}

/// While calls are created, every answer's totals are the sum of its groups: both are read
/// from one snapshot, never the totals before a call and the groups after it.
async fn totals_and_groups_agree_while_calls_are_written(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let agent = ctx
        .service
        .agent_create(&admin, new_agent("Ann"))
        .await
        .unwrap();
    let writing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let writer = {
        let service = ctx.service.clone();
        let admin = admin.clone();
        let writing = writing.clone();
        tokio::spawn(async move {
            let mut written = 0;
            while writing.load(std::sync::atomic::Ordering::SeqCst) {
                service
                    .call_create(&admin, new_call(&agent.agent_id))
                    .await
                    .unwrap();
                written += 1;
            }
            written
        })
    };
    let mut reads = 0;
    let mut seen = std::collections::BTreeSet::new();
    // Enough reads to fall between the writes many times over.
    while reads < 200 || seen.len() < 20 {
        let stats = ctx
            .service
            .call_stats(
                &admin,
                &CallFilter::default(),
                &StatsGrouping {
                    group_by: Some(StatsGroupBy::Status),
                },
            )
            .await
            .unwrap();
        let grouped: i64 = stats.groups.iter().map(|g| g.calls).sum();
        assert_eq!(
            stats.totals.calls, grouped,
            "read {reads}: the totals count {} calls and the groups {grouped}",
            stats.totals.calls
        );
        seen.insert(stats.totals.calls);
        reads += 1;
        assert!(reads < 100_000, "the writer made no progress");
    }
    writing.store(false, std::sync::atomic::Ordering::SeqCst);
    let written = writer.await.unwrap();
    assert!(written >= 20, "{written} calls written during the reads");
}

db_tests!(
    stats_equal_the_sums_of_the_filtered_calls,
    totals_and_groups_agree_while_calls_are_written,
);
