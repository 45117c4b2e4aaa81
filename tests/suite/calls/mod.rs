//! Calls: recording, viewing and updating them, and walking every call with the cursor,
//! through `Service` and over HTTP (this file); calls as data, filtered, searched, counted and
//! transcribed (`query`); and deleting them, their recordings and what retention sweeps
//! (`lifecycle`).

mod lifecycle;
mod query;

use std::collections::HashSet;

use reqwest::StatusCode;
use serde_json::{Value, json};
use voiceplane_core::Error;
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_suite::*;

async fn calls_are_recorded_viewed_and_updated(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let agent = ctx
        .service
        .agent_create(&admin, new_agent("Caller"))
        .await
        .unwrap();
    let call = ctx
        .service
        .call_create(&admin, new_call(&agent.agent_id))
        .await
        .unwrap();
    assert!(call.call_sid.starts_with("call_"));
    assert_eq!(call.status, CallStatus::Queued);
    assert_eq!(call.agent_name.as_deref(), Some("Caller"));
    assert!(call.recording_enabled, "inherits the agent's setting");
    let update: CallUpdate = serde_json::from_value(json!({
        "status": "completed",
        "start_time": "2026-01-01T10:00:00Z",
        "end_time": "2026-01-01T10:01:30.5Z",
        "end_reason": "user_hangup",
        "total_cost": 1.25,
        "turn_count": 6,
        "billing_status": "billed"
    }))
    .unwrap();
    let updated = ctx
        .service
        .call_update(&admin, &call.call_sid, update)
        .await
        .unwrap();
    assert_eq!(updated.duration_seconds, Some(90.5));
    let viewed = ctx.service.call_view(&admin, &call.call_sid).await.unwrap();
    assert_eq!(viewed, updated);
    assert_eq!(viewed.status, CallStatus::Completed);
    assert_eq!(viewed.turn_count, 6);
    assert!(viewed.updated_at > call.updated_at);

    let backwards: CallUpdate =
        serde_json::from_value(json!({"end_time": "2026-01-01T09:00:00Z"})).unwrap();
    assert!(matches!(
        ctx.service
            .call_update(&admin, &call.call_sid, backwards)
            .await,
        Err(Error::InvalidInput(_))
    ));
    assert!(serde_json::from_value::<CallUpdate>(json!({"colour": "red"})).is_err());
    let mut bad = new_call(&agent.agent_id);
    bad.to_number = "555-1234".into();
    assert!(matches!(
        ctx.service.call_create(&admin, bad).await,
        Err(Error::InvalidInput(_))
    ));
}

async fn call_cursor_walk_returns_every_call_once_newest_first(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let agent = ctx
        .service
        .agent_create(&admin, new_agent("Caller"))
        .await
        .unwrap();
    let mut created = Vec::new();
    for _ in 0..125 {
        created.push(
            ctx.service
                .call_create(&admin, new_call(&agent.agent_id))
                .await
                .unwrap(),
        );
    }
    // Another organization's calls never appear.
    let other = ctx.admin("Other").await;
    let other_agent = ctx
        .service
        .agent_create(&other, new_agent("Theirs"))
        .await
        .unwrap();
    ctx.service
        .call_create(&other, new_call(&other_agent.agent_id))
        .await
        .unwrap();

    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = Vec::new();
    loop {
        let page = ctx
            .service
            .call_list(
                &admin,
                &CallFilter::default(),
                &CallSearch::default(),
                &PageParams {
                    limit: Some(50),
                    cursor: cursor.clone(),
                },
            )
            .await
            .unwrap();
        pages.push((page.page_size(), page.has_more, page.next_cursor.is_some()));
        seen.extend(page.items.iter().map(|c| c.call_sid.clone()));
        if !page.has_more {
            break;
        }
        cursor = page.next_cursor;
    }
    assert_eq!(
        pages,
        vec![(50, true, true), (50, true, true), (25, false, false)]
    );
    let expected: Vec<String> = created.iter().rev().map(|c| c.call_sid.clone()).collect();
    assert_eq!(seen, expected, "newest first, each exactly once");
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 125);
}

async fn call_cursor_walk_over_http(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let agent = c.create("/api/agents", agent_body("Dialer")).await;
    let mut created = Vec::new();
    for _ in 0..121 {
        let call = c
            .create("/api/calls", json!({"agent_id": agent["agent_id"], "to_number": "+14155550100", "call_type": "outbound"}))
            .await;
        created.push(call["call_sid"].as_str().unwrap().to_owned());
    }
    let mut seen = Vec::new();
    let mut path = "/api/calls?limit=40".to_owned();
    let mut pages = 0;
    loop {
        let (status, v) = c.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{v}");
        pages += 1;
        let data = v["data"].as_array().unwrap();
        let p = &v["pagination"];
        assert_eq!(p["page_size"], data.len());
        seen.extend(
            data.iter()
                .map(|c| c["call_sid"].as_str().unwrap().to_owned()),
        );
        if p["has_more"] == false {
            assert_eq!(p["next_cursor"], Value::Null);
            assert_eq!(data.len(), 1);
            break;
        }
        assert_eq!(data.len(), 40);
        path = format!(
            "/api/calls?limit=40&cursor={}",
            p["next_cursor"].as_str().unwrap()
        );
    }
    assert_eq!(pages, 4);
    created.reverse();
    assert_eq!(seen, created);
    server.stop().await;
}

db_tests!(
    calls_are_recorded_viewed_and_updated,
    call_cursor_walk_returns_every_call_once_newest_first,
    call_cursor_walk_over_http,
);
