//! Retention: the policy's settings, and the sweep that removes what is older than it.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_core::model::{CallFilter, CallSearch, EventType};
use voiceplane_core::page::PageParams;
use voiceplane_core::role::Role;
use voiceplane_suite::{ApiCaller, TestContext, TestServer, db_tests, eventually};

use super::{DAY, Setup, agent, call, events, gone, memory, transcript, transcript_len, upload};

async fn patch_settings(c: &ApiCaller, body: Value) -> (StatusCode, Value) {
    c.send(Method::PATCH, "/api/organization/settings", Some(body))
        .await
}

/// Each policy removes exactly what is older than it, with the events of a manual delete;
/// the recurring job applies them.
async fn retention_removes_what_is_older_than_each_policy(ctx: &TestContext) {
    let store = memory();
    let setup = Setup::start(ctx, store.clone()).await;
    let boot = ctx.bootstrap("Acme").await;
    let org = boot.organization_id.clone();
    let admin = ctx.actor(&org, &boot.api_key).await;
    let c = ApiCaller::new(&setup.server, &org, &boot.api_key);
    let agent_id = agent(&c).await;
    let mut sids = Vec::new();
    for days_ago in [100, 40, 10, 1] {
        let sid = call(ctx, &c, &agent_id, days_ago).await;
        upload(&c, &sid, 100).await;
        transcript(ctx, &org, &sid).await;
        sids.push(sid);
    }
    // Another organization without a policy keeps its old call whole.
    let other = ApiCaller::bootstrap(ctx, &setup.server, "Other").await;
    let other_agent = agent(&other).await;
    let other_sid = call(ctx, &other, &other_agent, 100).await;
    upload(&other, &other_sid, 100).await;
    let key = |sid: &str| format!("recordings/{org}/{sid}.wav");
    let has_recording = |sid: String| {
        let c = &c;
        async move {
            c.get(&format!("/api/calls/{sid}/recording/stream")).await.0 != StatusCode::NOT_FOUND
        }
    };

    // Recordings older than 30 days.
    let (status, body) = patch_settings(&c, json!({"recording_retention_days": 30})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(setup.service.retention_sweep().await.unwrap(), 2);
    for (sid, kept) in sids.iter().zip([false, false, true, true]) {
        assert_eq!(has_recording(sid.clone()).await, kept, "{sid}");
        assert_eq!(transcript_len(ctx, sid).await, 2);
    }
    gone(&store, &key(&sids[0])).await;
    gone(&store, &key(&sids[1])).await;
    assert!(store.stat(&key(&sids[2])).await.unwrap().is_some());
    let deleted = events(ctx, &admin, EventType::RecordingDeleted).await;
    let mut named: Vec<&str> = deleted
        .iter()
        .map(|d| d["call_sid"].as_str().unwrap())
        .collect();
    named.sort_unstable();
    let mut expected = vec![sids[0].as_str(), sids[1].as_str()];
    expected.sort_unstable();
    assert_eq!(named, expected);
    assert_eq!(deleted[0]["size"], 100);

    // Transcripts older than 5 days; no event names them.
    let (status, body) = patch_settings(
        &c,
        json!({"recording_retention_days": null, "transcript_retention_days": 5}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["recording_retention_days"], Value::Null);
    assert_eq!(setup.service.retention_sweep().await.unwrap(), 3);
    for (sid, len) in sids.iter().zip([0, 0, 0, 2]) {
        assert_eq!(transcript_len(ctx, sid).await, len, "{sid}");
    }
    assert!(has_recording(sids[2].clone()).await);
    assert_eq!(
        events(ctx, &admin, EventType::RecordingDeleted).await.len(),
        2
    );
    assert!(events(ctx, &admin, EventType::CallDeleted).await.is_empty());

    // Calls older than 7 days, by the recurring job, a second later.
    ctx.clock.advance(1);
    let (_, before) = c.get(&format!("/api/calls/{}", sids[2])).await;
    let (status, body) = patch_settings(
        &c,
        json!({"transcript_retention_days": null, "call_retention_days": 7}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    setup.service.jobs_schedule_recurring().await.unwrap();
    eventually("the sweep deletes the old calls", || async {
        c.get(&format!("/api/calls/{}", sids[2])).await.0 == StatusCode::NOT_FOUND
    })
    .await;
    for (sid, kept) in sids.iter().zip([false, false, false, true]) {
        let status = c.get(&format!("/api/calls/{sid}")).await.0;
        assert_eq!(status == StatusCode::OK, kept, "{sid}");
    }
    gone(&store, &key(&sids[2])).await;
    assert!(has_recording(sids[3].clone()).await);
    assert_eq!(transcript_len(ctx, &sids[3]).await, 2);
    let calls = events(ctx, &admin, EventType::CallDeleted).await;
    assert_eq!(calls.len(), 3);
    assert!(calls.contains(&before["data"]), "{calls:?}");
    let recordings = events(ctx, &admin, EventType::RecordingDeleted).await;
    assert_eq!(recordings.len(), 3);
    assert_eq!(recordings[0]["call_sid"], sids[2].as_str());

    assert_eq!(
        other.get(&format!("/api/calls/{other_sid}")).await.0,
        StatusCode::OK
    );
    let other_key = format!(
        "recordings/{}/{other_sid}.wav",
        other.org.as_deref().unwrap()
    );
    assert!(store.stat(&other_key).await.unwrap().is_some());
    setup.stop().await;
}

/// More old calls than one transaction takes: the sweep goes on until none is left.
async fn the_sweep_removes_a_backlog_in_batches(ctx: &TestContext) {
    use voiceplane_core::model::OrganizationSettingsUpdate;
    let admin = ctx.admin("Acme").await;
    let agent = ctx
        .service
        .agent_create(&admin, voiceplane_suite::new_agent("A"))
        .await
        .unwrap();
    let old = ctx.clock.peek().add_seconds(-3 * DAY);
    for _ in 0..501 {
        let mut input = voiceplane_suite::new_call(&agent.agent_id);
        input.created_at = Some(old);
        ctx.service.call_create(&admin, input).await.unwrap();
    }
    let recent = ctx
        .service
        .call_create(&admin, voiceplane_suite::new_call(&agent.agent_id))
        .await
        .unwrap();
    ctx.service
        .organization_settings_update(
            &admin,
            OrganizationSettingsUpdate {
                call_retention_days: Some(Some(2)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(ctx.service.retention_sweep().await.unwrap(), 501);
    let left = ctx
        .service
        .call_list(
            &admin,
            &CallFilter::default(),
            &CallSearch::default(),
            &PageParams::default(),
        )
        .await
        .unwrap()
        .items;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].call_sid, recent.call_sid);
    assert_eq!(ctx.service.retention_sweep().await.unwrap(), 0);
}

/// GET/PATCH of the retention policy: admins only, whole days from 1 to 36500 or null.
async fn retention_settings_are_validated(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let boot = ctx.bootstrap("Acme").await;
    let admin = ctx.actor(&boot.organization_id, &boot.api_key).await;
    let c = ApiCaller::new(&server, &boot.organization_id, &boot.api_key);
    let none = json!({"recording_retention_days": null, "transcript_retention_days": null,
                      "call_retention_days": null, "runtime_stream_url": null,
                      "calling_hours": null, "timezone": "UTC", "max_concurrent_calls": null,
                      "monthly_credit_limit": null});
    let (status, body) = c.get("/api/organization/settings").await;
    assert_eq!((status, &body["data"]), (StatusCode::OK, &none), "{body}");

    for bad in [
        json!({"call_retention_days": 0}),
        json!({"call_retention_days": -1}),
        json!({"recording_retention_days": 100_000}),
        json!({"transcript_retention_days": "30"}),
        json!({"transcript_retention_days": 1.5}),
        json!({"retention": 3}),
    ] {
        let (status, body) = patch_settings(&c, bad.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    let (_, body) = patch_settings(&c, json!({"call_retention_days": 0})).await;
    assert_eq!(
        body["detail"],
        "call_retention_days must be between 1 and 36500 days, or null to keep forever"
    );

    let (status, body) = patch_settings(
        &c,
        json!({"recording_retention_days": 1, "call_retention_days": 36_500}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let set = json!({"recording_retention_days": 1, "transcript_retention_days": null,
                     "call_retention_days": 36_500, "runtime_stream_url": null,
                     "calling_hours": null, "timezone": "UTC", "max_concurrent_calls": null,
                     "monthly_credit_limit": null});
    assert_eq!(body["data"], set);
    // Absent is unchanged; null clears.
    let (_, body) = patch_settings(&c, json!({"transcript_retention_days": 90})).await;
    assert_eq!(body["data"]["recording_retention_days"], 1);
    assert_eq!(body["data"]["transcript_retention_days"], 90);
    let (_, body) = patch_settings(&c, json!({"recording_retention_days": null})).await;
    assert_eq!(body["data"]["recording_retention_days"], Value::Null);
    assert_eq!(
        c.get("/api/organization/settings").await.1["data"],
        body["data"]
    );

    for role in [Role::AgentManager, Role::User] {
        let (key, _) = ctx.key_with_role(&admin, role).await;
        let other = c.with_key(&key.api_key);
        assert_eq!(
            other.get("/api/organization/settings").await.0,
            StatusCode::FORBIDDEN
        );
        let (status, _) = patch_settings(&other, json!({"call_retention_days": 1})).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
    }
    // Another organization's policy is its own.
    let other = ApiCaller::bootstrap(ctx, &server, "Other").await;
    assert_eq!(
        other.get("/api/organization/settings").await.1["data"],
        none
    );
    server.stop().await;
}

db_tests!(
    retention_removes_what_is_older_than_each_policy,
    the_sweep_removes_a_backlog_in_batches,
    retention_settings_are_validated,
);
